"""DQN's training speed on TMaze-v1 with Memory-RL's settings (``agents/dqn.yaml``'s band
for the corridor: whole episodes, 64 a batch, 0.25 gradient steps per env step) and
Memory-RL's LSTM (128 units) or a GRU of the same size.

Trains past ``learning_starts`` (random steps), then times ``--steps`` env steps of
training (acting, storing, updating) and prints env steps per wall-clock and per CPU
second, one line per (corridor, kind).

    python scripts/dqn_tmaze_speed.py --corridors 100 1000 --kinds lstm gru --steps 2000
"""

from __future__ import annotations

import argparse
import time

import torch

from pomdp_bench.agents.dqn import DQN


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument(
        "--corridors", type=int, nargs="+", default=[100, 1000], help="T-Maze corridor lengths"
    )
    parser.add_argument("--kinds", nargs="+", default=["lstm", "gru"], help="memory kinds to time")
    parser.add_argument("--steps", type=int, default=2000, help="timed env steps after learning_starts")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    for corridor in args.corridors:
        for kind in args.kinds:
            model = DQN.from_tuned(
                "TMaze-v1",
                {"kind": kind, "hidden_size": 128},
                env_kwargs={"corridor_length": corridor},
                device="cpu",
            )
            model.learn(model.settings.learning_starts)  # random steps, no updates
            updates = model.n_updates
            wall, cpu = time.perf_counter(), time.process_time()
            model.learn(args.steps, reset_num_timesteps=False)  # past learning_starts
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(
                f"corridor {corridor} {kind}: {args.steps / wall:.1f} env steps/s (wall), "
                f"{args.steps / cpu:.1f} per CPU-s, {model.n_updates - updates} gradient steps "
                f"of {model.settings.batch_size} x {model.settings.sequence_length + 1} rows",
                flush=True,
            )


if __name__ == "__main__":
    main()
