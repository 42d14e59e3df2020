"""What pinning torch's CPU kernels to one instruction set costs PPO, per memory kind.

Issue 70 asks for runs that repeat on any x86-64 CPU. One means is to pin the kernel
paths that torch picks from the CPU: oneDNN's ISA cap, MKL's conditional bitwise
reproducibility and ATen's CPU capability (the settings of ``scripts/kernel_settings.sh``).
This measures what each setting costs against the CPU's own choice, on one thread, for
the set-up of ``scripts/arithmetic_limit.py`` (TMaze-v1 corridor 10, PPO's tuned settings,
hidden size 64, 16 copies): one rollout and one update, as env steps/s (median of
``--rounds``). Each setting runs in a fresh process, since torch reads the settings once;
the settings take turns ``--repeats`` times, and each keeps its median.

Each process also trains a short fixed run (two rollouts and updates, seed 0) and hashes
the final weights: equal hashes mean that setting follows the same floating-point path.

Writes ``leaderboards/kernel_pinning_cost.csv`` (with ``--csv``) and prints a table.
Run it alone on the machine: it measures speed. ``--paths-out PATH`` writes the hashes
alone, which hold whatever else runs; ``scripts/kernel_paths_across_cpus.py`` lines up
two CPUs' hashes.

    python scripts/kernel_pinning_cost.py [--kinds none gru lstm] [--settings native avx2 sse41] [--csv]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from pomdp_bench.harness.kernels import KERNEL_SETTINGS, KERNEL_VARIABLES

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT / "leaderboards" / "kernel_pinning_cost.csv"
SETTINGS = {
    "native": KERNEL_SETTINGS["native"],
    "avx512": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "avx2": KERNEL_SETTINGS["avx2"],
    "sse41": KERNEL_SETTINGS["sse41"],
}
"""The kernel settings (harness/kernels.py), and oneDNN's AVX-512 cap as in scripts/kernel_settings.sh."""
KINDS = ("none", "gru", "lstm", "transformer", "mamba", "lru", "mingru")
COPIES = 16
HIDDEN = 64


def child(kinds: list[str], rounds: int) -> None:
    """Measure in this process (its environment holds the setting); print JSON lines."""
    import torch
    from arithmetic_limit import _median_seconds  # scripts/ is on the path of a script

    from pomdp_bench.agents.ppo import PPO, PPOSettings

    torch.set_num_threads(1)
    for kind in kinds:
        memory = None if kind == "none" else {"kind": kind, "hidden_size": HIDDEN}
        settings = PPOSettings.tuned("TMaze-v1", {"corridor_length": 5}, n_envs=COPIES, seed=0)
        model = PPO("TMaze-v1", memory, env_kwargs={"corridor_length": 10}, settings=settings, device="cpu")
        model.learn(2 * model.settings.rollout_size)  # the fixed short run, then the timing
        digest = hashlib.sha256(
            b"".join(p.detach().numpy().tobytes() for p in model.policy.parameters())
        ).hexdigest()[:12]
        rollout = _median_seconds(model._collect_rollout, rounds)
        update = _median_seconds(lambda model=model: model._update(0.5), rounds)
        steps = model.settings.rollout_size
        print(
            json.dumps(
                {
                    "memory": kind,
                    "rollout_steps_per_second": steps / rollout,
                    "update_steps_per_second": steps / update,
                    "weights_sha256": digest,
                    "aten_capability": torch.backends.cpu.get_cpu_capability(),
                }
            ),
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), help="memory kinds to measure")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=None,
        choices=list(SETTINGS),
        help="kernel settings (default: all this CPU runs)",
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="timed rounds per measurement; the median is kept"
    )
    parser.add_argument("--repeats", type=int, default=2, help="turns each setting takes, alternating")
    parser.add_argument("--csv", action="store_true", help="write the table to --out")
    parser.add_argument(
        "--out", default=str(CSV), metavar="PATH", help=f"the --csv file (default {CSV.relative_to(ROOT)})"
    )
    parser.add_argument(
        "--paths-out",
        metavar="PATH",
        help="write each setting's weights hash and the machine to PATH, without the timings: "
        "the record of which path a CPU takes, valid while other work runs "
        "(scripts/kernel_paths_across_cpus.py compares two CPUs' files)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.kinds, args.rounds)
        return 0
    from pomdp_bench.harness import provenance

    names = args.settings or [
        s for s in SETTINGS if s != "avx512" or "avx512f" in Path("/proc/cpuinfo").read_text()
    ]
    found: dict[tuple[str, str], list[dict]] = {}
    for turn in range(args.repeats):
        for name in names if turn % 2 == 0 else reversed(names):
            env = {k: v for k, v in os.environ.items() if k not in KERNEL_VARIABLES}
            env.update(SETTINGS[name])
            command = [
                sys.executable,
                __file__,
                "--child",
                "--rounds",
                str(args.rounds),
                "--kinds",
                *args.kinds,
            ]
            out = subprocess.run(
                command, env=env, cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout
            for line in out.splitlines():
                if line.startswith("{"):
                    row = json.loads(line)
                    found.setdefault((name, row["memory"]), []).append(row)
    machine, commit, created = provenance.machine(), provenance.git_commit(), provenance.now()
    rows = []
    for (name, kind), runs in found.items():
        native = found.get(("native", kind))
        update = statistics.median(r["update_steps_per_second"] for r in runs)
        rollout = statistics.median(r["rollout_steps_per_second"] for r in runs)
        native_update = (
            statistics.median(r["update_steps_per_second"] for r in native) if native else float("nan")
        )
        native_rollout = (
            statistics.median(r["rollout_steps_per_second"] for r in native) if native else float("nan")
        )
        rows.append(
            {
                "setting": name,
                "variables": " ".join(f"{k}={v}" for k, v in SETTINGS[name].items())
                or "the CPU's own choice",
                "memory": kind,
                "copies": COPIES,
                "rollout_steps_per_second": round(rollout, 1),
                "update_steps_per_second": round(update, 1),
                "rollout_vs_native": round(rollout / native_rollout, 3),
                "update_vs_native": round(update / native_update, 3),
                "aten_capability": runs[0]["aten_capability"],
                "weights_sha256": runs[0]["weights_sha256"],
                "same_weights_as_native": bool(native)
                and runs[0]["weights_sha256"] == native[0]["weights_sha256"],
                "machine": machine,
                "git_commit": commit,
                "created_at": created,
            }
        )
    rows.sort(key=lambda r: (args.kinds.index(r["memory"]), names.index(r["setting"])))
    print(
        "| memory | setting | ATen | rollout steps/s | update steps/s | update vs native | same weights as native |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['memory']} | {r['setting']} | {r['aten_capability']} | {r['rollout_steps_per_second']:.0f} "
            f"| {r['update_steps_per_second']:.0f} | {r['update_vs_native']:.2f} | {r['same_weights_as_native']} |"
        )
    if args.paths_out:
        import csv

        paths = [
            "setting",
            "variables",
            "memory",
            "aten_capability",
            "weights_sha256",
            "machine",
            "git_commit",
        ]
        with open(args.paths_out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=paths, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.paths_out}")
    if args.csv:
        import csv

        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
