"""``transformer``: causal self-attention over the last ``window`` steps of the episode.

A GPT-style stack: ``Linear(D, H)``, plus (``position_encoding="sinusoidal"``) a
sinusoidal embedding of the step's position within its episode, then pre-LayerNorm
blocks (attention, then an MLP), then a final LayerNorm. With
``position_encoding="none"`` the input carries no position: the causal window is
all that orders the steps, and within it attention cannot tell one earlier step
from another. With ``position_encoding="relative"`` each head adds a learned bias
per lag (how many steps back a key is) to its scores, so it can single out, say,
the previous step, while a long episode still looks the same at every position.
A step attends to itself and the ``window - 1`` steps before it, never to a step
before its episode's start.

The state is the last ``num_layers * (window - 1)`` *inputs* and the position
within the episode, not a key/value cache. Every call computes the keys and values
of those steps afresh, with the current weights and without gradient, before it
reads its own steps. So no step ever attends to numbers from older weights: not
the first steps after an update while acting, and not the first steps of a stored
training sequence that starts mid-episode (a cache would hold the keys of the
weights that acted). ``num_layers * (window - 1)`` inputs are exactly what the
deepest layer's keys of the last ``window - 1`` steps depend on, so acting one step
at a time and running a whole sequence still compute the same thing.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.kernels.episodes import lag_mask, positions_in_episode
from pomdp_bench.memory.options import LegacyKeys, added_setting, check_heads
from pomdp_bench.memory.registry import register_memory
from pomdp_bench.validation import check_choice

#: The position encodings; see :class:`TransformerOptions`.
POSITION_ENCODINGS: tuple[str, ...] = ("sinusoidal", "none", "relative")
#: The inits of transformer and gtrxl. "gpt2": every linear kernel drawn from
#: N(0, 0.02²), biases zero.
TRANSFORMER_INITS: tuple[str | None, ...] = (None, "gpt2")


@dataclasses.dataclass(frozen=True)
class TransformerOptions(LegacyKeys):
    """Settings of ``transformer`` (and ``gtrxl``).

    Args:
        window: a step attends to itself and the ``window - 1`` steps before it in
            its episode. Default 32.
        num_heads: attention heads; must divide ``hidden_size``. Default 4.
        position_encoding: "sinusoidal" (default): a sine/cosine embedding of the
            step's position within its episode is added to the input, so a step knows
            how far into the episode it is (positions later than any seen in training
            are out of distribution). "none": no embedding; the causal window alone
            orders the steps, and a long episode looks the same at every position (on
            MaskedCartPole, where episodes grow to 500 steps, this learns far faster;
            see ``scripts/ppo_masked_cartpole.py``), but attention cannot tell the
            earlier steps of the window apart. "relative": no embedding, and each
            attention head learns a bias per lag (0 to ``window - 1`` steps back)
            added to its scores (T5-style relative positions): order within the
            window without absolute positions.
    """

    window: int = 32
    num_heads: int = 4
    position_encoding: str = added_setting("sinusoidal")

    def __post_init__(self) -> None:
        self._check_ints("window", "num_heads")
        check_choice("position_encoding", self.position_encoding, POSITION_ENCODINGS)

    def check(self, config: MemoryConfig) -> None:
        check_heads(config, self.num_heads)


def sinusoidal_embedding(positions: Tensor, size: int) -> Tensor:
    """The Transformer's sine/cosine embedding: ``positions [T, B]`` -> ``[T, B, size]``."""
    half = (size + 1) // 2
    freqs = torch.exp(
        -math.log(10_000.0) * torch.arange(half, device=positions.device, dtype=torch.float32) / half
    )
    angles = positions.unsqueeze(-1).to(torch.float32) * freqs  # [T, B, half]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)[..., :size]


def windowed_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    positions: Tensor,
    window: int,
    num_heads: int,
    lag_bias: Tensor | None = None,
) -> Tensor:
    """Causal attention of each step to the last ``window`` steps of its episode.

    Args:
        q: ``[T, B, H]`` queries of the ``T`` steps.
        k, v: ``[window - 1 + T, B, H]``: the cached ``window - 1`` steps, then the ``T`` steps.
        positions: ``[T, B]`` position of each step within its episode.
        window: how many steps a query sees, itself included.
        num_heads: attention heads; ``H`` splits evenly between them.
        lag_bias: ``[heads, window]`` or None: added to the attention score of a key
            ``lag`` steps before its query (0 = the query's own step).

    Returns:
        ``[T, B, H]``.

    The queries are cut into chunks of ``C = min(T, window)`` steps; a chunk's queries
    can only see the ``C + window - 1`` keys from ``window - 1`` steps before it to its
    end, so each chunk attends to that slice alone: ``O(T · window)``, not ``O(T²)``.
    """
    steps, batch, hidden = q.shape
    head = hidden // num_heads
    size = min(steps, window)
    chunks = -(-steps // size)
    pad = chunks * size - steps
    if pad:  # padding queries see only their own (zero) key: no empty softmax rows
        q = F.pad(q, (0, 0, 0, 0, 0, pad))
        k = F.pad(k, (0, 0, 0, 0, 0, pad))
        v = F.pad(v, (0, 0, 0, 0, 0, pad))
        positions = F.pad(positions, (0, 0, 0, pad))
    span = size + window - 1
    # [chunks * size, B, H] -> [B * chunks, heads, size, head]
    q = q.view(chunks, size, batch, num_heads, head).permute(2, 0, 3, 1, 4)
    q = q.reshape(batch * chunks, num_heads, size, head)

    def keys_of_chunks(
        x: Tensor,
    ) -> Tensor:  # [window - 1 + chunks * size, B, H] -> [B * chunks, heads, span, head]
        x = x.unfold(0, span, size)  # [chunks, B, H, span]
        x = x.reshape(chunks, batch, num_heads, head, span).permute(1, 0, 2, 4, 3)
        return x.reshape(batch * chunks, num_heads, span, head)

    # Query i of a chunk sees key j when its lag (window - 1 + i - j) is within the
    # window and within the episode so far.
    lag = window - 1 + torch.arange(size, device=q.device)[:, None] - torch.arange(span, device=q.device)
    reach = positions.clamp(max=window - 1).view(chunks, size, batch).permute(2, 0, 1)  # [B, chunks, size]
    mask = (lag >= 0) & (lag <= reach.reshape(batch * chunks, 1, size, 1))  # [B * chunks, 1, size, span]
    if lag_bias is not None:  # scores of the steps seen get their lag's bias, the rest -inf
        bias = lag_bias[:, lag.clamp(0, window - 1)]  # [heads, size, span]
        mask = torch.where(mask, bias, float("-inf"))
    out = F.scaled_dot_product_attention(q, keys_of_chunks(k), keys_of_chunks(v), attn_mask=mask)
    out = out.view(batch, chunks, num_heads, size, head).permute(1, 3, 0, 2, 4)
    return out.reshape(chunks * size, batch, hidden)[:steps]


class TransformerBlock(nn.Module):
    """A pre-LayerNorm block: ``h + attn(LN(h))``, then ``h + mlp(LN(h))``.

    With ``lag_bias``, each head learns a bias per lag (``[heads, window]``, zero at
    first) added to its attention scores, T5-style relative positions.
    """

    def __init__(self, hidden_size: int, num_heads: int, window: int, lag_bias: bool = False) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.window = window
        self.lag_bias = nn.Parameter(torch.zeros(num_heads, window)) if lag_bias else None
        self.attn_norm = nn.LayerNorm(hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.attn_out = nn.Linear(hidden_size, hidden_size)
        self.mlp_norm = nn.LayerNorm(hidden_size)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, 4 * hidden_size), nn.GELU(), nn.Linear(4 * hidden_size, hidden_size)
        )

    def forward(
        self, h: Tensor, k_cache: Tensor, v_cache: Tensor, positions: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``h [T, B, H]``, caches ``[B, window - 1, H]``, ``positions [T, B]``
        -> ``(h, k_cache, v_cache)``, the caches not yet masked to the episode."""
        attended, k_cache, v_cache = self.attend(h, k_cache, v_cache, positions)
        h = h + attended
        return h + self.mlp(self.mlp_norm(h)), k_cache, v_cache

    def attend(
        self, h: Tensor, k_cache: Tensor, v_cache: Tensor, positions: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The attention sublayer ``attn(LN(h))`` (``[T, B, H]``) and the new caches."""
        q, k, v = self.qkv(self.attn_norm(h)).chunk(3, dim=-1)
        k = torch.cat([k_cache.transpose(0, 1), k])  # [window - 1 + T, B, H]
        v = torch.cat([v_cache.transpose(0, 1), v])
        attended = self.attn_out(
            windowed_attention(q, k, v, positions, self.window, self.num_heads, self.lag_bias)
        )
        keep = self.window - 1
        return attended, k[k.shape[0] - keep :].transpose(0, 1), v[v.shape[0] - keep :].transpose(0, 1)


class TransformerMemory(Memory):
    """A causal transformer over the episode's last ``window`` steps: ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``(inputs [B, C, D], position [B])`` with
    ``C = num_layers * (window - 1)``: the last ``C`` inputs, oldest first, and
    (int64) how many steps the episode has had. Inputs from before the episode's
    start are zero and never attended to.
    """

    kind = "transformer"
    trains_through_time = True
    block_class: type[TransformerBlock] = TransformerBlock

    @classmethod
    def visible_past(cls, config: MemoryConfig) -> tuple[int, str] | None:
        """``num_layers * (window - 1)`` steps back, bounded by its ``"window"``: each layer
        attends ``window - 1`` steps back to outputs of the layer below (``gtrxl`` too)."""
        return int(config.num_layers) * (int(config.window) - 1), "window"

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.window = config.window
        self.sinusoidal = config.position_encoding == "sinusoidal"
        self.in_proj = nn.Linear(input_size, config.hidden_size)
        self.blocks = nn.ModuleList(
            self.block_class(
                config.hidden_size,
                config.num_heads,
                config.window,
                lag_bias=config.position_encoding == "relative",
            )
            for _ in range(config.num_layers)
        )
        self.final_norm = nn.LayerNorm(config.hidden_size)
        if config.init == "gpt2":
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=0.02)
                    if module.bias is not None:
                        nn.init.zeros_(module.bias)

    @property
    def context_length(self) -> int:
        """``C = num_layers * (window - 1)``: how many past inputs the state keeps."""
        return self.config.num_layers * (self.window - 1)

    def state_spec(self) -> tuple[StateSpec, ...]:
        return (((self.context_length, self.input_size), True), ((), False))

    def _embed(self, x: Tensor, positions: Tensor) -> Tensor:
        h = self.in_proj(x)  # [T, B, H]
        if self.sinusoidal:
            h = h + sinusoidal_embedding(positions, self.output_size).to(x.dtype)
        return h

    @torch.no_grad()
    def context_cache(self, inputs: Tensor, position: Tensor) -> tuple[list[Tensor], list[Tensor]]:
        """Keys and values of the last ``window - 1`` context steps, per layer, from the
        current weights and without gradient.

        Args:
            inputs: ``[B, C, D]`` the state's inputs, oldest first.
            position: ``[B]`` the steps the episode has had (the state's position).

        Returns:
            ``(keys, values)``: one ``[B, window - 1, H]`` per layer. Entries of steps
            before the episode's start are computed but never attended to.
        """
        batch, context = inputs.shape[0], inputs.shape[1]
        keep = self.window - 1
        empty = inputs.new_zeros(batch, keep, self.output_size)
        if keep == 0:
            return [empty] * len(self.blocks), [empty] * len(self.blocks)
        # Steps before the episode's start sit at negative positions: clamped to 0, they
        # attend to themselves alone (finite, and nothing that is kept reads them).
        offsets = torch.arange(context - 1, -1, -1, device=inputs.device)[:, None]  # [C, 1]
        positions = (position[None, :] - 1 - offsets).clamp(min=0)  # [C, B]
        h = self._embed(inputs.transpose(0, 1), positions)  # [C, B, H]
        keys, values = [], []
        for layer, block in enumerate(self.blocks):
            if layer == len(self.blocks) - 1:  # the last layer's keys need no attention
                _, k, v = block.qkv(block.attn_norm(h[-keep:])).chunk(3, dim=-1)
                keys.append(k.transpose(0, 1))
                values.append(v.transpose(0, 1))
            else:  # earlier layers: the steps' outputs feed the next layer's keys
                h, k, v = block(h, empty, empty, positions)
                keys.append(k)
                values.append(v)
        return keys, values

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        inputs, position = state
        k_cache, v_cache = self.context_cache(inputs, position)
        positions = positions_in_episode(starts, position)  # [T, B]
        h = self._embed(x, positions)  # [T, B, H]
        for layer, block in enumerate(self.blocks):
            h, _, _ = self._maybe_checkpoint(block, h, k_cache[layer], v_cache[layer], positions)
        # The last C inputs, zeroed before the episode's start: a canonical state.
        next_position = positions[-1] + 1  # [B]
        context = self.context_length
        recent = torch.cat([inputs, x.transpose(0, 1)], dim=1)[:, inputs.shape[1] + x.shape[0] - context :]
        valid = lag_mask(next_position.unsqueeze(0), context + 1)[0, :, :-1]  # [B, C]
        return self.final_norm(h), (recent * valid.to(x.dtype).unsqueeze(-1), next_position)


register_memory("transformer", TransformerMemory, options=TransformerOptions, inits=TRANSFORMER_INITS)
