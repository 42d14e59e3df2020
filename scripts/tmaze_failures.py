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

import numpy as np
import torch

from pomdp_bench.envs.tmaze import TMazeVectorEnv
from pomdp_bench.harness.stopping import solve_threshold
from pomdp_bench.harness.store import ResultStore

EPISODES = 256
FIELDS = ["agent", "memory", "corridor_length", "seed", "final_return", "stop_reason", "timesteps"]
COUNTS = [f"{name}_{cue}" for cue in ("up", "down") for name in ("on_time", "arm", "upper", "goal")]


def per_cue(model: Any, corridor: int, seed: int) -> dict[str, float]:
    """Fractions of ``EPISODES`` fresh greedy episodes per cue: at the junction on time,
    and at the end in an arm, in the upper arm and in the goal arm (keys as :data:`COUNTS`)."""
    env = TMazeVectorEnv(num_envs=EPISODES, corridor_length=corridor)
    obs, _ = env.reset(seed=seed)
    up = obs[:, 1] > 0  # [B] the cue, shown at the first step
    state, start = None, np.ones(EPISODES, dtype=bool)
    for t in range(corridor + 1):  # the walk, then the turn
        if t == corridor:
            arrived = obs[:, 0] == 1  # [B] at the junction for the last step
        action, state = model.predict(obs, state, start, deterministic=True)
        start = np.zeros(EPISODES, dtype=bool)
        obs, reward, *_ = env.step(action)  # autoreset NEXT_STEP: the last obs is the final one
    env.close()
    arm = arrived & (obs[:, 1] != 0)
    upper = arm & (obs[:, 1] > 0)  # [B] ended in the upper arm
    goal = arrived & (reward == 1)
    out = {}
    for cue, mask in (("up", up), ("down", ~up)):
        n = max(int(mask.sum()), 1)
        for name, hit in (("on_time", arrived), ("arm", arm), ("upper", upper), ("goal", goal)):
            out[f"{name}_{cue}"] = round(float((hit & mask).sum() / n), 4)
    return out


def reading(c: dict[str, float]) -> str:
    """The first failure that applies (the module docstring's list)."""
    names = ("on_time", "arm", "upper")  # not goal: one arm for both cues differs there
    differs = any(abs(c[f"{name}_up"] - c[f"{name}_down"]) > 0.25 for name in names)
    if min(c["goal_up"], c["goal_down"]) >= 0.75:
        return "passes"
    if differs:
        return "cue held, misused"
    if max(c["on_time_up"], c["on_time_down"]) < 0.75:
        return "walk"
    if min(c["arm_up"], c["arm_down"]) < 0.75:
        return "no turn"
    return "one arm"


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
