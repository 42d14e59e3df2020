"""``MemoryConfig``: which memory block an agent uses, and its checked settings.

A config holds the settings every kind shares (``kind``, ``hidden_size``,
``num_layers``, ``gradient_checkpoint``, ``init``) and the kind's own, ``options``: a
dataclass the kind declares beside its class (:mod:`pomdp_bench.memory.kinds`) and
registers with :func:`~pomdp_bench.memory.register_memory`. It is built from a
``MemoryConfig``, a flat dict of both, a kind name, or ``None`` (the feedforward
baseline); see :meth:`MemoryConfig.from_any`. Every setting is checked when the
config is made, so a bad one fails at agent construction rather than mid-training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pomdp_bench.memory.options import OMIT_AT_DEFAULT, RECORDED, LegacyKeys, MemoryOptions
from pomdp_bench.memory.registry import MemoryKind, memory_kind, memory_kinds
from pomdp_bench.validation import check_bool, check_int

# The settings every kind has, in to_dict's order.
COMMON_SETTINGS: tuple[str, ...] = ("kind", "hidden_size", "num_layers", "gradient_checkpoint", "init")


@dataclasses.dataclass(frozen=True, init=False)
class MemoryConfig:
    """Settings of a memory block: the common ones, and the kind's own in ``options``.

    ``MemoryConfig("gru", hidden_size=32, init="forget_bias", gate_bias=4.0)`` takes
    the kind's own settings as keywords; each reads back as an attribute
    (``config.gate_bias``, the same as ``config.options.gate_bias``).

    Args:
        kind: one of :data:`~pomdp_bench.memory.MEMORY_KINDS`, or a kind added with
            :func:`~pomdp_bench.memory.register_memory`.
        hidden_size: width ``H`` of the memory's output (every kind with parameters).
            Default 64.
        num_layers: stacked layers (every kind with parameters). Default 1.
        gradient_checkpoint: recompute activations in the backward pass, trading time
            for memory on long sequences (no effect for none and framestack, which
            hold no parameters). Default False.
        init: None (default) for torch's defaults, or an initialisation the kind
            registered (its module documents each).
        options: the kind's own settings, an instance of the options dataclass it
            registered; None (default) builds it from ``settings``.
        **settings: the kind's own settings by name (its options' fields); the kind's
            module documents each.

    Raises:
        TypeError: a setting has the wrong type.
        ValueError: an unknown kind, init or setting, a value out of range, or an
            impossible combination (a ``hidden_size`` that ``num_heads`` does not
            divide, an init the kind does not understand).
    """

    kind: str
    hidden_size: int
    num_layers: int
    gradient_checkpoint: bool
    init: str | None
    options: MemoryOptions

    def __init__(
        self,
        kind: str,
        hidden_size: int = 64,
        num_layers: int = 1,
        gradient_checkpoint: bool = False,
        init: str | None = None,
        options: MemoryOptions | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a str, got {kind!r} of type {type(kind).__name__}")
        if kind not in memory_kinds():
            raise ValueError(
                f"kind must be one of {list(memory_kinds())}, got {kind!r}. A kind of your own is "
                "registered by its module (pomdp_bench.memory.register_memory); import that module "
                f"first: a suite's import: list, --import MODULE, or the kind named as 'module:{kind}'"
            )
        entry = memory_kind(kind)
        for name, value in (("kind", kind), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            object.__setattr__(self, name, value)
        check_int("hidden_size", hidden_size, minimum=1)
        check_int("num_layers", num_layers, minimum=1)
        object.__setattr__(
            self, "gradient_checkpoint", check_bool("gradient_checkpoint", gradient_checkpoint)
        )
        object.__setattr__(self, "init", _check_init(entry, init))
        if options is None:
            options = _make_options(entry, settings)
        elif settings:
            raise TypeError(f"give {kind}'s settings as options or as keywords, not both: {sorted(settings)}")
        elif type(options) is not entry.options:
            raise TypeError(
                f"options of kind={kind!r} must be a {entry.options.__name__}, got {type(options).__name__}"
            )
        object.__setattr__(self, "options", options)
        options.check(self)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: a kind's own setting reads as an attribute.
        if name.startswith("__") or name == "options":
            raise AttributeError(name)
        options = self.__dict__.get("options")
        if options is not None and name in {f.name for f in dataclasses.fields(options)}:
            return getattr(options, name)
        raise AttributeError(
            f"{type(self).__name__} of kind={self.__dict__.get('kind')!r} has no setting {name!r}"
        )

    @classmethod
    def field_names(cls, kind: str | None = None) -> tuple[str, ...]:
        """The valid keys of a config dict: the common settings, and with ``kind`` its
        own (those that take more than one value)."""
        own = memory_kind(kind).setting_names() if kind is not None else ()
        return COMMON_SETTINGS + own

    @classmethod
    def from_any(cls, value: MemoryConfig | Mapping[str, Any] | str | None) -> MemoryConfig:
        """Make a config from a config, a flat dict of settings, a kind name, or None.

        ``None`` means ``kind="none"``. A dict must name its ``kind``.
        """
        if value is None:
            return cls("none")
        if isinstance(value, MemoryConfig):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            if "kind" not in value:
                raise ValueError(f"a memory config dict needs a 'kind', one of {list(memory_kinds())}")
            if "options" in value:
                raise ValueError("a memory config dict is flat: give the kind's settings beside 'kind'")
            return cls(**value)
        raise TypeError(
            "memory must be None, a kind name, a dict or a MemoryConfig, "
            f"got {value!r} of type {type(value).__name__}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The settings as a flat, plain dict (``MemoryConfig.from_any`` takes it back).

        This is what a run key hashes. Settings added since results were first stored
        are left out while they hold their original default, and the shipped kinds
        write :class:`~pomdp_bench.memory.options.LegacyKeys`, so a stored run's key
        still matches its spec.
        """
        data: dict[str, Any] = {name: getattr(self, name) for name in COMMON_SETTINGS if name != "init"}
        legacy = (
            {f.name for f in dataclasses.fields(LegacyKeys)}
            if isinstance(self.options, LegacyKeys)
            else set()
        )
        rest: dict[str, Any] = {}
        for f in dataclasses.fields(self.options):
            value = getattr(self.options, f.name)
            if f.metadata.get(OMIT_AT_DEFAULT) and value == f.default:
                continue
            if isinstance(value, tuple):
                value = list(value)  # plain YAML and JSON
            (data if f.name in legacy else rest)[f.name] = value
        data["init"] = self.init
        data.update(rest)
        return data


def _check_init(entry: MemoryKind, init: Any) -> str | None:
    """``init`` if ``entry``'s kind understands it."""
    if init is not None and not isinstance(init, str):
        raise TypeError(f"init must be None or a str, got {init!r} of type {type(init).__name__}")
    every = sorted({i for kind in memory_kinds() for i in memory_kind(kind).inits if i is not None})
    if init is not None and init not in every:
        raise ValueError(f"init must be None or one of {every}, got {init!r}")
    if init not in entry.inits:
        raise ValueError(
            f"init={init!r} does not apply to kind={entry.name!r}; valid for {entry.name!r}: {list(entry.inits)}"
        )
    return init


def _make_options(entry: MemoryKind, settings: dict[str, Any]) -> MemoryOptions:
    """``entry``'s options from ``settings``, refusing a setting it does not read (naming
    the kinds that do). A recorded setting the kind does not read (``LegacyKeys``) is
    accepted at its recorded default only, as ``to_dict`` writes it: any other value
    would change the run key and nothing else."""
    fields = {f.name: f for f in dataclasses.fields(entry.options)}
    valid = list(COMMON_SETTINGS + entry.setting_names())
    unread = sorted(
        name
        for name, value in settings.items()
        if name in fields and fields[name].metadata.get(RECORDED) and value != fields[name].default
    )
    unknown = sorted(name for name in settings if name not in fields) + unread
    for name in unknown:
        owners = [k for k in memory_kinds() if name in memory_kind(k).setting_names()]
        if owners:
            where = f"kind={owners[0]!r}" if len(owners) == 1 else f"kind in {owners}"
            raise ValueError(
                f"{name}={settings[name]!r} applies only to {where}, not {entry.name!r}; "
                f"valid settings for {entry.name!r}: {valid}"
            )
    if unknown:
        raise ValueError(f"unknown memory setting(s) {unknown}; valid keys for {entry.name!r}: {valid}")
    return entry.options(**settings)
