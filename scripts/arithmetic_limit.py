"""How close PPO's update comes to this CPU's arithmetic limit, per memory kind and copies.

For TMaze-v1 (corridor 10) at ``agents/ppo.yaml``'s TMaze settings for corridors up
to 5 (32 steps per copy and rollout, 4 minibatches, 4 epochs, heads [32]) with each
memory kind at hidden size 64 (the set-up of ``benchmarks/test_bench_copies.py``), and
16, 64, 256 and 1024 copies, it measures on one thread:

- the time of one rollout and of one update (median of ``--rounds``), as env steps/s;
- the floating-point work of one update: the matrix products that
  ``torch.utils.flop_counter.FlopCounterMode`` counts (forward and backward), plus
  what it cannot see: oneDNN's fused LSTM layer (``2 * 4H(D + H)`` per step forward,
  twice that backward) and Mamba's selective scan (about 20 elementwise operations
  per state element and step, forward and backward);
- this CPU's peak: the best single-thread ``torch.mm`` rate over square sizes 128 to
  1024 and over the update's own product shapes.

The arithmetic limit is the update's work over that peak, as env steps/s: what the
update would reach if every operation ran at matmul speed with no overhead. The gap
between it and the measured rate is overhead (Python, operator dispatch, small
kernels) or memory traffic (elementwise work). The limit counts matrix products: a
kind whose work is mostly elementwise (the scans of lru, s5, ffm, mingru, minlstm)
gets a limit that is too high, so its share is a lower bound.

Prints a Markdown table and, with ``--csv``, writes the rows to a CSV (default
``leaderboards/throughput.csv``), replacing the rows of the kinds and copies measured
and keeping the others; each row names its CPU, machine, commit and date.
``scripts/memory_kinds_table.py`` turns that CSV into the docs' throughput table.

    python scripts/arithmetic_limit.py [--copies 16 256] [--kinds none gru ...] [--csv]

Run it alone on the machine: it measures speed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from pathlib import Path

import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

from pomdp_bench.agents.ppo import PPO, PPOSettings
from pomdp_bench.harness import provenance
from pomdp_bench.memory import MEMORY_KINDS

KINDS = tuple(MEMORY_KINDS)
#: Fast paths measured beside their kind's usual one: ``kind+kernel`` (``gru+cpp``: gru with ``kernel: cpp``;
#: ``mamba+cpp``: mamba's C++ scan).
PATHS = ("gru+cpp", "mamba+cpp")
CSV = Path(__file__).resolve().parent.parent / "leaderboards" / "throughput.csv"
COLUMNS = [
    "memory", "copies", "rollout_steps_per_second", "update_steps_per_second", "update_mflop",
    "update_gflop_per_second", "limit_steps_per_second", "share_of_limit", "matmul_peak_gflop_per_second",
    "torch", "cpu", "machine", "git_commit", "created_at",
]  # fmt: skip
HIDDEN = 64
SCAN_OPS_PER_ELEMENT = 20  # selective_scan: 3 forward passes and 3 backward, ~3-4 ops each


def _agent(kind: str, copies: int) -> PPO:
    kind, _, kernel = kind.partition("+")  # a fast path: gru+cpp
    memory = (
        None
        if kind == "none"
        else {"kind": kind, "hidden_size": HIDDEN, **({"kernel": kernel} if kernel else {})}
    )
    # The settings tuned at corridor 5 (32 steps per copy and rollout), on corridor 10.
    settings = PPOSettings.tuned("TMaze-v1", {"corridor_length": 5}, n_envs=copies, seed=0)
    model = PPO("TMaze-v1", memory, env_kwargs={"corridor_length": 10}, settings=settings, device="cpu")
    model.learn(model.settings.rollout_size)  # one rollout and update: caches warmed up
    return model


def _uncounted_flops(model: PPO) -> float:
    """Work of one update that FlopCounterMode does not see (fused LSTM, Mamba's scan)."""
    s = model.settings
    memory = s.memory
    if memory is None or memory.kind not in ("lstm", "mamba"):
        return 0.0
    memories = 1 if s.shared_memory else 2  # actor and critic each have one unless shared
    step_samples = s.rollout_size * s.n_epochs * memories
    hidden = memory.hidden_size
    if memory.kind == "lstm":
        width = model.observation_space.shape[0]
        per_step = 2 * 4 * hidden * (width + hidden) * 3  # forward, and backward twice that
        return float(step_samples * per_step * memory.num_layers)
    inner = memory.expand * hidden
    return float(step_samples * memory.d_state * inner * SCAN_OPS_PER_ELEMENT * memory.num_layers)


def _update_flops(model: PPO) -> float:
    model._collect_rollout()
    with FlopCounterMode(display=False) as counter:
        model._update(0.5)
    return counter.get_total_flops() + _uncounted_flops(model)


def _median_seconds(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _repeat_mm(a: torch.Tensor, b: torch.Tensor, reps: int) -> None:
    for _ in range(reps):
        torch.mm(a, b)


def matmul_peak(extra_shapes: list[tuple[int, int, int]]) -> tuple[float, str]:
    """Best single-thread ``torch.mm`` rate (FLOP/s) over square and given shapes."""
    best, where = 0.0, ""
    shapes = [(n, n, n) for n in (128, 256, 512, 1024)] + extra_shapes
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        torch.mm(a, b)
        reps = max(3, int(2e9 / (2 * m * k * n)))
        seconds = _median_seconds(partial(_repeat_mm, a, b, reps), 3) / reps
        rate = 2 * m * k * n / seconds
        if rate > best:
            best, where = rate, f"{m}x{k} @ {k}x{n}"
    return best, where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument(
        "--copies", type=int, nargs="+", default=[16, 64, 256, 1024], help="copies (n_envs) to measure at"
    )
    parser.add_argument(
        "--kinds",
        nargs="+",
        default=list(KINDS),
        choices=KINDS + PATHS,
        help=f"memory kinds to measure, and fast paths as kind+kernel ({', '.join(PATHS)})",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="timed rounds per measurement; the median is kept"
    )
    parser.add_argument(
        "--csv",
        nargs="?",
        const=str(CSV),
        default=None,
        metavar="PATH",
        help=f"also write the rows to this CSV (default when given without a path: {CSV.relative_to(CSV.parents[1])})",
    )
    args = parser.parse_args()
    rows = []
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows_per_minibatch = [c * 32 // 4 for c in args.copies]
    peak, where = matmul_peak([(r, HIDDEN, 4 * HIDDEN) for r in rows_per_minibatch])
    print(f"torch {torch.__version__}, one thread; matmul peak {peak / 1e9:.1f} GFLOP/s ({where})\n")
    print(
        "| memory | copies | rollout steps/s | update steps/s | update MFLOP | update GFLOP/s "
        "| arithmetic limit, steps/s | share of the limit |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.kinds:
        for copies in args.copies:
            model = _agent(kind, copies)
            size = model.settings.rollout_size
            rollout = _median_seconds(model._collect_rollout, args.rounds)
            flops = _update_flops(model)
            update = _median_seconds(partial(model._update, 0.5), args.rounds)
            limit = size / (flops / peak)
            rows.append(
                [kind, copies, size / rollout, size / update, flops / 1e6, flops / update / 1e9, limit,
                 size / update / limit, peak / 1e9]
            )  # fmt: skip
            print(
                f"| {kind} | {copies} | {size / rollout:,.0f} | {size / update:,.0f} | {flops / 1e6:,.1f} "
                f"| {flops / update / 1e9:.1f} | {limit:,.0f} | {size / update / limit:.0%} |",
                flush=True,
            )
    if args.csv:
        write_csv(Path(args.csv), rows)


def write_csv(path: Path, rows: list[list]) -> None:
    """Merge measured rows into ``path``: rows of the same kind and copies are replaced."""
    stamp = [
        torch.__version__,
        provenance.cpu_model(),
        provenance.machine(),
        provenance.git_commit(),
        provenance.now(),
    ]
    new = pd.DataFrame([row + stamp for row in rows], columns=COLUMNS)
    if path.exists():
        old = pd.read_csv(path)
        if list(old.columns) != COLUMNS:
            raise ValueError(f"{path}: columns {list(old.columns)} are not this script's {COLUMNS}")
        keep = ~old.set_index(["memory", "copies"]).index.isin(new.set_index(["memory", "copies"]).index)
        new = pd.concat([old[keep], new], ignore_index=True)
    order = {kind: i for i, kind in enumerate(KINDS + PATHS)}
    new = new.sort_values(["memory", "copies"], key=lambda c: c.map(order) if c.name == "memory" else c)
    path.parent.mkdir(parents=True, exist_ok=True)
    new.to_csv(path, index=False, float_format="%.6g")


if __name__ == "__main__":
    main()
