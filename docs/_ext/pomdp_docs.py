"""Pages the docs build writes from the repository's data, before Sphinx reads the sources.

* ``_generated/envs/<id>.md``: one page per env card (``envs/*.yaml``), its fields as a table,
  as Gymnasium's site renders its env pages from the envs.
* ``_generated/cli.md``: the ``--help`` of each command-line tool, from its own argparse parser.

The folder is rebuilt on every build and is not committed. The results pages are not
built here: ``python -m pomdp_bench.report --docs docs/results`` writes them from the
results store, and they are committed beside the tables they read.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import yaml

from pomdp_bench.reporting.results_pages import cell_text

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
OUT = DOCS / "_generated"


def _card_value(value: object) -> str:
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value) + "`"
    return cell_text(value)


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


def _help(main, prog: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.suppress(SystemExit):
        main(["--help"])
    return buffer.getvalue().replace("usage: " + os.path.basename(prog), "usage: " + prog, 1)


def write_cli_page() -> None:
    from pomdp_bench import weights
    from pomdp_bench.harness import analysis, run, tuning
    from pomdp_bench.reporting import report

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
        ("pomdp_bench.analyse", analysis.main),
        ("pomdp_bench.weights", weights.main),
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
