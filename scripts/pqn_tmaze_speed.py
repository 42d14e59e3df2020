"""PQN's training speed on the passive T-Maze: env steps per second of whole rollouts
(acting, targets and updates), one JSON line per (memory kind, corridor).

    python scripts/pqn_tmaze_speed.py --corridors 100 1000 --kinds lstm gru
    python scripts/pqn_tmaze_speed.py --corridors 1000 --n-envs 32 --n-epochs 4 \
        --previous-action --rollouts 6 --csv leaderboards/pqn_tmaze_speed.csv

Each rollout is ``n_steps = T = corridor + 1`` steps of ``n_envs`` copies, one piece an
episode. One warm-up rollout is not timed. ``--profile`` prints cProfile's top entries
of the timed rollouts to stderr.

A kind ``gru+cpp`` is gru with ``kernel: cpp``. ``--rollout fast reference`` times PQN's
rollout loop (NumPy host arrays) beside the plain torch loop it is tested equal to; each
row splits the seconds into ``collect_seconds`` (acting and env steps) and
``update_seconds`` (targets and gradient steps).

    python scripts/pqn_tmaze_speed.py --corridors 1000 --kinds lstm gru gru+cpp --n-envs 32 \
        --n-epochs 4 --previous-action --rollouts 3 --rollout fast reference \
        --csv leaderboards/pqn_tmaze_speed.csv
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
from pomdp_bench.harness.provenance import git_commit, machine


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
    parser.add_argument(
        "--rollout",
        nargs="+",
        choices=["fast", "reference"],
        default=["fast"],
        help="PQN's rollout loop(s) to time, side by side",
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the timed rollouts")
    parser.add_argument("--csv", type=Path, help="also append each row to this CSV (with machine and date)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for corridor in args.corridors:
        for name in args.kinds:
            for rollout_path in args.rollout:
                row = time_one(args, corridor, name, rollout_path)
                print(json.dumps(row), flush=True)
                if args.csv:
                    append_csv(args.csv, row)


def time_one(args: argparse.Namespace, corridor: int, name: str, rollout_path: str) -> dict:
    """One row: ``args.rollouts`` timed rollouts of PQN with memory ``name`` at ``corridor``."""
    kind, _, kernel = name.partition("+")
    memory = {"kind": kind, "hidden_size": args.hidden, **({"kernel": kernel} if kernel else {})}
    T = corridor + 1
    agent = PQN(
        "TMaze-v1",
        memory,
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
    if rollout_path == "reference":
        agent._collect_rollout = agent._collect_rollout_reference
    rollout = agent.settings.rollout_size
    agent.learn(rollout)  # warm-up, and the first episodes' start
    collect = update = 0.0
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    for _ in range(args.rollouts):  # the training loop of PQN._iterate, its two halves timed
        agent.exploration_rate = agent.settings.epsilon_end
        t0 = time.perf_counter()
        agent._collect_rollout()
        t1 = time.perf_counter()
        agent._update(agent._targets(), 0.5)
        t2 = time.perf_counter()
        collect, update = collect + t1 - t0, update + t2 - t1
    if profiler:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    steps = args.rollouts * rollout
    return {
        "kind": name,
        "corridor": corridor,
        "rollout": rollout_path,
        "n_envs": args.n_envs,
        "n_steps": T,
        "num_minibatches": args.num_minibatches,
        "n_epochs": args.n_epochs,
        "hidden": args.hidden,
        "width": args.width,
        "previous_action": args.previous_action,
        "threads": args.threads,
        "env_steps": steps,
        "seconds": round(collect + update, 3),
        "collect_seconds": round(collect, 3),
        "update_seconds": round(update, 3),
        "steps_per_second": round(steps / (collect + update)),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
    }


def append_csv(path: Path, row: dict) -> None:
    """Append ``row`` with its command, commit, machine and date to ``path``, writing a
    header first when the file is new."""
    row = {
        **row,
        "command": "python scripts/pqn_tmaze_speed.py " + " ".join(sys.argv[1:]),
        "git_commit": git_commit(),
        "machine": machine(),
        "date": datetime.date.today().isoformat(),
    }
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    fields = list(row)  # the old rows keep their values; a column they lack stays empty
    fields += [f for f in (rows[0] if rows else {}) if f not in fields]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows([*rows, row])


if __name__ == "__main__":
    main()
