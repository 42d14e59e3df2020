"""Run docs/your-memory-kind.md's example kind beside the published cells, and keep its row.

The page's module (its first Python block) is written into a folder outside the package.
Then the page's command runs there, on one cell of the ``horizon`` suite to stay short:
PPO on cue recall at delay 5, pieces of 8 steps, the suite's seeds and cap. The rows of
that cell for the example kind and the published kinds beside it go to
``leaderboards/your_memory_kind_example.csv``. ``scripts/readme_answer.py`` writes the
page's table from it.

    python scripts/your_memory_kind_row.py [--folder DIR] [--workers N]

A folder that already holds the run's store resumes it: stored runs are not run again.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs/your-memory-kind.md"
OUT = ROOT / "leaderboards/your_memory_kind_example.csv"
#: The one cell the example runs: the suite, its env, the env entry's kwargs and the BPTT length.
SUITE, ENV, ENV_KWARGS, BPTT = "horizon", "CueRecall-v0", "delay=5", "8"
#: The kinds whose published rows stand beside the example's, and the columns kept.
BESIDE = ("none", "gru", "lstm", "ema")
COLUMNS = [
    "memory",
    "env_id",
    "env_kwargs",
    "bptt_length",
    "n_seeds",
    "parameters",
    "return_mean",
    "return_ci_low",
    "return_ci_high",
    "learned",
]


def page_module(page: Path = PAGE) -> str:
    """The page's first Python block: the example kind's module."""
    match = re.search(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    if match is None:
        raise ValueError(f"{page} has no ```python block")
    return match.group(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument(
        "--folder", default="results/your-memory-kind", help="the user's folder (made if missing)"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default: 2)")
    args = parser.parse_args()
    folder = Path(args.folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_memory.py").write_text(page_module(), encoding="utf-8")
    command = [
        sys.executable, "-m", "pomdp_bench.run", "--suite", SUITE, "--import", "my_memory",
        "--memory", "ema", "--beside-published", str(ROOT / "leaderboards/store"),
        "--env", ENV, "--env-kwargs", ENV_KWARGS, "--bptt", BPTT, "--workers", str(args.workers),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(folder))
    subprocess.run(command, cwd=folder, env=env, check=True)
    cells = pd.read_csv(folder / f"results/leaderboards/{SUITE}.csv")
    delay = int(ENV_KWARGS.split("=")[1])
    rows = cells[
        (cells["env_id"] == ENV)
        & cells["env_kwargs"].str.contains(f'"delay":{delay}}}', regex=False)
        & ((pd.to_numeric(cells["bptt_length"]) == int(BPTT)) | (cells["memory"] == "none"))  # none: no BPTT
        & cells["memory"].isin(BESIDE)
    ]
    if "ema" not in set(rows["memory"]):
        raise SystemExit(f"no row of the example kind in {folder}/results/leaderboards/{SUITE}.csv")
    rows = rows.assign(order=rows["memory"].map(BESIDE.index)).sort_values("order")[COLUMNS]
    rows.to_csv(OUT, index=False)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
