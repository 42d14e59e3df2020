"""What a user coming from SB3 and rl-zoo3 meets first: the README's Python section, the
tuned settings, SB3 habits, saving, and the CLI and report defaults."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from pomdp_bench import PPO, SAC, PPOSettings, SACSettings
from pomdp_bench.envs.cards import is_shipped, load_cards
from pomdp_bench.harness import run
from pomdp_bench.harness.spec import RunResult, RunSpec
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import leaderboard, report

ROOT = Path(__file__).resolve().parent.parent


def test_the_readmes_python_section_runs(tmp_path, monkeypatch) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Training from Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    assert "PPO.from_tuned" in code and "model.predict(obs, state, episode_start" in code
    monkeypatch.chdir(tmp_path)
    exec(compile(code.replace("30_000", "1_024"), "README.md", "exec"), {})  # a small budget
    assert (tmp_path / "ppo_tmaze.zip").is_file()


@pytest.mark.parametrize(("agent", "settings_class"), [("ppo", PPOSettings), ("sac", SACSettings)])
def test_every_shipped_id_has_tuned_settings(agent, settings_class) -> None:
    for env_id in filter(is_shipped, load_cards()):  # other tests may add cards of their own
        settings_class.tuned(env_id)  # raises if agents/<agent>.yaml lacks the id
    with pytest.raises(ValueError, match=r"no tuned .* settings for 'Nope-v0'; it has \[.*'TMaze-v1'"):
        settings_class.tuned("Nope-v0")


def test_from_tuned_uses_the_tuned_entry_and_keywords_override_it() -> None:
    tuned = yaml.safe_load((ROOT / "agents" / "ppo.yaml").read_text())["TMazeActive-v1"]
    model = PPO.from_tuned("TMazeActive-v1", "gru", env_kwargs={"corridor_length": 3}, n_epochs=2)
    assert model.settings.n_steps == tuned["n_steps"] and model.settings.n_epochs == 2
    assert PPO("TMazeActive-v1", "gru", env_kwargs={"corridor_length": 3}).settings.n_steps == 128  # defaults


@pytest.mark.parametrize(
    ("policy", "answer"), [("MlpLstmPolicy", 'memory="lstm"'), ("MlpPolicy", "memory=None")]
)
def test_an_sb3_policy_string_gets_the_equivalent_call(policy, answer) -> None:
    with pytest.raises(TypeError, match=rf"use PPO\('TMaze-v1', {re.escape(answer)}\)"):
        PPO(policy, "TMaze-v1")
    with pytest.raises(TypeError, match="no equivalent here"):
        SAC("CnnPolicy", "TMaze-v1")


def test_save_adds_zip_creates_folders_and_load_takes_both_names(tmp_path) -> None:
    model = PPO("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, n_envs=2, n_steps=8)
    written = model.save(tmp_path / "new" / "folder" / "model")
    assert written == tmp_path / "new" / "folder" / "model.zip" and written.is_file()
    obs = np.eye(2, dtype=np.float32)
    expected = model.predict(obs, deterministic=True)[0]
    for name in ("model", "model.zip"):
        loaded = PPO.load(tmp_path / "new" / "folder" / name)
        np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], expected)
    assert model.save(tmp_path / "agent.pt") == tmp_path / "agent.pt"  # a suffix stays


def test_a_bare_run_lists_the_suites_and_starts_nothing(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run.main([]) == 2
    captured = capsys.readouterr()
    assert "memory" in captured.out and "choose a suite" in captured.err
    assert not any(tmp_path.iterdir())


def test_a_dry_run_writes_nothing(tmp_path, capsys) -> None:
    assert run.main(["--suite", "smoke", "--dry-run", "--results", str(tmp_path / "store")]) == 0
    assert "estimated time" in capsys.readouterr().out
    assert not (tmp_path / "store").exists()


def _store_with(tmp_path: Path, seeds: int) -> Path:
    with ResultStore(tmp_path) as store:
        specs = []
        for seed in range(seeds):
            spec = RunSpec("CueRecall-v0", {"delay": 2}, "ppo", {"kind": "gru"}, None, seed, 1000, horizon=3)
            store.write(
                spec, RunResult(status="ok", final_return=1.0, final_returns=[1.0] * 8, wall_seconds=1.0)
            )
            specs.append(spec)
        store.link("mine", specs)
    return tmp_path


def test_report_writes_beside_the_store_refuses_unknown_suites_and_keeps_project_notes_out(tmp_path) -> None:
    store = _store_with(tmp_path / "results", seeds=5)
    report.main(["--results", str(store)])
    written = store / "leaderboards"
    assert (written / "mine.csv").is_file()
    text = (written / "README.md").read_text()
    assert "publish_leaderboards.sh" not in text and "Runs stored before version 0.2.0" not in text
    with pytest.raises(SystemExit):
        report.main(["--results", str(store), "--suite", "nosuch"])


def test_a_cell_with_too_few_seeds_gets_no_verdict_and_a_warning(tmp_path) -> None:
    store = _store_with(tmp_path, seeds=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report.write_reports(store, tmp_path / "out")
    assert any("fewer than 5 seeds" in str(w.message) for w in caught)
    cells = pd.read_csv(tmp_path / "out" / "mine.csv")
    assert not cells["enough_seeds"].iloc[0]
    assert pd.isna(cells["learned"].iloc[0]) and "beats_ceiling" not in cells.columns
    assert leaderboard.MIN_SEEDS == 5
    assert os.path.exists(tmp_path / "out" / "README.md")


def test_a_single_gym_env_is_taken_and_a_next_step_vector_env_gets_the_call_that_works() -> None:
    import gymnasium as gym

    model = PPO(gym.make("TMaze-v1", corridor_length=3), "gru", n_steps=8)
    assert (model.n_envs, model.env_id, model.env_kwargs["corridor_length"]) == (1, "TMaze-v1", 3)
    model.learn(16)
    assert model.evaluate(2).shape == (2,)
    vec = gym.make_vec("TMaze-v1", num_envs=2, vectorization_mode="sync")
    with pytest.raises(ValueError, match=r"make_vector_env\('TMaze-v1', 2\)"):
        PPO(vec, "gru")
    with pytest.raises(ValueError, match=r"a single gym\.Env gives one copy"):
        PPO(gym.make("TMaze-v1"), "gru", n_envs=4)


def test_predict_names_shapes_in_the_users_terms() -> None:
    model = PPO("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, n_envs=2, n_steps=8)
    with pytest.raises(
        ValueError, match=r"observation must be \[2\] \(one\) or \[B, 2\] \(a batch\), got \[3\]"
    ):
        model.predict(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"episode_start must hold one bool per observation \(4\)"):
        model.predict(np.zeros((4, 2), np.float32), episode_start=np.ones(3, bool))
    action, state = model.predict(np.zeros((4, 2), np.float32))
    assert action.shape == (4,) and state[0].shape == (4, 1, 64)  # batch first: [B, layers, H]


def test_a_suite_horizon_comes_from_the_card_and_a_contradiction_is_refused(tmp_path) -> None:
    from pomdp_bench.envs.cards import get_card
    from pomdp_bench.harness.suites import expand, load_suite

    assert get_card("TMaze-v1").horizon_for({"corridor_length": 5}) == 5
    assert get_card("CueRecall-v0").horizon_for({"delay": 7}) == 8
    assert get_card("TMazeActive-v1").horizon_for({"corridor_length": 5}) == 6
    suite = {
        "name": "h",
        "seeds": 1,
        "groups": [
            {
                "agent": "ppo",
                "memory": ["gru"],
                "envs": [{"id": "TMaze-v1", "env_kwargs": {"corridor_length": 5}, "bptt": [8]}],
            }
        ],
    }
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(suite))
    (spec,) = expand(load_suite(str(path)))
    assert spec.horizon == 5
    suite["groups"][0]["envs"][0]["horizon"] = 10
    path.write_text(yaml.safe_dump(suite))
    with pytest.raises(ValueError, match=r"horizon 10 contradicts the card's 5 \(corridor_length\)"):
        expand(load_suite(str(path)))


def test_verbose_logs_a_line_per_update_and_policy_kwargs_map_or_are_refused(capsys) -> None:
    from torch import nn

    kwargs = dict(
        net_arch=[16], activation_fn=nn.ReLU, lstm_hidden_size=32, n_lstm_layers=2, shared_lstm=True
    )
    model = PPO(
        "TMaze-v1", policy_kwargs=kwargs, env_kwargs={"corridor_length": 3}, n_envs=2, n_steps=8, verbose=1
    )
    s = model.settings
    assert (s.memory.kind, s.memory.hidden_size, s.memory.num_layers) == ("lstm", 32, 2)
    assert (s.activation, s.shared_memory, s.net_arch["pi"]) == ("relu", True, [16])
    model.learn(32)
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if "mean_return" in line]
    assert len(lines) >= 1 and lines[0].startswith("timesteps 16")
    with pytest.raises(TypeError, match=r"policy_kwargs \['features_extractor_class'\] have no equivalent"):
        PPO("TMaze-v1", policy_kwargs={"features_extractor_class": object})
    with pytest.raises(ValueError, match="set an lstm memory, but memory is 'gru'"):
        PPO("TMaze-v1", "gru", policy_kwargs={"lstm_hidden_size": 8})


def test_evaluate_runs_the_users_own_env_with_its_wrappers_and_load_asks_for_it(tmp_path) -> None:
    import gymnasium as gym

    from pomdp_bench.envs.make import make_vector_env

    def wrapped() -> gym.Env:
        return gym.wrappers.TransformReward(gym.make("TMaze-v1", corridor_length=3), lambda r: 10.0 * r)

    for env, n_envs in ((wrapped(), None), (wrapped, 2)):
        model = PPO(env, "gru", n_envs=n_envs, n_steps=8)
        model.learn(32)
        plain = make_vector_env("TMaze-v1", min(6, model.n_envs), corridor_length=3)
        np.testing.assert_allclose(model.evaluate(6), 10.0 * model.evaluate(6, env=plain), rtol=1e-6)
        path = model.save(tmp_path / "wrapped")
        with pytest.raises(ValueError, match="pass env="):
            PPO.load(path)
        loaded = PPO.load(path, env=wrapped)
        np.testing.assert_allclose(loaded.evaluate(6), model.evaluate(6), rtol=1e-6)
