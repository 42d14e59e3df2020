"""The pieces a memory kind's own settings are made of.

A kind declares its settings as a frozen dataclass subclassing :class:`MemoryOptions`,
next to its class, and registers it with
:func:`~pomdp_bench.memory.register_memory`. The dataclass's ``__post_init__`` checks
its own fields; :meth:`MemoryOptions.check` checks them against the settings every
kind shares (``hidden_size``, ``init``, ...).

Two kinds of field keep stored run keys (hashes of ``MemoryConfig.to_dict()``) valid:

- :func:`added_setting`: a setting added after runs were stored, left out of
  ``to_dict`` while it holds its default.
- :class:`LegacyKeys`: five settings every shipped kind's run key records, from when
  one config held every kind's settings. A kind that does not read one keeps it at
  its recorded value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pomdp_bench.validation import check_float, check_int

if TYPE_CHECKING:
    from pomdp_bench.memory.config import MemoryConfig

# Field metadata keys.
OMIT_AT_DEFAULT = "pomdp_bench.memory.omit_at_default"
RECORDED = "pomdp_bench.memory.recorded"


@dataclasses.dataclass(frozen=True)
class MemoryOptions:
    """Base of a kind's own settings: subclass it as a frozen dataclass.

    Each field is a setting of the kind, with its default. ``__post_init__`` checks
    the fields on their own (raise ``TypeError`` or ``ValueError`` naming the field,
    the value and what is valid). Override :meth:`check` for checks that need the
    common settings.
    """

    def check(self, config: MemoryConfig) -> None:
        """Check these settings against ``config``'s common ones (``hidden_size``,
        ``num_layers``, ``init``, ...). The default checks nothing.

        Raises:
            ValueError: an impossible combination.
        """


def added_setting(default: Any) -> Any:
    """A dataclass field for a setting added after runs were stored: ``to_dict`` leaves
    it out while it holds ``default``, so the stored runs' keys stay valid."""
    return dataclasses.field(default=default, metadata={OMIT_AT_DEFAULT: True})


def recorded_setting(default: Any) -> Any:
    """A dataclass field the kind does not read but its run keys record: it takes
    only ``default``."""
    return dataclasses.field(default=default, metadata={RECORDED: True})


@dataclasses.dataclass(frozen=True)
class LegacyKeys(MemoryOptions):
    """Five settings every shipped kind's run key records (``MemoryConfig.to_dict()``
    writes them, before ``init``), as when one config held every kind's settings.

    A kind that reads one redeclares it as a plain field (``window: int = 32``); the
    rest stay :func:`recorded_setting` fields, fixed at these values. Kinds added at
    run time need not subclass this.
    """

    window: int = recorded_setting(32)
    num_heads: int = recorded_setting(4)
    d_state: int = recorded_setting(16)
    d_conv: int = recorded_setting(4)
    expand: int = recorded_setting(2)

    def _check_ints(self, *names: str) -> None:
        """Check that each of ``names`` is an int >= 1."""
        for name in names:
            check_int(name, getattr(self, name), minimum=1)


def check_heads(config: MemoryConfig, num_heads: int) -> None:
    """Refuse ``num_heads`` that do not divide ``config.hidden_size``, listing those that do.

    Raises:
        ValueError: ``hidden_size % num_heads != 0``.
    """
    hidden = config.hidden_size
    if hidden % num_heads:
        divisors = [h for h in range(1, hidden + 1) if hidden % h == 0]
        raise ValueError(
            f"{config.kind}: num_heads={num_heads} must divide hidden_size={hidden}; "
            f"valid num_heads: {divisors}"
        )


def check_timescales(value: Any) -> tuple[float, float] | None:
    """Check a ``timescales`` setting: None, or a pair ``(shortest, longest)`` of steps
    with ``1 < shortest <= longest``. Returns it as a tuple of floats (a YAML list
    becomes a tuple).

    Raises:
        TypeError: not a pair of numbers.
        ValueError: not two values, or out of range.
    """
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(
            "timescales must be a pair (shortest, longest) of numbers of steps, got "
            f"{value!r} of type {type(value).__name__}"
        )
    if len(value) != 2:
        raise ValueError(f"timescales must be a pair (shortest, longest), got {len(value)} values: {value!r}")
    short = check_float("timescales[0]", value[0], minimum=1.0, strict_minimum=True)
    long = check_float("timescales[1]", value[1], minimum=short)
    return short, long


# The initial memory spans a study tries for a kind with ``timescales``, by name: the
# papers' ranges, or starting as short as 2 steps.
TIMESCALES: dict[str, list[int] | None] = {"default": None, "2-100": [2, 100], "2-1000": [2, 1000]}


def tune_timescales(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's memory settings for a kind with ``timescales``: ``hidden`` units and
    the spans of :data:`TIMESCALES` (Optuna parameter ``"memory_timescales"``)."""
    memory: dict[str, Any] = {"hidden_size": hidden}
    spans = TIMESCALES[trial.suggest_categorical("memory_timescales", list(TIMESCALES))]
    if spans is not None:
        memory["timescales"] = spans
    return memory
