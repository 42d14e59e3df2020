"""Where does a T-Maze run spend its steps: walking the corridor, turning, or the cue? (issue 21)

Trains one run of ``scripts/tmaze100_heldout.py``'s corridor-100 lstm cell (a variant,
a held-out seed; no stop rule, the whole cap) and, at ``--points`` evenly spaced
points, plays 256 fresh episodes with the policy as it samples in training and 256 as
it acts in evaluation (the most likely action), printing one JSON line per point:

- ``walk``: the median step at which an episode first does something other than
  "right" in the corridor (``L`` when it walks all the way on schedule);
- ``on_time``: the fraction that reach the junction on schedule (only those can score:
  the passive maze has no spare step);
- ``turn``: of those, the fraction that turn (up or down) at the junction;
- ``cue``: of those, the fraction that turn towards the cue (``return`` = ``on_time``
  times ``cue``).

    python scripts/tmaze_phases.py --variant base --seed 6

Measured (README, "Corridor 100: the walk, not the cue"): in the suite's recipe the
sampled walk lengthens by about 20 steps every 250k env steps, and once it reaches the
junction the turn and then the cue follow within about 0.5M steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tmaze100_heldout import VARIANTS, suite_file

from pomdp_bench.envs.tmaze import TMazeVectorEnv
from pomdp_bench.harness.suites import expand, load_suite
from pomdp_bench.harness.training import build_agent
from pomdp_bench.memory import rnn

RIGHT, UP, DOWN = 0, 1, 3
EPISODES = 256


def phases(model: Any, corridor: int, deterministic: bool, seed: int) -> dict[str, float]:
    """The walk, on-time, turn and cue fractions of ``EPISODES`` fresh episodes."""
    env = TMazeVectorEnv(num_envs=EPISODES, corridor_length=corridor)
    obs, _ = env.reset(seed=seed)
    cue = obs[:, 1].copy()  # [B] +1 goal up, -1 goal down (passive: seen at step 0)
    state, start = None, np.ones(EPISODES, dtype=bool)
    first_wrong = np.full(EPISODES, corridor)  # [B] first corridor step not "right"
    for t in range(corridor + 1):
        action, state = model.predict(obs, state, start, deterministic=deterministic)
        if t < corridor:
            first_wrong = np.where((action != RIGHT) & (first_wrong == corridor), t, first_wrong)
        else:
            turn = action.copy()  # [B] the action at the junction step
        start = np.zeros(EPISODES, dtype=bool)
        obs, reward, *_ = env.step(action)
    env.close()
    on_time = first_wrong == corridor
    turned = on_time & np.isin(turn, [UP, DOWN])
    towards = on_time & (((turn == UP) & (cue > 0)) | ((turn == DOWN) & (cue < 0)))
    reached = max(int(on_time.sum()), 1)
    return {
        "walk": float(np.median(first_wrong)),
        "on_time": float(on_time.mean()),
        "turn": float(turned.sum() / reached),
        "cue": float(towards.sum() / reached),
        "return": float(reward.mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variant", default="base", choices=list(VARIANTS))
    parser.add_argument("--seed", type=int, default=5, help="a held-out seed, 5-14")
    parser.add_argument("--corridor", type=int, default=100, help="corridor length (pieces cover it)")
    parser.add_argument("--steps", type=int, default=3_000_000, help="the cap (the schedule's length)")
    parser.add_argument("--points", type=int, default=12, help="measurements over the cap")
    parser.add_argument("--out", default=None, help="JSON lines file to append to as well")
    args = parser.parse_args()
    if not 5 <= args.seed <= 14:
        parser.error("held-out seeds are 5-14 (the suite runs 0-4)")
    torch.set_num_threads(1)
    hyperparams, bias = VARIANTS[args.variant]
    rnn.FORGET_BIAS = bias
    with tempfile.TemporaryDirectory() as folder:
        specs = expand(
            load_suite(str(suite_file(args.variant, hyperparams, Path(folder), args.corridor, args.steps)))
        )
    spec = next(s for s in specs if s.seed == args.seed)
    spec = dataclasses.replace(spec, stop=None)
    corridor = int(spec.env_kwargs["corridor_length"])
    agent = build_agent(spec)
    every, next_point, start = spec.total_timesteps // args.points, 0, time.perf_counter()

    def report(model: Any) -> None:
        row = {"variant": args.variant, "seed": args.seed, "steps": int(model.num_timesteps)}
        row["seconds"] = round(time.perf_counter() - start, 1)
        for mode, deterministic in (("sampled", False), ("greedy", True)):
            episodes = phases(model, corridor, deterministic, seed=10_000 + row["steps"])
            for key, value in episodes.items():
                row[f"{mode}_{key}"] = round(value, 3)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as out:
                out.write(json.dumps(row) + "\n")

    def callback(model: Any) -> bool:
        nonlocal next_point
        if model.num_timesteps >= next_point:
            next_point += every
            report(model)
        return True

    agent.learn(spec.total_timesteps, callback=callback)
    report(agent)


if __name__ == "__main__":
    main()
