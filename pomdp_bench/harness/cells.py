"""A run's cell, as the store records it and the leaderboards group by it.

A *cell* is ``(env, env kwargs, agent, memory, bptt_length)``: the runs of one cell
differ only in their seed. The sweep declares a suite's cells in the store
(``ResultStore.declare_cells``) with :func:`cell_id`; reporting
(:mod:`pomdp_bench.reporting.leaderboard`) groups runs by :data:`CELL_KEYS` and counts
coverage against the declared cells. Both read it here.
"""

from __future__ import annotations

import json
from typing import Any

from pomdp_bench.harness.spec import RunSpec

CELL_KEYS = ["env_id", "env_kwargs", "agent", "memory", "bptt_length"]


def cell_id(spec: RunSpec) -> list[str]:
    """A run's cell as :data:`CELL_KEYS` values in text, ``bptt_length`` ``""`` when unset:
    what a store records as the cells a suite declares (``ResultStore.declare_cells``)."""
    return [
        spec.env_id,
        json_text(spec.env_kwargs),
        spec.agent,
        spec.memory_kind,
        length_text(spec.bptt_length),
    ]


def length_text(bptt_length: Any) -> str:
    """A BPTT length as :func:`cell_id` writes it: ``""`` when unset (None, or a table's NaN
    or NA)."""
    return "" if bptt_length is None or str(bptt_length) in ("nan", "<NA>") else str(int(bptt_length))


def json_text(value: Any) -> str:
    """The canonical JSON of ``value`` used in the tables (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
