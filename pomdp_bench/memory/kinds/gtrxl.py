"""``gtrxl``: a gated transformer after GTrXL (Parisotto et al., "Stabilizing Transformers
for Reinforcement Learning", ICML 2020).

Two changes to the transformer that the paper found make it train in RL:

- **identity-map reordering**: LayerNorm only on the input of each sublayer, so an
  identity path runs from the block's input to its output (our transformer's blocks
  are already pre-LayerNorm), and a ReLU on each sublayer's output before it joins
  that path;
- **GRU-type gating in place of the residual connections**: each sublayer's output
  ``y`` joins the stream ``x`` through a gate ``g(x, y)`` (:class:`GRUGate`) whose
  update bias starts at ``GATE_BIAS = 2`` (:class:`GTrXLOptions`), so an
  untrained block passes ``x`` almost unchanged and the network starts close to a
  Markovian policy.

Everything else is :class:`~pomdp_bench.memory.kinds.transformer.TransformerMemory`'s:
attention over the last ``window`` steps of the episode, its position encodings, and
its memory of past steps (the last inputs, whose keys and values every call
recomputes with the current weights, in place of Transformer-XL's cache of hidden
states from older weights).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kinds.transformer import (
    TRANSFORMER_INITS,
    TransformerBlock,
    TransformerMemory,
    TransformerOptions,
)
from pomdp_bench.memory.options import added_setting
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_float

#: The update gate's initial bias ``b_g``: the paper's value, which starts every gate near identity.
GATE_BIAS = 2.0
#: The gate biases a study tries: the paper's near-closed gates, or half open.
GATE_BIASES: list[float] = [2.0, 0.0]


@dataclasses.dataclass(frozen=True)
class GTrXLOptions(TransformerOptions):
    """Settings of ``gtrxl``: the transformer's (:class:`TransformerOptions`), and

    Args:
        gate_bias: the update gates' initial bias ``b_g``; each gate starts letting
            through about ``sigmoid(-gate_bias)`` of its sublayer (2, the default and
            the paper's value: 12%; 0: half).
    """

    gate_bias: float = added_setting(GATE_BIAS)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "gate_bias", check_float("gate_bias", self.gate_bias))


def tune_gtrxl(trial: Any, hidden: int) -> dict[str, Any]:
    """A study's gtrxl: ``hidden`` units and a gate bias of :data:`GATE_BIASES` (Optuna
    parameter ``"memory_gate_bias"``)."""
    return {"hidden_size": hidden, "gate_bias": trial.suggest_categorical("memory_gate_bias", GATE_BIASES)}


class GRUGate(nn.Module):
    """``g(x, y)``, GTrXL's gate, ``[..., H] x [..., H] -> [..., H]``::

    r = σ(W_r y + U_r x)
    z = σ(W_z y + U_z x - b_g)
    ĥ = tanh(W_g y + U_g (r ⊙ x))
    g = (1 - z) ⊙ x + z ⊙ ĥ
    """

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.from_y = nn.Linear(hidden_size, 3 * hidden_size, bias=False)  # W_r, W_z, W_g
        self.from_x = nn.Linear(hidden_size, 2 * hidden_size, bias=False)  # U_r, U_z
        self.candidate_x = nn.Linear(hidden_size, hidden_size, bias=False)  # U_g
        self.bias = nn.Parameter(torch.full((hidden_size,), GATE_BIAS))  # b_g

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        wr, wz, wg = self.from_y(y).chunk(3, dim=-1)
        ur, uz = self.from_x(x).chunk(2, dim=-1)
        r = torch.sigmoid(wr + ur)
        z = torch.sigmoid(wz + uz - self.bias)
        candidate = torch.tanh(wg + self.candidate_x(r * x))
        return torch.lerp(x, candidate, z)


class GatedTransformerBlock(TransformerBlock):
    """A GTrXL block: ``h = g1(h, relu(attn(LN(h))))``, then ``h = g2(h, relu(mlp(LN(h))))``."""

    def __init__(self, hidden_size: int, num_heads: int, window: int, lag_bias: bool = False) -> None:
        super().__init__(hidden_size, num_heads, window, lag_bias)
        self.attn_gate = GRUGate(hidden_size)
        self.mlp_gate = GRUGate(hidden_size)

    def forward(
        self, h: Tensor, k_cache: Tensor, v_cache: Tensor, positions: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        attended, k_cache, v_cache = self.attend(h, k_cache, v_cache, positions)
        h = self.attn_gate(h, F.relu(attended))
        return self.mlp_gate(h, F.relu(self.mlp(self.mlp_norm(h)))), k_cache, v_cache


class GTrXLMemory(TransformerMemory):
    """``gtrxl``: :class:`~pomdp_bench.memory.kinds.transformer.TransformerMemory` with gated
    blocks (:class:`GatedTransformerBlock`); the same state and settings."""

    kind = "gtrxl"
    block_class = GatedTransformerBlock

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size)
        with torch.no_grad():  # no random draw: the default (2) builds the same weights as before
            for block in self.blocks:
                block.attn_gate.bias.fill_(config.gate_bias)
                block.mlp_gate.bias.fill_(config.gate_bias)


register_memory("gtrxl", GTrXLMemory, options=GTrXLOptions, inits=TRANSFORMER_INITS, tuning=tune_gtrxl)
