"""Why a published T-Maze run failed: what its stored final weights do, per cue.

    python scripts/tmaze_failures.py --suite horizon-long --agent pqn \
        --csv leaderboards/tmaze_failures.csv

For every run of ``--suite`` on the passive T-Maze whose final return is below the
``learned`` line (halfway from the ceiling to the optimum), loads the run's weights from
the store and plays 256 fresh greedy episodes. Per cue (goal up, goal down) it counts
the episodes that reach the junction on time (``on_time``), end in an arm (``arm``), in
the upper arm (``upper``) and in the goal arm (``goal``). The reading, the first that applies:

- ``passes``: 3/4 or more end in the goal arm for each cue: the final weights pass,
  though the run's last evaluation did not.
- ``cue held, misused``: the two cues' ``on_time``, ``arm`` or ``upper`` differ by more
  than 1/4. The actions depend on the cue, so the memory carries it to the policy; the
  policy's use of it fails (a turn or a walk that breaks for one cue).
- ``walk``: alike for both cues, under 3/4 reach the junction on time: the walk failed
  before the cue was tested.
- ``no turn``: alike for both cues, and under 3/4 end in an arm.
- ``one arm``: alike for both cues, ending in the same arm: the memory lost the cue or
  the policy does not read it (the memory probes of issue 53 would tell which).

Runs stored before the store kept weights are skipped, and counted.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import torch

from pomdp_bench.harness.analysis_records import (
    CUE_MISUSED,
    NO_TURN,
    ONE_ARM,
    PASSES,
    WALK,
    behaviour_reading,
)
from pomdp_bench.harness.stopping import solve_threshold
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.harness.tmaze_behaviour import play_tmaze

EPISODES = 256
FIELDS = ["agent", "memory", "corridor_length", "seed", "final_return", "stop_reason", "timesteps"]
COUNTS = [f"{name}_{cue}" for cue in ("up", "down") for name in ("on_time", "arm", "upper", "goal")]


def per_cue(model: Any, corridor: int, seed: int) -> dict[str, float]:
    """Fractions of ``EPISODES`` fresh greedy episodes per cue: at the junction on time,
    and at the end in an arm, in the upper arm and in the goal arm (keys as :data:`COUNTS`).
    The behaviour analysis plays them (:func:`~pomdp_bench.harness.tmaze_behaviour.play_tmaze`)."""
    return play_tmaze(model, corridor, n_episodes=EPISODES, seed=seed).counts


#: This script's names of the behaviour analysis' readings, as its CSV has them.
READING_NAMES = {
    PASSES: "passes",
    CUE_MISUSED: "cue held, misused",
    WALK: "walk",
    NO_TURN: "no turn",
    ONE_ARM: "one arm",
}


def reading(c: dict[str, float]) -> str:
    """The first failure that applies (the module docstring's list):
    :func:`~pomdp_bench.harness.analysis_records.behaviour_reading`, by this script's names."""
    return READING_NAMES[behaviour_reading(c)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--suite", default="horizon-long", help="the suite whose runs to read")
    parser.add_argument("--agent", nargs="+", help="only these agents (default: all)")
    parser.add_argument("--results", default="leaderboards/store", help="the results store")
    parser.add_argument("--seed", type=int, default=30_000, help="seed of the fresh episodes")
    parser.add_argument("--csv", type=Path, help="also write the rows to this CSV")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, skipped = [], 0
    with ResultStore(args.results) as store:
        for run in store.rows(args.suite):
            spec, result = run["spec"], run["result"]
            if spec["env_id"] != "TMaze-v1" or run["status"] != "ok":
                continue
            if args.agent and spec["agent"] not in args.agent:
                continue
            if result["final_return"] >= solve_threshold(spec["env_id"], spec["env_kwargs"]):
                continue
            if store.weights(run["key"]) is None:  # stored before runs kept their weights
                skipped += 1
                continue
            model = store.load_agent(run["key"])
            corridor = int(spec["env_kwargs"]["corridor_length"])
            counts = per_cue(model, corridor, seed=args.seed)
            memory = spec["memory"] if isinstance(spec["memory"], str) else spec["memory"]["kind"]
            row = {
                "agent": spec["agent"],
                "memory": memory,
                "corridor_length": corridor,
                "seed": spec["seed"],
                "final_return": result["final_return"],
                "stop_reason": result.get("stop_reason", ""),
                "timesteps": result.get("timesteps", ""),
                **counts,
                "reading": reading(counts),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(f"{len(rows)} failed run(s) read; {skipped} without stored weights skipped", flush=True)
    if args.csv:
        rows.sort(key=lambda r: (r["agent"], r["memory"], r["corridor_length"], r["seed"]))
        with args.csv.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[*FIELDS, *COUNTS, "reading"])
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
