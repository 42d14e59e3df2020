"""PQN's training speed on the passive T-Maze: env steps per second of whole rollouts
(acting, targets and updates), one JSON line per (memory kind, corridor).

    python scripts/pqn_tmaze_speed.py --corridors 100 1000 --kinds lstm gru
    python scripts/pqn_tmaze_speed.py --corridors 1000 --n-envs 32 --n-epochs 4 \
        --previous-action --rollouts 6 --csv leaderboards/pqn_tmaze_speed.csv

Each rollout is ``n_steps = T = corridor + 1`` steps of ``n_envs`` copies, one piece an
episode. One warm-up rollout is not timed. ``--profile`` prints cProfile's top entries
of the timed rollouts to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import datetime
import json
import os
import pstats
import sys
import time
from pathlib import Path

import torch

from pomdp_bench.agents.pqn import PQN
from pomdp_bench.harness.provenance import cpu_model, git_commit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--corridors", type=int, nargs="+", default=[100, 1000], help="T-Maze corridor lengths"
    )
    parser.add_argument("--kinds", nargs="+", default=["lstm", "gru"], help="memory kinds to time")
    parser.add_argument("--n-envs", type=int, default=128, help="copies stepped together")
    parser.add_argument("--num-minibatches", type=int, default=4, help="minibatches per epoch")
    parser.add_argument("--n-epochs", type=int, default=2, help="epochs per rollout")
    parser.add_argument("--hidden", type=int, default=64, help="the memory's hidden size")
    parser.add_argument("--width", type=int, default=64, help="encoder and Q head width")
    parser.add_argument("--rollouts", type=int, default=3, help="timed rollouts")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--previous-action", action="store_true", help="the Q network reads it")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the timed rollouts")
    parser.add_argument("--csv", type=Path, help="also append each row to this CSV (with machine and date)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for corridor in args.corridors:
        for kind in args.kinds:
            T = corridor + 1
            agent = PQN(
                "TMaze-v1",
                {"kind": kind, "hidden_size": args.hidden},
                env_kwargs={"corridor_length": corridor},
                n_envs=args.n_envs,
                n_steps=T,
                num_minibatches=args.num_minibatches,
                n_epochs=args.n_epochs,
                net_arch={"encoder": [args.width], "q": [args.width]},
                previous_action=args.previous_action,
                seed=100,
                device="cpu",
            )
            rollout = agent.settings.rollout_size
            agent.learn(rollout)  # warm-up
            profiler = cProfile.Profile() if args.profile else None
            t0 = time.perf_counter()
            if profiler:
                profiler.enable()
            agent.learn(args.rollouts * rollout)
            if profiler:
                profiler.disable()
            seconds = time.perf_counter() - t0
            row = {
                "kind": kind,
                "corridor": corridor,
                "n_envs": args.n_envs,
                "n_steps": T,
                "num_minibatches": args.num_minibatches,
                "n_epochs": args.n_epochs,
                "hidden": args.hidden,
                "width": args.width,
                "previous_action": args.previous_action,
                "threads": args.threads,
                "env_steps": args.rollouts * rollout,
                "seconds": round(seconds, 3),
                "steps_per_second": round(args.rollouts * rollout / seconds),
                "torch": torch.__version__,
                "cpus": os.cpu_count(),
                "load_average": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(row), flush=True)
            if args.csv:
                append_csv(args.csv, row)
            if profiler:
                pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)


def append_csv(path: Path, row: dict) -> None:
    """Append ``row`` with its command, commit, machine and date to ``path``, writing a
    header first when the file is new."""
    row = {
        **row,
        "command": "python scripts/pqn_tmaze_speed.py " + " ".join(sys.argv[1:]),
        "git_commit": git_commit(),
        "machine": cpu_model(),
        "date": datetime.date.today().isoformat(),
    }
    new = not path.is_file()
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


if __name__ == "__main__":
    main()
