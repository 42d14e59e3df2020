"""Store rows for simulated runs: what ``ResultStore.rows`` returns for a finished run,
without training it (tests of the leaderboard statistics on data whose truth is known)."""

from typing import Any

from pomdp_bench.harness.spec import RunResult, RunSpec


def stored_row(spec: RunSpec, result: RunResult) -> dict[str, Any]:
    """The row ``ResultStore.rows`` would hold for ``spec`` finished with ``result``."""
    return {
        "key": spec.key(),
        "spec": spec.to_dict(),
        "status": result.status,
        "result": result.to_dict(),
        "git_commit": "abc",
        "machine": "test",
        "created_at": "2026-01-01T00:00:00+00:00",
    }
