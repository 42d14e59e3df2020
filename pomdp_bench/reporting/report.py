"""Regenerate leaderboard CSVs and figures from a results store, without retraining.

    python -m pomdp_bench.report --results results/ --leaderboards results/leaderboards/ [--open]

For each suite in the store it writes ``<suite>.csv`` (one row per cell),
``<suite>_runs.csv`` (one row per run), ``<suite>_horizon.csv`` where the suite
has several horizons, ``<suite>_improvement.csv`` (kind against kind),
``<suite>_credit.csv`` and ``<suite>_credit_model.csv`` where the suite crosses memory
length with credit length (:mod:`pomdp_bench.reporting.credit`), the figures
(SVG, in ``<suite>/``), ``README.md`` with the column schema and
the provenance of every suite (command, commit, machine, date, wall time), and
``index.html``, a static page to browse them (:mod:`pomdp_bench.reporting.html_page`).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import warnings
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pomdp_bench.envs.cards import card_of, current_env_id
from pomdp_bench.harness.published import POINTER_FILE, publish
from pomdp_bench.harness.store import ResultStore
from pomdp_bench.reporting import credit as credit_tables
from pomdp_bench.reporting import html_page, leaderboard, plots, popgym_reference, references, results_pages
from pomdp_bench.validation import add_old_name

# What only the project's published folder (leaderboards/ in the repository) holds:
# written there by ``--published`` (scripts/publish_leaderboards.sh), never into a
# user's folder.
_PUBLISHED_NOTES = """The memory and horizon suites were run afresh under the stop rule of issue 47: a
run stops solved only at two evaluations three quarters of the way from the ceiling to
the optimum, the second on 100 episodes, and it keeps its weights in the store. So
were horizon-long's PQN cells at corridors 200 and 500, the popgym suite (issue 52), and the credit and key-to-door suites (issue 53; key-to-door has no stop rule). The other horizon-long runs, and the popgym-40k and parity suites' runs, are older:
they stopped solved at the line itself, and their tables say so through their commits. The parity suite's runs
are older still (0.1.0): they used the old seeding, in which copy `i` of seed `s`
replayed copy `i - 1` of seed `s + 1` and seed `s` was evaluated on reset seeds
`10000 + s + i`, so adjacent seeds share most of their evaluation episodes and its
intervals are narrower than independent seeds would give.

Beside the suite tables, these CSVs come from scripts, each rewritten by its command
and carrying its own command, commit and per-seed rows, or its machine and commit per row:

| file | what | command |
|---|---|---|
| `parity_sb3.csv` | our PPO against sb3-contrib's RecurrentPPO, MaskedCartPole (zeroed layout), 100k steps, 5 seeds | `python scripts/parity_sb3.py` |
| `ppo_masked_cartpole.csv` | our PPO with every memory kind on MaskedCartPole, 100k / 200k steps, 5 seeds | `python scripts/ppo_masked_cartpole.py` |
| `sac_parity_sb3.csv` | our SAC against SB3's SAC on Pendulum-v1, 20k steps, 3 seeds | `python scripts/parity_sb3_sac.py` |
| `sac_masked_pendulum.csv` | SAC with gru against none on MaskedPendulum, 20k steps, 5 seeds | `python scripts/sac_masked_pendulum.py` |
| `popgym_cost.csv` | worker-hours per env and kind of the popgym suite, measured from its runs | `python scripts/popgym_cost.py` |
| `kernel_pinning_cost.csv` | PPO's env steps/s per memory kind under each CPU kernel setting against the CPU's own choice, and whether a short run's weights match | `python scripts/kernel_pinning_cost.py --csv` |
| `seed_rule_calibration.csv` | the sequential seed rule against 5, 10 and 20 fixed seeds on simulated cells: share called learned at the line and above it, and seeds run | `python scripts/seed_rule_calibration.py --cells 4000` |
| `throughput_gru_paths.csv` | gru's default path, gru's C++ path (`kernel: cpp`) and lstm, PPO's env steps/s at 16 and 256 copies | `python scripts/arithmetic_limit.py --copies 16 256 --kinds gru gru+cpp lstm --csv leaderboards/throughput_gru_paths.csv` |
| `throughput.csv` | PPO's env steps/s per memory kind at 16 and 256 copies, and the update's share of the arithmetic limit | `python scripts/arithmetic_limit.py --copies 16 256 --csv` |

`popgym_reference.csv` puts the popgym suite's MMER beside POPGym's published one
(`reference/popgym2023_mmer.csv`: typed from the paper, an input, not generated), and
`popgym_reference_tau.csv` holds Kendall's tau between the two orders of the kinds.

The published runs are text records written once, the source of truth: `records/runs/`
holds one JSON file per run, and `records/suites/<suite>.json` names a suite's records.
Every file here is rebuilt from them, and every published run key resolves in them.
`weights/` holds each run's weights, where it was trained after issue 47, with their
`manifest.csv` (`python -m pomdp_bench.weights fetch` gets missing files). `store/` is the
local index of the records, git-ignored and rebuilt from them on first use. `bash
scripts/publish_leaderboards.sh` resumes it (finished runs are skipped) and
regenerates everything here, the records, and the docs' results pages.

`pending/<suite>/results.sqlite` holds finished runs of a suite not yet published, so
that a later sweep resumes from them (`--results leaderboards/pending/<suite>`). Nothing
here is built from them.
"""

_README_HEAD = """# Leaderboards

Generated by `python -m pomdp_bench.report` from the results store; do not edit
by hand. Every number here comes from runs that the command listed under its
suite repeats (finished runs are skipped, so rerunning it on the same store only
regenerates these files).

Each suite has `<suite>.csv` (its cells), `<suite>_runs.csv`, and where it applies
`<suite>_horizon.csv` and `<suite>_improvement.csv`, here at the top. Its figures are
SVG files in the folder `<suite>/`.

To browse them, open `index.html` in this folder in a web browser (it works from
disk, with no server or network): a table per suite to sort and filter, each
cell's interval drawn against its ceiling and optimum, and its learning curves
and per-seed returns.

Cells are `(env, env kwargs, agent, memory, bptt_length)`. Statistics are over
seeds: the mean, the interquartile mean, and the 95% t interval of the mean
(`scipy.stats.t`, n_seeds - 1 degrees of freedom). A cell is listed once all its
seeds have run (as many as its runs record: the suite's count, or an entry's own);
`<suite>_runs.csv` lists every stored run.

The *line* of a cell is the midpoint between the feedforward ceiling and the
optimum (bsuite's memory score). A cell counts as *learned* when the t interval's
lower end lies above the line and an exact one-sided binomial test shows that more
than half of its seeds end above the line (`majority_p <= 0.05`; at 5 seeds that
takes all 5). It claims that the mean return and the typical seed are above the
line, not that every seed is; with 5 seeds a cell whose seeds each solve with
probability 0.8 is called learned about a third of the time, and 20 seeds show it
about 8 times in 10. On simulated cells whose true mean is on the line it calls at
most 5% learned, except where seeds that fail end far below the ceiling, which no
rule at 5 seeds can tell from a cell whose seeds all solve
(`docs/notes/verdict-calibration.md`).

`<suite>_improvement.csv` sets kind against kind: per env variant and agent, the
probability that a run of one cell beats a run of the other (rliable's probability
of improvement), with a bootstrap interval.

"""


def suite_command(suite: str) -> str:
    """The command that reproduces ``suite`` (the tables' ``command`` column).

    Not a sweep's own command: a sweep may have run part of the suite (``--memory``,
    ``--envs``) into a scratch store, and the last one would then name only its part.
    The sweeps' commands are listed with their wall times in the provenance.
    """
    return f"python -m pomdp_bench.run --suite {suite}"


@dataclass(frozen=True)
class SuiteTables:
    """One suite's tables, computed once from the store for its CSVs, figures and page.

    Attributes:
        runs: every stored run of the suite (:func:`leaderboard.runs_frame`).
        finished: the runs of cells whose every seed has run (:func:`leaderboard.finished_cells`).
        cells: one row per finished cell (:func:`leaderboard.cells_frame`).
        horizon: the longest horizon learned (:func:`leaderboard.horizon_frame`).
        improvement: kind against kind (:func:`leaderboard.improvement_frame`).
        credit: memory length against credit length (:func:`credit.credit_frame`).
        credit_model: how each kind's steps to solve grow with each (:func:`credit.credit_model`).
        curves: ``run_key, timesteps, mean_return`` of the finished runs' learning curves.
    """

    runs: pd.DataFrame
    finished: pd.DataFrame
    cells: pd.DataFrame
    horizon: pd.DataFrame
    curves: pd.DataFrame
    improvement: pd.DataFrame
    credit: pd.DataFrame
    credit_model: pd.DataFrame


def suite_tables(store: ResultStore, suite: str) -> SuiteTables:
    """The tables of ``suite`` from ``store``."""
    runs = leaderboard.runs_frame(store.rows(suite), suite)
    finished = leaderboard.finished_cells(runs)  # every stored run is listed; cells wait for all seeds
    cells = leaderboard.cells_frame(finished, command=suite_command(suite))
    curves = pd.DataFrame(store.curves(finished["run_key"]), columns=["run_key", "timesteps", "mean_return"])
    return SuiteTables(
        runs,
        finished,
        cells,
        leaderboard.horizon_frame(cells),
        curves,
        leaderboard.improvement_frame(finished),
        credit_tables.credit_frame(cells),
        credit_tables.credit_model(finished),
    )


def write_suite(store: ResultStore, suite: str, out: Path, tables: SuiteTables | None = None) -> list[Path]:
    """Write the CSVs and figures of ``suite`` into ``out``; returns the paths.

    ``tables``: the suite's tables when already computed (:func:`suite_tables`).
    """
    out.mkdir(parents=True, exist_ok=True)
    tables = tables or suite_tables(store, suite)
    runs, cells, horizon = tables.runs, tables.cells, tables.horizon
    few = cells[~cells["enough_seeds"].astype(bool)]
    failing = few[few["n_failed"] > 0]
    if len(failing):  # the cause first: runs that failed, not seeds that are missing
        first = runs[runs["status"] == "failed"].iloc[0]
        warnings.warn(
            f"suite {suite}: {len(failing)} of {len(cells)} cells have too few seeds because "
            f"{int(failing['n_failed'].sum())} of their runs failed; the first, {first['env_id']} "
            f"{first['memory']} seed {first['seed']}: {str(first['error']).rstrip('.')}. Fix the cause and rerun with "
            "--retry-failed",
            stacklevel=2,
        )
    short = few[few["n_failed"] == 0]
    if len(short):
        warnings.warn(
            f"suite {suite}: {len(short)} of {len(cells)} cells have fewer than {leaderboard.MIN_SEEDS} "
            f"seeds; their learned verdict is left empty",
            stacklevel=2,
        )
    paths = [out / f"{suite}.csv", out / f"{suite}_runs.csv"]
    cells.to_csv(paths[0], index=False)
    runs[list(leaderboard.RUN_COLUMNS)].to_csv(paths[1], index=False)
    if writes_horizon(horizon):
        paths.append(out / f"{suite}_horizon.csv")
        horizon.to_csv(paths[-1], index=False)
    if len(tables.improvement):
        paths.append(out / f"{suite}_improvement.csv")
        tables.improvement.to_csv(paths[-1], index=False)
    if len(tables.credit):
        paths += [out / f"{suite}_credit.csv", out / f"{suite}_credit_model.csv"]
        tables.credit.to_csv(paths[-2], index=False)
        tables.credit_model.to_csv(paths[-1], index=False)
    paths += plots.all_figures(
        tables.finished,
        tables.curves,
        cells,
        horizon,
        suite,
        figure_dir(out, suite),
        tables.improvement,
        tables.credit,
    )
    return paths


def writes_horizon(horizon: pd.DataFrame) -> bool:
    """Whether a suite gets ``<suite>_horizon.csv``: some row tried several horizons."""
    return bool(horizon["horizons_tried"].str.contains(";").any())


def horizon_tables(tables: dict[str, SuiteTables], suites: list[str]) -> list[pd.DataFrame]:
    """The horizon tables that ``suites`` write (:func:`writes_horizon`), in the order of
    their file names, as their CSVs read back (what :mod:`references` compares)."""
    names = sorted((f"{s}_horizon.csv", s) for s in suites if writes_horizon(tables[s].horizon))
    return [as_csv_reads(tables[s].horizon) for _, s in names]


def as_csv_reads(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as its CSV reads back (``pd.read_csv``), from memory: the comparisons with
    published references were computed from the written CSVs, so their tables keep the
    CSVs' numbers to the last digit (pandas' parser rounds some) and types (an int column
    with a gap reads back as float)."""
    return pd.read_csv(io.StringIO(frame.to_csv(index=False)))


def figure_dir(out: Path, suite: str) -> Path:
    """Where ``suite``'s figures go: a folder of its own beside its CSVs."""
    return out / suite


def _bptt_text(value: object) -> str:
    return "" if value is None or pd.isna(value) else str(int(value))


def coverage_line(cells: pd.DataFrame, suite: str, declared_cells: list[Any] | None) -> str:
    """``coverage: complete (N cells)`` or ``coverage: partial, n of N cells``.

    ``cells``: rows with the cell columns (:data:`leaderboard.CELL_KEYS`) of the cells
    published, one row per cell or per run. ``declared_cells``: the cells the store
    records for the suite (:meth:`ResultStore.declared_cells`, as
    :func:`~pomdp_bench.harness.cells.cell_id` writes them), or ``None`` when it records none.
    """
    present = published_cells(cells)
    if declared_cells is None:
        return f"coverage: {len(present)} cells (the store records no declared cells for {suite!r})"
    declared = {
        (env_id, kwargs, agent, memory, bptt) for env_id, kwargs, agent, memory, bptt in declared_cells
    }
    have = len(declared & present)
    old = sorted({c.env_id for c in cells.itertuples() if current_env_id(c.env_id) != c.env_id})
    note = (
        f"; cells of {', '.join(old)} count for the version that supersedes it (runs made "
        "before it; rerunning the suite replaces them)"
        if old
        else ""
    )
    if have == len(declared):
        return f"coverage: complete ({have} cells){note}"
    return f"coverage: partial, {have} of {len(declared)} cells{note}"


def published_cells(cells: pd.DataFrame) -> set[tuple[str, str, str, str, str]]:
    """The cells of a leaderboard table as :func:`~pomdp_bench.harness.cells.cell_id` names them, an env id
    of a superseded version counting as the id that superseded it."""
    return {
        (current_env_id(c.env_id), c.env_kwargs, c.agent, c.memory, _bptt_text(c.bptt_length))
        for c in cells.itertuples()
    }


def convergence_line(runs: pd.DataFrame) -> str:
    """``converged: n of N cells ...``: the cells whose every run with a stop rule stopped
    as solved or plateaued, and the cells with a run at its cap, each with how far its
    capped runs' curves still rose over their last quarter (``late_gain``, as a share of
    the ceiling-optimum gap). Empty when no run has a stop rule."""
    stopped = runs[runs["stop_reason"].fillna("") != ""]
    if stopped.empty:
        return ""
    capped_parts = []
    n_cells = 0
    for keys, group in stopped.groupby(leaderboard.CELL_KEYS, dropna=False, sort=True):
        n_cells += 1
        capped = group[group["stop_reason"] == "cap"]
        if len(capped):
            env_id, env_kwargs, agent, memory, bptt = keys
            carried = group["card"].iloc[0] if "card" in group else ""
            card = card_of(env_id, json.loads(carried) if carried else None)
            kwargs = json.loads(env_kwargs)
            gap = card.optimal_return - card.ceiling_for(kwargs)
            rise = float(capped["late_gain"].mean()) / gap if gap else math.nan
            variant = env_id + ("" if env_kwargs == "{}" else f" {env_kwargs}")
            capped_parts.append(
                f"{variant} {agent} {memory} bptt {_bptt_text(bptt) or 'n/a'} "
                f"({len(capped)} of {len(group)} at the cap, last-quarter rise {rise:+.2f})"
            )
    line = (
        f"converged: {n_cells - len(capped_parts)} of {n_cells} cells (every run stopped solved or plateaued)"
    )
    return line + ("; at their cap: " + "; ".join(capped_parts) if capped_parts else "")


def cpu_line(runs: pd.DataFrame) -> str:
    """``cpu: ...``: the CPU model that ran the cells; for a suite that mixes CPUs, how
    many cells each ran, naming the cells that did not run on the most common one.
    Empty without runs."""
    if runs.empty:
        return ""
    per_cell = runs.groupby(leaderboard.CELL_KEYS, dropna=False, sort=True)["machine"].agg(leaderboard.cpus)
    counts = per_cell.value_counts()
    counts = counts.iloc[sorted(range(len(counts)), key=lambda i: (-counts.iloc[i], counts.index[i]))]
    if len(counts) == 1:
        return f"cpu: {counts.index[0]} (every cell)"
    parts = [f"{counts.index[0].replace(';', ' and ')}: {counts.iloc[0]} cells"]
    for text, n in counts.iloc[1:].items():
        names = [
            f"{env_id} {env_kwargs} {agent} {memory} bptt {_bptt_text(bptt) or 'n/a'}"
            for env_id, env_kwargs, agent, memory, bptt in per_cell[per_cell == text].index
        ]
        parts.append(f"{text.replace(';', ' and ')}: {n} cells ({'; '.join(names)})")
    return "cpu: mixed (the tables' cpu column says which cell ran where): " + "; ".join(parts)


def solved_line(runs: pd.DataFrame, cells: pd.DataFrame) -> str:
    """``solved runs above the line: a of b (p%)``: of the runs that stopped solved, how
    many end above their cell's ``learned`` line at their final evaluation (issue 47's
    target: at least 99%). Empty where no run stopped solved on a cell with a line."""
    if runs.empty or cells.empty:
        return ""
    lines = cells.assign(line=(cells["ff_ceiling"] + cells["optimal_return"]) / 2)[
        [*leaderboard.CELL_KEYS, "line"]
    ]
    solved = runs[(runs["status"] == "ok") & (runs["stop_reason"] == "solved")]
    merged = solved.merge(lines, on=leaderboard.CELL_KEYS, how="inner").dropna(subset=["line"])
    if merged.empty:
        return ""
    above = int((merged["final_return"] > merged["line"]).sum())
    return f"solved runs above the line at their final evaluation: {above} of {len(merged)} ({100 * above / len(merged):.1f}%)"


def provenance_lines(
    store: ResultStore, suite: str, runs: pd.DataFrame | None = None, cells: pd.DataFrame | None = None
) -> list[str]:
    """How ``suite`` was made, one Markdown line per fact: its coverage, CPU,
    convergence and solved runs, then each sweep's command, start, wall time, runs,
    commit and machine (the README's and the page's).

    ``runs``: the suite's stored runs when already read (:attr:`SuiteTables.runs`);
    ``cells``: its cells (:attr:`SuiteTables.cells`), for the solved-runs line.
    """
    if runs is None:
        runs = leaderboard.runs_frame(store.rows(suite), suite)
    runs = leaderboard.finished_cells(runs)
    published = runs[runs["status"] == "ok"]  # a cell with a finished run; no statistics needed
    lines = [coverage_line(published, suite, store.declared_cells(suite))]
    cpu = cpu_line(published)
    if cpu:
        lines.append(cpu)
    converged = convergence_line(published)
    if converged:
        lines.append(converged)
    solved = solved_line(published, cells) if cells is not None else ""
    if solved:
        lines.append(solved)
    for sweep in store.sweeps(suite):
        wall = f"{sweep['wall_seconds'] / 60:.1f} min" if sweep["wall_seconds"] else "unfinished"
        lines.append(
            f"`{sweep['command']}`: started {sweep['started_at']}, {wall}, "
            f"{sweep['n_runs'] if sweep['n_runs'] is not None else '?'} runs executed; "
            f"commit `{sweep['git_commit'] or 'unknown'}`; {sweep['machine']}"
        )
    if not store.sweeps(suite):
        lines.append("no sweep recorded")
    return lines


def _provenance(store: ResultStore, suite: str, tables: SuiteTables | None = None) -> str:
    runs, cells = (tables.runs, tables.cells) if tables is not None else (None, None)
    lines = provenance_lines(store, suite, runs, cells)
    return "\n".join([f"### `{suite}`", "", *(f"- {line}" for line in lines)])


def write_readme(
    store: ResultStore,
    suites: list[str],
    out: Path,
    published: bool = False,
    tables: dict[str, SuiteTables] | None = None,
    comparisons: dict[str, pd.DataFrame] | None = None,
) -> Path:
    """Write ``README.md``: the head, the provenance of ``suites``, the comparisons with
    published references and the column schema.

    ``tables``: suites' tables when already computed (:func:`suite_tables`);
    ``comparisons``: :func:`references.comparisons` by name (none: no such section).
    """
    tables = tables or {}
    parts = [_README_HEAD + (_PUBLISHED_NOTES if published else ""), "## How each suite was made", ""]
    parts += [_provenance(store, s, tables.get(s)) + "\n" for s in suites]
    for name, table in (comparisons or {}).items():
        parts += [f"## Against {name} (`reference_{name}.csv`)", "", references.markdown(table), ""]
    parts += ["## Column schema", "", leaderboard.schema_markdown(), ""]
    path = out / "README.md"
    path.write_text("\n".join(parts))
    return path


def write_reports(
    results: str | Path,
    out: str | Path,
    suites: list[str] | None = None,
    published: bool = False,
    docs: str | Path | None = None,
) -> list[Path]:
    """Regenerate everything for ``suites`` (default: every suite in the store) into
    ``out``; ``published`` adds the project's notes (scripts/publish_leaderboards.sh)
    and, where ``results`` is the index of published records, publishes the suites'
    runs as records and weight files (:func:`~pomdp_bench.harness.published.publish`);
    ``docs``: a folder for each suite's results page too (:mod:`results_pages`).

    Raises:
        ValueError: a suite the store does not hold (the message lists those it does).
    """
    out = Path(out)
    with ResultStore(results) as store:
        held = store.suites()
        unknown = sorted(set(suites or []) - set(held))
        if unknown:
            raise ValueError(f"the store at {results} holds no suite {unknown}; it holds {held}")
        names = suites or held
        paths: list[Path] = []
        tables: dict[str, SuiteTables] = {}
        for suite in names:
            tables[suite] = suite_tables(store, suite)
            paths += write_suite(store, suite, out, tables[suite])
        written = horizon_tables(tables, names)  # the horizon tables just written
        paths += references.write_comparisons(out, written)
        popgym = as_csv_reads(tables["popgym"].cells) if "popgym" in names else None
        paths += popgym_reference.write_comparison(out, popgym)
        all_suites = sorted(set(store.suites()) | set(names))
        for suite in all_suites:  # the page shows every suite of the store, not only those rewritten
            if suite not in tables:
                tables[suite] = suite_tables(store, suite)
        paths.append(write_readme(store, all_suites, out, published, tables, references.comparisons(written)))
        pages = [suite_page(store, s, tables[s], out) for s in all_suites]
        paths.append(html_page.write_page(pages, out))
        if docs is not None:
            paths += write_docs_pages(pages, tables, out, Path(docs), names)
        if published and store.published is not None:
            publish(store, names, store.published)
    return paths


def write_docs_pages(
    pages: list[html_page.SuitePage], tables: dict[str, SuiteTables], out: Path, docs: Path, suites: list[str]
) -> list[Path]:
    """Write ``<suite>.md`` into ``docs`` for each of ``suites``, linking to the CSVs and
    figures in ``out``; returns the paths."""
    docs.mkdir(parents=True, exist_ok=True)
    paths = []
    for page in pages:
        if page.name in suites:
            paths.append(docs / f"{page.name}.md")
            paths[-1].write_text(docs_markdown(page, tables[page.name], out, docs), encoding="utf-8")
    return paths


def docs_markdown(page: html_page.SuitePage, tables: SuiteTables, out: Path, docs: Path) -> str:
    """The results page of one suite (:func:`results_pages.suite_markdown`), as it is
    written into ``docs`` with the leaderboards folder ``out``."""
    return results_pages.suite_markdown(
        page.name,
        tables.cells,
        tables.horizon,
        page.figures,
        page.provenance,
        results_pages.relative(out, docs),
    )


def suite_page(store: ResultStore, suite: str, tables: SuiteTables, out: Path) -> html_page.SuitePage:
    """What the page shows of ``suite``: its tables, provenance, and the figures
    (heatmaps, horizon, solve cost, kind against kind, forgetting and horizon
    generalisation where runs were analysed) and CSVs that ``out`` holds."""
    names = [
        plots.heatmap_name(suite, env_id, env_kwargs, agent)
        for (env_id, env_kwargs, agent), _ in tables.cells.groupby(
            ["env_id", "env_kwargs", "agent"], sort=True
        )
    ] + [plots.horizon_name(suite), plots.solve_cost_name(suite)]
    names += [
        plots.improvement_name(suite, env_id, env_kwargs, agent)
        for (env_id, env_kwargs, agent), _ in tables.cells.groupby(
            ["env_id", "env_kwargs", "agent"], sort=True
        )
    ]
    names += [plots.forgetting_name(suite, memory) for memory in sorted(set(tables.finished["memory"]))]
    names += [
        plots.generalisation_name(suite, env_id, agent)
        for (env_id, agent), _ in tables.cells.groupby(["env_id", "agent"], sort=True)
    ]
    names += [
        plots.credit_name(suite, env_id, agent)
        for (env_id, agent), _ in tables.credit.groupby(["env_id", "agent"], sort=True)
    ]
    return html_page.SuitePage(
        name=suite,
        cells=tables.cells,
        runs=tables.finished,
        curves=tables.curves,
        provenance=provenance_lines(store, suite, tables.runs, tables.cells),
        figures=[
            f"{suite}/{name}{plots.FIGURE_SUFFIX}"
            for name in names
            if (figure_dir(out, suite) / f"{name}{plots.FIGURE_SUFFIX}").is_file()
        ],
        files=[
            f
            for f in (
                f"{suite}.csv",
                f"{suite}_runs.csv",
                f"{suite}_horizon.csv",
                f"{suite}_improvement.csv",
                f"{suite}_credit.csv",
                f"{suite}_credit_model.csv",
            )
            if (out / f).is_file()
        ],
        horizon=tables.horizon,
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m pomdp_bench.report``."""
    parser = argparse.ArgumentParser(
        prog="python -m pomdp_bench.report", description=__doc__.split("\n\n")[0], allow_abbrev=False
    )
    parser.add_argument(
        "--results", default="results", help="folder of the results store (default: results/)"
    )
    parser.add_argument(
        "--leaderboards",
        metavar="DIR",
        help="where to write CSVs, figures, README.md and index.html (default: <results>/leaderboards/, as run writes "
        "them)",
    )
    add_old_name(parser, "--out", "--leaderboards", "leaderboards")
    parser.add_argument(
        "--suite", action="append", help="only this suite (repeatable; default: all in the store)"
    )
    parser.add_argument(
        "--published",
        action="store_true",
        help="add the notes of the project's published folder (scripts/publish_leaderboards.sh)",
    )
    parser.add_argument(
        "--docs",
        metavar="DIR",
        help="also write each suite's results page (Markdown) into DIR, for the docs site "
        "(the project's: docs/results)",
    )
    parser.add_argument(
        "--open",
        action="store_true",
        help="open the leaderboard page (index.html) in the default web browser after writing it",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not any((Path(args.results) / name).is_file() for name in ("results.sqlite", POINTER_FILE)):
        parser.error(f"no results store at {Path(args.results) / 'results.sqlite'}")
    target = Path(args.leaderboards) if args.leaderboards else Path(args.results) / "leaderboards"
    try:
        paths = write_reports(args.results, target, args.suite, args.published, args.docs)
    except ValueError as err:
        parser.error(str(err))
    for path in paths:
        print(path)
    if args.open:
        webbrowser.open((target / html_page.PAGE_NAME).resolve().as_uri())


if __name__ == "__main__":
    main()
