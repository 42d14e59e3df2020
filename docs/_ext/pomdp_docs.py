"""Pages the docs build writes from the repository's data, before Sphinx reads the sources.

* ``_generated/envs/<id>.md``: one page per env card (``envs/*.yaml``), its fields as a table,
  as Gymnasium's site renders its env pages from the envs.
* ``_generated/results/<suite>.md``: one page per published suite, its cells from
  ``leaderboards/<suite>.csv`` (and the longest horizons from ``<suite>_horizon.csv``).
  No number on these pages is typed by hand.
* ``_generated/cli.md``: the ``--help`` of each command-line tool, from its own argparse parser.

The folder is rebuilt on every build and is not committed.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import yaml

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "_generated"

SUITES = ["memory", "horizon", "horizon-long", "parity", "popgym"]
CELL_COLUMNS = {
    "env_id": "env",
    "env_kwargs": "kwargs",
    "agent": "agent",
    "memory": "memory",
    "bptt_length": "bptt",
    "n_seeds": "seeds",
    "return_mean": "mean",
    "interval": "95% interval",
    "ff_ceiling": "ceiling",
    "optimal_return": "optimum",
    "learned": "learned",
    "solved_fraction": "solved",
    "steps_to_solve": "steps to solve",
}
HORIZON_COLUMNS = {
    "env_id": "env",
    "agent": "agent",
    "memory": "memory",
    "pieces": "pieces",
    "horizons_tried": "horizons tried",
    "longest_horizon_learned": "longest learned",
    "next_horizon": "next",
    "next_outcome": "next outcome",
    "limit_censored": "censored",
}


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    """A Markdown table of ``frame``, every value formatted by :func:`_cell`."""
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _card_value(value: object) -> str:
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value) + "`"
    return _cell(value)


def write_env_pages() -> list[str]:
    (OUT / "envs").mkdir(parents=True)
    ids = []
    for path in sorted((ROOT / "envs").glob("*.yaml")):
        card = yaml.safe_load(path.read_text(encoding="utf-8"))
        env_id = card["id"]
        rows = [
            f"| {key} | {_card_value(value)} |"
            for key, value in card.items()
            if key not in ("id", "description")
        ]
        page = [
            f"# {env_id}",
            "",
            str(card.get("description", "")).strip(),
            "",
            f"From the card `envs/{path.name}`.",
            "",
            "| field | value |",
            "|---|---|",
            *rows,
            "",
        ]
        (OUT / "envs" / f"{env_id}.md").write_text("\n".join(page), encoding="utf-8")
        ids.append(env_id)
    return ids


def write_result_pages() -> list[str]:
    (OUT / "results").mkdir(parents=True)
    written = []
    for suite in SUITES:
        cells_path = ROOT / "leaderboards" / f"{suite}.csv"
        if not cells_path.is_file():
            continue
        cells = pd.read_csv(cells_path)
        cells["interval"] = [
            f"[{_cell(lo)}, {_cell(hi)}]"
            for lo, hi in zip(cells["return_ci_low"], cells["return_ci_high"], strict=True)
        ]
        table = cells[list(CELL_COLUMNS)].rename(columns=CELL_COLUMNS)
        commits = sorted({str(c)[:7] for c in cells["git_commit"].dropna()})
        page = [
            f"# The {suite} suite",
            "",
            f"Generated from `leaderboards/{suite}.csv` when the docs were built.",
            f"Download the [cells](../../../leaderboards/{suite}.csv) and the [runs](../../../leaderboards/{suite}_runs.csv).",
            "The column schema is in `leaderboards/README.md`.",
            "",
            f"Cells: {len(cells)}. Machines: {', '.join(sorted(set(cells['machine'].astype(str))))}.",
            "",
        ]
        if commits:
            page += [f"Provenance: commits {', '.join(commits)}.", ""]
        horizon_path = ROOT / "leaderboards" / f"{suite}_horizon.csv"
        if horizon_path.is_file():
            horizons = pd.read_csv(horizon_path)
            page += [
                "## Longest horizon learned",
                "",
                markdown_table(horizons[list(HORIZON_COLUMNS)].rename(columns=HORIZON_COLUMNS)),
                "",
            ]
        page += ["## Cells", "", markdown_table(table), ""]
        (OUT / "results" / f"{suite}.md").write_text("\n".join(page), encoding="utf-8")
        written.append(suite)
    return written


def _help(main, prog: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        main(["--help"])
    return buffer.getvalue().replace("usage: " + os.path.basename(prog), "usage: " + prog, 1)


def write_cli_page() -> None:
    from pomdp_bench.harness import report, run, tuning

    os.environ["COLUMNS"] = "100"
    page = [
        "# Command-line options",
        "",
        "Each block is the tool's own `--help`, printed when the docs were built.",
        "",
    ]
    for module, main in (
        ("pomdp_bench.run", run.main),
        ("pomdp_bench.report", report.main),
        ("pomdp_bench.tune", tuning.main),
    ):
        page += [
            f"## `python -m {module}`",
            "",
            "```text",
            _help(main, f"python -m {module}").rstrip(),
            "```",
            "",
        ]
    (OUT / "cli.md").write_text("\n".join(page), encoding="utf-8")


def generate() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    write_env_pages()
    write_result_pages()
    write_cli_page()


def _tables_as_literal(app, what, name, obj, options, lines) -> None:
    """Show the Markdown tables of the env docstrings as preformatted text, as they read in code."""
    out, in_table = [], False
    for line in lines:
        is_row = line.lstrip().startswith("|")
        if is_row and not in_table:
            out += ["::", ""]
        if is_row:
            out.append("    " + line.strip())
        else:
            if in_table:
                out.append("")
            out.append(line)
        in_table = is_row
    lines[:] = out


def setup(app):
    app.connect("builder-inited", lambda app: generate())
    app.connect("autodoc-process-docstring", _tables_as_literal)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
