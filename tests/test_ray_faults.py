"""The Ray backend when a worker process dies mid-run: the run is resubmitted (the
default), or recorded as failed with Ray's error; either way the sweep finishes."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pomdp_bench.harness import run
from pomdp_bench.harness.progress import SweepProgress
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.suites import expand, load_suite

ROOT = Path(__file__).resolve().parents[1]
TINY_PPO = {"n_envs": 4, "n_steps": 8, "num_minibatches": 2, "n_epochs": 1}


def suite_file(tmp_path: Path) -> Path:
    """Two runs of a few seconds each: long enough to be killed mid-run."""
    path = tmp_path / "raykill.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: raykill
            description: two runs to kill
            seeds: 1
            eval_episodes: 4
            eval_points: 2
            groups:
              - agent: ppo
                memory: [none, gru]
                hyperparams: {json.dumps(TINY_PPO)}
                envs:
                  - id: CueRecall-v0
                    env_kwargs: {{delay: 2}}
                    horizon: 3
                    bptt: [4]
                    steps: 6144
            """
        )
    )
    return path


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _task_worker() -> int | None:
    """A Ray worker of this test's Ray that runs a training task now (Ray titles it
    ``ray::_run_in_ray``), or None."""
    for pid in _descendants(os.getpid()):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if title.startswith(b"ray::_run_in_ray"):
            return pid
    return None


class Killer(threading.Thread):
    """SIGKILLs the first Ray worker seen running a training task, a moment after it starts."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.killed: int | None = None
        self._done = threading.Event()

    def run(self) -> None:
        deadline = time.time() + 240
        while not self._done.is_set() and time.time() < deadline:
            pid = _task_worker()
            if pid is not None:
                time.sleep(0.5)  # mid-run
                os.kill(pid, signal.SIGKILL)
                self.killed = pid
                return
            time.sleep(0.05)

    def stop(self) -> None:
        self._done.set()
        self.join()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds Ray's workers in /proc")
def test_a_killed_ray_worker_is_retried_or_recorded_and_the_sweep_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ray = pytest.importorskip("ray")
    from pomdp_bench.harness.backends import RayBackend

    path = suite_file(tmp_path)
    specs = expand(load_suite(str(path)))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # Ray's workers import this worktree
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        # Without retries the run is recorded as failed, with Ray's error.
        killer = Killer()
        killer.start()
        results = list(RayBackend(retries=0).run(specs[:1], SweepProgress(1, tty=False)))
        killer.stop()
        assert killer.killed is not None, "no Ray worker was seen training"
        [(spec, result)] = results
        assert spec == specs[0] and result.status == "failed"
        assert "WorkerCrashedError" in result.error, result.error
        # A sweep (one retry by default) trains the killed run again and finishes.
        capsys.readouterr()
        killer = Killer()
        killer.start()
        assert (
            run.main(["--suite", str(path), "--backend", "ray", "--results", str(tmp_path), "--no-report"])
            == 0
        )
        killer.stop()
        assert killer.killed is not None, "no Ray worker was seen training"
    finally:
        ray.shutdown()
    err = capsys.readouterr().err
    assert "its Ray worker died (WorkerCrashedError); submitting it again (retry 1 of 1)" in err, err
    with ResultStore(tmp_path) as store:
        rows = store.rows("raykill")
    assert sorted((r["key"], r["status"]) for r in rows) == sorted((s.key(), "ok") for s in specs)
