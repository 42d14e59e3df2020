"""Each memory kind carries its own settings: pomdp_bench.memory.options and registry.

A kind registered at run time brings a setting of its own; the shipped kinds' settings
still give the run keys every stored result was filed under.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor, nn

from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.tuning import memory_config
from pomdp_bench.memory import (
    MEMORY_KINDS,
    Memory,
    MemoryConfig,
    MemoryOptions,
    build_memory,
    memory_kinds,
    register_memory,
    registry,
)
from pomdp_bench.memory.contract import check_memory
from pomdp_bench.validation import check_float

STORE = Path(__file__).resolve().parent.parent / "leaderboards" / "store"


@dataclasses.dataclass(frozen=True)
class LeakyOptions(MemoryOptions):
    """``leaky``'s own setting: ``leak``, the fraction of the state kept a step."""

    leak: float = 0.5

    def __post_init__(self) -> None:
        leak = check_float("leak", self.leak, minimum=0.0, maximum=1.0)
        object.__setattr__(self, "leak", leak)


class LeakyMemory(Memory):
    """``h_t = leak * h_(t-1) + W x_t``, zeroed at an episode start: ``[T, B, D] -> [T, B, H]``."""

    kind = "leaky"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.leak = config.options.leak
        self.proj = nn.Linear(input_size, config.hidden_size)

    def state_spec(self):
        return (((self.config.hidden_size,), True),)

    def _forward(
        self, x: Tensor, state: tuple[Tensor, ...], starts: Tensor
    ) -> tuple[Tensor, tuple[Tensor, ...]]:
        h, out = state[0], []  # h [B, H]
        for t in range(x.shape[0]):
            h = self.leak * h.masked_fill(starts[t, :, None], 0.0) + self.proj(x[t])
            out.append(h)
        return torch.stack(out), (h,)  # [T, B, H]


class FakeTrial:
    """Answers each ``suggest_categorical`` with its first choice, recording the names."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        self.names.append(name)
        return choices[-1]


@pytest.fixture
def leaky(monkeypatch):
    """Register ``leaky`` for one test only."""
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))

    def tune(trial: Any, hidden: int) -> dict[str, Any]:
        return {"hidden_size": hidden, "leak": trial.suggest_categorical("memory_leak", [0.5, 0.9])}

    register_memory("leaky", LeakyMemory, options=LeakyOptions, tuning=tune)
    return "leaky"


def test_a_kind_registered_at_run_time_brings_its_own_setting(leaky) -> None:
    assert memory_kinds()[-1] == "leaky" and "leaky" not in MEMORY_KINDS
    config = MemoryConfig.from_any({"kind": "leaky", "hidden_size": 8, "leak": 0.9})
    assert config.leak == config.options.leak == 0.9 and config.options == LeakyOptions(0.9)
    assert config.to_dict() == {
        "kind": "leaky",
        "hidden_size": 8,
        "num_layers": 1,
        "gradient_checkpoint": False,
        "init": None,
        "leak": 0.9,
    }
    assert MemoryConfig.from_any(config.to_dict()) == config
    assert MemoryConfig("leaky").leak == 0.5  # its default
    assert MemoryConfig.field_names("leaky")[-1] == "leak"
    memory = build_memory(config, input_size=3)
    assert memory.leak == 0.9
    check_memory(memory)
    trial = FakeTrial()
    assert memory_config(trial, "leaky", 16) == {"kind": "leaky", "hidden_size": 16, "leak": 0.9}
    assert trial.names == ["memory_leak"]


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"leak": 1.5}, ValueError, r"leak must be <= 1.0"),
        ({"leak": "high"}, TypeError, "leak"),
        (
            {"colour": 1},
            ValueError,
            r"unknown memory setting\(s\) \['colour'\]; valid keys for 'leaky': .*'leak'",
        ),
        (
            {"window": 4},
            ValueError,
            r"window=4 applies only to kind in \['framestack', 'transformer', 'gtrxl'\]",
        ),
        ({"init": "chrono"}, ValueError, r"valid for 'leaky': \[None\]"),
    ],
)
def test_a_run_time_kind_refuses_bad_settings_naming_what_is_valid(leaky, settings, error, match) -> None:
    with pytest.raises(error, match=match):
        MemoryConfig.from_any({"kind": "leaky", **settings})


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"kind": "gru", "colour": 1}, r"unknown memory setting\(s\) \['colour'\]; valid keys for 'gru': "),
        (
            {"kind": "gru", "window": 8},
            r"window=8 applies only to kind in \['framestack', 'transformer', 'gtrxl'\]",
        ),
        ({"kind": "gru", "leak": 0.9}, r"unknown memory setting\(s\) \['leak'\]"),  # leaky is not registered
    ],
)
def test_a_shipped_kind_refuses_a_setting_it_does_not_have(value, match) -> None:
    with pytest.raises(ValueError, match=match):
        MemoryConfig.from_any(value)


def test_a_recorded_setting_a_kind_does_not_read_is_refused_unless_at_its_default() -> None:
    """gru does not read num_heads: another value would change the run key and nothing
    else. Its recorded default, as ``to_dict`` writes it, still reads back."""
    with pytest.raises(ValueError, match=r"num_heads=2 applies only to kind in .*valid settings for 'gru'"):
        MemoryConfig.from_any({"kind": "gru", "hidden_size": 8, "num_heads": 2})
    config = MemoryConfig.from_any({"kind": "gru", "hidden_size": 8})
    assert config.to_dict()["num_heads"] == 4
    assert MemoryConfig.from_any(config.to_dict()).to_dict() == config.to_dict()


def test_register_memory_refuses_shipped_names_and_undecorated_options(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    with pytest.raises(ValueError, match="shipped memory kind"):
        register_memory("gru", LeakyMemory)

    class Undecorated(MemoryOptions):  # its field would not be a dataclass field
        leak: float = 0.5

    with pytest.raises(TypeError, match=r"decorated with @dataclasses\.dataclass"):
        register_memory("leaky2", LeakyMemory, options=Undecorated)
    with pytest.raises(TypeError, match="options of kind='gru' must be a RNNOptions"):
        MemoryConfig("gru", options=LeakyOptions())


def test_each_shipped_kind_tunes_the_optuna_parameters_it_always_did() -> None:
    expected = {"gru": ["memory_init"], "lstm": ["memory_init"], "gtrxl": ["memory_gate_bias"]}
    expected |= {kind: ["memory_timescales"] for kind in ("lru", "s5", "linear_attention")}
    expected |= {"mingru": ["memory_expand"], "minlstm": ["memory_expand"]}
    expected |= {"mlstm": ["memory_num_heads"], "slstm": ["memory_num_heads"]}
    expected |= {"mamba2": ["memory_d_state"], "gated_deltanet": ["memory_num_heads"]}
    expected |= {"rwkv7": ["memory_head_size"]}
    for kind in MEMORY_KINDS:
        trial = FakeTrial()
        memory = memory_config(trial, kind, 32)
        assert trial.names == expected.get(kind, []), kind
        assert memory == ({"kind": "none"} if kind == "none" else {"kind": kind, "hidden_size": 32, **memory})
        MemoryConfig.from_any(memory)


@pytest.mark.skipif(not (STORE / "published.json").is_file(), reason="no published records")
def test_every_stored_run_key_still_resolves() -> None:
    """Every spec in the published store: its memory dict reads back as itself, and the
    spec hashes to the key it is stored under."""
    from pomdp_bench.harness.store import ResultStore

    with ResultStore(STORE) as store:
        rows = store.rows()
    assert rows
    for row in rows:
        spec = row["spec"]
        assert MemoryConfig.from_any(spec["memory"]).to_dict() == spec["memory"], row["key"]
        assert RunSpec.from_dict(spec).key() == row["key"]
