"""Our horizon limits beside published ones (issue 49): the table comes from data only."""

from __future__ import annotations

import pandas as pd
import pytest

from pomdp_bench.reporting.references import COLUMNS, comparison_table, load_reference, markdown


def _horizon_rows(rows: list[tuple[str, str, float, bool]], pieces: str = "long") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "suite": "horizon",
                "env_id": "TMaze-v1",
                "agent": agent,
                "memory": kind,
                "pieces": pieces,
                "horizons_tried": ";".join(str(h) for h in (5, 10, 20, 50, 1500) if h <= max(learned, 5)),
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
            ("ppo", "lstm", 50, False),
        ]
    )
    short = _horizon_rows([("ppo", "transformer", 50, False)], pieces="short")  # not the answer's pieces
    other_env = _horizon_rows([("ppo", "lstm", 5000, False)]).assign(env_id="CueRecall-v0")
    other_suite = _horizon_rows([("ppo", "lstm", 1500, False)]).assign(suite="credit")  # not the ladder
    table = comparison_table(reference, [ours, short, other_env, other_suite])
    assert list(table.columns) == list(COLUMNS)
    got = {
        (r.memory, r.agent): (r.longest_horizon_learned, r.limit_text, r.agreement)
        for r in table.itertuples()
    }
    assert got[("transformer", "ppo")] == (20, "≥ 20", "below theirs (ours a lower bound)")
    assert got[("transformer", "pqn")] == (1500, "≥ 1500", "reaches theirs")
    assert got[("lstm", "ppo")] == (50, "≥ 50", "no published limit read")  # never the other env's 5000
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


def test_our_limit_is_the_answer_tables_text_never_a_bare_none() -> None:
    """A longer horizon learned above one not learned reads as the answer tables' bracket."""
    reference = {
        "env_id": "TMaze-v1",
        "rows": [{"model": "lstm", "agent": "DQN", "longest_horizon": 1500, "kinds": ["gru", "lstm"]}],
    }
    ours = pd.DataFrame(
        [
            {
                "suite": "horizon",
                "env_id": "TMaze-v1",
                "agent": "ppo",
                "memory": "gru",
                "pieces": "long",
                "horizons_tried": "5;10;20",
                "longest_horizon_learned": 0,
                "max_horizon_learned": 10,
                "horizon_note": "learned at 10 but not at 5",
                "limit_censored": True,
                "next_horizon": 5,
                "next_outcome": "plateaued",
            },
            {
                "suite": "horizon",
                "env_id": "TMaze-v1",
                "agent": "ppo",
                "memory": "lstm",
                "pieces": "long",
                "horizons_tried": "5;10",
                "longest_horizon_learned": 0,
                "max_horizon_learned": None,
                "horizon_note": None,
                "limit_censored": False,
                "next_horizon": 5,
                "next_outcome": "failed",
            },
        ]
    )
    table = comparison_table(reference, [ours])
    got = {r.memory: (r.limit_text, r.agreement) for r in table.itertuples()}
    assert got["gru"] == ("learned at 10, not at 5", "below theirs")
    assert got["lstm"] == ("none (tried 5…10)", "not learned here")
    lines = markdown(table).splitlines()
    assert "| `gru` | ppo | learned at 10, not at 5 | 5 | below theirs |" in lines[2]
    assert "| `lstm` | ppo | none (tried 5…10) | 5 | not learned here |" in lines[3]
