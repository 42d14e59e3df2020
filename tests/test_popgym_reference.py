"""Our popgym cells beside POPGym's published MMER: the reference file's checks, the
side-by-side table, and Kendall's tau on simulated tables whose truth is known."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pomdp_bench.reporting.popgym_reference import (
    KIND_OF_MODEL,
    REFERENCE_COLUMNS,
    comparison_table,
    kendall_tau,
    read_reference,
    split_env_id,
    write_comparison,
)

KINDS = ["none", "framestack", "gru", "lstm", "lru", "linear_attention"]
MODEL_OF = {k: m for m, k in KIND_OF_MODEL.items()}


def _cells(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = []
    for env, values in scores.items():
        for kind, value in zip(KINDS, values, strict=True):
            rows.append(
                {
                    "env_id": f"popgym-{env}Easy-v0",
                    "memory": kind,
                    "n_seeds": 5,
                    "mmer_mean": value,
                    "mmer_ci_low": value - 0.1,
                    "mmer_ci_high": value + 0.1,
                    "return_mean": value,
                }
            )
    return pd.DataFrame(rows)


def _reference(scores: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        (env, "Easy", MODEL_OF[kind], value, 0.05, 3, "simulated")
        for env, values in scores.items()
        for kind, value in zip(KINDS, values, strict=True)
    ]
    return pd.DataFrame(rows, columns=list(REFERENCE_COLUMNS))


def test_env_ids_split_into_popgyms_env_and_difficulty() -> None:
    assert split_env_id("popgym-RepeatFirstEasy-v0") == ("RepeatFirst", "Easy")
    assert split_env_id("popgym-NoisyPositionOnlyCartPoleHard-v0") == ("NoisyPositionOnlyCartPole", "Hard")
    assert split_env_id("TMaze-v1") is None


def test_the_table_puts_theirs_beside_ours_and_leaves_unread_cells_empty() -> None:
    scores = {"RepeatFirst": [-0.5, 0.0, 0.9, 0.8, 0.7, 0.6]}
    reference = _reference(scores).iloc[:-1]  # FART not read
    table = comparison_table(_cells(scores), reference)
    gru = table.set_index("memory").loc["gru"]
    assert gru["popgym_model"] == "GRU" and gru["popgym_mmer_mean"] == 0.9 and gru["difference"] == 0.0
    attention = table.set_index("memory").loc["linear_attention"]
    assert math.isnan(attention["popgym_mmer_mean"]) and attention["source"] == ""


def test_tau_is_one_for_the_same_order_and_minus_one_for_the_reverse() -> None:
    ours = {e: list(np.linspace(-0.5, 1.0, 6) + 0.01 * i) for i, e in enumerate(["A", "B", "C"])}
    same = comparison_table(_cells(ours), _reference(ours))
    assert kendall_tau(same)["tau"] == pytest.approx(1.0)
    assert kendall_tau(same)["tau_ci_low"] == pytest.approx(1.0)
    reverse = comparison_table(_cells(ours), _reference({e: v[::-1] for e, v in ours.items()}))
    assert kendall_tau(reverse)["tau"] == pytest.approx(-1.0)


def test_tau_of_unrelated_orders_is_near_zero_and_its_interval_covers_the_truth() -> None:
    """Independent scores: the true tau is 0. Over 40 simulated pairs of tables of 6 envs,
    tau averages near 0 and the bootstrap interval holds 0 in most of them."""
    rng = np.random.default_rng(0)
    taus, covered = [], 0
    for _ in range(40):
        ours = {f"Env{chr(65 + i)}": list(rng.normal(size=6)) for i in range(6)}
        theirs = {f"Env{chr(65 + i)}": list(rng.normal(size=6)) for i in range(6)}
        result = kendall_tau(comparison_table(_cells(ours), _reference(theirs)), n_bootstrap=150, seed=1)
        taus.append(result["tau"])
        covered += result["tau_ci_low"] <= 0 <= result["tau_ci_high"]
    assert abs(np.mean(taus)) < 0.15
    assert covered >= 32


def test_tau_needs_three_kinds_both_sides_have() -> None:
    scores = {"RepeatFirst": [-0.5, 0.0, 0.9, 0.8, 0.7, 0.6]}
    reference = _reference(scores).iloc[:2]
    assert math.isnan(kendall_tau(comparison_table(_cells(scores), reference))["tau"])


def test_a_reference_file_with_other_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ref.csv"
    path.write_text("env,model,mmer\nRepeatFirst,GRU,0.9\n")
    with pytest.raises(ValueError, match=r"columns \['env', 'model', 'mmer'\]; expected"):
        read_reference(path)
    _reference({"RepeatFirst": [0.0] * 6}).assign(difficulty="Impossible").to_csv(path, index=False)
    with pytest.raises(ValueError, match="difficulty \\['Impossible'\\]"):
        read_reference(path)


def test_the_shipped_reference_file_reads() -> None:
    shipped = Path(__file__).parents[1] / "leaderboards" / "reference" / "popgym2023_mmer.csv"
    assert tuple(read_reference(shipped).columns) == REFERENCE_COLUMNS


def test_report_writes_the_table_the_tau_and_the_figure(tmp_path: Path) -> None:
    scores = {"RepeatFirst": [-0.5, 0.0, 0.9, 0.8, 0.7, 0.6], "Autoencode": [-0.5, -0.4, 0.2, 0.1, 0.0, -0.1]}
    cells = _cells(scores).assign(suite="popgym")
    (tmp_path / "reference").mkdir()
    _reference(scores).to_csv(tmp_path / "reference" / "popgym2023_mmer.csv", index=False)
    paths = write_comparison(tmp_path, cells)
    assert [p.name for p in paths] == [
        "popgym_reference.csv",
        "popgym_reference_tau.csv",
        "popgym_reference.svg",
    ]
    assert pd.read_csv(paths[1])["tau"].iloc[0] == pytest.approx(1.0)
    assert write_comparison(tmp_path / "nothing", None) == []  # no popgym suite written


def test_the_cost_table_sums_worker_hours_per_env_and_kind() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "popgym_cost", Path(__file__).parents[1] / "scripts" / "popgym_cost.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runs = pd.DataFrame(
        {
            "env_id": ["popgym-RepeatFirstEasy-v0"] * 3,
            "memory": ["gru", "gru", "none"],
            "wall_seconds": [1800.0, 3600.0, 360.0],
            "timesteps": [1e6, 2e6, 5e5],
            "steps_per_second": [600.0, 600.0, 1500.0],
            "stop_reason": ["solved", "plateaued", "plateaued"],
        }
    )
    table = module.cost_table(runs).set_index("memory")
    assert table.loc["gru", "worker_hours"] == pytest.approx(1.5) and table.loc["gru", "runs"] == 2
    assert table.loc["gru", "stop_reasons"] == "plateaued 1;solved 1"
    assert table.loc["all", "worker_hours"] == pytest.approx(1.6)
    assert "| RepeatFirstEasy | gru | 2 | 1.50 |" in module.markdown(module.cost_table(runs))
