"""Leaderboard figures (seaborn), saved as SVG (:data:`FIGURE_SUFFIX`).

- ``<suite>_heatmap_<env>_<agent>``: normalised score per memory kind × BPTT
  length; ``*`` marks learned cells.
- ``<suite>_curves_<env>_<agent>``: evaluation return over training per memory
  kind (each kind at its best BPTT length), with 95% bootstrap bands over seeds.
- ``<suite>_horizon``: the longest horizon learned per memory kind and BPTT policy.
- ``<suite>_solve_cost``: steps to solve against the horizon per memory kind and
  BPTT policy, with 95% intervals (how the cost of remembering grows).
- ``<suite>_improvement_<env>_<agent>``: kind against kind, the probability that a
  run of one cell beats a run of another (rliable's probability of improvement).
- ``<suite>_forgetting_<memory>``: the cue probe's accuracy against the steps since the
  cue, a line per horizon (runs analysed by ``python -m pomdp_bench.analyse``).
- ``<suite>_generalisation_<env>_<agent>``: the return at 1x, 2x and 4x the training
  horizon, a line per kind (the same analysis).
- ``<suite>_credit_<env>_<agent>``: memory length against credit length, a heatmap panel
  per kind: the solve rate, with the median steps to solve (:mod:`~pomdp_bench.reporting.credit`).
- ``popgym_reference``: our MMER per kind beside POPGym's published one, a panel per env
  (:mod:`~pomdp_bench.reporting.popgym_reference`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pomdp_bench.memory_names import MEMORY_KINDS
from pomdp_bench.reporting.credit import pays_late


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _variant(env_id: str, env_kwargs: str) -> str:
    kwargs = json.loads(env_kwargs)
    return env_id + ("".join(f"_{k}{v}" for k, v in sorted(kwargs.items())) if kwargs else "")


def heatmap_name(suite: str, env_id: str, env_kwargs: str, agent: str) -> str:
    """The file name, without suffix, of the heatmap of one env variant and agent."""
    return f"{suite}_heatmap_{_slug(_variant(env_id, env_kwargs))}_{agent}"


def horizon_name(suite: str) -> str:
    """The file name, without suffix, of a suite's horizon figure."""
    return f"{suite}_horizon"


FIGURE_SUFFIX = ".svg"
"""The one format figures are written in. SVG scales, GitHub and the page show it,
its text diffs, and the published figures are smaller in it than in PNG at 120 dpi
(50-60 kB against 100-140 kB)."""


def _save(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    path = out / f"{name}{FIGURE_SUFFIX}"
    # No date and fixed element ids: the same data gives byte-identical SVGs.
    with plt.rc_context({"svg.hashsalt": name}):
        fig.savefig(path, bbox_inches="tight", dpi=120, metadata={"Date": None})
    plt.close(fig)
    return [path]


def _kind_order(kinds: set[str]) -> list[str]:
    return [k for k in MEMORY_KINDS if k in kinds] + sorted(kinds - set(MEMORY_KINDS))


def heatmaps(cells: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """One heatmap of normalised score per env variant and agent."""
    paths: list[Path] = []
    for (env_id, env_kwargs, agent), group in cells.groupby(["env_id", "env_kwargs", "agent"], sort=True):
        group = group.assign(bptt=group["bptt_length"].map(lambda b: "n/a" if pd.isna(b) else str(int(b))))
        columns = sorted(set(group["bptt"]), key=lambda b: (b != "n/a", int(b) if b != "n/a" else 0))
        rows = _kind_order(set(group["memory"]))
        score = group.pivot_table(index="memory", columns="bptt", values="normalized_score", aggfunc="first")
        score = score.reindex(index=rows, columns=columns)
        group = group.assign(learned=group["learned"].fillna(False).astype(bool))
        learned = group.pivot_table(index="memory", columns="bptt", values="learned", aggfunc="first")
        learned = learned.reindex(index=rows, columns=columns)
        labels = score.copy().astype(object)
        for r in rows:
            for c in columns:
                v = score.loc[r, c]
                labels.loc[r, c] = (
                    "" if pd.isna(v) else f"{v:.2f}" + ("*" if learned.loc[r, c] is True else "")
                )
        fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(columns), 0.9 + 0.55 * len(rows)))
        sns.heatmap(
            score.astype(float),
            annot=labels.to_numpy(),
            fmt="",
            cmap="RdYlGn",
            vmin=-0.25,
            vmax=1.0,
            cbar_kws={"label": "normalised score"},
            linewidths=0.5,
            ax=ax,
        )
        ax.set_xlabel("BPTT length (PPO) / sequence length (SAC)")
        ax.set_ylabel("memory")
        ax.set_title(
            f"{_variant(env_id, env_kwargs)} · {agent}\n* = learned: mean and most seeds above the ceiling-optimum midpoint"
        )
        paths += _save(fig, out, heatmap_name(suite, env_id, env_kwargs, agent))
    return paths


def learning_curves(
    runs: pd.DataFrame, curves: pd.DataFrame, cells: pd.DataFrame, suite: str, out: Path
) -> list[Path]:
    """Evaluation return over training per memory kind, at each kind's best BPTT length."""
    paths: list[Path] = []
    if curves.empty:
        return paths
    data = curves.merge(runs.drop(columns=["timesteps"]), on="run_key")  # the curve's own timesteps
    for (env_id, env_kwargs, agent), group in data.groupby(["env_id", "env_kwargs", "agent"], sort=True):
        cell = cells[
            (cells["env_id"] == env_id) & (cells["env_kwargs"] == env_kwargs) & (cells["agent"] == agent)
        ]
        best = cell.sort_values("return_mean", ascending=False).drop_duplicates("memory")
        keep = {
            (m, None if pd.isna(b) else int(b))
            for m, b in zip(best["memory"], best["bptt_length"], strict=True)
        }
        mask = [
            (m, None if pd.isna(b) else int(b)) in keep
            for m, b in zip(group["memory"], group["bptt_length"], strict=True)
        ]
        sub = group[mask].copy()
        sub["series"] = [
            m if pd.isna(b) else f"{m} (bptt {int(b)})"
            for m, b in zip(sub["memory"], sub["bptt_length"], strict=True)
        ]
        fig, ax = plt.subplots(figsize=(7, 4))
        sns.lineplot(
            data=sub,
            x="timesteps",
            y="mean_return",
            hue="series",
            errorbar=("ci", 95),
            n_boot=2000,
            seed=0,
            ax=ax,
        )
        if len(cell):
            ax.axhline(cell["ff_ceiling"].iloc[0], ls="--", c="grey", lw=1, label="feedforward ceiling")
            ax.axhline(cell["optimal_return"].iloc[0], ls=":", c="black", lw=1, label="optimal")
        ax.legend(fontsize=8, loc="best")
        ax.set_xlabel("env steps")
        ax.set_ylabel("evaluation return")
        ax.set_title(f"{_variant(env_id, env_kwargs)} · {agent} (95% bootstrap band over seeds)")
        paths += _save(fig, out, f"{suite}_curves_{_slug(_variant(env_id, env_kwargs))}_{agent}")
    return paths


def horizon_plot(horizon: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Longest horizon learned per memory kind and BPTT policy, one panel per env and agent."""
    if horizon.empty:
        return []
    panels = list(horizon.groupby(["env_id", "agent"], sort=True))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, ((env_id, agent), group) in zip(axes[0], panels, strict=True):
        order = _kind_order(set(group["memory"]))
        hue_order = [p for p in ("long", "short", "n/a") if p in set(group["pieces"])]
        sns.barplot(
            data=group,
            x="memory",
            y="longest_horizon_learned",
            hue="pieces",
            order=order,
            hue_order=hue_order,
            ax=ax,
        )
        # "+" over a bar: a censored limit (the next horizon was not a counted failure).
        censored = {
            (m, p): bool(c)
            for m, p, c in zip(group["memory"], group["pieces"], group["limit_censored"], strict=True)
        }
        for policy, bars in zip(hue_order, ax.containers, strict=False):
            for bar in bars:  # a kind without this policy has no bar: find each bar's kind by position
                x = bar.get_x() + bar.get_width() / 2
                memory = order[round(x)]
                if censored.get((memory, policy)):
                    ax.annotate("+", (x, max(bar.get_height(), 0.5)), ha="center", va="bottom", fontsize=11)
        tried = sorted({int(h) for hs in group["horizons_tried"] for h in hs.split(";") if h})
        ax.set_yscale("symlog", linthresh=5)
        ax.set_yticks([0, *tried])
        ax.set_yticklabels(["0", *map(str, tried)])
        ax.set_ylabel("longest horizon learned (steps)")
        ax.set_title(f"{env_id} · {agent}")
    fig.suptitle(
        "Longest memory horizon learned (cell interval above the ceiling-optimum midpoint);\n"
        "+ = censored: the next horizon was not tried, or its runs hit a cap under 10x the steps that solved this one",
        y=1.08,
    )
    return _save(fig, out, horizon_name(suite))


def solve_cost_name(suite: str) -> str:
    """The file name, without suffix, of a suite's steps-to-solve-against-horizon figure."""
    return f"{suite}_solve_cost"


def solve_cost_plot(cells: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Steps to solve against the horizon, one line per memory kind and piece policy.

    A point is a cell's Kaplan-Meier median steps to solve with its 95% interval; a
    cell where fewer than half the runs solved has no median and no point, and an
    interval without an upper end is drawn up to the top of the panel.
    """
    data = cells[cells["steps_to_solve"].notna()]
    if data.empty:
        return []
    panels = list(data.groupby(["env_id", "agent"], sort=True))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    # tab10 for the first ten kinds (the published figures' colours), dark grey, then Dark2 for
    # the kinds of issues 54 and 55.
    palette = [*sns.color_palette("tab10"), (0.25, 0.25, 0.25), *sns.color_palette("Dark2")[:7]]
    colours = dict(zip(MEMORY_KINDS, palette, strict=False))
    for ax, ((env_id, agent), group) in zip(axes[0], panels, strict=True):
        top = float(np.nanmax(group[["steps_to_solve", "steps_to_solve_ci_high"]].to_numpy(dtype=float))) * 2
        for (memory, policy), line in group.groupby(["memory", "pieces"], sort=True):
            line = line.sort_values("horizon")
            median = line["steps_to_solve"].to_numpy(dtype=float)
            low = line["steps_to_solve_ci_low"].to_numpy(dtype=float)
            high = np.nan_to_num(line["steps_to_solve_ci_high"].to_numpy(dtype=float), nan=top)
            ax.errorbar(
                line["horizon"],
                median,
                yerr=[median - np.nan_to_num(low, nan=median), high - median],
                marker="o" if policy != "short" else "s",
                ls="-" if policy != "short" else "--",
                color=colours.get(memory),
                capsize=3,
                label=f"{memory} ({policy} pieces)" if policy != "n/a" else memory,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        horizons = sorted({int(h) for h in group["horizon"]})
        ax.set_xticks(horizons, [str(h) for h in horizons])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("memory horizon (steps)")
        ax.set_ylabel("env steps to solve (median, 95% interval)")
        ax.set_title(f"{env_id} · {agent}")
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(
        "The cost of remembering: steps to solve against the horizon (cells where most runs solved)", y=1.02
    )
    return _save(fig, out, solve_cost_name(suite))


def improvement_name(suite: str, env_id: str, env_kwargs: str, agent: str) -> str:
    """The file name, without suffix, of the kind-against-kind figure of one env variant and agent."""
    return f"{suite}_improvement_{_slug(_variant(env_id, env_kwargs))}_{agent}"


def _cell_label(memory: str, bptt: object) -> str:
    return memory if pd.isna(bptt) else f"{memory} ({int(bptt)})"


def improvement_matrix(pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(estimate, clear)``: square tables over the cells of one env variant and agent
    (``pairs``: its rows of ``<suite>_improvement.csv``). ``estimate[a][b]`` is the
    probability that a run of cell ``a`` beats one of cell ``b``, so
    ``estimate[a][b] + estimate[b][a] = 1``; ``clear`` marks pairs whose 95% interval
    excludes 0.5. The diagonal is empty."""
    a = [_cell_label(m, b) for m, b in zip(pairs["memory_a"], pairs["bptt_length_a"], strict=True)]
    b = [_cell_label(m, b) for m, b in zip(pairs["memory_b"], pairs["bptt_length_b"], strict=True)]
    kinds = {label.split(" ")[0] for label in a + b}
    order = {kind: i for i, kind in enumerate(_kind_order(kinds))}
    labels = sorted(set(a + b), key=lambda x: (order[x.split(" ")[0]], len(x), x))
    estimate = pd.DataFrame(np.nan, index=labels, columns=labels)
    clear = pd.DataFrame(False, index=labels, columns=labels)
    for row_a, row_b, p, low, high in zip(
        a,
        b,
        pairs["prob_improvement"],
        pairs["prob_improvement_ci_low"],
        pairs["prob_improvement_ci_high"],
        strict=True,
    ):
        estimate.loc[row_a, row_b], estimate.loc[row_b, row_a] = p, 1.0 - p
        clear.loc[row_a, row_b] = clear.loc[row_b, row_a] = bool(low > 0.5 or high < 0.5)
    return estimate, clear


def improvement_plots(improvement: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Kind against kind, one figure per env variant and agent: the probability that a
    run of the row's cell beats one of the column's, starred where its 95% interval
    excludes 0.5."""
    paths: list[Path] = []
    if improvement.empty:
        return paths
    for (env_id, env_kwargs, agent), pairs in improvement.groupby(
        ["env_id", "env_kwargs", "agent"], sort=True
    ):
        estimate, clear = improvement_matrix(pairs)
        labels = estimate.map(lambda v: "" if pd.isna(v) else f"{v:.2f}") + clear.map(
            lambda c: "*" if c else ""
        )
        size = len(estimate)
        fig, ax = plt.subplots(figsize=(2.0 + 0.55 * size, 1.2 + 0.45 * size))
        sns.heatmap(
            estimate.astype(float),
            annot=labels.to_numpy(),
            fmt="",
            cmap="RdBu",
            vmin=0.0,
            vmax=1.0,
            center=0.5,
            cbar_kws={"label": "P(row's run beats column's run)"},
            linewidths=0.5,
            annot_kws={"fontsize": 7},
            ax=ax,
        )
        ax.set_xlabel("memory (BPTT length)")
        ax.set_ylabel("memory (BPTT length)")
        ax.set_title(
            f"{_variant(env_id, env_kwargs)} · {agent}: probability of improvement\n"
            "* = its 95% bootstrap interval excludes 0.5"
        )
        paths += _save(fig, out, improvement_name(suite, env_id, env_kwargs, agent))
    return paths


def plot_popgym_reference(table: pd.DataFrame, path: Path) -> Path:
    """A panel per env of ``table`` (:func:`popgym_reference.comparison_table`): our MMER
    per kind with its 95% interval, and POPGym's mean +- its standard deviation where
    the reference has it. Written to ``path`` (an SVG)."""
    envs = sorted({(r.env, r.difficulty) for r in table.itertuples()})
    cols = max(1, min(3, len(envs)))
    rows = max(1, -(-len(envs) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False, sharey=True)
    for ax, (env, difficulty) in zip(axes.flat, envs, strict=False):
        part = table[(table["env"] == env) & (table["difficulty"] == difficulty)]
        kinds = _kind_order(set(part["memory"]))
        part = part.set_index("memory").loc[kinds]
        x = np.arange(len(kinds))
        low = (part["mmer_mean"] - part["mmer_ci_low"]).fillna(0).clip(lower=0)
        high = (part["mmer_ci_high"] - part["mmer_mean"]).fillna(0).clip(lower=0)
        ax.errorbar(x - 0.12, part["mmer_mean"], yerr=[low, high], fmt="o", label="ours (95% CI)")
        if part["popgym_mmer_mean"].notna().any():
            ax.errorbar(
                x + 0.12,
                part["popgym_mmer_mean"],
                yerr=part["popgym_mmer_std"].fillna(0),
                fmt="s",
                label="POPGym (mean +- sd)",
            )
        else:
            ax.text(
                0.5, 0.04, "POPGym: no published number read", transform=ax.transAxes, ha="center", fontsize=8
            )
        ax.set_xticks(x, kinds, rotation=45, ha="right", fontsize=8)
        ax.set_title(f"{env} {difficulty}", fontsize=10)
        ax.set_ylim(-1.05, 1.05)
        ax.axhline(0, color="0.85", lw=0.8, zorder=0)
    for ax in list(axes.flat)[len(envs) :]:
        ax.set_visible(False)
    axes.flat[0].set_ylabel("MMER")
    axes.flat[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _save(fig, path.parent, path.stem)[0]


def forgetting_name(suite: str, memory: str) -> str:
    """The file name, without suffix, of one memory kind's forgetting curves."""
    return f"{suite}_forgetting_{_slug(memory)}"


def _palette() -> list[tuple[float, float, float]]:
    return [*sns.color_palette("tab10"), (0.25, 0.25, 0.25), *sns.color_palette("Dark2")[:7]]


def forgetting_plots(runs: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Forgetting curves, one figure per memory kind: the cue probe's accuracy
    (``cue_probe_at_25`` .. ``cue_probe_accuracy``, mean over seeds) against the steps
    since the cue, a panel per env and agent, a line per env variant and BPTT length,
    chance dashed. Kinds without probed runs get no figure."""
    columns = {
        0.25: "cue_probe_at_25",
        0.5: "cue_probe_at_50",
        0.75: "cue_probe_at_75",
        1.0: "cue_probe_accuracy",
    }
    probed = runs[(runs["status"] == "ok") & runs["cue_probe_accuracy"].notna()]
    paths: list[Path] = []
    for memory in _kind_order(set(probed["memory"])):
        data = probed[probed["memory"] == memory]
        panels = list(data.groupby(["env_id", "agent"], sort=True))
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
        for ax, ((env_id, agent), group) in zip(axes[0], panels, strict=True):
            lines = group.groupby(["horizon", "env_kwargs", "bptt_length"], dropna=False, sort=True)
            colours = sns.color_palette("viridis", len(lines))
            for colour, ((horizon, _, bptt), line) in zip(colours, lines, strict=True):
                steps = [np.floor(f * int(horizon) + 0.5) for f in columns]
                means = [float(line[c].mean()) for c in columns.values()]
                label = f"horizon {int(horizon)}" + ("" if pd.isna(bptt) else f", bptt {int(bptt)}")
                ax.plot(steps, means, marker="o", color=colour, label=label)
            for chance in sorted(set(group["cue_probe_chance"].dropna())):
                ax.axhline(chance, color="grey", ls="--", lw=1)
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("steps since the cue")
            ax.set_ylabel("cue probe accuracy (mean over seeds)")
            ax.set_title(f"{env_id} · {agent} · {memory}")
            ax.legend(fontsize=7, loc="lower left")
        fig.suptitle("Forgetting: how well the cue reads from the memory on the way to the decision", y=1.02)
        paths += _save(fig, out, forgetting_name(suite, memory))
    return paths


def generalisation_name(suite: str, env_id: str, agent: str) -> str:
    """The file name, without suffix, of one env's horizon-generalisation figure."""
    return f"{suite}_generalisation_{_slug(env_id)}_{agent}"


def generalisation_plots(cells: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Horizon generalisation, one figure per env and agent: the mean return (95% t
    interval) against the test horizon over the training horizon (1, 2, 4), a panel per
    training horizon, a line per cell. Points where the kind cannot see the cue by
    construction (``generalisation_limited_by``) are hollow. Envs without analysed cells
    get no figure."""
    data = cells[cells["return_at_2x"].notna() | cells["return_at_4x"].notna()]
    paths: list[Path] = []
    colours = dict(zip(MEMORY_KINDS, _palette(), strict=False))
    for (env_id, agent), figure in data.groupby(["env_id", "agent"], sort=True):
        panels = list(figure.groupby(["horizon", "env_kwargs"], sort=True))
        fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.2), squeeze=False)
        for ax, ((horizon, _), group) in zip(axes[0], panels, strict=True):
            for cell in group.itertuples():
                means = [cell.return_mean, cell.return_at_2x, cell.return_at_4x]
                lows = [cell.return_ci_low, cell.return_at_2x_ci_low, cell.return_at_4x_ci_low]
                highs = [cell.return_ci_high, cell.return_at_2x_ci_high, cell.return_at_4x_ci_high]
                means, lows, highs = (np.array(v, dtype=float) for v in (means, lows, highs))
                label = cell.memory + (
                    "" if pd.isna(cell.bptt_length) else f" (bptt {int(cell.bptt_length)})"
                )
                limited = cell.generalisation_limited_from
                if cell.generalisation_limited_by:
                    label += f", {cell.generalisation_limited_by} from {int(limited)}x"
                colour = colours.get(cell.memory)
                ax.errorbar(
                    [1, 2, 4],
                    means,
                    yerr=[means - np.nan_to_num(lows, nan=means), np.nan_to_num(highs, nan=means) - means],
                    color=colour,
                    marker="o",
                    capsize=3,
                    label=label,
                )
                if cell.generalisation_limited_by:
                    hollow = [f for f in (2, 4) if f >= int(limited)]
                    ax.scatter(
                        hollow,
                        [means[[1, 2, 4].index(f)] for f in hollow],
                        s=60,
                        facecolors="white",
                        edgecolors=colour,
                        zorder=3,
                    )
            ax.set_xscale("log", base=2)
            ax.set_xticks([1, 2, 4], ["1", "2", "4"])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel("test horizon / training horizon")
            ax.set_ylabel("return (mean, 95% interval)")
            ax.set_title(f"trained at horizon {int(horizon)}")
            ax.legend(fontsize=6, loc="best")
        fig.suptitle(f"{env_id} · {agent}: the final weights at longer horizons", y=1.02)
        fig.tight_layout()  # keeps each panel's y label clear of its neighbour
        paths += _save(fig, out, generalisation_name(suite, env_id, agent))
    return paths


def credit_name(suite: str, env_id: str, agent: str) -> str:
    """The file name, without suffix, of the credit heatmaps of one env and agent."""
    return f"{suite}_credit_{_slug(env_id)}_{agent}"


def _steps_text(steps: float) -> str:
    if pd.isna(steps):
        return "-"
    return f"{steps / 1e6:.1f}M" if steps >= 1e6 else f"{steps / 1e3:.0f}k"


def credit_heatmaps(credit: pd.DataFrame, suite: str, out: Path) -> list[Path]:
    """Memory length (rows) against credit length (columns), a panel per kind, one figure
    per env and agent (:func:`~pomdp_bench.reporting.credit.credit_frame`'s table).

    Colour is the solve rate; each cell is annotated with it and the Kaplan-Meier median
    steps to solve ("-": fewer than half the runs solved).
    """
    paths: list[Path] = []
    for (env_id, agent), group in credit.groupby(["env_id", "agent"], sort=True):
        kinds = _kind_order(set(group["memory"]))
        rows = sorted({int(v) for v in group["memory_length"]})
        columns = sorted({int(v) for v in group["credit_length"]})
        fig, axes = plt.subplots(
            1,
            len(kinds),
            figsize=(0.6 + 1.0 * len(columns) * len(kinds) + 0.6 * len(kinds), 3.4),
            squeeze=False,
        )
        for i, (ax, memory) in enumerate(zip(axes[0], kinds, strict=True)):
            kind = group[group["memory"] == memory].drop_duplicates(["memory_length", "credit_length"])
            table = kind.set_index(["memory_length", "credit_length"])
            rate = table["solved_fraction"].unstack().reindex(index=rows, columns=columns)
            steps = table["steps_to_solve"].unstack().reindex(index=rows, columns=columns)
            labels = (rate.map(lambda v: f"{v:.1f}") + "\n" + steps.map(_steps_text)).where(rate.notna(), "")
            sns.heatmap(
                rate.astype(float),
                annot=labels.to_numpy(),
                fmt="",
                cmap="RdYlGn",
                vmin=0.0,
                vmax=1.0,
                cbar=i == len(kinds) - 1,
                cbar_kws={"label": "solve rate"},
                linewidths=0.5,
                annot_kws={"fontsize": 8},
                ax=ax,
            )
            ax.set_title(memory)
            ax.set_xlabel("credit length (reward delay)")
            ax.set_ylabel("memory length (cue to answer)" if i == 0 else "")
        fig.suptitle(f"{env_id} · {agent}: solve rate and median steps to solve", y=1.04)
        paths += _save(fig, out, credit_name(suite, env_id, agent))
    return paths


def all_figures(
    runs: pd.DataFrame,
    curves: pd.DataFrame,
    cells: pd.DataFrame,
    horizon: pd.DataFrame,
    suite: str,
    out: Path,
    improvement: pd.DataFrame | None = None,
    credit: pd.DataFrame | None = None,
) -> list[Path]:
    """Every figure of one suite, written into ``out`` (its own folder: the figures of
    an earlier report of the suite that are not rewritten are removed)."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f"{suite}_*{FIGURE_SUFFIX}"):
        stale.unlink()
    paths = heatmaps(cells, suite, out) + learning_curves(runs, curves, cells, suite, out)
    if not horizon.empty and horizon["horizons_tried"].str.contains(";").any():
        paths += horizon_plot(horizon, suite, out)
        paths += solve_cost_plot(cells[~pays_late(cells)], suite, out)
    if improvement is not None:
        paths += improvement_plots(improvement, suite, out)
    paths += forgetting_plots(runs, suite, out) + generalisation_plots(cells, suite, out)
    if credit is not None and not credit.empty:
        paths += credit_heatmaps(credit, suite, out)
    return paths


__all__ = [
    "FIGURE_SUFFIX",
    "all_figures",
    "credit_heatmaps",
    "credit_name",
    "forgetting_name",
    "forgetting_plots",
    "generalisation_name",
    "generalisation_plots",
    "heatmap_name",
    "heatmaps",
    "horizon_name",
    "horizon_plot",
    "improvement_matrix",
    "improvement_name",
    "improvement_plots",
    "learning_curves",
    "solve_cost_name",
    "solve_cost_plot",
]
