"""What every agent's settings share (:class:`AgentSettings`). Each agent has one
frozen dataclass on it, documented field by field, in its own package
(``ppo/settings.py``: ``PPOSettings``; ``sac/settings.py``: ``SACSettings``;
``dqn/settings.py``: ``DQNSettings``).

A settings object is the single statement of what an agent can be told:

- It validates itself when made: a bad value raises ``ValueError`` (or
  ``TypeError`` for a wrong type), naming the field, the value and what is valid;
  an unknown name raises ``TypeError`` listing the valid ones (:meth:`make`).
- :meth:`resolve` runs the checks that need the number of env copies (a rollout
  the minibatches divide, a replay buffer that holds a sequence, ...) and fills the
  defaults that depend on it; an agent keeps the resolved settings as ``.settings``.
- ``save`` writes :meth:`to_dict` (plain data) and ``load`` reads it back with
  :meth:`from_dict`.
- The harness fills them from ``agents/*.yaml`` (whose keys are these fields) plus
  the run's memory, BPTT length and seed, and checks a suite's entries when it
  loads the suite.

The env (an id or a vector env), its kwargs and the device are not settings: they
say where the agent runs, not what it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pomdp_bench.agents.common.networks import activation_class
from pomdp_bench.agents.common.schedules import as_schedule, schedule_to_data
from pomdp_bench.memory import MemoryConfig
from pomdp_bench.tuned import hyperparameter_file, tuned_hyperparameters
from pomdp_bench.validation import check_int

S = TypeVar("S", bound="AgentSettings")


class AgentSettings:
    """What every agent's settings share: the memory, the seed, the env copies,
    construction from keywords and the plain-data round trip."""

    #: the agent the settings belong to, for messages
    agent: ClassVar[str]

    memory: MemoryConfig
    n_envs: int | None
    seed: int

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def make(cls: type[S], base: S | None = None, **changes: Any) -> S:
        """``base`` (default: the defaults) with ``changes``; an unknown name raises
        ``TypeError`` naming it and listing the valid ones."""
        unknown = sorted(set(changes) - set(cls.field_names()))
        if unknown:
            raise TypeError(
                f"{cls.agent} has no setting{'s' if len(unknown) > 1 else ''} {unknown}; "
                f"valid settings: {list(cls.field_names())}"
            )
        if base is None:
            return cls(**changes)
        return dataclasses.replace(base, **changes)  # type: ignore[type-var]

    @classmethod
    def tuned(cls: type[S], env_id: str, env_kwargs: Mapping[str, Any] | None = None, **changes: Any) -> S:
        """The settings tuned for ``env_id`` (its entry in ``agents/<agent>.yaml``; for
        ``env_kwargs``, the band of their memory horizon where the entry has
        ``horizons``), with ``changes``. The plain constructor uses the library's
        defaults instead.

        Raises:
            ValueError: the file has no entry for ``env_id``; the message lists those it has.
        """
        table = hyperparameter_file(cls.agent.lower())
        if env_id not in table:
            known = sorted(k for k in table if k != "default")
            raise ValueError(
                f"agents/{cls.agent.lower()}.yaml has no tuned {cls.agent} settings for {env_id!r}; "
                f"it has {known}. Use {cls.__name__}() for the library defaults."
            )
        return cls.make(**{**tuned_hyperparameters(cls.agent.lower(), env_id, env_kwargs), **changes})

    @classmethod
    def from_dict(cls: type[S], data: Mapping[str, Any]) -> S:
        """Read what :meth:`to_dict` wrote (or an ``agents/*.yaml`` entry)."""
        return cls.make(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (numbers, strings, lists, dicts) that :meth:`from_dict` reads back."""
        data: dict[str, Any] = {}
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, MemoryConfig):
                value = value.to_dict()
            elif name in self._schedules:
                value = None if value is None else schedule_to_data(value)
            data[name] = value
        return data

    _schedules: ClassVar[tuple[str, ...]] = ()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # normalising a frozen dataclass's field

    def _check_common(self) -> None:
        self._set("memory", MemoryConfig.from_any(self.memory))
        if self.n_envs is not None:
            self._set("n_envs", check_int("n_envs", self.n_envs, minimum=1))
        self._set("seed", check_int("seed", self.seed))
        for name in self._schedules:
            value = getattr(self, name)
            if value is not None:
                self._set(name, as_schedule(name, value))
        if hasattr(self, "activation"):  # agents with networks name their activation
            activation_class(self.activation)
