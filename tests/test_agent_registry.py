"""The agent registry (issue 48): agents describe themselves once, the harness looks them up.

A toy agent registered by a module outside the package (``tests/toy_agent.py``) runs a
one-cell suite end to end: expand, train in a worker process, store, leaderboard, and
tune's search space, with no harness change.
"""

from __future__ import annotations

import ast
from pathlib import Path

import optuna
import pandas as pd
import pytest

import pomdp_bench
from pomdp_bench.agents.registry import AgentEntry, agent_names, check_agent_name, get_agent, register_agent
from pomdp_bench.harness import run
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import expand, load_suite, suite_imports
from pomdp_bench.harness.tuning import sample_settings

HARNESS = Path(pomdp_bench.__file__).parent / "harness"
REPORTING = Path(pomdp_bench.__file__).parent / "reporting"


def test_shipped_agents_are_registered_with_their_classes() -> None:
    assert {"ppo", "sac", "sb3_ppo"} <= set(agent_names())
    assert get_agent("ppo").load_class().__name__ == "PPO"
    assert get_agent("sac").load_settings_class().__name__ == "SACSettings"
    assert get_agent("sac").sequence_field == "sequence_length"
    ppo = get_agent("ppo").settings({"n_steps": 16}, memory={"kind": "gru"}, seed=3, sequence_length=8)
    assert (ppo.bptt_length, ppo.seed, ppo.memory.kind) == (8, 3, "gru")


def test_unknown_and_malformed_agents_are_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown agent 'dqq'; registered agents: \['ppo', 'sac'"):
        get_agent("dqq")
    with pytest.raises(ValueError, match="unknown agent 'dqq'"):
        RunSpec("TMaze-v1", {}, "dqq", {"kind": "none"}, None, 0, 10)
    with pytest.raises(ValueError, match="'module:name'"):
        check_agent_name("a b:c")
    with pytest.raises(TypeError, match="agent name is a str"):
        check_agent_name(3)
    with pytest.raises(ValueError, match="import path 'module:Name'"):
        AgentEntry(name="x", agent_class="os.system('x')", settings_class="a:B")
    with pytest.raises(ValueError, match="already registered"):
        register_agent(AgentEntry(name="ppo", agent_class="a:B", settings_class="a:C"))
    with pytest.raises(ValueError, match="no tuning search space"):
        sample_settings(optuna.create_study().ask(), "sb3_ppo", 1)


def test_no_harness_module_names_an_agent() -> None:
    """No comparison with, or table keyed by, an agent's name in harness or reporting code
    (a default such as ``--agent ppo`` is fine)."""
    names = set(agent_names())
    found = []
    for path in [*HARNESS.glob("*.py"), *REPORTING.glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Constant) and side.value in names:
                        found.append(f"{path.name}:{node.lineno} compares with {side.value!r}")
                    if isinstance(side, ast.Tuple | ast.List | ast.Set) and any(
                        isinstance(e, ast.Constant) and e.value in names for e in side.elts
                    ):
                        found.append(f"{path.name}:{node.lineno} compares with a tuple of agents")
            if isinstance(node, ast.Dict):
                for key in node.keys:
                    if isinstance(key, ast.Constant) and key.value in names:
                        found.append(f"{path.name}:{node.lineno} keys a table by {key.value!r}")
                    if isinstance(key, ast.Tuple) and any(
                        isinstance(e, ast.Constant) and e.value in names for e in key.elts
                    ):
                        found.append(f"{path.name}:{node.lineno} keys a table by an agent")
    assert not found, found


def test_a_toy_agent_runs_a_suite_end_to_end(tmp_path: Path) -> None:
    suite = tmp_path / "toy.yaml"
    suite.write_text(
        "name: toy\nseeds: 2\neval_episodes: 20\neval_points: 2\n"
        "groups:\n  - agent: 'toy_agent:toy_tabular'\n    memory: [none]\n    envs:\n"
        "      - {id: OutsideBit-v0, import: outside_env, steps: 4000, card: {memory_horizon: 1,"
        " optimal_return: 1.0, ff_ceiling: 0.5, ff_ceiling_source: analytic}}\n"
    )
    assert suite_imports(load_suite(str(suite))) == ["outside_env", "toy_agent"]
    specs = expand(load_suite(str(suite)))
    assert [s.agent for s in specs] == ["toy_agent:toy_tabular"] * 2
    out = tmp_path / "results"
    code = run.main(["--suite", str(suite), "--results", str(out), "--workers", "1", "--no-report"])
    assert code == 0
    with ResultStore(out) as store:
        rows = store.rows("toy")
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["result"].get("error") for r in rows]
    # One step of memory is all this task needs: both seeds answer every episode right.
    assert all(r["result"]["final_return"] == 1.0 for r in rows)
    code = run.main(["--suite", str(suite), "--results", str(out), "--workers", "1"])
    assert code == 0
    table = pd.read_csv(out / "leaderboards" / "toy.csv")
    assert table["agent"].tolist() == ["toy_agent:toy_tabular"]
    assert table["return_mean"].iloc[0] == 1.0
    hp, hidden = sample_settings(optuna.create_study().ask(), "toy_agent:toy_tabular", 1)
    assert set(hp) == {"learning_rate", "epsilon"} and hidden == 0
    get_agent("toy_tabular").settings(hp)  # the sampled settings are valid
