"""What the popgym suite cost: worker-hours per env and memory kind, from its runs.

    python scripts/popgym_cost.py            # writes leaderboards/popgym_cost.csv, prints it as Markdown

Reads ``leaderboards/popgym_runs.csv`` (every stored run, finished cells or not). A
worker-hour is one process on one core for an hour: a run's ``wall_seconds``, its
evaluations included. ``steps_mean`` is the env steps a run trained, before its stop.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("env_id", "memory", "runs", "worker_hours", "steps_mean", "steps_per_second", "stop_reasons")


def cost_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per env and kind, then a total row (``env_id`` "all")."""
    rows = []
    for (env_id, memory), group in runs.groupby(["env_id", "memory"], sort=True):
        reasons = group["stop_reason"].fillna("").value_counts()
        rows.append(
            {
                "env_id": env_id,
                "memory": memory,
                "runs": len(group),
                "worker_hours": group["wall_seconds"].sum() / 3600,
                "steps_mean": group["timesteps"].mean(),
                "steps_per_second": group["steps_per_second"].mean(),
                "stop_reasons": ";".join(f"{r or 'none'} {n}" for r, n in sorted(reasons.items())),
            }
        )
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    total = {
        "env_id": "all",
        "memory": "all",
        "runs": int(table["runs"].sum()),
        "worker_hours": table["worker_hours"].sum(),
        "steps_mean": runs["timesteps"].mean(),
        "steps_per_second": float("nan"),
        "stop_reasons": "",
    }
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def markdown(table: pd.DataFrame) -> str:
    lines = ["| env | kind | runs | worker-hours | mean steps | steps/s |", "|---|---|---|---|---|---|"]
    for row in table.itertuples():
        env = row.env_id.removeprefix("popgym-").removesuffix("-v0")
        rate = "" if pd.isna(row.steps_per_second) else f"{row.steps_per_second:,.0f}"
        lines.append(
            f"| {env} | {row.memory} | {row.runs} | {row.worker_hours:.2f} | {row.steps_mean:,.0f} | {rate} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument("--runs", default=str(ROOT / "leaderboards" / "popgym_runs.csv"), help="the runs CSV")
    parser.add_argument(
        "--csv", default=str(ROOT / "leaderboards" / "popgym_cost.csv"), help="where to write"
    )
    args = parser.parse_args()
    table = cost_table(pd.read_csv(args.runs))
    table.to_csv(args.csv, index=False, float_format="%.4g")
    print(markdown(table))


if __name__ == "__main__":
    main()
