"""The shell every agent shares (``agents/common/base.py``) and their settings (``agents/<agent>/settings.py``).

Run over every agent: settings validate and name what is valid, survive plain data
(and YAML), build the same agent as keywords do; saves round-trip, and the previous
save formats still load with the same behaviour (``tests/data``, written by the code
before the shell existed).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from pomdp_bench.agents import DQN, PPO, PQN, SAC, DQNSettings, PPOSettings, PQNSettings, SACSettings
from pomdp_bench.agents.common.schedules import ConstantSchedule, LinearSchedule
from pomdp_bench.data import data_dir
from pomdp_bench.envs.cards import get_card
from pomdp_bench.harness.suites import agent_hyperparams
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.tuned import count_episodes

DATA = Path(__file__).parent / "data"
SMALL = {
    PPO: dict(n_envs=2, n_steps=8, net_arch=[8]),
    SAC: dict(n_envs=1, burn_in=1, sequence_length=2, batch_size=4, learning_starts=10, net_arch=[8]),
    DQN: dict(n_envs=1, burn_in=1, sequence_length=2, batch_size=4, learning_starts=10, net_arch=[8]),
    PQN: dict(n_envs=2, n_steps=8, net_arch=[8]),
}
SETTINGS = {PPO: PPOSettings, SAC: SACSettings, DQN: DQNSettings, PQN: PQNSettings}


def _agent(agent_class, memory="gru", **changes):
    return agent_class(
        "TMaze-v1", memory, env_kwargs={"corridor_length": 3}, **{**SMALL[agent_class], **changes}
    )


@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_an_unknown_setting_is_a_type_error_listing_the_valid_ones(agent_class) -> None:
    with pytest.raises(TypeError, match=r"has no setting \['n_step'\]; valid settings: \[.*'seed'"):
        _agent(agent_class, n_step=8)
    with pytest.raises(TypeError, match="n_step"):
        SETTINGS[agent_class].make(n_step=8)


@pytest.mark.parametrize(
    ("settings_class", "changes", "error", "match"),
    [
        (PPOSettings, {"gamma": 1.5}, ValueError, "gamma must be <= 1.0, got 1.5"),
        (PPOSettings, {"n_steps": 0}, ValueError, "n_steps must be >= 1"),
        (PPOSettings, {"ortho_init": "yes"}, TypeError, "ortho_init must be a bool"),
        (PPOSettings, {"activation": "swish"}, ValueError, "activation='swish' is not one of"),
        (PPOSettings, {"learning_rate": "cosine"}, ValueError, "learning_rate='cosine' is not a schedule"),
        (PPOSettings, {"net_arch": {"policy": [8]}}, ValueError, "net_arch has unknown keys"),
        (PPOSettings, {"batch_size": 8, "num_minibatches": 2}, ValueError, "not both"),
        (SACSettings, {"tau": 0.0}, ValueError, "tau must be > 0.0"),
        (SACSettings, {"ent_coef": "auto_-1"}, ValueError, "ent_coef='auto_-1' is not valid"),
        (SACSettings, {"stored_state": True}, ValueError, "stored_state=True needs a memory"),
        (SACSettings, {"memory": "rnn"}, ValueError, "kind must be one of"),
        (SACSettings, {"gradient_steps": 0}, ValueError, "gradient_steps must be >= 1, or -1"),
        (DQNSettings, {"burn_in": 16}, ValueError, r"burn_in=16 must be shorter than sequence_length=16"),
        (DQNSettings, {"exploration_final_eps": 1.5}, ValueError, "exploration_final_eps must be <= 1.0"),
        (DQNSettings, {"exploration_initial_eps": -0.1}, ValueError, "initial_eps must be >= 0.0"),
        (DQNSettings, {"buffer_size": 100}, ValueError, r"less than one batch.*buffer_size >= 800"),
        (DQNSettings, {"align_to_episodes": True}, ValueError, "Use burn_in=0"),
        (DQNSettings, {"loss": "l1"}, ValueError, r"loss must be one of \['huber', 'mse'\]"),
        (DQNSettings, {"n_steps": 0}, ValueError, "n_steps must be >= 1"),
        (DQNSettings, {"stored_state": True}, ValueError, "stored_state=True needs a memory"),
        (PQNSettings, {"epsilon_end": 1.5}, ValueError, "epsilon_end must be <= 1.0"),
        (PQNSettings, {"q_lambda": -0.1}, ValueError, "q_lambda must be >= 0.0"),
    ],
)
def test_settings_refuse_bad_values_naming_them(settings_class, changes, error, match) -> None:
    with pytest.raises(error, match=match):
        settings_class.make(**changes)


def test_resolve_runs_the_checks_that_need_the_copies() -> None:
    settings = PPOSettings(n_steps=16, batch_size=8)
    resolved = settings.resolve(4)
    assert (resolved.n_envs, resolved.num_minibatches, resolved.batch_size, resolved.bptt_length) == (
        4,
        8,
        None,
        8,
    )
    with pytest.raises(ValueError, match="valid batch sizes"):
        PPOSettings(n_steps=10, batch_size=8).resolve(1)
    with pytest.raises(ValueError, match=r"learning_starts >= 22"):
        SACSettings(burn_in=2, sequence_length=7, learning_starts=20).resolve(2)
    with pytest.raises(ValueError, match=r"raise buffer_size to at least 10 \* n_envs = 20"):
        SACSettings(burn_in=2, sequence_length=7, buffer_size=15).resolve(2)


@pytest.mark.parametrize(
    "settings",
    [
        PPOSettings(
            memory={"kind": "transformer", "window": 4},
            learning_rate="lin_1e-3",
            clip_range=LinearSchedule(0.3, 0.1),
            clip_range_vf=0.2,
            net_arch={"encoder": [16], "pi": [8], "vf": [4]},
            batch_size=64,
            seed=7,
        ),
        SACSettings(
            memory="lstm", learning_rate={"linear": [1e-3, 1e-4]}, ent_coef="auto_0.2", stored_state=True
        ),
        SACSettings(ent_coef=0.05, target_entropy=-0.5, max_grad_norm=1.0, gradient_steps=-1),
        PQNSettings(
            memory="lstm", learning_rate="lin_1e-3", q_lambda=0.8, net_arch={"encoder": [8], "q": [4]}
        ),
    ],
)
def test_settings_survive_plain_data_and_yaml(settings) -> None:
    data = settings.to_dict()
    assert yaml.safe_load(yaml.safe_dump(data)) == data  # plain data only
    again = type(settings).from_dict(yaml.safe_load(yaml.safe_dump(data)))
    assert again == settings
    assert isinstance(again.memory, MemoryConfig)
    assert isinstance(again.learning_rate, (ConstantSchedule, LinearSchedule))


@pytest.mark.parametrize(
    ("agent_name", "settings_class"),
    [("ppo", PPOSettings), ("sac", SACSettings), ("dqn", DQNSettings), ("pqn", PQNSettings)],
)
def test_every_tuned_entry_is_valid_settings(agent_name, settings_class) -> None:
    table = yaml.safe_load((data_dir("agents") / f"{agent_name}.yaml").read_text())
    assert table
    for env_id, entry in table.items():
        entry = dict(entry)
        bands = entry.pop("horizons", None) or {0: {}}
        for bound, band in bands.items():  # each band laid over the entry, at its own horizon
            episode_length = (
                get_card(env_id).episode_length_for(_kwargs_with_horizon(env_id, bound)) if bound else None
            )
            settings = settings_class.make(**{**entry, **count_episodes(band, episode_length, env_id)})
            if settings.n_envs is not None:
                settings.resolve(settings.n_envs)
        assert env_id


def _kwargs_with_horizon(env_id: str, horizon: int) -> dict:
    """TMaze's horizon is its corridor length, cue recall's its delay + 1."""
    if env_id.startswith("TMaze"):
        return {"corridor_length": max(horizon, 1)}
    if env_id.startswith("CueRecall"):
        return {"delay": max(horizon - 1, 1)}
    return {}


def test_horizon_bands_choose_the_settings_by_the_env_kwargs_horizon() -> None:
    entry = yaml.safe_load((data_dir("agents") / "ppo.yaml").read_text())["TMaze-v1"]
    bands = entry["horizons"]
    bounds = sorted(bands)
    assert len(bounds) >= 3

    def expected(bound: int, corridor: int) -> int:  # a band's n_steps at this corridor
        return count_episodes({**entry, **bands[bound]}, corridor + 1)["n_steps"]

    for bound in bounds:
        assert PPOSettings.tuned("TMaze-v1", {"corridor_length": bound}).n_steps == expected(bound, bound)
    corridor = bounds[1] + 1  # between two bands: the smallest that covers it
    between = PPOSettings.tuned("TMaze-v1", {"corridor_length": corridor})
    assert between.n_steps == expected(bounds[2], corridor)
    beyond = PPOSettings.tuned("TMaze-v1", {"corridor_length": 2 * bounds[-1]}, n_epochs=1)
    assert beyond.n_steps == expected(bounds[-1], 2 * bounds[-1]) and beyond.n_epochs == 1
    model = PPO.from_tuned("TMaze-v1", "gru", env_kwargs={"corridor_length": corridor})
    assert model.settings.n_steps == expected(bounds[2], corridor)
    assert agent_hyperparams("ppo", "TMaze-v1", {"corridor_length": corridor})["n_steps"] == expected(
        bounds[2], corridor
    )


def test_bands_count_in_whole_episodes() -> None:
    # Corridor 15 falls in the corridor-20 band: 4 episodes of 16 steps, one a piece.
    settings = PPOSettings.tuned("TMaze-v1", {"corridor_length": 15})
    assert (settings.n_steps, settings.bptt_length) == (64, 16)
    settings = PPOSettings.tuned("CueRecall-v0", {"delay": 100})  # beyond the largest band
    assert (settings.n_steps, settings.bptt_length) == (2 * 102, 102)
    assert count_episodes({"n_steps": 32, "bptt_length": "T"}, 7) == {"n_steps": 32, "bptt_length": 7}
    with pytest.raises(ValueError, match="no episode_length_formula"):
        count_episodes({"n_steps": "4T"}, None, "MaskedCartPole-v0")
    with pytest.raises(ValueError, match=r"n_steps='4 T'.*number of steps or of episodes"):
        count_episodes({"n_steps": "4 T"}, 11)


@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_a_settings_object_and_keywords_build_the_same_agent(agent_class) -> None:
    from_keywords = _agent(agent_class, seed=3)
    settings = SETTINGS[agent_class].make(memory="gru", seed=3, **SMALL[agent_class])
    from_object = agent_class("TMaze-v1", env_kwargs={"corridor_length": 3}, settings=settings)
    assert from_object.settings == from_keywords.settings
    overridden = agent_class("TMaze-v1", env_kwargs={"corridor_length": 3}, settings=settings, seed=4)
    assert overridden.settings.seed == 4 and settings.seed == 3
    for a, b in zip(_parameters(from_keywords), _parameters(from_object), strict=True):
        assert torch.equal(a, b)


def _parameters(agent) -> list[torch.Tensor]:
    if isinstance(agent, (DQN, PQN)):
        return list(agent.q_net.parameters())
    modules = [agent.policy] if isinstance(agent, PPO) else [agent.actor, agent.critic]
    return [p for m in modules for p in m.parameters()]


@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_save_load_round_trip_keeps_settings_state_and_counters(agent_class, tmp_path) -> None:
    agent = _agent(agent_class, learning_rate="lin_1e-3")
    agent.learn(32)
    agent.save(tmp_path / "agent.pt")
    loaded = agent_class.load(tmp_path / "agent.pt", device="cpu")
    assert loaded.settings == agent.settings
    assert (loaded.num_timesteps, loaded.n_updates) == (agent.num_timesteps, agent.n_updates)
    assert (loaded.env_id, loaded.env_kwargs) == ("TMaze-v1", {"corridor_length": 3})
    obs = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(
        agent.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0]
    )
    np.testing.assert_array_equal(agent.evaluate(4), loaded.evaluate(4))


@pytest.mark.parametrize(
    ("agent_class", "file", "key"), [(PPO, "ppo_format2.pt", "ppo"), (SAC, "sac_format1.pt", "sac")]
)
def test_the_previous_save_format_still_loads_and_acts_the_same(agent_class, file, key) -> None:
    """The files were saved by the agents before the shared shell (commit 86c4c70):
    PPO format 2 and SAC format 1, one flat ``config`` dict."""
    expected = json.loads((DATA / "old_saves.json").read_text())[key]
    loaded = agent_class.load(DATA / file, device="cpu")
    assert loaded.settings.memory.kind == "gru" and loaded.settings.seed == 3
    assert loaded.num_timesteps == expected["num_timesteps"]
    action, _ = loaded.predict(np.asarray(expected["obs"], np.float32), deterministic=True)
    np.testing.assert_allclose(action, np.asarray(expected["action"]), rtol=0, atol=1e-6)


def test_a_save_of_another_agent_or_format_fails_naming_it(tmp_path) -> None:
    ppo = _agent(PPO)
    ppo.save(tmp_path / "ppo.pt")
    with pytest.raises(ValueError, match=r"holds a PPO agent; load it with PPO.load"):
        SAC.load(tmp_path / "ppo.pt")
    data = torch.load(tmp_path / "ppo.pt", weights_only=True)
    data["format"] = 99
    torch.save(data, tmp_path / "future.pt")
    with pytest.raises(
        ValueError, match=r"format 99, which PPO.load cannot read \(it reads PPO saves of formats 3 and 2\)"
    ):
        PPO.load(tmp_path / "future.pt")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="is not a pomdp_bench agent save"):
        PPO.load(tmp_path / "other.pt")


@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_predict_and_evaluate_share_one_policy_step(agent_class) -> None:
    """``predict`` carries the memory it returns; a start resets it; ``evaluate`` is
    repeatable and independent of ``predict`` calls made before it."""
    agent = _agent(agent_class)
    obs = np.eye(2, dtype=np.float32)
    a, state = agent.predict(obs, episode_start=np.array([True, True]), deterministic=True)
    assert a.shape == (2,) and state[0].shape == (2, 1, agent.settings.memory.hidden_size)
    again, _ = agent.predict(obs, state, np.array([True, True]), deterministic=True)
    np.testing.assert_array_equal(a, again)
    single, _ = agent.predict(obs[0], deterministic=True)
    assert single.shape == ()
    first = agent.evaluate(4)
    agent.predict(obs)
    np.testing.assert_array_equal(first, agent.evaluate(4))
    with pytest.raises(ValueError, match="n_episodes must be >= 1"):
        agent.evaluate(0)


# -- seeds, threads, help, load onto one env, devices (issue 51) --------------------
@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_seed_none_draws_from_numpys_global_generator_and_is_kept(agent_class) -> None:
    def run(global_seed: int):
        np.random.seed(global_seed)  # noqa: NPY002 (SB3's set_random_seed seeds this generator)
        return _agent(agent_class, seed=None).learn(32)

    a, b, c = run(5), run(5), run(6)
    assert isinstance(a.seed, int) and a.seed == a.settings.seed == b.seed != c.seed
    assert a.episode_log == b.episode_log
    for p, q in zip(_parameters(a), _parameters(b), strict=True):
        assert torch.equal(p, q)
    assert any(not torch.equal(p, q) for p, q in zip(_parameters(a), _parameters(c), strict=True))
    again = _agent(agent_class, seed=a.seed).learn(32)  # the kept seed repeats the run
    assert again.episode_log == a.episode_log


def test_seed_none_follows_sb3s_set_random_seed() -> None:
    set_random_seed = pytest.importorskip("stable_baselines3.common.utils").set_random_seed
    set_random_seed(11)
    first = _agent(PPO, seed=None).seed
    set_random_seed(11)
    assert _agent(PPO, seed=None).seed == first


def test_the_harness_gives_every_run_its_own_seed() -> None:
    from pomdp_bench.harness.spec import RunSpec
    from pomdp_bench.harness.training import agent_settings

    spec = RunSpec("TMaze-v1", TMAZE_KWARGS, "ppo", {"kind": "gru"}, None, 2, 64, hyperparams={"seed": None})
    assert agent_settings(spec).seed == spec.agent_seed() is not None


TMAZE_KWARGS = {"corridor_length": 3}


@pytest.mark.parametrize("agent_class", [PPO, SAC, DQN, PQN])
def test_num_threads_is_applied_process_wide_and_validated(agent_class) -> None:
    before = torch.get_num_threads()
    try:
        agent = _agent(agent_class, num_threads=2)
        assert torch.get_num_threads() == 2 and agent.settings.num_threads == 2
        torch.set_num_threads(3)
        agent.learn(16)  # learn applies it again
        assert torch.get_num_threads() == 2
        _agent(agent_class)  # the default: one thread, as the harness's workers
        assert torch.get_num_threads() == 1
        torch.set_num_threads(3)
        _agent(agent_class, num_threads=None).learn(16)  # None: torch's own choice stays
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
    for bad, error in ((0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match=r"num_threads must be .*\(or None: torch's own choice\)"):
            SETTINGS[agent_class].make(num_threads=bad)


@pytest.mark.parametrize("settings_class", [PPOSettings, SACSettings, DQNSettings, PQNSettings])
def test_help_shows_every_field_as_sb3s_param_lines(settings_class) -> None:
    import dataclasses
    import pydoc

    text = pydoc.render_doc(settings_class, renderer=pydoc.plaintext)
    for field in dataclasses.fields(settings_class):
        assert f":param {field.name}:" in settings_class.__doc__, field.name
        assert f":param {field.name}:" in text, field.name
    assert "Torch's intra-op threads" in text and "numpy's global generator" in text


@pytest.mark.parametrize("agent_class", [PPO, PQN])
def test_load_onto_a_single_env_fits_the_piece_length(agent_class, tmp_path) -> None:
    import gymnasium as gym

    agent = agent_class("TMaze-v1", "gru", env_kwargs=TMAZE_KWARGS, n_envs=8, n_steps=16, net_arch=[8])
    assert agent.settings.bptt_length == 16  # whole rollouts: 8 copies into 4 minibatches
    agent.save(tmp_path / "agent")
    with pytest.warns(
        UserWarning, match=r"bptt_length=16 does not fit the 1 copy .* loaded with bptt_length=4"
    ):
        loaded = agent_class.load(tmp_path / "agent", env=gym.make("TMaze-v1", **TMAZE_KWARGS))
    assert loaded.n_envs == 1 and loaded.settings.bptt_length == 4
    obs = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(
        agent.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0]
    )
    assert loaded.evaluate(2).shape == (2,)
    loaded.learn(16)  # and trains on


def test_load_onto_a_single_env_says_how_when_the_settings_cannot_fit(tmp_path) -> None:
    import gymnasium as gym

    agent = PPO("TMaze-v1", env_kwargs=TMAZE_KWARGS, n_envs=4, n_steps=2, num_minibatches=8, net_arch=[8])
    agent.save(tmp_path / "agent")
    with pytest.raises(
        ValueError, match=r"Load it with a factory .* for 4 copies, e\.g\. PPO\.load\(path, env=lambda"
    ):
        PPO.load(tmp_path / "agent", env=gym.make("TMaze-v1", **TMAZE_KWARGS))
    factory = PPO.load(tmp_path / "agent", env=lambda: gym.make("TMaze-v1", **TMAZE_KWARGS))
    assert factory.n_envs == 4


def test_a_missing_cuda_is_a_value_error_naming_the_valid_devices(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        ValueError, match=r"device='cuda' but CUDA is not available .*valid devices here: \['auto', 'cpu'"
    ):
        _agent(PPO, device="cuda")
    with pytest.raises(ValueError, match=r"device='gpu' is not a device torch knows; valid devices here"):
        _agent(PPO, device="gpu")
    assert _agent(PPO, device="auto").device == torch.device("cpu")
