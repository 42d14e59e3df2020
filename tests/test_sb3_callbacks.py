"""SB3's callbacks in ``learn(callback=...)`` (``agents/common/base.py``, ``sb3_habits.py``).

SB3's own classes run unchanged: ``on_step`` once per vector env step, with
``num_timesteps`` counting the step; ``EvalCallback`` evaluates through ``predict``
(carrying the recurrent state) and saves the best model with ``save``; a ``False``
stops training at the end of the iteration. Functions of the agent and lists of
either still work.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

pytest.importorskip("stable_baselines3")

from stable_baselines3.common import callbacks as sb3_callbacks
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    ProgressBarCallback,
    StopTrainingOnNoModelImprovement,
    StopTrainingOnRewardThreshold,
)
from stable_baselines3.common.monitor import Monitor

from pomdp_bench.agents import DQN, PPO, PQN, SAC

# 2 copies, 8 steps per rollout: a rollout is 8 vector steps, 16 env steps.
SMALL = dict(n_envs=2, n_steps=8, net_arch=[8])
ROLLOUT = 16
OFF_POLICY = dict(burn_in=1, sequence_length=2, batch_size=4, learning_starts=10, net_arch=[8])


def _ppo(**changes) -> PPO:
    return PPO("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, **{**SMALL, **changes})


def _eval_env() -> Monitor:
    return Monitor(gym.make("TMaze-v1", corridor_length=3))


class Recorder(BaseCallback):
    """Counts SB3's hooks and keeps what ``on_step`` saw."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self.steps: list[int] = []
        self.local_keys: set[str] = set()

    def _on_training_start(self) -> None:
        self.events.append("start")
        self.total = self.locals["total_timesteps"]

    def _on_rollout_start(self) -> None:
        self.events.append("rollout_start")

    def _on_step(self) -> bool:
        self.steps.append(self.num_timesteps)
        self.local_keys |= set(self.locals)
        assert len(self.locals["dones"]) == len(self.locals["infos"]) == self.training_env.num_envs
        return True

    def _on_rollout_end(self) -> None:
        self.events.append("rollout_end")

    def _on_training_end(self) -> None:
        self.events.append("end")


class ConstantEnv(gym.Env):
    """Three steps of reward 0 whatever the agent does: every evaluation scores 0."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 0.0, self.t >= 3, False, {}


def test_a_function_gets_the_agent_after_each_iteration_and_false_stops() -> None:
    seen: list[int] = []
    model = _ppo().learn(3 * ROLLOUT, callback=lambda m: seen.append(m.num_timesteps))
    assert seen == [16, 32, 48] and model.num_timesteps == 48
    assert _ppo().learn(10 * ROLLOUT, callback=lambda m: False).num_timesteps == ROLLOUT


def test_a_list_mixes_functions_and_sb3_callbacks() -> None:
    seen: list[int] = []
    recorder = Recorder()
    model = _ppo().learn(
        2 * ROLLOUT, callback=[lambda m: seen.append(m.num_timesteps), recorder, lambda m: None]
    )
    assert seen == [16, 32] and recorder.n_calls == 16
    assert model.learn(10 * ROLLOUT, callback=[lambda m: None, lambda m: False]).num_timesteps == ROLLOUT
    with pytest.raises(TypeError, match=r"function of the agent .* an SB3 BaseCallback, or a list"):
        _ppo().learn(ROLLOUT, callback=[recorder, 3])


def test_on_step_runs_once_per_vector_step_with_sb3s_hooks_around_it() -> None:
    recorder = Recorder()
    model = _ppo().learn(3 * ROLLOUT, callback=recorder)
    # 8 vector steps a rollout, each counted before on_step sees it, as in SB3
    assert recorder.n_calls == 24 and recorder.steps == list(range(2, 49, 2))
    assert recorder.events == ["start", *["rollout_start", "rollout_end"] * 3, "end"]
    assert recorder.total == 48 and recorder.model is model
    assert {
        "dones",
        "infos",
        "rewards",
        "new_obs",
        "actions",
        "total_timesteps",
        "self",
    } <= recorder.local_keys
    assert model.get_env() is model.env  # the step hook is gone after learn

    sac = SAC("TMaze-v1", None, env_kwargs={"corridor_length": 3}, n_envs=2, **OFF_POLICY)
    sac_recorder = Recorder()
    sac.learn(20, callback=sac_recorder, log_interval=10)
    assert sac_recorder.n_calls == 10 and sac_recorder.steps == list(range(2, 21, 2))


def test_callbacks_leave_training_as_it_would_have_been() -> None:
    plain = _ppo().learn(3 * ROLLOUT)
    watched = _ppo().learn(3 * ROLLOUT, callback=EvalCallback(_eval_env(), eval_freq=4, verbose=0))
    for p, q in zip(plain.policy.parameters(), watched.policy.parameters(), strict=True):
        assert torch.equal(p, q)
    assert plain.episode_log == watched.episode_log


def test_eval_callback_evaluates_through_predict_and_saves_the_best_model(tmp_path) -> None:
    model = _ppo()
    states: list[tuple | None] = []
    predict = model.predict

    def spy(observation, state=None, episode_start=None, deterministic=False):
        states.append(state)
        return predict(observation, state, episode_start, deterministic)

    model.predict = spy  # evaluate_policy calls model.predict
    callback = EvalCallback(
        _eval_env(),
        eval_freq=4,
        n_eval_episodes=3,
        best_model_save_path=str(tmp_path / "best"),
        log_path=str(tmp_path / "logs"),
        verbose=0,
    )
    model.learn(3 * ROLLOUT, callback=callback)
    assert callback.evaluations_timesteps == [8, 16, 24, 32, 40, 48]
    assert np.shape(callback.evaluations_results) == (6, 3)
    assert np.all(np.asarray(callback.evaluations_length) > 0)  # whole episodes, through Monitor
    assert callback.best_mean_reward == max(np.mean(r) for r in callback.evaluations_results)
    # the memory goes back in: after each episode's first step, predict gets the GRU state
    carried = [s for s in states if s is not None]
    assert carried and all(s[0].shape == (1, 1, 64) for s in carried)
    logged = np.load(tmp_path / "logs" / "evaluations.npz")
    assert logged["timesteps"].tolist() == callback.evaluations_timesteps
    best = PPO.load(tmp_path / "best" / "best_model")
    assert best.num_timesteps in callback.evaluations_timesteps


def test_checkpoint_callback_saves_every_save_freq_calls(tmp_path) -> None:
    _ppo().learn(2 * ROLLOUT, callback=CheckpointCallback(save_freq=4, save_path=str(tmp_path)))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [f"rl_model_{n}_steps.zip" for n in (16, 24, 32, 8)]
    assert PPO.load(tmp_path / "rl_model_8_steps.zip").num_timesteps == 8


def test_checkpoint_callback_refuses_a_replay_buffer_save_where_save_writes_none(tmp_path) -> None:
    agent = DQN("TMaze-v1", None, env_kwargs={"corridor_length": 3}, n_envs=2, **OFF_POLICY)
    checkpoint = CheckpointCallback(save_freq=4, save_path=str(tmp_path), save_replay_buffer=True)
    with pytest.raises(ValueError, match=r"save_replay_buffer=True.*writes no replay buffer"):
        agent.learn(20, callback=checkpoint)
    # PPO has no replay buffer: SB3 skips the flag there, and so does this
    _ppo().learn(ROLLOUT, callback=checkpoint)
    assert (tmp_path / "rl_model_8_steps.zip").exists()


def test_stop_training_on_reward_threshold_stops_at_the_first_new_best() -> None:
    stop = StopTrainingOnRewardThreshold(reward_threshold=-1e9)
    callback = EvalCallback(_eval_env(), callback_on_new_best=stop, eval_freq=2, n_eval_episodes=2, verbose=0)
    model = _ppo().learn(10 * ROLLOUT, callback=callback)
    # the evaluation at vector step 2 stops training at the end of the first rollout
    assert model.num_timesteps == ROLLOUT
    assert len(model.history) == 1 and stop.n_calls == 1


def test_stop_training_on_no_model_improvement_stops_after_evaluations_without_a_new_best() -> None:
    model = PPO(ConstantEnv, None, **SMALL)  # a factory: two copies
    stop = StopTrainingOnNoModelImprovement(max_no_improvement_evals=1)
    callback = EvalCallback(Monitor(ConstantEnv()), callback_after_eval=stop, eval_freq=8, verbose=0)
    model.learn(10 * ROLLOUT, callback=callback)
    # every evaluation scores 0: a new best at the first, none at the second and third
    assert callback.best_mean_reward == 0.0 and stop.n_calls == 3
    assert model.num_timesteps == 3 * ROLLOUT


def test_callback_list_runs_each_callback(tmp_path) -> None:
    first, second = Recorder(), Recorder()
    checkpoint = CheckpointCallback(save_freq=8, save_path=str(tmp_path))
    _ppo().learn(2 * ROLLOUT, callback=CallbackList([first, checkpoint, second]))
    assert first.n_calls == second.n_calls == checkpoint.n_calls == 16
    assert first.events == second.events == ["start", *["rollout_start", "rollout_end"] * 2, "end"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rl_model_16_steps.zip", "rl_model_32_steps.zip"]


def test_progress_bar_callback_counts_every_env_step(monkeypatch) -> None:
    try:
        import rich  # noqa: F401  (SB3's progress bar is tqdm's rich one)
    except ImportError:  # SB3's [extra] brings rich; without it, tqdm's plain bar plays its part
        from tqdm import tqdm

        monkeypatch.setattr(sb3_callbacks, "tqdm", tqdm)
    callback = ProgressBarCallback()
    model = _ppo()
    model.learn(ROLLOUT)
    model.learn(2 * ROLLOUT, callback=callback, reset_num_timesteps=False)
    assert callback.pbar.total == 2 * ROLLOUT and callback.pbar.n == 2 * ROLLOUT


@pytest.mark.parametrize("agent_class", [PQN, DQN, SAC])
def test_eval_callback_runs_on_every_agent(agent_class, tmp_path) -> None:
    small = dict(n_steps=8, net_arch=[8]) if agent_class is PQN else OFF_POLICY
    model = agent_class("TMaze-v1", "gru", env_kwargs={"corridor_length": 3}, n_envs=2, **small)
    callback = EvalCallback(
        _eval_env(), eval_freq=8, n_eval_episodes=2, best_model_save_path=str(tmp_path), verbose=0
    )
    model.learn(32, callback=callback)
    assert callback.n_calls == 16 and np.isfinite(callback.last_mean_reward)
    assert type(agent_class.load(tmp_path / "best_model")) is agent_class
