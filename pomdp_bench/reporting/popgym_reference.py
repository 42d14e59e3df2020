"""Our popgym cells beside POPGym's published MMER (Morad et al., ICLR 2023).

``report`` writes, when it writes the popgym suite's ``popgym.csv`` (from its cell table):

- ``popgym_reference.csv``: per env and memory kind, our MMER (mean over seeds, 95% t
  interval) beside POPGym's for the model mapped to the kind (:data:`KIND_OF_MODEL`);
- ``popgym_reference_tau.csv``: Kendall's tau between the kinds' order by mean MMER,
  ours against theirs, over the envs both tables have, with a bootstrap interval over
  envs;
- ``popgym/popgym_reference.svg``: a panel per env, ours and theirs per kind.

POPGym's numbers are data: ``leaderboards/reference/popgym2023_mmer.csv``, with the
columns of :data:`REFERENCE_COLUMNS`, each row naming where it was read. A file with
other columns is refused when read. Where it holds no row for a cell, the cell's
POPGym columns stay empty; nothing is guessed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

REFERENCE_COLUMNS = ("env", "difficulty", "model", "mmer_mean", "mmer_std", "n_trials", "source")
"""The columns of a reference file, in order: POPGym's env class name (``RepeatFirst``),
its difficulty (``Easy``, ``Medium``, ``Hard``), the model as the paper names it, the mean
MMER over its trials and their standard deviation, the number of trials, and where the
row was read (paper, table or figure)."""

REFERENCE_FILE = Path("reference") / "popgym2023_mmer.csv"
"""Where the reference lives, relative to the leaderboards folder."""

KIND_OF_MODEL = {
    "MLP": "none",
    "Framestack": "framestack",
    "GRU": "gru",
    "LSTM": "lstm",
    "S4D": "lru",
    "FART": "linear_attention",
}
"""POPGym's models (its paper's names) and the kind of ours that stands for each: the
memoryless MLP for ``none``; its frame stack; GRU and LSTM; S4D, a diagonal linear
state-space model, for ``lru`` (``s5`` is the other); FART, Katharopoulos et al.'s linear
attention, for ``linear_attention`` (POPGym's FWP is the delta-rule variant of it)."""

COMPARISON_COLUMNS = (
    "env",
    "difficulty",
    "memory",
    "popgym_model",
    "n_seeds",
    "mmer_mean",
    "mmer_ci_low",
    "mmer_ci_high",
    "return_mean",
    "popgym_mmer_mean",
    "popgym_mmer_std",
    "popgym_n_trials",
    "difference",
    "source",
)

TAU_COLUMNS = ("n_envs", "n_kinds", "kinds", "envs", "tau", "tau_ci_low", "tau_ci_high", "n_bootstrap")

_ENV_ID = re.compile(r"^popgym-(?P<env>[A-Za-z]+?)(?P<difficulty>Easy|Medium|Hard)-v\d+$")


def read_reference(path: str | Path) -> pd.DataFrame:
    """A reference file's rows, checked.

    Raises:
        ValueError: the columns are not :data:`REFERENCE_COLUMNS` in that order, a
            difficulty is not Easy, Medium or Hard, or a number is not finite.
    """
    frame = pd.read_csv(path)
    if tuple(frame.columns) != REFERENCE_COLUMNS:
        raise ValueError(
            f"reference {path}: columns {list(frame.columns)}; expected {list(REFERENCE_COLUMNS)}, in that order"
        )
    bad = sorted(set(frame["difficulty"]) - {"Easy", "Medium", "Hard"})
    if bad:
        raise ValueError(f"reference {path}: difficulty {bad}; valid: ['Easy', 'Medium', 'Hard']")
    for column in ("mmer_mean", "mmer_std", "n_trials"):
        values = pd.to_numeric(frame[column], errors="coerce")
        if len(frame) and not np.isfinite(values.to_numpy(dtype=np.float64)).all():
            raise ValueError(f"reference {path}: column {column} holds a value that is not a finite number")
        frame[column] = values
    return frame


def split_env_id(env_id: str) -> tuple[str, str] | None:
    """``("RepeatFirst", "Easy")`` for ``"popgym-RepeatFirstEasy-v0"``; None for an id
    of another form."""
    match = _ENV_ID.match(str(env_id))
    return (match["env"], match["difficulty"]) if match else None


def comparison_table(cells: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """One row per popgym cell of ours (env id ``popgym-<Env><Difficulty>-v0``), with
    POPGym's MMER for the model mapped to its kind, where the reference has it.

    ``difference`` is ours minus theirs, in MMER (both in POPGym's [-1, 1] scale).
    """
    model_of_kind = {kind: model for model, kind in KIND_OF_MODEL.items()}
    theirs = {(r.env, r.difficulty, r.model): r for r in reference.itertuples()}
    rows = []
    for cell in cells.itertuples():
        split = split_env_id(cell.env_id)
        if split is None:
            continue
        env, difficulty = split
        model = model_of_kind.get(cell.memory, "")
        ref = theirs.get((env, difficulty, model))
        ours = float(cell.mmer_mean) if "mmer_mean" in cells else math.nan
        rows.append(
            {
                "env": env,
                "difficulty": difficulty,
                "memory": cell.memory,
                "popgym_model": model,
                "n_seeds": int(cell.n_seeds),
                "mmer_mean": ours,
                "mmer_ci_low": float(getattr(cell, "mmer_ci_low", math.nan)),
                "mmer_ci_high": float(getattr(cell, "mmer_ci_high", math.nan)),
                "return_mean": float(cell.return_mean),
                "popgym_mmer_mean": math.nan if ref is None else float(ref.mmer_mean),
                "popgym_mmer_std": math.nan if ref is None else float(ref.mmer_std),
                "popgym_n_trials": math.nan if ref is None else float(ref.n_trials),
                "difference": math.nan if ref is None else ours - float(ref.mmer_mean),
                "source": "" if ref is None else str(ref.source),
            }
        )
    table = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    return table.sort_values(["env", "difficulty", "memory"], ignore_index=True)


def kendall_tau(table: pd.DataFrame, n_bootstrap: int = 2000, seed: int = 0) -> dict[str, object]:
    """Kendall's tau-b between the kinds' order, ours against POPGym's.

    Over the envs where both sides have every one of the kinds both have on all of them,
    each side's score of a kind is its mean MMER over those envs; tau compares the two
    orders of the kinds (``scipy.stats.kendalltau``). The interval is a 95% percentile
    bootstrap that resamples the envs with replacement (``seed`` fixes it). Fewer than 3
    kinds give NaN; one env gives tau without an interval.
    """
    both = table.dropna(subset=["mmer_mean", "popgym_mmer_mean"])
    envs = sorted({(r.env, r.difficulty) for r in both.itertuples()})
    kinds = sorted(set(both["memory"]))
    per_env = {e: both[(both["env"] == e[0]) & (both["difficulty"] == e[1])] for e in envs}
    kinds = [k for k in kinds if all(k in set(f["memory"]) for f in per_env.values())]
    out: dict[str, object] = {
        "n_envs": len(envs),
        "n_kinds": len(kinds),
        "kinds": ";".join(kinds),
        "envs": ";".join(f"{e}{d}" for e, d in envs),
        "tau": math.nan,
        "tau_ci_low": math.nan,
        "tau_ci_high": math.nan,
        "n_bootstrap": 0,
    }
    if len(kinds) < 3 or not envs:
        return out
    # [E, K] scores of each side
    ours = np.array([[per_env[e].set_index("memory").loc[k, "mmer_mean"] for k in kinds] for e in envs])
    theirs = np.array(
        [[per_env[e].set_index("memory").loc[k, "popgym_mmer_mean"] for k in kinds] for e in envs]
    )

    def tau_of(rows: np.ndarray) -> float:
        return float(stats.kendalltau(ours[rows].mean(axis=0), theirs[rows].mean(axis=0)).statistic)

    out["tau"] = tau_of(np.arange(len(envs)))
    if len(envs) > 1:
        rng = np.random.default_rng(seed)
        draws = np.array([tau_of(rng.integers(0, len(envs), len(envs))) for _ in range(n_bootstrap)])
        draws = draws[np.isfinite(draws)]  # a draw whose scores tie everywhere has no tau
        if len(draws):
            out["tau_ci_low"], out["tau_ci_high"] = (float(q) for q in np.percentile(draws, [2.5, 97.5]))
            out["n_bootstrap"] = len(draws)
    return out


def write_comparison(leaderboards: str | Path, cells: pd.DataFrame | None) -> list[Path]:
    """Write ``popgym_reference.csv``, ``popgym_reference_tau.csv`` and the figure into
    ``leaderboards`` from the popgym suite's cell table ``cells`` (``report``'s, the
    ``popgym.csv`` it writes); nothing where ``cells`` is None. Returns the paths written.

    Raises:
        ValueError: the reference file exists with other columns (:func:`read_reference`).
    """
    if cells is None:
        return []
    out = Path(leaderboards)
    ref_path = out / REFERENCE_FILE
    reference = (
        read_reference(ref_path) if ref_path.is_file() else pd.DataFrame(columns=list(REFERENCE_COLUMNS))
    )
    table = comparison_table(cells, reference)
    paths = [out / "popgym_reference.csv", out / "popgym_reference_tau.csv"]
    table.to_csv(paths[0], index=False)
    pd.DataFrame([kendall_tau(table)], columns=list(TAU_COLUMNS)).to_csv(paths[1], index=False)
    from pomdp_bench.reporting.plots import plot_popgym_reference  # matplotlib only when writing

    (out / "popgym").mkdir(exist_ok=True)
    paths.append(plot_popgym_reference(table, out / "popgym" / "popgym_reference.svg"))
    return paths
