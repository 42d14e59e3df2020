"""The verdicts the tables publish, read back by the sweep's staged steps.

The seed stages (:mod:`~pomdp_bench.harness.seed_stages`) and the climb
(:mod:`~pomdp_bench.harness.climb`) decide what runs next from each finished cell's
verdict, exactly as the leaderboard publishes it.
"""

from __future__ import annotations

from typing import Any

from pomdp_bench.harness.cells import length_text


def stored_cells(store: Any, suite: str) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """The leaderboard's cell table of ``suite``'s finished runs in ``store``, as the
    tables publish it: each cell's id (:func:`cell_id`, as a tuple) with its row. The
    sweep's staged steps (seed stages, the climb) read verdicts here."""
    # The tables' own verdicts: reporting is a layer above, imported here only.
    from pomdp_bench.reporting.leaderboard import cells_frame, finished_cells, runs_frame

    runs = finished_cells(runs_frame(store.rows(suite), suite))
    if runs.empty:
        return []
    return [
        ((c["env_id"], c["env_kwargs"], c["agent"], c["memory"], length_text(c["bptt_length"])), c)
        for c in cells_frame(runs).to_dict("records")
    ]
