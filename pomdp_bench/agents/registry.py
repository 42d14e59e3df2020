"""The agent registry: every agent describes itself here once, and the harness looks it up.

An :class:`AgentEntry` says what the harness needs to know of an agent: its class, its
settings class, which setting a run's sequence length sets, where its tuned settings
live and how ``tune`` samples them. The harness names no agent; it asks this registry.

Classes are named by import path (``"module:Name"``) and imported on first use, so the
harness can list and check agents without importing torch.

The shipped agents (``ppo``, ``sac``, ``dqn``, ``pqn``, ``sb3_ppo``) register below. Another package adds
one with :func:`register_agent`. A suite may name such an agent as ``module:name``: the
module is imported wherever the agent is looked up (the sweep's process, each worker, a
Ray task), and its import registers it, as ``module:Id`` does for Gymnasium env ids.
Importing a module runs its code: name only modules you trust.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AgentEntry", "agent_module", "agent_names", "check_agent_name", "get_agent", "register_agent"]

# "package.module:Name" or "package.module:function"; nothing else is evaluated.
_IMPORT_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _resolve(path: str) -> Any:
    """The object at ``"module:Name"``."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class AgentEntry:
    """What the harness knows of one agent.

    Attributes:
        name: how suites, ``RunSpec.agent`` and the CLIs spell it (lower case, ``[a-z0-9_]``).
        agent_class: the agent's class as ``"module:Name"``, a subclass of
            :class:`~pomdp_bench.agents.common.base.Agent` (or with the same constructor, ``learn``
            and ``evaluate``).
        settings_class: its settings dataclass as ``"module:Name"`` (an
            :class:`~pomdp_bench.agents.common.settings.AgentSettings` subclass).
        sequence_field: the setting a run's ``bptt_length`` sets (PPO's ``"bptt_length"``,
            SAC's ``"sequence_length"``); ``None``: the agent trains on no fixed sequence
            length, and a run's length is refused.
        tuned_file: the stem of ``agents/<tuned_file>.yaml``, its tuned settings per env.
        search_space: ``"module:function"`` for ``python -m pomdp_bench.tune``: called as
            ``function(trial, horizon)`` with an Optuna trial and the task's memory
            horizon, it returns the trial's settings (a dict of fields) and the memory's
            hidden size. ``None``: the agent is not tunable.
        keep_tuned_sequence: ``False`` drops the tuned ``sequence_field`` when a run gives
            none (sb3-contrib's RecurrentPPO cuts its sequences at episode starts).
        description: one line for ``--list``.
    """

    name: str
    agent_class: str
    settings_class: str
    sequence_field: str | None = None
    tuned_file: str = ""
    search_space: str | None = None
    keep_tuned_sequence: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"agent name must match [a-z][a-z0-9_]*, got {self.name!r}")
        for field_name in ("agent_class", "settings_class", "search_space"):
            value = getattr(self, field_name)
            if value is None and field_name == "search_space":
                continue
            if not isinstance(value, str) or not _IMPORT_PATH.match(value):
                raise ValueError(
                    f"agent {self.name!r}: {field_name} must be an import path 'module:Name', got {value!r}"
                )
        if not self.tuned_file:
            object.__setattr__(self, "tuned_file", self.name)

    def load_class(self) -> type:
        """The agent's class (imports its module)."""
        return _resolve(self.agent_class)

    def load_settings_class(self) -> type:
        """The agent's settings class (imports its module)."""
        return _resolve(self.settings_class)

    def load_search_space(self) -> Callable[[Any, int], tuple[dict[str, Any], int]]:
        """The function ``tune`` samples a trial's settings with.

        Raises:
            ValueError: the agent has no search space.
        """
        if self.search_space is None:
            tunable = [n for n in agent_names() if get_agent(n).search_space is not None]
            raise ValueError(f"agent {self.name!r} has no tuning search space; tunable agents: {tunable}")
        return _resolve(self.search_space)

    def settings(
        self,
        hyperparams: Mapping[str, Any],
        *,
        memory: Mapping[str, Any] | None = None,
        seed: int | None = None,
        sequence_length: int | None = None,
    ) -> Any:
        """The agent's settings from ``hyperparams``, with the run's ``memory``, ``seed`` and
        ``sequence_length`` (set as :attr:`sequence_field`) winning over them where given.

        Raises:
            ValueError: a ``sequence_length`` for an agent without a sequence field, or a
                setting the settings class refuses.
            TypeError: an unknown setting (the message lists the valid ones).
        """
        changes = dict(hyperparams)
        if memory is not None:
            changes["memory"] = dict(memory)
        if seed is not None:
            changes["seed"] = seed
        if sequence_length is not None:
            if self.sequence_field is None:
                raise ValueError(
                    f"agent {self.name!r} trains on no fixed sequence length; got bptt_length={sequence_length}"
                )
            changes[self.sequence_field] = sequence_length
        elif not self.keep_tuned_sequence and self.sequence_field is not None:
            changes.pop(self.sequence_field, None)
        return self.load_settings_class().make(**changes)


_REGISTRY: dict[str, AgentEntry] = {}


def register_agent(entry: AgentEntry, *, replace: bool = False) -> AgentEntry:
    """Add ``entry`` to the registry and return it.

    Args:
        entry: the agent's description.
        replace: allow replacing an agent of the same name (default ``False``).

    Raises:
        TypeError: ``entry`` is not an :class:`AgentEntry`.
        ValueError: the name is taken and ``replace`` is ``False``.
    """
    if not isinstance(entry, AgentEntry):
        raise TypeError(f"register_agent takes an AgentEntry, got {type(entry).__name__}")
    if entry.name in _REGISTRY and not replace and _REGISTRY[entry.name] != entry:
        raise ValueError(f"agent {entry.name!r} is already registered; pass replace=True to replace it")
    _REGISTRY[entry.name] = entry
    return entry


def agent_names() -> tuple[str, ...]:
    """The registered agents' names, in registration order."""
    return tuple(_REGISTRY)


def check_agent_name(name: object) -> str:
    """``name`` if it names a registered agent or has the form ``"module:name"``, without
    importing anything (a suite's agents are checked before its imports are listed).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: an unknown plain name (the message lists the registered agents), or a
            malformed ``module:name``.
    """
    if not isinstance(name, str):
        raise TypeError(f"an agent name is a str, got {type(name).__name__} {name!r}")
    if ":" in name:
        if not _IMPORT_PATH.match(name):
            raise ValueError(f"agent {name!r}: give a registered name or 'module:name'")
        return name
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown agent {name!r}; registered agents: {list(_REGISTRY)} "
            "(or 'module:name' for an agent that module registers)"
        )
    return name


def agent_module(name: str) -> str | None:
    """The module ``"module:name"`` imports to register its agent; ``None`` for a plain name."""
    return name.partition(":")[0] if ":" in name else None


def get_agent(name: str) -> AgentEntry:
    """The entry of agent ``name``; ``"module:name"`` imports ``module`` first (which
    registers the agent), and the entry is then found by its plain name.

    Raises:
        ValueError: no such agent (the message lists the registered ones), or a malformed
            ``module:name``.
        ModuleNotFoundError: the named module does not exist.
    """
    check_agent_name(name)
    plain = name
    if ":" in name:
        module, _, plain = name.partition(":")
        if plain not in _REGISTRY:
            importlib.import_module(module)
    entry = _REGISTRY.get(plain)
    if entry is None:
        raise ValueError(f"unknown agent {name!r}; registered agents: {list(_REGISTRY)}")
    return entry


register_agent(
    AgentEntry(
        name="ppo",
        agent_class="pomdp_bench.agents.ppo.agent:PPO",
        settings_class="pomdp_bench.agents.ppo.settings:PPOSettings",
        sequence_field="bptt_length",
        search_space="pomdp_bench.agents.ppo.search_space:ppo_search_space",
        description="recurrent PPO (ours)",
    )
)
register_agent(
    AgentEntry(
        name="sac",
        agent_class="pomdp_bench.agents.sac.agent:SAC",
        settings_class="pomdp_bench.agents.sac.settings:SACSettings",
        sequence_field="sequence_length",
        search_space="pomdp_bench.agents.sac.search_space:sac_search_space",
        description="SAC with sequence replay (ours)",
    )
)
register_agent(
    AgentEntry(
        name="dqn",
        agent_class="pomdp_bench.agents.dqn.agent:DQN",
        settings_class="pomdp_bench.agents.dqn.settings:DQNSettings",
        sequence_field="sequence_length",
        search_space="pomdp_bench.agents.dqn.search_space:dqn_search_space",
        description="DQN with sequence replay (ours; Discrete actions)",
    )
)
register_agent(
    AgentEntry(
        name="pqn",
        agent_class="pomdp_bench.agents.pqn.agent:PQN",
        settings_class="pomdp_bench.agents.pqn.settings:PQNSettings",
        sequence_field="bptt_length",
        search_space="pomdp_bench.agents.pqn.search_space:pqn_search_space",
        description="PQN, Q(lambda) on vectorised rollouts without replay (ours; Discrete actions)",
    )
)
register_agent(
    AgentEntry(
        name="sb3_ppo",
        agent_class="pomdp_bench.agents.sb3.agent:SB3RecurrentPPO",
        settings_class="pomdp_bench.agents.ppo.settings:PPOSettings",
        sequence_field="bptt_length",
        keep_tuned_sequence=False,
        description="sb3-contrib's RecurrentPPO (needs the [sb3] extra)",
    )
)
