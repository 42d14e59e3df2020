"""Sweep progress: one overall bar and one bar per run in flight, or plain lines off a TTY."""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

from pomdp_bench.harness.spec import RunResult, RunSpec


class SweepProgress:
    """Reports a sweep's progress on ``stream``.

    On a terminal it draws an overall bar (runs) and a bar per run in flight
    (env steps); elsewhere (CI, a log file) it prints one line when a run
    starts and one when it ends.
    """

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.total = total
        self.done = 0
        self.failed = 0
        self._bars: dict[str, tqdm] = {}
        self._free_positions: list[int] = []
        self._overall = (
            tqdm(total=total, desc="sweep", unit="run", position=0, file=self.stream, dynamic_ncols=True)
            if self.tty
            else None
        )

    def grow(self, runs: int) -> None:
        """Add ``runs`` to the total (a seed stage's runs, known only once a stage begins)."""
        self.total += runs
        if self._overall is not None:
            self._overall.total = self.total
            self._overall.refresh()

    def started(self, spec: RunSpec) -> None:
        if not self.tty:
            print(f"[start] {spec.label()}", file=self.stream, flush=True)
            return
        position = self._free_positions.pop(0) if self._free_positions else len(self._bars) + 1
        self._bars[spec.key()] = tqdm(
            total=spec.total_timesteps,
            desc=spec.label()[:60],
            unit="step",
            position=position,
            leave=False,
            file=self.stream,
            dynamic_ncols=True,
        )

    def advance(self, key: str, done: int, total: int) -> None:
        bar = self._bars.get(key)
        if bar is not None:
            bar.update(max(0, min(done, total) - bar.n))

    def finished(self, spec: RunSpec, result: RunResult) -> None:
        self.done += 1
        self.failed += result.status != "ok"
        bar = self._bars.pop(spec.key(), None)
        if bar is not None:
            self._free_positions.append(bar.pos)
            bar.close()
        what = (
            f"return {result.final_return:.4g} ({result.wall_seconds:.1f} s, {result.steps_per_second:.0f} steps/s)"
            if result.status == "ok"
            else "FAILED: " + (result.error.strip().splitlines() or ["?"])[-1]
        )
        if self._overall is not None:
            # One draw per run, none for the last: close() draws the final line. update()
            # and set_postfix() would each draw it, and close() once more.
            self._overall.set_postfix(failed=self.failed, refresh=False)
            self._overall.n = self.done
            if result.status != "ok":
                self._overall.write(f"{spec.label()}: {what}", file=self.stream)
            elif self.done < self.total:
                self._overall.refresh()
        else:
            print(f"[{self.done}/{self.total}] {spec.label()}: {what}", file=self.stream, flush=True)

    def skipped(self, spec: RunSpec, why: str) -> None:
        """A run counted in ``total`` that this sweep will not train (``why``: e.g. another
        process stored it)."""
        self.total -= 1
        if self._overall is not None:
            self._overall.total = self.total
            self._overall.refresh()
        else:
            print(f"[skip] {spec.label()}: {why}", file=self.stream, flush=True)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        if self._overall is not None:
            self._overall.close()
