"""Outside envs in the harness (issue 23): ids registered by another module (``import:``
or ``module:Id``), implicit and inline cards, named wrappers, ``--cards DIR``, and the
empirical ceiling with its ``lower_bound`` marking, checked on simulated cells."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from synthetic_rows import stored_row

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.envs.cards import card_data, implicit_card
from pomdp_bench.envs.wrappers import check_wrappers
from pomdp_bench.harness import run
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.stopping import solve_threshold
from pomdp_bench.harness.suites import env_source, expand, load_suite
from pomdp_bench.harness.training import execute
from pomdp_bench.reporting import leaderboard

HAS_POPGYM = importlib.util.find_spec("popgym") is not None
# Small PPO settings for a two-step task: a run of 3k steps takes a second or two.
TINY = "{n_envs: 8, n_steps: 16, num_minibatches: 2, n_epochs: 4, learning_rate: 3.0e-3, net_arch: [16]}"


def _suite(tmp_path: Path, envs: str, memory: str = "[none, gru]", extra: str = "") -> Path:
    path = tmp_path / "outside.yaml"
    path.write_text(
        f"name: outside\nseeds: 1\neval_episodes: 8\neval_points: 2\n{extra}"
        f"groups:\n  - agent: ppo\n    memory: {memory}\n    hyperparams: {TINY}\n    envs:\n{envs}"
    )
    return path


def test_env_source_reads_import_and_module_ids() -> None:
    assert env_source({"id": "popgym-RepeatFirstEasy-v0", "import": "popgym"}) == (
        "popgym-RepeatFirstEasy-v0",
        "popgym",
    )
    assert env_source({"id": "popgym:popgym-RepeatFirstEasy-v0"}) == ("popgym-RepeatFirstEasy-v0", "popgym")
    assert env_source({"id": "pomdp_bench:TMaze-v1"}) == ("TMaze-v1", None)
    with pytest.raises(ValueError, match="names module 'a' but import: 'b'"):
        env_source({"id": "a:X-v0", "import": "b"})


def test_an_outside_env_gets_an_implicit_card_that_its_runs_carry(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "      - {id: OutsideBit-v0, import: outside_env, steps: 3000, horizon: 1}\n"
        "      - {id: 'outside_env:OutsideBit-v0', card: {optimal_return: 1.0}, steps: 2000,"
        " env_kwargs: {}, hyperparams: {ent_coef: 0.01}}\n",
    )
    specs = expand(load_suite(str(path)))
    assert len(specs) == 4
    first = specs[0]
    assert first.env_id == "OutsideBit-v0" and first.env_import == "outside_env"
    assert first.make_id == "outside_env:OutsideBit-v0" and first.horizon == 1
    card = first.env_card()
    assert card.implicit and not card.optimum_known and not card.ceiling_known
    assert card.ff_ceiling_source == "empirical" and first.card["optimal_return"] is None
    given = specs[2].env_card()
    assert given.optimal_return == 1.0 and given.memory_horizon == 0 and specs[2].horizon == 0
    # The card travels in the spec (a worker needs nothing else) and counts in its key.
    assert RunSpec.from_dict(json.loads(json.dumps(first.to_dict()))).key() == first.key()
    # A stop rule cannot stop a run whose card knows no optimum: it trains to its cap.
    result = execute(RunSpec.from_dict({**first.to_dict(), "stop": {}}))
    assert result.status == "ok", result.error
    assert result.stop_reason == "cap" and result.timesteps >= 3000


def test_an_inline_card_gives_horizon_optimum_and_ceiling(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "      - {id: OutsideBit-v0, import: outside_env, steps: 1000, card: {memory_horizon: 1,"
        " optimal_return: 1.0, ff_ceiling: 0.5, ff_ceiling_source: analytic}}\n",
        memory="[none]",
    )
    (spec,) = expand(load_suite(str(path)))
    card = spec.env_card()
    assert spec.horizon == 1 and card.ceiling_known and card.ff_ceiling_source == "analytic"
    assert solve_threshold(card, spec.env_kwargs) == 0.75  # a stop rule can stop it as solved


def test_outside_env_mistakes_are_one_clear_line(tmp_path: Path) -> None:
    no_budget = _suite(tmp_path, "      - {id: OutsideBit-v0, import: outside_env}\n")
    with pytest.raises(ValueError, match="no card gives it a budget; give steps"):
        expand(load_suite(str(no_budget)))
    unregistered = _suite(tmp_path, "      - {id: NotRegistered-v0, steps: 10}\n")
    with pytest.raises(ValueError, match=r"no Gymnasium registration .*import: <module>"):
        expand(load_suite(str(unregistered)))
    missing = _suite(tmp_path, "      - {id: X-v0, import: no_such_module_here, steps: 10}\n")
    with pytest.raises(ValueError, match=r"cannot import 'no_such_module_here'.*pip install"):
        expand(load_suite(str(missing)))
    shipped = _suite(tmp_path, "      - {id: TMaze-v1, card: {optimal_return: 2.0}, steps: 10}\n")
    with pytest.raises(ValueError, match="has a card already"):
        expand(load_suite(str(shipped)))
    bad_wrapper = _suite(tmp_path, "      - {id: TMaze-v1, wrappers: [NoColon], steps: 10}\n")
    with pytest.raises(ValueError, match="'module:Name'"):
        load_suite(str(bad_wrapper))
    with pytest.raises(ValueError, match="unexpected keyword argument 'optimum'; card keys"):
        implicit_card("OutsideBit-v0", {"optimum": 1.0})


def test_named_wrappers_train_evaluate_and_reload(tmp_path: Path) -> None:
    """A text part is refused with the wrapper that removes it; named in a suite, that
    wrapper is applied to every copy in training and evaluation, and a save keeps it."""
    import outside_env  # noqa: F401  (registers the ids)

    with pytest.raises(TypeError, match="Text"):
        PPO("OutsideText-v0", "gru", n_envs=2)
    keep_bit = [{"path": "gymnasium.wrappers:FilterObservation", "kwargs": {"filter_keys": ["bit"]}}]
    path = _suite(
        tmp_path,
        f"      - {{id: OutsideText-v0, import: outside_env, steps: 2000, wrappers: {json.dumps(keep_bit)}}}\n",
        memory="[gru]",
    )
    (spec,) = expand(load_suite(str(path)))
    assert spec.env_wrappers == check_wrappers(keep_bit)
    result = execute(spec)
    assert result.status == "ok", result.error
    model = PPO("outside_env:OutsideText-v0", "gru", n_envs=2, env_wrappers=keep_bit)
    assert isinstance(model.raw_observation_space, gym.spaces.Dict)
    assert list(model.raw_observation_space.spaces) == ["bit"]
    model.learn(64)
    saved = model.save(tmp_path / "model")
    loaded = PPO.load(saved)
    assert loaded.env_wrappers == check_wrappers(keep_bit) and loaded.env_id == "outside_env:OutsideText-v0"
    np.testing.assert_array_equal(loaded.evaluate(4, seed=3), model.evaluate(4, seed=3))
    with pytest.raises(ValueError, match="env_wrappers only applies when env is an id"):
        PPO(lambda: gym.make("OutsideBit-v0"), env_wrappers=keep_bit)


def test_cards_folder_registers_cards_and_runs_carry_them(tmp_path: Path) -> None:
    folder = tmp_path / "cards"
    folder.mkdir()
    card = card_data(implicit_card("OutsideBitCarded-v0"))
    card.update(
        entry_point="outside_env:OutsideBitEnv",
        memory_horizon=1,
        optimal_return=1.0,
        ff_ceiling=0.5,
        ff_ceiling_source="analytic",
        budget={"total_timesteps": 2000},
        implicit=False,
    )
    (folder / "OutsideBitCarded-v0.yaml").write_text(json.dumps(card))
    path = _suite(tmp_path, "      - {id: OutsideBitCarded-v0}\n", memory="[none]")
    (spec,) = expand(load_suite(str(path)), cards=folder)
    assert spec.card is not None and spec.card["ff_ceiling"] == 0.5 and spec.total_timesteps == 2000
    assert spec.env_card().ff_ceiling_source == "analytic" and spec.horizon == 1
    gym.registry.pop("OutsideBitCarded-v0")  # a fresh worker: the card registers the id
    result = execute(RunSpec.from_dict({**spec.to_dict(), "stop": {}}))
    assert result.status == "ok", result.error
    with pytest.raises(SystemExit):
        run.main(["--suite", str(path), "--cards", str(tmp_path / "nope"), "--dry-run"])


def _cells(none_reasons: list[str], optimum: float | None, late: float = 0.0) -> pd.DataFrame:
    """Cells of an outside env from simulated runs: memory=none returns 0.5 (its stop
    reasons given), gru returns 0.95; every run's curve rose by ``late`` over its last
    quarter."""
    card = card_data(implicit_card("OutsideBit-v0", {} if optimum is None else {"optimal_return": optimum}))
    rng = np.random.default_rng(0)
    rows = []
    for kind, value, reasons in (("none", 0.5, none_reasons), ("gru", 0.95, ["cap"] * 5)):
        for seed, reason in enumerate(reasons):
            spec = RunSpec(
                "OutsideBit-v0", {}, "ppo", {"kind": kind}, None if kind == "none" else 4, seed, 1000,
                eval_episodes=50, horizon=0, stop=None if reason == "" else {}, card=card,
            )  # fmt: skip
            episodes = (rng.random(50) < value).astype(float).tolist()
            result = RunResult(
                status="ok",
                final_return=float(np.mean(episodes)),
                final_returns=episodes,
                curve=[(500, float(np.mean(episodes)) - late), (1000, float(np.mean(episodes)))],
                steps_per_second=1.0,
                wall_seconds=1.0,
                stop_reason=reason,
                timesteps=1000,
            )
            rows.append(stored_row(spec, result))
    return leaderboard.cells_frame(leaderboard.runs_frame(rows, "outside")).set_index("memory")


def test_empirical_ceiling_counts_only_where_memoryless_runs_converged() -> None:
    converged = _cells(["plateaued"] * 5, optimum=1.0)
    gru, none = converged.loc["gru"], converged.loc["none"]
    assert gru["ff_ceiling_source"] == "empirical" and gru["ff_ceiling"] == none["return_mean"]
    assert gru["pieces"] == "n/a" and math.isnan(gru["cue_reach"])  # the horizon is unknown
    assert bool(gru["learned"]) and not bool(none["learned"])
    assert gru["normalized_score"] == pytest.approx(
        (gru["return_mean"] - gru["ff_ceiling"]) / (1.0 - gru["ff_ceiling"])
    )
    # One memoryless run at its cap: the ceiling is only a lower bound, and no verdict.
    capped = _cells(["plateaued"] * 4 + ["cap"], optimum=1.0)
    assert set(capped["ff_ceiling_source"]) == {"lower_bound"}
    assert capped["learned"].isna().all()
    assert "lower bound" in capped.loc["gru", "verdict_note"]
    assert "set ff_ceiling in the env's card" in capped.loc["gru", "verdict_note"]  # the fix, named
    # Without a stop rule: converged when the curve's last-quarter rise is small.
    assert _cells([""] * 5, optimum=1.0, late=0.0).loc["gru", "ff_ceiling_source"] == "empirical"
    assert _cells([""] * 5, optimum=1.0, late=0.2).loc["gru", "ff_ceiling_source"] == "lower_bound"
    # No optimum: no score and no verdict, and the note says why.
    unknown = _cells(["plateaued"] * 5, optimum=None)
    assert unknown["normalized_score"].isna().all() and unknown["learned"].isna().all()
    assert "optimum unknown" in unknown.loc["gru", "verdict_note"]


def _simulated_verdict(rng: np.random.Generator, none_truth: float, gru_truth: float) -> bool:
    """The gru cell's verdict in one simulated suite: 5 seeds of 20 binary episodes per
    cell, each episode won with the cell's true probability; memory=none converged."""
    card = card_data(implicit_card("OutsideBit-v0", {"optimal_return": 1.0}))
    rows = []
    for kind, truth in (("none", none_truth), ("gru", gru_truth)):
        for seed in range(5):
            spec = RunSpec(
                "OutsideBit-v0", {}, "ppo", {"kind": kind}, None, seed, 1000, eval_episodes=20,
                stop={}, card=card,
            )  # fmt: skip
            episodes = (rng.random(20) < truth).astype(float).tolist()
            result = RunResult(
                status="ok", final_return=float(np.mean(episodes)), final_returns=episodes,
                steps_per_second=1.0, wall_seconds=1.0, stop_reason="plateaued", timesteps=1000,
            )  # fmt: skip
            rows.append(stored_row(spec, result))
    cells = leaderboard.cells_frame(leaderboard.runs_frame(rows, "sim")).set_index("memory")
    return bool(cells.loc["gru", "learned"])


def test_the_verdict_against_an_empirical_ceiling_on_simulated_suites() -> None:
    """Known truth: a memoryless gru cell (0.5, as memory=none) is almost never called
    learned against the empirical ceiling; one that uses memory (0.95) almost always."""
    rng = np.random.default_rng(1)
    assert sum(_simulated_verdict(rng, 0.5, 0.5) for _ in range(60)) <= 1
    assert sum(_simulated_verdict(rng, 0.5, 0.95) for _ in range(60)) >= 58


@pytest.mark.skipif(not HAS_POPGYM, reason="popgym is not installed (pip install -e .[popgym])")
def test_popgym_40k_suite_lists_expands_and_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    specs = expand(load_suite("popgym-40k"))
    # The first six kinds on all 16 envs, the later five on six of them; 5 seeds a cell.
    assert len({s.env_id for s in specs}) == 16 and len(specs) == (16 * 6 + 6 * 5) * 5
    assert all(s.env_import == "popgym" and s.env_card().optimal_return == 1.0 for s in specs)
    assert run.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "popgym-RepeatFirstEasy-v0" in listed and "outside envs" in listed
    assert run.main(["--suite", "popgym-40k", "--dry-run", "--out", str(tmp_path)]) == 0
    assert "630 of 630 runs to do" in capsys.readouterr().out
    spec = next(s for s in specs if s.env_id == "popgym-CountRecallEasy-v0" and s.memory_kind == "gru")
    result = execute(RunSpec.from_dict({**spec.to_dict(), "total_timesteps": 4096}))
    assert result.status == "ok", result.error


@pytest.mark.skipif(not HAS_POPGYM, reason="popgym is not installed (pip install -e .[popgym])")
def test_popgym_suite_converges_with_popgyms_inputs_and_keeps_mmer() -> None:
    """The diagnostic envs at Easy, six kinds, 5 seeds; every run reads the previous action
    and the first-step flag, stops solved or plateaued, and keeps POPGym's training curve."""
    specs = expand(load_suite("popgym"))
    envs = {s.env_id for s in specs}
    assert envs == {
        f"popgym-{e}Easy-v0"
        for e in (
            "RepeatFirst",
            "RepeatPrevious",
            "Autoencode",
            "CountRecall",
            "PositionOnlyCartPole",
            "NoisyPositionOnlyCartPole",
        )
    }
    assert {s.memory_kind for s in specs} == {"none", "framestack", "gru", "lstm", "lru", "linear_attention"}
    assert len(specs) == 6 * 6 * 5
    assert all(s.stop is not None and s.env_wrappers[-1]["path"].endswith(":PreviousAction") for s in specs)
    assert all(s.env_card().ceiling_known and s.env_card().optimal_return == 1.0 for s in specs)
    spec = next(s for s in specs if s.env_id == "popgym-RepeatPreviousEasy-v0" and s.memory_kind == "gru")
    result = execute(RunSpec.from_dict({**spec.to_dict(), "total_timesteps": 70_000}))
    assert result.status == "ok", result.error
    assert result.train_curve and result.train_curve[0][0] == 65_536


@pytest.mark.skipif(not HAS_POPGYM, reason="popgym is not installed (pip install -e .[popgym])")
def test_a_popgym_family_or_difficulty_it_lacks_is_refused_with_what_it_has(tmp_path: Path) -> None:
    for bad in ("popgym-RepeatFirstImpossible-v0", "popgym-RepeatLastEasy-v0"):
        path = tmp_path / "bad.yaml"
        path.write_text(
            "name: bad\nseeds: 1\ngroups:\n  - agent: ppo\n    memory: [none]\n    steps: 1000\n    envs:\n"
            f"      - {{id: {bad}, import: popgym, card: {{optimal_return: 1.0}}}}\n"
        )
        with pytest.raises(
            ValueError,
            match=r"popgym registers no such env; its families: .*'popgym-RepeatFirst'.*\['Easy', 'Medium', 'Hard'\]",
        ):
            expand(load_suite(str(path)))
