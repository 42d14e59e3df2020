"""Benchmark settings: one torch thread, and a throughput summary at the end.

Run with ``pytest benchmarks --benchmark-only`` (``make bench``). A benchmark
that sets ``benchmark.extra_info["items_per_call"]`` (env steps, samples) gets a
line in the summary with its throughput: items per call / mean seconds per call.
"""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import torch

torch.set_num_threads(1)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    session = getattr(config, "_benchmarksession", None)
    rows = []
    for bench in getattr(session, "benchmarks", []) or []:
        items = bench.extra_info.get("items_per_call")
        if items and bench.stats is not None:
            rows.append((bench.fullname.split("::")[-1], items / bench.stats.mean))
    if rows:
        terminalreporter.write_sep("-", "throughput (items per second, from the mean)")
        for name, rate in rows:
            terminalreporter.write_line(f"{name:60s} {rate:16,.0f}")
