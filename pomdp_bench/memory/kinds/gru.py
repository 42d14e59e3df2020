"""``gru``: a stacked ``nn.GRU`` with resets inside the forward
(:class:`~pomdp_bench.memory.kinds.rnn.RecurrentMemory`, shared with lstm).

State, batch-first: ``(h [B, L, H],)``. Settings: :class:`~pomdp_bench.memory.kinds.rnn.RNNOptions`;
inits: :data:`~pomdp_bench.memory.kinds.rnn.RNN_INITS`.
"""

from __future__ import annotations

from pomdp_bench.memory.kinds.rnn import RNN_INITS, RecurrentMemory, RNNOptions, tune_rnn
from pomdp_bench.memory.registry import register_memory

register_memory("gru", RecurrentMemory, options=RNNOptions, inits=RNN_INITS, tuning=tune_rnn)
