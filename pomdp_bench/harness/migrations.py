"""One-time store migrations: fields that runs stored by older versions lack.

Reporting reads the store and never rebuilds an agent or expands a suite; where an old
store lacks a field that can be computed exactly (a run's gradient reach from its spec, a
suite's declared cells from its shipped file), a migration computes it once and writes it.

    python -m pomdp_bench.harness.migrations --results leaderboards/store
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from typing import Any

import numpy as np

from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.store import ResultStore


def layout_reach(spec: dict[str, Any]) -> list[int] | None:
    """The ``gradient_reach`` histogram an agent with pieces (PPO) measures, computed
    from a spec's rollout layout.

    For runs stored before PPO measured it. Every copy starts at step 0 and, with a
    fixed episode length ``E`` (TMaze, CueRecall), episode ``k`` ends at copy step
    ``kE + E - 1``; its gradient reaches ``min(that step mod bptt_length, E - 1)``
    steps back. Exact for such envs (tests check it against the measurement); None for
    agents that do not measure it, or for envs whose episodes vary in length.
    """
    from pomdp_bench.harness.training import build_agent  # the agent resolves its own defaults

    with warnings.catch_warnings():  # old runs name superseded env versions on purpose
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = build_agent(RunSpec.from_dict(spec))
    length = getattr(getattr(agent.env, "_batch", None), "episode_length", None)
    agent.env.close()
    if length is None or getattr(agent, "gradient_reach", None) is None:
        return None
    settings = agent.settings
    steps = math.ceil(spec["total_timesteps"] / settings.rollout_size) * settings.n_steps  # per copy
    ends = np.arange(length - 1, steps, length)
    reach = np.minimum(ends % settings.bptt_length, length - 1)
    return (agent.n_envs * np.bincount(reach, minlength=settings.bptt_length)).tolist()  # every copy alike


def fill_gradient_reach(store: ResultStore) -> int:
    """Write :func:`layout_reach` into every finished run of ``store`` that has no
    ``gradient_reach`` (runs of shipped envs only: a carried card is newer than the
    measurement). Returns the number of runs changed; a second call changes none."""
    layouts: dict[str, list[int] | None] = {}  # by the spec without its seed
    changes: dict[str, dict[str, Any]] = {}
    for row in store.rows():
        spec, result = row["spec"], row["result"]
        if row["status"] != "ok" or result.get("gradient_reach") is not None or spec.get("card"):
            continue
        layout_key = json.dumps({k: v for k, v in spec.items() if k != "seed"}, sort_keys=True)
        if layout_key not in layouts:
            layouts[layout_key] = layout_reach(spec)
        if layouts[layout_key] is not None:
            changes[row["key"]] = {"gradient_reach": layouts[layout_key]}
    return store.update_results(changes) if changes else 0


def record_declared_cells(store: ResultStore) -> list[str]:
    """Record the cells each shipped suite of ``store`` declares (as a sweep does since
    stores record them), for stores whose sweeps ran before; returns the suites recorded.
    A suite that does not expand here (an outside env's package missing) is skipped."""
    from pomdp_bench.harness.cells import cell_id
    from pomdp_bench.harness.suites import available_suites, expand, load_suite

    done = []
    for suite in store.suites():
        if suite not in available_suites() or store.declared_cells(suite) is not None:
            continue
        try:
            specs = expand(load_suite(suite), seeds=1)
        except ValueError:
            continue
        store.declare_cells(suite, [cell_id(s) for s in specs])
        done.append(suite)
    return done


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m pomdp_bench.harness.migrations``."""
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.harness.migrations",
        description=__doc__.splitlines()[0],
        allow_abbrev=False,
    )
    parser.add_argument("--results", required=True, help="the results folder holding results.sqlite")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with ResultStore(args.results) as store:
        print(f"gradient_reach filled in {fill_gradient_reach(store)} runs")
        print(f"declared cells recorded for suites {record_declared_cells(store)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
