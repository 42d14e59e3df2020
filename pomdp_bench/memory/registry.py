"""The memory kinds: each registers its class, its own settings, the ``init`` values it
understands and its tuning space in one :func:`register_memory` call.

The shipped kinds register from their modules in :mod:`pomdp_bench.memory.kinds`;
a kind added at run time makes the same call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pomdp_bench.memory.base import Memory
from pomdp_bench.memory.options import RECORDED, MemoryOptions

#: ``tuning(trial, hidden)``: the memory settings (all but ``kind``) an Optuna trial
#: tries, given the hidden size the agent's search space drew.
Tuning = Callable[[Any, int], dict[str, Any]]


def default_tuning(trial: Any, hidden: int) -> dict[str, Any]:
    """The tuning space of a kind that declares none: ``hidden`` units, nothing sampled."""
    return {"hidden_size": hidden}


@dataclasses.dataclass(frozen=True)
class MemoryKind:
    """What :func:`register_memory` holds about a kind.

    Attributes:
        name: the kind's name (``MemoryConfig.kind``).
        memory_class: builds it: ``memory_class(config, input_size)``.
        options: its own settings, a frozen :class:`MemoryOptions` dataclass.
        inits: the ``init`` values it understands (``None``: torch's defaults).
        tuning: its tuning space (see :data:`Tuning`).
    """

    name: str
    memory_class: type[Memory]
    options: type[MemoryOptions]
    inits: tuple[str | None, ...]
    tuning: Tuning

    def setting_names(self) -> tuple[str, ...]:
        """The names of its own settings that take more than one value."""
        return tuple(f.name for f in dataclasses.fields(self.options) if not f.metadata.get(RECORDED))


_KINDS: dict[str, MemoryKind] = {}
_SHIPPED: set[str] = set()


def register_memory(
    kind: str,
    memory_class: type[Memory],
    *,
    options: type[MemoryOptions] = MemoryOptions,
    inits: tuple[str | None, ...] = (None,),
    tuning: Tuning | None = None,
) -> None:
    """Add a memory kind: afterwards a config may name ``kind`` with the settings of
    ``options``, and :func:`~pomdp_bench.memory.build_memory` builds
    ``memory_class(config, input_size)``.

    ``memory_class`` subclasses :class:`~pomdp_bench.memory.Memory` and should pass
    :func:`pomdp_bench.memory.contract.check_memory` (see ``examples/new_memory_kind.py``).
    It reads the common settings from the :class:`~pomdp_bench.memory.MemoryConfig`
    it is given (``config.hidden_size``) and its own from ``config.options``.
    Registering a kind again replaces it; the shipped kinds cannot be replaced. A
    sweep's worker processes must register the kind too (import the module that
    registers it).

    Args:
        kind: the new kind's name.
        memory_class: the class that builds it.
        options: its own settings: a frozen dataclass subclassing
            :class:`~pomdp_bench.memory.options.MemoryOptions`, each field a setting
            with its default (default: none of its own).
        inits: the ``init`` values it understands (``None``: torch's defaults).
        tuning: ``tuning(trial, hidden) -> dict``, the settings an Optuna trial tries
            (all but ``kind``; default: ``{"hidden_size": hidden}``).

    Raises:
        ValueError: ``kind`` is a shipped kind or not a name.
        TypeError: ``memory_class`` is not a ``Memory`` subclass, or ``options`` not a
            frozen ``MemoryOptions`` dataclass.
    """
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ValueError(f"a memory kind must be a name like 'my_rnn', got {kind!r}")
    if kind in _SHIPPED:
        raise ValueError(f"{kind!r} is a shipped memory kind and cannot be replaced; pick another name")
    if not (isinstance(memory_class, type) and issubclass(memory_class, Memory)):
        raise TypeError(f"memory_class must be a subclass of pomdp_bench.memory.Memory, got {memory_class!r}")
    if not (
        isinstance(options, type)
        and issubclass(options, MemoryOptions)
        and "__dataclass_fields__" in vars(options)  # decorated itself, not only its base
    ):
        raise TypeError(
            "options must be a subclass of pomdp_bench.memory.options.MemoryOptions decorated with "
            f"@dataclasses.dataclass(frozen=True), got {options!r}"
        )
    _KINDS[kind] = MemoryKind(kind, memory_class, options, tuple(inits), tuning or default_tuning)


def seal_shipped(kinds: tuple[str, ...]) -> None:
    """Mark ``kinds`` as shipped: :func:`register_memory` refuses to replace them."""
    _SHIPPED.update(kinds)


def memory_kinds() -> tuple[str, ...]:
    """Every kind a config may name: the shipped kinds (``MEMORY_KINDS``), then those
    added with :func:`register_memory`."""
    return tuple(_KINDS)


def memory_kind(kind: str) -> MemoryKind:
    """What ``kind`` registered (a shipped or registered kind).

    Raises:
        ValueError: an unknown kind; the message lists the known ones.
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown memory kind {kind!r}; known: {list(_KINDS)}")
    return _KINDS[kind]


def memory_class(kind: str) -> type[Memory]:
    """The class that builds ``kind`` (a shipped or registered kind)."""
    return memory_kind(kind).memory_class


def tuning_space(trial: Any, kind: str, hidden: int) -> dict[str, Any]:
    """The memory config an Optuna ``trial`` tries for ``kind`` at ``hidden`` units: the
    kind's own tuning space (see :func:`register_memory`)."""
    return {"kind": kind, **memory_kind(kind).tuning(trial, hidden)}
