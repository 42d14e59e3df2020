"""Where each seed of each learning test crosses its threshold, under this process's kernels.

The learning tests (tests/learning_tasks.py) stop a seed once a held-out check says
it is solved; this script runs them with their budgets raised (not PPO's: its
learning rate decays over the budget), so a crossing past the test's budget is seen too, and prints one CSV row per (test, seed):
``setting,test,seed,solved_at,budget,final``. Run it once per kernel setting, e.g.

    python scripts/measure_test_margins.py --setting native
    ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=avx2 \\
        python scripts/measure_test_margins.py --setting avx2

(``scripts/kernel_settings.sh`` lists the settings.) A budget is sound when it is at
least twice the slowest crossing of any seed under any setting.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import learning_tasks as lt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--setting", default="native", help="a label for the kernel setting, echoed per row")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per test")
    parser.add_argument(
        "--only",
        choices=["memory", "ppo", "long", "sac"],
        nargs="*",
        default=["memory", "ppo", "long", "sac"],
        help="which groups of learning tests to measure (default: all)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print("setting,test,seed,solved_at,budget,final", flush=True)

    def row(name: str, seed: int, outcome: lt.Outcome) -> None:
        solved = "" if outcome.solved_at is None else outcome.solved_at
        print(f"{args.setting},{name},{seed},{solved},{outcome.budget},{outcome.final:.3f}", flush=True)

    for seed in range(args.seeds):
        if "memory" in args.only:
            for kind in lt.PROOF:
                if kind != "none":  # none never crosses; its test trains a fixed budget
                    row(f"recall[{kind}]", seed, lt.train_recall(kind, seed, budget=4 * lt.PROOF[kind][1]))
        if "ppo" in args.only:
            for env_id in lt.PPO_TASKS:
                outcome, _ = lt.train_ppo(env_id, {"kind": "gru", "hidden_size": 32}, seed)
                row(f"ppo_gru[{env_id}]", seed, outcome)
        if "long" in args.only:
            outcome, _ = lt.train_long_recall(seed)
            row("ppo_lstm[CueRecall-v0 delay 20]", seed, outcome)
        if "sac" in args.only:
            for task in ("tmaze", "cue_recall"):
                outcome, _ = lt.train_sac(task, seed, budget=3 * lt.SAC_TASKS[task][3])
                row(f"sac_gru[{task}]", seed, outcome)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
