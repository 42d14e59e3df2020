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

The state is a key/value cache of the last ``window - 1`` steps of every layer and
the position within the episode, so acting one step at a time and training on a
whole sequence compute the same thing, and a training sequence that starts
mid-episode from a stored state attends to the steps cached in it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from pomdp_bench.memory.base import Memory, State, StateSpec
from pomdp_bench.memory.config import MemoryConfig
from pomdp_bench.memory.episodes import lag_mask, positions_in_episode


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
        q, k, v = self.qkv(self.attn_norm(h)).chunk(3, dim=-1)
        k = torch.cat([k_cache.transpose(0, 1), k])  # [window - 1 + T, B, H]
        v = torch.cat([v_cache.transpose(0, 1), v])
        h = h + self.attn_out(
            windowed_attention(q, k, v, positions, self.window, self.num_heads, self.lag_bias)
        )
        h = h + self.mlp(self.mlp_norm(h))
        keep = self.window - 1
        return h, k[k.shape[0] - keep :].transpose(0, 1), v[v.shape[0] - keep :].transpose(0, 1)


class TransformerMemory(Memory):
    """A causal transformer over the episode's last ``window`` steps: ``[T, B, D] -> [T, B, H]``.

    State, batch-first: ``(keys [B, L, window - 1, H], values [B, L, window - 1, H],
    position [B])``. ``position`` (int64) counts the steps the episode has had; cache
    entries older than that are zero and never attended to.
    """

    kind = "transformer"
    trains_through_time = True

    def __init__(self, config: MemoryConfig, input_size: int) -> None:
        super().__init__(config, input_size, output_size=config.hidden_size)
        self.window = config.window
        self.sinusoidal = config.position_encoding == "sinusoidal"
        self.in_proj = nn.Linear(input_size, config.hidden_size)
        self.blocks = nn.ModuleList(
            TransformerBlock(
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
                    nn.init.zeros_(module.bias)

    def state_spec(self) -> tuple[StateSpec, ...]:
        cache = (self.config.num_layers, self.window - 1, self.config.hidden_size)
        return ((cache, True), (cache, True), ((), False))

    def _forward(self, x: Tensor, state: State, starts: Tensor) -> tuple[Tensor, State]:
        k_cache, v_cache, position = state
        positions = positions_in_episode(starts, position)  # [T, B]
        h = self.in_proj(x)  # [T, B, H]
        if self.sinusoidal:
            h = h + sinusoidal_embedding(positions, self.output_size).to(x.dtype)
        keys, values = [], []
        for layer, block in enumerate(self.blocks):
            h, k, v = self._maybe_checkpoint(block, h, k_cache[:, layer], v_cache[:, layer], positions)
            keys.append(k)
            values.append(v)
        # Zero the cached steps that precede the episode start: a canonical state.
        next_position = positions[-1] + 1  # [B]
        valid = lag_mask(next_position.unsqueeze(0), self.window)[0, :, :-1]  # [B, window - 1]
        valid = valid.to(h.dtype)[:, None, :, None]
        keys = torch.stack(keys, 1) * valid
        values = torch.stack(values, 1) * valid
        return self.final_norm(h), (keys, values, next_position)
