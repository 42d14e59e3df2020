"""Learning curves of PPO on POPGym's envs, to size the popgym suite's caps (issue 52).

    python studies/popgym_curves.py --env RepeatPreviousEasy --kind gru --seeds 100 --budget 2000000

Measured: the held-out curves in ``docs/notes/popgym-convergence.md``. Every
``--check-every`` env steps it prints one JSON line: the greedy return of 32 fresh
episodes, the mean return of the training episodes that ended since the last check (what
POPGym's MMER takes the maximum of) and the seconds so far. Use held-out seeds (>= 100):
the suite uses 0-4. Settings are the popgym suite's PPO settings (``--set name=value``
overrides, YAML values); ``--prev-action`` adds POPGym's inputs (the previous action and
the first-step flag: ``pomdp_bench.envs.wrappers.PreviousAction``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch
import yaml

from pomdp_bench.agents.ppo import PPO
from pomdp_bench.harness.suites import load_suite

POPGYM_INPUTS = ["pomdp_bench.envs.wrappers:PreviousAction"]


def suite_settings(suite: str) -> dict:
    """The first group's PPO hyperparameters of ``suite``."""
    return dict(load_suite(suite).groups[0]["hyperparams"])


def run(env: str, kind: str, seed: int, budget: int, check_every: int, args: argparse.Namespace) -> dict:
    import popgym  # noqa: F401  (registers the ids)

    settings = {**suite_settings(args.suite), **args.changes}
    memory = {"kind": kind, **args.memory}
    agent = PPO(
        f"popgym-{env}-v0",
        memory,
        env_wrappers=POPGYM_INPUTS if args.prev_action else None,
        seed=seed,
        device="cpu",
        **settings,
    )
    state = {"next": check_every, "k": 0, "seen": 0, "best": -np.inf}
    t0 = time.perf_counter()

    def callback(model: PPO) -> bool:
        if model.num_timesteps < state["next"]:
            return True
        state["next"] += check_every
        score = float(model.evaluate(32, seed=10_000 + state["k"]).mean())
        state["k"] += 1
        returns = [e["r"] for e in list(model.ep_info_buffer)]
        train = float(np.mean(returns)) if returns else float("nan")
        state["best"] = max(state["best"], train)
        print(
            json.dumps(
                {
                    "env": env,
                    "kind": kind,
                    "seed": seed,
                    "timesteps": model.num_timesteps,
                    "greedy": round(score, 3),
                    "train": round(train, 3),
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            ),
            flush=True,
        )
        return True

    agent.learn(budget, callback=callback)
    return {
        "env": env,
        "kind": kind,
        "seed": seed,
        "best_train": round(state["best"], 3),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--env", required=True, help="POPGym name with difficulty, e.g. RepeatFirstEasy")
    parser.add_argument("--kind", default="gru", help="memory kind (default gru)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[100], help="held-out seeds, >= 100")
    parser.add_argument("--budget", type=int, default=1_000_000, help="env steps a run")
    parser.add_argument("--check-every", type=int, default=50_000, help="env steps between checks")
    parser.add_argument("--suite", default="popgym", help="the suite whose first group's PPO settings to use")
    parser.add_argument("--prev-action", action="store_true", help="add POPGym's inputs")
    parser.add_argument(
        "--set", dest="sets", nargs="*", default=[], metavar="NAME=VALUE", help="PPO settings to change"
    )
    parser.add_argument(
        "--memory-set",
        dest="memory_sets",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="memory settings",
    )
    args = parser.parse_args()
    args.changes = {k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in args.sets)}
    args.memory = {k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in args.memory_sets)}
    torch.set_num_threads(1)
    for seed in args.seeds:
        print(json.dumps(run(args.env, args.kind, seed, args.budget, args.check_every, args)), flush=True)


if __name__ == "__main__":
    main()
