"""SB3's logging and accessors on our agents (``agents/common/base.py``, ``sb3_habits.py``).

``tensorboard_log=`` writes TensorBoard event files through SB3's ``Logger``, under
SB3's keys and run folders; ``learn``'s ``log_interval``, ``tb_log_name`` and
``reset_num_timesteps`` behave as SB3's; ``get_parameters``/``set_parameters`` and
``get_env``/``set_env`` are SB3's. An SB3 keyword with no meaning here names what has.
"""

from __future__ import annotations

import importlib.util

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")
pytest.importorskip("tensorboard")

from stable_baselines3.common.logger import configure
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from pomdp_bench.agents import DQN, PPO, PQN, SAC
from pomdp_bench.envs.make import make_vector_env

TMAZE = {"corridor_length": 3}
SMALL = {
    PPO: dict(n_envs=2, n_steps=8, net_arch=[8]),
    PQN: dict(n_envs=2, n_steps=8, net_arch=[8]),
    SAC: dict(n_envs=2, burn_in=1, sequence_length=2, batch_size=4, learning_starts=10, net_arch=[8]),
    DQN: dict(n_envs=2, burn_in=1, sequence_length=2, batch_size=4, learning_starts=10, net_arch=[8]),
}
COMMON = {"rollout/ep_rew_mean", "rollout/ep_len_mean", "time/fps"}
KEYS = {
    PPO: {
        "train/value_loss",
        "train/policy_gradient_loss",
        "train/entropy_loss",
        "train/approx_kl",
        "train/clip_fraction",
        "train/clip_range",
        "train/learning_rate",
    },
    PQN: {"train/loss", "rollout/exploration_rate", "train/learning_rate"},
    DQN: {"train/loss", "rollout/exploration_rate"},
    SAC: {"train/actor_loss", "train/critic_loss", "train/ent_coef"},
}


def _scalars(folder) -> dict[str, list[int]]:
    """Each scalar tag of the event files in ``folder`` with its steps."""
    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [e.step for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.mark.parametrize("agent_class", [PPO, PQN, DQN, SAC])
def test_tensorboard_files_hold_sb3s_keys(agent_class, tmp_path) -> None:
    model = agent_class("TMaze-v1", "gru", env_kwargs=TMAZE, tensorboard_log=tmp_path, **SMALL[agent_class])
    if agent_class in (PPO, PQN):
        model.learn(3 * 16)
        steps = [16, 32, 48]
    else:  # a history entry (and a dump) every log_interval env steps
        model.learn(60, log_interval=20)
        steps = [20, 40, 60]
    assert [p.name for p in tmp_path.iterdir()] == [f"{agent_class.__name__}_1"]
    scalars = _scalars(tmp_path / f"{agent_class.__name__}_1")
    assert COMMON | KEYS[agent_class] <= set(scalars)
    assert scalars["time/fps"] == steps  # the dump's step is num_timesteps
    # SB3 keeps its counters out of TensorBoard
    assert not {"time/total_timesteps", "time/episodes", "train/n_updates"} & set(scalars)
    events = EventAccumulator(str(tmp_path / f"{agent_class.__name__}_1"))
    events.Reload()
    assert events.Scalars("rollout/ep_rew_mean")[-1].value == pytest.approx(model.history[-1]["mean_return"])


def test_log_interval_tb_log_name_and_reset_num_timesteps_as_in_sb3(tmp_path) -> None:
    model = PPO("TMaze-v1", "gru", env_kwargs=TMAZE, tensorboard_log=tmp_path, **SMALL[PPO])
    model.learn(4 * 16, log_interval=2)
    assert _scalars(tmp_path / "PPO_1")["time/fps"] == [32, 64]
    model.learn(2 * 16)  # reset_num_timesteps=True: counting restarts, in a new run
    assert model.num_timesteps == 32 and _scalars(tmp_path / "PPO_2")["time/fps"] == [16, 32]
    model.learn(2 * 16, reset_num_timesteps=False)  # counting on, in the same run
    assert model.num_timesteps == 64 and _scalars(tmp_path / "PPO_2")["time/fps"] == [16, 32, 48, 64]
    model.learn(16, tb_log_name="mine")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["PPO_1", "PPO_2", "mine_1"]


def test_callbacks_record_into_the_same_logger_and_set_logger_takes_sb3s(tmp_path) -> None:
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.monitor import Monitor

    model = PPO("TMaze-v1", "gru", env_kwargs=TMAZE, tensorboard_log=tmp_path, **SMALL[PPO])
    evaluation = EvalCallback(Monitor(gym.make("TMaze-v1", **TMAZE)), eval_freq=8, verbose=0)
    model.learn(2 * 16, callback=evaluation)
    assert _scalars(tmp_path / "PPO_1")["eval/mean_reward"] == [16, 32]

    model.set_logger(configure(str(tmp_path / "csv"), ["csv"]))
    model.learn(2 * 16)
    header = (tmp_path / "csv" / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"rollout/ep_rew_mean", "train/value_loss", "time/total_timesteps"} <= set(header)
    assert not (tmp_path / "PPO_2").exists()  # set_logger's logger replaces tensorboard_log's


def test_tensorboard_log_without_its_packages_names_the_extra(monkeypatch) -> None:
    find_spec = importlib.util.find_spec
    for missing in ("tensorboard", "stable_baselines3"):
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a, missing=missing: None if name == missing else find_spec(name, *a),
        )
        with pytest.raises(
            ImportError, match=rf"needs {missing}: pip install \"pomdp-bench\[sb3,tensorboard\]\""
        ):
            PPO("TMaze-v1", env_kwargs=TMAZE, tensorboard_log="tb", **SMALL[PPO])


@pytest.mark.parametrize(
    ("keyword", "answer"),
    [
        ("target_kl", "train/approx_kl"),
        ("stats_window_size", "last 100 episodes"),
        ("use_sde", "log_std_init"),
    ],
)
def test_an_sb3_keyword_without_meaning_here_names_what_has(keyword, answer) -> None:
    with pytest.raises(TypeError, match=rf"PPO has no '{keyword}' \(an SB3 keyword\): .*{answer}"):
        PPO("TMaze-v1", env_kwargs=TMAZE, **{keyword: 1})


def _flat(value) -> list:
    """The tensors and numbers inside nested dicts and lists, in order."""
    if isinstance(value, dict):
        return [x for k in sorted(value, key=str) for x in _flat(value[k])]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value.clone() if isinstance(value, torch.Tensor) else value]


def _same(a, b) -> bool:
    fa, fb = _flat(a), _flat(b)
    return len(fa) == len(fb) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else np.array_equal(x, y)
        for x, y in zip(fa, fb, strict=True)
    )


@pytest.mark.parametrize("agent_class", [PPO, PQN, DQN, SAC])
def test_get_and_set_parameters_as_in_sb3(agent_class, tmp_path) -> None:
    def make(seed: int):
        return agent_class("TMaze-v1", "gru", env_kwargs=TMAZE, seed=seed, **SMALL[agent_class])

    source, target, other = make(0), make(1), make(2)
    params = source.get_parameters()
    assert set(params) == set(source._state_dicts())
    assert not _same(params, target.get_parameters())
    target.set_parameters(params)
    assert _same(params, target.get_parameters())
    source.save(tmp_path / "source")
    other.set_parameters(str(tmp_path / "source.zip"))  # a save, as SB3 takes its zip
    assert _same(params, other.get_parameters())

    first = sorted(params)[0]
    with pytest.raises(
        ValueError, match=r"parameters are \[.*\]; got unknown \[\] and missing .*exact_match=False"
    ):
        make(3).set_parameters({first: params[first]})
    partial = make(3)
    partial.set_parameters({first: params[first]}, exact_match=False)
    assert _same(params[first], partial.get_parameters()[first])
    with pytest.raises(ValueError, match=r"got unknown \['weights'\]"):
        target.set_parameters({**params, "weights": {}})


def test_get_env_and_set_env_as_in_sb3() -> None:
    model = PPO("TMaze-v1", "gru", env_kwargs=TMAZE, **SMALL[PPO])
    assert model.get_env() is model.env and model.get_env().num_envs == 2
    model.learn(16)
    fresh = make_vector_env("TMaze-v1", 2, corridor_length=3)
    model.set_env(fresh)
    assert model.get_env() is fresh
    model.learn(16)  # fresh episodes on the new env
    assert model.num_timesteps == 16

    with pytest.raises(
        ValueError, match=r"set_env needs 2 copies .* got 1\. For another number of copies: PPO.save"
    ):
        model.set_env(gym.make("TMaze-v1", corridor_length=3))
    with pytest.raises(ValueError, match="set_env needs the agent's observation space"):
        model.set_env(make_vector_env("CueRecall-v0", 2))
    with pytest.raises(ValueError, match="force_reset=False"):
        model.set_env(fresh, force_reset=False)
    model.set_env("TMaze-v1")  # the same id: its kwargs and copies
    assert model.get_env().num_envs == 2 and model.env_kwargs["corridor_length"] == 3


def test_the_logger_takes_records_before_learn_and_ep_info_buffer_holds_sb3s_dicts() -> None:
    model = PPO("TMaze-v1", "gru", env_kwargs=TMAZE, **SMALL[PPO]).learn(3 * 16)
    model.logger.record("custom/value", 1.0)
    model.dump_logs()
    episodes = list(model.ep_info_buffer)
    assert episodes and set(episodes[0]) == {"r", "l"}
    assert np.mean([e["r"] for e in episodes]) == pytest.approx(model.history[-1]["mean_return"])
    assert model.get_vec_normalize_env() is None
