"""``MemoryConfig``: which memory block an agent uses, and its checked settings.

A config is built from a ``MemoryConfig``, a plain dict with the same keys, a
kind name, or ``None`` (the feedforward baseline); see :meth:`MemoryConfig.from_any`.
Every setting is checked when the config is made, so a bad one fails at agent
construction rather than mid-training.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pomdp_bench.validation import check_bool, check_choice, check_float, check_int

MEMORY_KINDS: tuple[str, ...] = (
    "none",
    "framestack",
    "gru",
    "lstm",
    "transformer",
    "mamba",
    "lru",
    "s5",
    "ffm",
    "linear_attention",
    "gtrxl",
)
# The kinds whose forward splits hidden_size into attention heads.
_ATTENTION_KINDS = ("transformer", "gtrxl", "linear_attention")
# The kinds that read position_encoding.
_POSITION_KINDS = ("transformer", "gtrxl")
# The kinds whose initial decays ``MemoryConfig.timescales`` sets.
TIMESCALES_KINDS: tuple[str, ...] = ("lru", "s5", "linear_attention")

# The initialisations each kind understands; None is always torch's defaults.
INITS_BY_KIND: dict[str, tuple[str | None, ...]] = {
    "none": (None,),
    "framestack": (None,),
    "gru": (None, "orthogonal", "forget_bias", "chrono"),
    "lstm": (None, "orthogonal", "forget_bias", "chrono"),
    "transformer": (None, "gpt2"),
    "mamba": (None, "mamba"),
    "lru": (None,),
    "s5": (None,),
    "ffm": (None,),
    "linear_attention": (None,),
    "gtrxl": (None, "gpt2"),
}

# Kinds added by pomdp_bench.memory.register_memory, with the inits each understands.
_REGISTERED: dict[str, tuple[str | None, ...]] = {}


def memory_kinds() -> tuple[str, ...]:
    """Every kind a config may name: :data:`MEMORY_KINDS`, then the kinds added with
    :func:`~pomdp_bench.memory.register_memory`."""
    return MEMORY_KINDS + tuple(_REGISTERED)


def add_kind(kind: str, inits: tuple[str | None, ...]) -> None:
    """Let configs name ``kind`` with these ``inits`` (use
    :func:`~pomdp_bench.memory.register_memory`, which also says how to build it)."""
    _REGISTERED[kind] = inits


def _inits_of(kind: str) -> tuple[str | None, ...]:
    return INITS_BY_KIND[kind] if kind in INITS_BY_KIND else _REGISTERED[kind]


# The transformer's position encodings; see ``MemoryConfig.position_encoding``.
POSITION_ENCODINGS: tuple[str, ...] = ("sinusoidal", "none", "relative")

# Settings added after runs were first stored, each with the default that
# reproduces those runs. ``to_dict`` leaves them out while they hold that default,
# so the run keys of stored results (hashes of the dict) stay valid.
_ADDED_SETTINGS: dict[str, Any] = {
    "position_encoding": "sinusoidal",
    "timescale": None,
    "context_size": 4,
    "timescales": None,
    "gate_bias": 2.0,
}


@dataclasses.dataclass(frozen=True)
class MemoryConfig:
    """Settings of a memory block.

    Args:
        kind: one of :data:`MEMORY_KINDS`, or a kind added with
            :func:`~pomdp_bench.memory.register_memory`.
        hidden_size: width ``H`` of the memory's output (every kind with parameters).
        num_layers: stacked layers (every kind with parameters).
        gradient_checkpoint: recompute activations in the backward pass, trading time
            for memory on long sequences (no effect for none and framestack, which
            hold no parameters).
        window: framestack: how many inputs are concatenated; transformer and gtrxl:
            a step attends to itself and the ``window - 1`` steps before it in its
            episode.
        num_heads: attention heads (transformer, gtrxl, linear_attention); must
            divide ``hidden_size``.
        d_state: mamba: state size ``N`` per channel; lru and s5: complex states
            ``N`` per layer; ffm: traces ``m`` per layer.
        d_conv: mamba causal depthwise convolution width.
        expand: mamba inner width is ``expand * hidden_size``.
        context_size: ffm only: frequencies ``c`` per trace (the state holds
            ``d_state * context_size`` complex numbers per layer).
        init: None for torch's defaults; "orthogonal" (gru, lstm): weights orthogonal,
            biases zero; "forget_bias" (gru, lstm): torch's weights, biases zero except
            the gate that keeps the state (LSTM's forget gate, GRU's update gate) at
            ``gate_bias`` (default 2), so an untrained state keeps sigmoid(2) = 88% a
            step instead of half, and a gradient reaches a cue 20 steps back; "chrono"
            (gru, lstm): Tallec & Ollivier's chrono initialisation (ICLR 2018) for
            ``timescale`` steps: biases zero except the keep gate's, drawn per unit as
            ``log(U(1, timescale - 1))`` (LSTM: the input gate's is its negative), so
            the units' untrained memory spans are spread up to the horizon; "gpt2"
            (transformer, gtrxl): every linear kernel drawn from N(0, 0.02²), biases zero; "mamba" (mamba): step sizes Δ log-uniform in
            [0.001, 0.1].
        position_encoding: transformer and gtrxl only. "sinusoidal": a sine/cosine embedding of
            the step's position within its episode is added to the input, so a step
            knows how far into the episode it is (positions later than any seen in
            training are out of distribution). "none": no embedding; the causal
            window alone orders the steps, and a long episode looks the same at
            every position (on MaskedCartPole, where episodes grow to 500 steps,
            this learns far faster; see ``scripts/ppo_masked_cartpole.py``), but
            attention cannot tell the earlier steps of the window apart.
            "relative": no embedding, and each attention head learns a bias per lag
            (0 to ``window - 1`` steps back) added to its scores (T5-style relative
            positions): order within the window without absolute positions.
        timescale: gru and lstm with ``init="chrono"`` only (and required there): the
            longest memory span, in steps, the keep-gate biases are drawn for; set it
            to the task's memory horizon.
        timescales: lru, s5 and linear_attention only: ``(shortest, longest)``, the
            initial memory spans of the recurrence's decays, in steps, where a decay
            ``λ`` per step keeps a state for ``τ = 1 / (1 - |λ|)`` steps (both > 1).
            lru draws ``|λ|`` on the ring ``[1 - 1/shortest, 1 - 1/longest]``; s5 draws
            its steps ``Δ`` log-uniform so that ``|λ| = exp(-Δ/2)`` spans the same
            range; linear_attention spaces its heads' timescales geometrically over
            it. None keeps each kind's published default: lru ``|λ|`` in [0.9,
            0.999] (τ 10 to 1000), s5 ``Δ`` in [0.001, 0.1] (τ about 20 to 2000),
            linear_attention τ 4 to 1024. Short spans (2 steps) let a layer take a
            difference of consecutive inputs, as a velocity needs (see
            ``scripts/ppo_masked_cartpole.py``).
        gate_bias: gtrxl: the update gates' initial bias ``b_g``; each gate starts
            letting through about ``sigmoid(-gate_bias)`` of its sublayer (2, the
            paper's value: 12%; 0: half). gru and lstm with ``init="forget_bias"``: the
            keep gate's initial bias (2: 88% kept a step, 8% over 20 steps; 4: 98%, 16%
            over 100 steps). Any other kind or init keeps the default, 2.

    Raises:
        TypeError: a setting has the wrong type.
        ValueError: an unknown kind or init, a value out of range, or an impossible
            combination (a ``hidden_size`` that ``num_heads`` does not divide, an
            init the kind does not understand).
    """

    kind: str
    hidden_size: int = 64
    num_layers: int = 1
    gradient_checkpoint: bool = False
    window: int = 32
    num_heads: int = 4
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    init: str | None = None
    position_encoding: str = "sinusoidal"
    timescale: int | None = None
    context_size: int = 4
    timescales: tuple[float, float] | None = None
    gate_bias: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str):
            raise TypeError(f"kind must be a str, got {self.kind!r} of type {type(self.kind).__name__}")
        check_choice("kind", self.kind, memory_kinds())
        for name in (
            "hidden_size",
            "num_layers",
            "window",
            "num_heads",
            "d_state",
            "d_conv",
            "expand",
            "context_size",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_bool("gradient_checkpoint", self.gradient_checkpoint)
        if self.init is not None and not isinstance(self.init, str):
            raise TypeError(
                f"init must be None or a str, got {self.init!r} of type {type(self.init).__name__}"
            )
        all_inits = sorted({i for kind in memory_kinds() for i in _inits_of(kind) if i is not None})
        if self.init is not None and self.init not in all_inits:
            raise ValueError(f"init must be None or one of {all_inits}, got {self.init!r}")
        if self.init not in _inits_of(self.kind):
            raise ValueError(
                f"init={self.init!r} does not apply to kind={self.kind!r}; "
                f"valid for {self.kind!r}: {list(_inits_of(self.kind))}"
            )
        check_choice("position_encoding", self.position_encoding, POSITION_ENCODINGS)
        if self.init == "chrono":
            if self.timescale is None:
                raise ValueError(
                    "init='chrono' needs timescale, the longest memory span in steps "
                    "(the task's memory horizon), an int >= 2; got None"
                )
            check_int("timescale", self.timescale, minimum=2)
        elif self.timescale is not None:
            raise ValueError(
                f"timescale={self.timescale!r} applies only to init='chrono', not init={self.init!r}"
            )
        if (
            self.kind not in _POSITION_KINDS
            and self.position_encoding != _ADDED_SETTINGS["position_encoding"]
        ):
            raise ValueError(
                f"position_encoding={self.position_encoding!r} applies only to kind in "
                f"{list(_POSITION_KINDS)}, not {self.kind!r}"
            )
        if self.kind != "ffm" and self.context_size != _ADDED_SETTINGS["context_size"]:
            raise ValueError(
                f"context_size={self.context_size!r} applies only to kind='ffm', not {self.kind!r}"
            )
        if self.timescales is not None:
            if self.kind not in TIMESCALES_KINDS:
                raise ValueError(
                    f"timescales={self.timescales!r} applies only to kind in "
                    f"{list(TIMESCALES_KINDS)}, not {self.kind!r}"
                )
            if isinstance(self.timescales, (str, bytes)) or not isinstance(self.timescales, Sequence):
                raise TypeError(
                    "timescales must be a pair (shortest, longest) of numbers of steps, got "
                    f"{self.timescales!r} of type {type(self.timescales).__name__}"
                )
            if len(self.timescales) != 2:
                raise ValueError(
                    f"timescales must be a pair (shortest, longest), got {len(self.timescales)} "
                    f"values: {self.timescales!r}"
                )
            short = check_float("timescales[0]", self.timescales[0], minimum=1.0, strict_minimum=True)
            long = check_float("timescales[1]", self.timescales[1], minimum=short)
            object.__setattr__(self, "timescales", (short, long))  # a YAML list becomes a tuple
        object.__setattr__(self, "gate_bias", check_float("gate_bias", self.gate_bias))
        keeps_gate = self.kind in ("gru", "lstm") and self.init == "forget_bias"
        if self.kind != "gtrxl" and not keeps_gate and self.gate_bias != _ADDED_SETTINGS["gate_bias"]:
            raise ValueError(
                f"gate_bias={self.gate_bias!r} applies only to kind='gtrxl' and to gru and lstm "
                f"with init='forget_bias', not kind={self.kind!r} with init={self.init!r}"
            )
        if self.kind in _ATTENTION_KINDS and self.hidden_size % self.num_heads:
            divisors = [h for h in range(1, self.hidden_size + 1) if self.hidden_size % h == 0]
            raise ValueError(
                f"{self.kind}: num_heads={self.num_heads} must divide hidden_size={self.hidden_size}; "
                f"valid num_heads: {divisors}"
            )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The valid keys of a config dict."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_any(cls, value: MemoryConfig | Mapping[str, Any] | str | None) -> MemoryConfig:
        """Make a config from a config, a dict with the same keys, a kind name, or None.

        ``None`` means ``kind="none"``. A dict must name its ``kind``.
        """
        if value is None:
            return cls("none")
        if isinstance(value, MemoryConfig):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            valid = cls.field_names()
            unknown = sorted(str(k) for k in value if k not in valid)
            if unknown:
                raise ValueError(f"unknown memory setting(s) {unknown}; valid keys: {list(valid)}")
            if "kind" not in value:
                raise ValueError(f"a memory config dict needs a 'kind', one of {list(memory_kinds())}")
            return cls(**value)
        raise TypeError(
            "memory must be None, a kind name, a dict or a MemoryConfig, "
            f"got {value!r} of type {type(value).__name__}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (``MemoryConfig.from_any`` takes it back).

        Settings added since results were first stored are left out while they hold
        their original default, so a stored run's key still matches its spec.
        """
        data = dataclasses.asdict(self)
        for name, default in _ADDED_SETTINGS.items():
            if data[name] == default:
                del data[name]
        if "timescales" in data:
            data["timescales"] = list(data["timescales"])  # plain YAML and JSON
        return data
