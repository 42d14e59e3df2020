"""Our horizon limits beside published ones (issue 49): the table comes from data only."""

from __future__ import annotations

import pandas as pd
import pytest

from pomdp_bench.reporting.references import COLUMNS, comparison_table, load_reference


def _horizon_rows(rows: list[tuple[str, str, float, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "suite": "s",
                "env_id": "TMaze-v1",
                "agent": agent,
                "memory": kind,
                "longest_horizon_learned": learned,
                "limit_censored": censored,
                "next_horizon": None,
                "next_outcome": "not tried",
            }
            for agent, kind, learned, censored in rows
        ]
    )


def test_the_table_puts_our_longest_limit_per_agent_beside_theirs() -> None:
    reference = {
        "env_id": "TMaze-v1",
        "rows": [
            {"model": "gpt", "agent": "DQN", "longest_horizon": 1500, "kinds": ["transformer"]},
            {"model": "lstm", "agent": "DQN", "longest_horizon": None, "kinds": ["lstm", "ffm"]},
        ],
    }
    ours = _horizon_rows(
        [
            ("ppo", "transformer", 20, True),
            ("pqn", "transformer", 1500, False),
            ("ppo", "transformer", 10, False),  # a shorter limit of the same agent (other pieces)
            ("ppo", "lstm", 50, False),
        ]
    )
    other_env = _horizon_rows([("ppo", "lstm", 5000, False)]).assign(env_id="CueRecall-v0")
    table = comparison_table(reference, [ours, other_env])
    assert list(table.columns) == list(COLUMNS)
    got = {(r.memory, r.agent): (r.longest_horizon_learned, r.agreement) for r in table.itertuples()}
    assert got[("transformer", "ppo")] == (20, "below theirs (ours a lower bound)")
    assert got[("transformer", "pqn")] == (1500, "reaches theirs")
    assert got[("lstm", "ppo")] == (50, "no published limit read")  # never the other env's 5000
    ffm = table[table["memory"] == "ffm"].iloc[0]
    assert ffm["agreement"] == "not run here" and pd.isna(ffm["agent"])


def test_the_shipped_reference_cites_its_source_and_guesses_nothing() -> None:
    reference = load_reference("ni2023")
    assert "Memory-RL" in reference["source"]
    for row in reference["rows"]:
        assert row["read_in"].strip()
        if row["longest_horizon"] is None:
            assert row["read_in"].startswith("not read")
    with pytest.raises(ValueError, match="unknown reference 'nope'; references: \\['ni2023'\\]"):
        load_reference("nope")
