"""The credit table and its model (reporting/credit.py), on simulated runs whose truth is known.

Runs are simulated from the model itself: log(steps to solve) = log(1e5) + log(r_m) m / 10 +
log(r_c) c / 10 + 0.5 G, with G a standard minimum-Gumbel draw (so steps are Weibull), at
memory lengths 6, 21, 51 and credit lengths 0, 20, 50, 5 runs a cell (the credit suite's
grid), censored at a cap of 1.5M steps.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pomdp_bench.reporting import plots
from pomdp_bench.reporting.credit import (
    CREDIT_COLUMNS,
    MODEL_COLUMNS,
    credit_frame,
    credit_model,
    fit_time_ratios,
    grows_with,
    pays_late,
)

MEMORY = (6, 21, 51)  # cue recall's horizon at delays 5, 20, 50
CREDIT = (0, 20, 50)
CAP = 1.5e6


def simulate(memory_ratio: float, credit_ratio: float, seed: int, n: int = 5) -> pd.DataFrame:
    """Runs of one kind on the credit grid: ``[memory_length, credit_length, steps, solved]``."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in MEMORY:
        for c in CREDIT:
            gumbel = np.log(-np.log(rng.random(n)))  # minimum-Gumbel: Weibull times
            log_t = np.log(1e5) + np.log(memory_ratio) * m / 10 + np.log(credit_ratio) * c / 10 + 0.5 * gumbel
            t = np.exp(log_t)
            rows += [(m, c, min(x, CAP), x <= CAP) for x in t]
    return pd.DataFrame(rows, columns=["memory_length", "credit_length", "steps", "solved"])


def fit(runs: pd.DataFrame) -> dict[str, float]:
    return fit_time_ratios(runs["steps"], runs["solved"], runs["memory_length"], runs["credit_length"])


@pytest.mark.parametrize(
    ("memory_ratio", "credit_ratio", "answer"),
    [(1.3, 1.0, "memory"), (1.0, 1.3, "credit"), (1.2, 1.2, "both"), (1.0, 1.0, "neither")],
)
def test_the_model_names_the_length_that_costs(memory_ratio: float, credit_ratio: float, answer: str) -> None:
    result = fit(simulate(memory_ratio, credit_ratio, seed=0))
    assert grows_with(result["memory_ratio_ci_low"], result["credit_ratio_ci_low"]) == answer
    assert result["memory_ratio"] == pytest.approx(memory_ratio, abs=0.08)
    assert result["credit_ratio"] == pytest.approx(credit_ratio, abs=0.08)


def test_intervals_cover_the_truth_at_their_rate() -> None:
    """Each 95% interval covers its true ratio in about 95% of simulated grids: at least 10
    of 12 (a correct interval falls below that with probability about 0.02)."""
    covers = {"memory": 0, "credit": 0}
    for seed in range(12):
        result = fit(simulate(1.15, 1.1, seed=100 + seed))
        for name, truth in (("memory", 1.15), ("credit", 1.1)):
            covers[name] += result[f"{name}_ratio_ci_low"] <= truth <= result[f"{name}_ratio_ci_high"]
    assert covers["memory"] >= 10 and covers["credit"] >= 10, covers


def test_censoring_at_the_cap_is_not_read_as_solving() -> None:
    """With a steep credit cost most runs at the longest credit length hit the cap; the
    fit still recovers the ratio instead of reading the cap as the time to solve."""
    runs = simulate(1.0, 1.8, seed=3)
    assert (~runs["solved"]).sum() >= 5  # the cap censors most runs at the longest credit length
    result = fit(runs)
    assert result["credit_ratio_ci_low"] <= 1.8 <= result["credit_ratio_ci_high"]
    naive = np.exp(np.polyfit(runs["credit_length"] / 10, np.log(runs["steps"]), 1)[0])
    assert naive < result["credit_ratio"]  # treating the cap as solved understates the cost


def test_too_few_solved_or_no_spread_is_refused() -> None:
    runs = simulate(1.0, 1.0, seed=1)
    with pytest.raises(ValueError, match=r"0 solved runs; the model needs at least 3"):
        fit_time_ratios(
            runs["steps"], np.zeros(len(runs), bool), runs["memory_length"], runs["credit_length"]
        )
    with pytest.raises(ValueError, match=r"the credit length takes one value \(0\); it must vary"):
        fit_time_ratios(runs["steps"], runs["solved"], runs["memory_length"], np.zeros(len(runs)))


@pytest.mark.parametrize(
    ("memory_low", "credit_low", "answer"),
    [
        (1.1, 1.2, "both"),
        (1.1, 0.9, "memory"),
        (0.8, 1.01, "credit"),
        (0.9, 1.0, "neither"),
        (np.nan, 1.2, ""),
    ],
)
def test_grows_with(memory_low: float, credit_low: float, answer: str) -> None:
    assert grows_with(memory_low, credit_low) == answer


def _kwargs(delay: int, reward_delay: int) -> str:
    kwargs = {"delay": delay} | ({"reward_delay": reward_delay} if reward_delay else {})
    return json.dumps(kwargs, sort_keys=True, separators=(",", ":"))


def runs_table(seed: int = 0) -> pd.DataFrame:
    """A runs table (the columns credit_model reads): gru pays for credit, lstm for memory,
    lru solves almost never, and `none` is trained at one credit length only."""
    parts = []
    for memory, ratios in (("gru", (1.0, 1.3)), ("lstm", (1.3, 1.0))):
        sim = simulate(*ratios, seed=seed)
        parts.append(sim.assign(memory=memory))
    never = simulate(3.0, 3.0, seed=seed).assign(memory="lru")
    never["solved"] = never["steps"] < 2e5
    parts.append(never)
    frame = pd.concat(parts, ignore_index=True)
    frame["steps"] = np.where(frame["solved"], frame["steps"], np.minimum(frame["steps"], CAP))
    out = pd.DataFrame(
        {
            "env_id": "CueRecall-v0",
            "env_kwargs": [
                _kwargs(m - 1, c) for m, c in zip(frame["memory_length"], frame["credit_length"], strict=True)
            ],
            "horizon": frame["memory_length"],
            "agent": "ppo",
            "memory": frame["memory"],
            "status": "ok",
            "stop_reason": np.where(frame["solved"], "solved", "cap"),
            "steps_to_solve": np.where(frame["solved"], frame["steps"], np.nan),
            "timesteps": np.where(frame["solved"], frame["steps"], CAP),
        }
    )
    plain = out[out["memory"] == "gru"].head(5).assign(memory="none", env_kwargs=_kwargs(5, 0), horizon=6)
    return pd.concat([out, plain], ignore_index=True)


def test_credit_model_per_kind() -> None:
    model = credit_model(runs_table()).set_index("memory")
    assert set(MODEL_COLUMNS) - {"memory"} == set(model.columns)
    assert "none" not in model.index  # one credit length: nothing to cross
    assert model.loc["gru", "grows_with"] == "credit"
    assert model.loc["lstm", "grows_with"] == "memory"
    assert model.loc["gru", "n_runs"] == 45
    lru = model.loc["lru"]
    if lru["n_solved"] < 3:
        assert lru["grows_with"] == "" and "solved runs" in lru["note"] and np.isnan(lru["memory_ratio"])


def test_credit_frame_keeps_the_crossed_kinds() -> None:
    cells = []
    for memory in ("gru", "lstm"):
        for m in MEMORY:
            for c in CREDIT:
                cells.append(
                    {
                        "env_id": "CueRecall-v0",
                        "env_kwargs": _kwargs(m - 1, c),
                        "horizon": m,
                        "memory": memory,
                    }
                )
    cells.append({"env_id": "CueRecall-v0", "env_kwargs": _kwargs(5, 0), "horizon": 6, "memory": "none"})
    cells.append({"env_id": "TMaze-v1", "env_kwargs": '{"corridor_length":5}', "horizon": 5, "memory": "gru"})
    frame = pd.DataFrame(cells).assign(agent="ppo", bptt_length=8, n_seeds=5, learned=True)
    for name in CREDIT_COLUMNS:
        if name not in frame:
            frame[name] = 0.5
    credit = credit_frame(frame)
    assert list(credit.columns) == list(CREDIT_COLUMNS)
    assert set(credit["memory"]) == {"gru", "lstm"} and len(credit) == 18
    gru = credit[credit["memory"] == "gru"]
    assert list(zip(gru["memory_length"], gru["credit_length"], strict=True)) == [
        (m, c) for m in MEMORY for c in CREDIT
    ]
    assert credit_frame(frame[frame["memory"] == "none"]).empty


def test_credit_heatmaps_draw_a_panel_per_kind(tmp_path) -> None:
    cells = []
    for memory in ("gru", "transformer"):
        for m in MEMORY:
            for c in CREDIT:
                cells.append(
                    {
                        "env_id": "CueRecall-v0",
                        "agent": "ppo",
                        "memory": memory,
                        "memory_length": m,
                        "credit_length": c,
                        "solved_fraction": 1.0 if c == 0 else 0.4,
                        "steps_to_solve": 1.2e5 if c == 0 else np.nan,
                    }
                )
    paths = plots.credit_heatmaps(pd.DataFrame(cells), "credit", tmp_path)
    assert [p.name for p in paths] == [
        f"{plots.credit_name('credit', 'CueRecall-v0', 'ppo')}{plots.FIGURE_SUFFIX}"
    ]
    svg = paths[0].read_text()
    assert "gru" in svg and "transformer" in svg and "120k" in svg


def test_pays_late_marks_the_variants_with_a_reward_delay() -> None:
    frame = pd.DataFrame(
        {
            "env_id": [
                "CueRecall-v0",
                "CueRecall-v0",
                "CueRecall-v0",
                "TMaze-v1",
                "popgym-RepeatFirstEasy-v0",
            ],
            "env_kwargs": [_kwargs(5, 0), _kwargs(5, 20), '{"delay":5,"reward_delay":0}', "{}", "{}"],
        }
    )
    assert pays_late(frame).tolist() == [False, True, False, False, False]
    assert pays_late(frame.iloc[:0]).tolist() == []


def test_the_credit_suite_crosses_the_lengths_with_pieces_that_cover_the_episode() -> None:
    from pomdp_bench.harness.suites import expand, load_suite

    specs = expand(load_suite("credit"), seeds=1)
    grid = {(s.memory_kind, s.env_kwargs["delay"], s.env_kwargs.get("reward_delay", 0)) for s in specs}
    kinds = ("gru", "lstm", "transformer", "lru")
    assert grid == {(k, d, r) for k in kinds for d in (5, 20, 50) for r in (0, 20, 50)}
    for s in specs:
        episode = s.env_kwargs["delay"] + 2 + s.env_kwargs.get("reward_delay", 0)
        assert s.bptt_length >= episode, s.label()  # memory never cuts the credit path
        if s.memory_kind == "transformer":
            assert s.memory["window"] == s.bptt_length, s.label()
