"""The arithmetic the memory kinds share: scans, the fused RNN with resets, episode masks.

- :mod:`~pomdp_bench.memory.kernels.linear_scan`: the diagonal linear recurrence
  (lru, s5, ffm, linear_attention, mingru, minlstm).
- :mod:`~pomdp_bench.memory.kernels.mlstm_scan`: xLSTM's stabilised matrix memory,
  chunkwise (mlstm).
- :mod:`~pomdp_bench.memory.kernels.delta_rule`: the diagonal-plus-rank-one matrix
  memory, chunkwise (mamba2, gated_deltanet, rwkv7).
- :mod:`~pomdp_bench.memory.kernels.mamba_scan`: Mamba's selective scan.
- :mod:`~pomdp_bench.memory.kernels.rnn_fused`: torch's fused GRU/LSTM across episode
  starts; :mod:`~pomdp_bench.memory.kernels.rnn_reference` is the plain loop it equals.
- :mod:`~pomdp_bench.memory.kernels.episodes`: positions within episodes, lag masks,
  the windows of past inputs.
"""
