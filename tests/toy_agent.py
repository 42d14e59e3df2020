"""A toy agent that an outside package could register (tests/test_agent_registry.py).

``ToyTabular`` is tabular Q-learning whose state is the pair (previous observation,
current observation): a memory of one step, enough for ``OutsideBit-v0`` (the bit is
shown one step before it is asked for). Importing this module registers it as
``toy_tabular``; a suite names it ``toy_agent:toy_tabular``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor

from pomdp_bench.agents.common.base import Agent
from pomdp_bench.agents.common.settings import AgentSettings
from pomdp_bench.agents.registry import AgentEntry, register_agent
from pomdp_bench.memory import MemoryConfig


@dataclasses.dataclass(frozen=True)
class ToySettings(AgentSettings):
    agent: ClassVar[str] = "ToyTabular"

    memory: MemoryConfig | Mapping[str, Any] | str | None = None
    n_envs: int | None = 4
    seed: int = 0
    learning_rate: float = 0.2
    epsilon: float = 0.3

    def __post_init__(self) -> None:
        self._check_common()
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")

    def resolve(self, n_envs: int) -> ToySettings:
        return dataclasses.replace(self, n_envs=n_envs)


class ToyTabular(Agent[ToySettings]):
    settings_class = ToySettings
    save_format = 1
    predict_stream = 7
    default_n_envs = 4

    def _setup_model(self) -> None:
        self.n_actions = int(self.action_space.n)
        self.q: dict[tuple[float, float], np.ndarray] = {}
        self._rng = np.random.default_rng(self.seed)
        self._obs = None

    def _values(self, key: tuple[float, float]) -> np.ndarray:
        return self.q.setdefault(key, np.zeros(self.n_actions))

    @staticmethod
    def _keys(previous: np.ndarray, obs: np.ndarray) -> list[tuple[float, float]]:
        current = np.asarray(obs, dtype=np.float64).reshape(len(previous), -1).sum(axis=1)
        return list(zip(previous.tolist(), current.tolist(), strict=True))

    def _start_episodes(self) -> None:
        self._obs = self._reset_training_envs()
        self._previous = np.full(self.n_envs, -1.0)

    def _iterate(self, total_timesteps: int) -> Iterator[int]:
        while self.num_timesteps < total_timesteps:
            keys = self._keys(self._previous, self._obs)
            greedy = np.array([int(np.argmax(self._values(k))) for k in keys])
            explore = self._rng.random(self.n_envs) < self.settings.epsilon
            actions = np.where(explore, self._rng.integers(self.n_actions, size=self.n_envs), greedy)
            obs, reward, terminated, truncated, _ = self.env.step(actions)
            done = np.logical_or(terminated, truncated)
            after = self._keys(np.asarray([k[1] for k in keys]), obs)
            for i, key in enumerate(keys):
                target = reward[i] + (0.0 if done[i] else float(self._values(after[i]).max()))
                values = self._values(key)
                values[actions[i]] += self.settings.learning_rate * (target - values[actions[i]])
            self._previous = np.where(done, -1.0, [k[1] for k in keys])
            self._obs = obs
            self.num_timesteps += self.n_envs
            self._track_episodes(reward, done)
            yield self.n_envs

    def _initial_actor_state(self, n: int) -> tuple[Tensor, ...]:
        return (torch.full((n,), -1.0, dtype=torch.float64),)

    def _act(self, obs, state, starts, deterministic, generator):  # type: ignore[override]
        previous = np.where(starts.cpu().numpy().astype(bool), -1.0, state[0].numpy())
        keys = self._keys(previous, obs)
        actions = np.array([int(np.argmax(self._values(k))) for k in keys])
        current = torch.as_tensor([k[1] for k in keys], dtype=torch.float64)
        return actions, (current,)

    def _state_dicts(self) -> dict[str, Any]:
        return {"q": {f"{a}|{b}": v.tolist() for (a, b), v in self.q.items()}}

    def _load_state_dicts(self, data: Mapping[str, Any]) -> None:
        for key, values in data["q"].items():
            a, b = key.split("|")
            self.q[(float(a), float(b))] = np.asarray(values)


def toy_search_space(trial: Any, horizon: int) -> tuple[dict[str, Any], int]:
    """A learning rate and an exploration rate; no memory to size."""
    return {
        "learning_rate": trial.suggest_float("learning_rate", 0.05, 0.5),
        "epsilon": trial.suggest_float("epsilon", 0.05, 0.5),
    }, 0


register_agent(
    AgentEntry(
        name="toy_tabular",
        agent_class="toy_agent:ToyTabular",
        settings_class="toy_agent:ToySettings",
        search_space="toy_agent:toy_search_space",
        description="tabular Q-learning on (previous, current) observation (a test's toy)",
    )
)
