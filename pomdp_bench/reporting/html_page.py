"""The leaderboard page: ``index.html``, one static page to browse a leaderboards folder.

:func:`write_page` renders it from the suites' tables (:class:`SuitePage`, built by
:mod:`pomdp_bench.reporting.report` from the results store). The page is
self-contained: its styles (``html_page.css``), script (``html_page.js``) and data
are inline, and it refers only to the figures and CSVs beside it in the same
folder, by relative paths; it opens from disk with no server and no network.

On it, per suite: the provenance (the README's lines), the heatmaps and horizon
figure, and one table with a row per cell, sortable by any column (click a header,
or focus it and press Enter) and filterable by env, agent and memory kind. Each
row draws its verdict, the 95% interval against the feedforward ceiling and the
optimum, as a small inline SVG; its details button opens the cell's learning curves
(every seed, the mean and a 95% band; drawn by the script from the JSON embedded in
the page, each curve at most :data:`MAX_CURVE_POINTS` points) and per-seed returns.

The same tables give the same bytes: no timestamps, ids made from the suite name
and the cell's row, JSON with sorted keys, and a band from a fixed bootstrap seed.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pomdp_bench.memory_names import MEMORY_KINDS
from pomdp_bench.reporting import limits
from pomdp_bench.reporting.leaderboard import CELL_COLUMNS, CELL_KEYS
from pomdp_bench.reporting.statistics import curve_band, iqm_interval

PAGE_NAME = "index.html"

# The most points the page embeds per seed's curve (and per band): enough to draw it,
# few enough that the published folder's page stays small.
MAX_CURVE_POINTS = 100

_ASSETS = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SuitePage:
    """What the page shows of one suite.

    Attributes:
        name: the suite.
        cells: one row per cell (:data:`~pomdp_bench.reporting.leaderboard.CELL_COLUMNS`).
        runs: the runs behind those cells (the runs table's columns, with ``episode_returns``).
        curves: ``run_key, timesteps, mean_return``: the runs' learning curves.
        provenance: how the suite was made, one Markdown line each (the README's).
        figures: paths of its figures relative to the page (heatmaps, horizon).
        files: file names of its CSVs beside the page.
        horizon: its longest-horizon table
            (:func:`~pomdp_bench.reporting.leaderboard.horizon_frame`); the page opens on
            it where it spans several horizons.
    """

    name: str
    cells: pd.DataFrame
    runs: pd.DataFrame
    curves: pd.DataFrame
    provenance: list[str]
    figures: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    horizon: pd.DataFrame = field(default_factory=pd.DataFrame)

    def spans_horizons(self) -> bool:
        """Whether some kind of it was tried at several horizons."""
        return not self.horizon.empty and bool(
            self.horizon["horizons_tried"].astype(str).str.contains(";").any()
        )


@dataclass(frozen=True)
class _Column:
    """A column of a suite table: its sort key, header, type and the CSV columns it shows."""

    key: str
    label: str
    kind: str  # "num" or "str": how the script sorts it
    defines: tuple[str, ...]


_COLUMNS = (
    _Column("env", "env", "str", ("env_id", "env_kwargs", "horizon")),
    _Column("agent", "agent", "str", ("agent",)),
    _Column("memory", "memory", "str", ("memory",)),
    _Column("bptt_length", "BPTT", "num", ("bptt_length",)),
    _Column("n_seeds", "seeds", "num", ("n_seeds",)),
    _Column("return_mean", "mean", "num", ("return_mean",)),
    _Column("return_ci_low", "95% interval", "num", ("return_ci_low", "return_ci_high")),
    _Column("return_iqm", "IQM [95%]", "num", ("return_iqm",)),
    _Column("verdict", "interval vs ceiling · optimum", "num", ("ff_ceiling", "optimal_return")),
    _Column("normalized_score", "norm. score", "num", ("normalized_score",)),
    _Column("learned", "learned", "num", ("learned",)),
    _Column("steps_to_solve", "steps to solve", "num", ("steps_to_solve",)),
    _Column("steps_per_second", "steps/s", "num", ("steps_per_second",)),
)

# Columns the page adds to the CSV's, with their meaning.
_PAGE_COLUMNS = {
    "IQM [95%]": "return_iqm with its 95% seed-level percentile bootstrap interval "
    "(statistics.iqm_interval, rliable's IQM; not in the CSV)",
    "interval vs ceiling · optimum": "the 95% interval of the mean (bar) and the mean (dot), on a scale "
    "where the feedforward ceiling (dashed) is 0 and the optimum (solid) 1; the short tick is their "
    "midpoint. Green: learned (the bar starts above the midpoint); grey: "
    "not learned; outlined: fewer than 5 seeds, no verdict. Sorted by the interval's lower end on that scale",
}

# The verdict drawing's scale: normalised values from _LOW to _HIGH across the width.
_LOW, _HIGH = -0.25, 1.25


def _number_or_none(v: Any) -> float | None:
    """A number for the page, or None for a missing one (NaN, NA, None)."""
    if v is None or v is pd.NA:
        return None
    try:
        number = float(v)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _six_digits(v: float | None) -> float | None:
    """``v`` to 6 significant digits: what the page needs, in fewer bytes."""
    return None if v is None else float(f"{v:.6g}")


def _verdict_or_none(v: Any) -> bool | None:
    """A verdict: True, False, or None where it is empty (too few seeds)."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else bool(v)


def _format_return(v: float | None) -> str:
    """A return or score for reading: 3 significant places, fewer for large numbers."""
    if v is None:
        return "—"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def _format_count(v: float | None) -> str:
    """A count of steps for reading, with thousands separators."""
    return "—" if v is None else f"{round(v):,}"


def _kwargs_text(env_kwargs: str) -> str:
    """``{"delay":5}`` as ``delay=5``."""
    kwargs = json.loads(env_kwargs)
    return " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(kwargs.items()))


def _bptt_or_none(v: Any) -> int | None:
    """A cell's BPTT length, or None for kinds not trained through time."""
    return None if v is None or pd.isna(v) else int(v)


def _html_id(text: str) -> str:
    """``text`` as an HTML id fragment: runs of other characters become one hyphen."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "suite"


def _normalised(v: float | None, ceiling: float | None, optimum: float | None) -> float | None:
    if v is None or ceiling is None or optimum is None or optimum == ceiling:
        return None
    return (v - ceiling) / (optimum - ceiling)


def _downsample(count: int, limit: int = MAX_CURVE_POINTS) -> np.ndarray:
    """Indices of at most ``limit`` evenly spread points of ``count``, first and last kept."""
    if count <= limit:
        return np.arange(count)
    return np.unique(np.round(np.linspace(0, count - 1, limit)).astype(int))


def _inline_markdown(text: str) -> str:
    """Escaped ``text`` with its Markdown code spans as ``<code>``."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _cell_key(env_id: Any, env_kwargs: Any, agent: Any, memory: Any, bptt: Any) -> tuple[Any, ...]:
    return (str(env_id), str(env_kwargs), str(agent), str(memory), _bptt_or_none(bptt))


# --- the data behind a cell's details ---------------------------------------------------------


def _seed_curves(runs: pd.DataFrame, curves: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The ``[points, 2]`` curves (timesteps, return) of the finished runs that have one."""
    return [
        curves[k] for k, s in zip(runs["run_key"], runs["status"], strict=True) if s == "ok" and k in curves
    ]


def _seed_band(seed_curves: list[np.ndarray]) -> dict[str, list[float | None]]:
    """The mean curve over seeds and its 95% band, on at most :data:`MAX_CURVE_POINTS`
    of the seeds' evaluation steps; each seed counts only within the steps it trained."""
    if not seed_curves:
        return {"t": [], "mean": [], "low": [], "high": []}
    grid = np.unique(np.concatenate([c[:, 0] for c in seed_curves]))
    grid = grid[_downsample(len(grid))]
    values = np.full((len(seed_curves), len(grid)), np.nan)
    for i, curve in enumerate(seed_curves):
        inside = (grid >= curve[0, 0]) & (grid <= curve[-1, 0])
        values[i, inside] = np.interp(grid[inside], curve[:, 0], curve[:, 1])
    mean, low, high = curve_band(values)
    return {
        "t": [int(t) for t in grid],
        "mean": [_six_digits(_number_or_none(v)) for v in mean],
        "low": [_six_digits(_number_or_none(v)) for v in low],
        "high": [_six_digits(_number_or_none(v)) for v in high],
    }


def _detail(cell: pd.Series, runs: pd.DataFrame, curves: dict[str, np.ndarray]) -> dict[str, Any]:
    """Everything the details view of one cell shows, as plain JSON data."""
    ok = runs[runs["status"] == "ok"]
    _, iqm_low, iqm_high = iqm_interval(ok["final_return"].to_numpy(dtype=np.float64))
    seeds = []
    for run in runs.itertuples():
        curve = curves.get(run.run_key, np.empty((0, 2)))
        curve = curve[_downsample(len(curve))]
        seeds.append(
            {
                "seed": int(run.seed),
                "status": str(run.status),
                "final_return": _six_digits(_number_or_none(run.final_return)),
                "episodes": int(run.eval_episodes),
                "timesteps": _number_or_none(run.timesteps),
                "stop_reason": str(run.stop_reason or ""),
                "steps_to_solve": _number_or_none(run.steps_to_solve),
                "steps_per_second": _six_digits(_number_or_none(run.steps_per_second)),
                "curve": [[int(t), _six_digits(_number_or_none(r))] for t, r in curve],
            }
        )
    kwargs = _kwargs_text(cell["env_kwargs"])
    bptt = _bptt_or_none(cell["bptt_length"])
    return {
        "title": f"{cell['env_id']}{' ' + kwargs if kwargs else ''} · {cell['agent']} · {cell['memory']}"
        + ("" if bptt is None else f" · BPTT {bptt}"),
        "horizon": int(cell["horizon"]),
        "pieces": str(cell["pieces"]),
        "cue_reach": _six_digits(_number_or_none(cell["cue_reach"])),
        "n_seeds": int(cell["n_seeds"]),
        "n_failed": int(cell["n_failed"]),
        "total_timesteps": int(cell["total_timesteps"]),
        "mean": _six_digits(_number_or_none(cell["return_mean"])),
        "ci": [
            _six_digits(_number_or_none(cell["return_ci_low"])),
            _six_digits(_number_or_none(cell["return_ci_high"])),
        ],
        "iqm": _six_digits(_number_or_none(cell["return_iqm"])),
        "iqm_ci": [_six_digits(_number_or_none(iqm_low)), _six_digits(_number_or_none(iqm_high))],
        "ceiling": _six_digits(_number_or_none(cell["ff_ceiling"])),
        "ceiling_source": str(cell["ff_ceiling_source"]),
        "optimum": _six_digits(_number_or_none(cell["optimal_return"])),
        "score": _six_digits(_number_or_none(cell["normalized_score"])),
        "learned": _verdict_or_none(cell["learned"]),
        "stop_reasons": "" if pd.isna(cell["stop_reasons"]) else str(cell["stop_reasons"]),
        "steps_to_solve": _number_or_none(cell["steps_to_solve"]),
        "steps_to_solve_ci": [
            _number_or_none(cell["steps_to_solve_ci_low"]),
            _number_or_none(cell["steps_to_solve_ci_high"]),
        ],
        "steps_per_second": _six_digits(_number_or_none(cell["steps_per_second"])),
        "seeds": seeds,
        "band": _seed_band(_seed_curves(runs, curves)),
    }


# --- HTML ----------------------------------------------------------------------------------------


def _verdict_svg(low: float | None, high: float | None, mean: float | None, cell: pd.Series) -> str:
    """The cell's interval against its ceiling (0) and optimum (1), as a small inline SVG."""
    ceiling, optimum = _number_or_none(cell["ff_ceiling"]), _number_or_none(cell["optimal_return"])
    lo, hi, mid = (_normalised(v, ceiling, optimum) for v in (low, high, mean))
    if lo is None or hi is None:
        return "—"

    def x(v: float) -> float:
        return round(6 + (min(max(v, _LOW), _HIGH) - _LOW) / (_HIGH - _LOW) * 108, 1)

    learned = _verdict_or_none(cell["learned"])
    kind = "na" if learned is None else "learned" if learned else "no"
    verdict = {
        "na": "no verdict (fewer than 5 seeds)",
        "learned": "learned",
        "no": "not learned",
    }[kind]
    label = f"95% interval [{_format_return(low)}, {_format_return(high)}], ceiling {_format_return(ceiling)}, optimum {_format_return(optimum)}: {verdict}"
    left, width = x(lo), x(hi) - x(lo)
    if width < 3:  # a zero-width interval still shows, centred on itself
        left, width = left - (3 - width) / 2, 3.0
    dot = "" if mid is None else f'<circle class="mean" cx="{x(mid)}" cy="11" r="2.2"/>'
    return (
        f'<svg class="verdict" viewBox="0 0 120 22" width="120" height="22" role="img" '
        f'aria-label="{html.escape(label)}"><title>{html.escape(label)}</title>'
        f'<line class="axis" x1="6" y1="11" x2="114" y2="11"/>'
        f'<line class="ceil" x1="{x(0)}" y1="3" x2="{x(0)}" y2="19"/>'
        f'<line class="mid" x1="{x(0.5)}" y1="7" x2="{x(0.5)}" y2="15"/>'
        f'<line class="opt" x1="{x(1)}" y1="3" x2="{x(1)}" y2="19"/>'
        f'<rect class="bar {kind}" x="{round(left, 1)}" y="7.5" width="{round(width, 1)}" height="7"/>{dot}</svg>'
    )


def _table_cell(key: str, sort_value: Any, text: str, css: str = "") -> str:
    v = "" if sort_value is None else html.escape(str(sort_value), quote=True)
    cls = f' class="{css}"' if css else ""
    return f'<td data-key="{key}" data-v="{v}"{cls}>{text}</td>'


def _verdict_text(v: bool | None) -> tuple[int | None, str]:
    if v is None:
        return None, '<span class="na" title="fewer than 5 seeds: no verdict">—</span>'
    return int(v), '<span class="yes">yes</span>' if v else '<span class="no">no</span>'


def _cell_row(cell_id: str, cell: pd.Series, iqm_ci: list[float | None], columns: list[_Column]) -> str:
    """One table row: a cell, its sort values in ``data-v``, its filter values in ``data-*``;
    ``iqm_ci`` is the interval of its IQM (not a CSV column)."""
    kwargs = _kwargs_text(cell["env_kwargs"])
    variant = f"{cell['env_id']} {kwargs}".strip()
    bptt = _bptt_or_none(cell["bptt_length"])
    low, high = _number_or_none(cell["return_ci_low"]), _number_or_none(cell["return_ci_high"])
    mean, iqm = _number_or_none(cell["return_mean"]), _number_or_none(cell["return_iqm"])
    ceiling, optimum = _number_or_none(cell["ff_ceiling"]), _number_or_none(cell["optimal_return"])
    steps, speed = _number_or_none(cell["steps_to_solve"]), _number_or_none(cell["steps_per_second"])
    score = _number_or_none(cell["normalized_score"])
    learned, learned_text = _verdict_text(_verdict_or_none(cell["learned"]))
    steps_title = (
        f' title="95% interval [{_format_count(_number_or_none(cell["steps_to_solve_ci_low"]))}, '
        f'{_format_count(_number_or_none(cell["steps_to_solve_ci_high"]))}]"'
        if steps is not None
        else ""
    )
    cells = {
        "env": _table_cell(
            "env",
            f"{cell['env_id']}|{int(cell['horizon']):09d}|{kwargs}",
            f"{html.escape(str(cell['env_id']))}"
            + (f'<br><small class="kwargs">{html.escape(kwargs)}</small>' if kwargs else ""),
            "env",
        ),
        "agent": _table_cell("agent", cell["agent"], html.escape(str(cell["agent"]))),
        "memory": _table_cell("memory", cell["memory"], html.escape(str(cell["memory"]))),
        "bptt_length": _table_cell("bptt_length", bptt, "—" if bptt is None else str(bptt), "num"),
        "n_seeds": _table_cell("n_seeds", int(cell["n_seeds"]), str(int(cell["n_seeds"])), "num"),
        "return_mean": _table_cell("return_mean", _six_digits(mean), _format_return(mean), "num"),
        "return_ci_low": _table_cell(
            "return_ci_low",
            _six_digits(low),
            f"[{_format_return(low)}, {_format_return(high)}]" if low is not None else "—",
            "num",
        ),
        "return_iqm": _table_cell(
            "return_iqm",
            _six_digits(iqm),
            _format_return(iqm)
            + f' <small class="ci">[{_format_return(iqm_ci[0])}, {_format_return(iqm_ci[1])}]</small>',
            "num",
        ),
        "verdict": _table_cell(
            "verdict", _six_digits(_normalised(low, ceiling, optimum)), _verdict_svg(low, high, mean, cell)
        ),
        "normalized_score": _table_cell("normalized_score", _six_digits(score), _format_return(score), "num"),
        "learned": _table_cell("learned", learned, learned_text),
        "steps_to_solve": _table_cell(
            "steps_to_solve", steps, f"<span{steps_title}>{_format_count(steps)}</span>", "num"
        ),
        "steps_per_second": _table_cell("steps_per_second", _six_digits(speed), _format_count(speed), "num"),
    }
    attributes = " ".join(
        f'data-{name}="{html.escape(str(value), quote=True)}"'
        for name, value in (
            ("env", cell["env_id"]),
            ("variant", variant),
            ("agent", cell["agent"]),
            ("memory", cell["memory"]),
        )
    )
    button = (
        f'<td class="open"><button type="button" class="detail" data-cell="{cell_id}" '
        f'aria-haspopup="dialog" aria-label="details of {html.escape(variant)} {html.escape(str(cell["agent"]))} '
        f'{html.escape(str(cell["memory"]))}{"" if bptt is None else f" BPTT {bptt}"}">details</button></td>'
    )
    return f'<tr id="{cell_id}" {attributes}>{"".join(cells[c.key] for c in columns)}{button}</tr>'


def _header(column: _Column) -> str:
    """A sortable header; its tooltip is the meaning of the column it shows."""
    meaning = _PAGE_COLUMNS.get(column.label) or CELL_COLUMNS[column.defines[0]][1]
    return (
        f'<th scope="col" tabindex="0" aria-sort="none" data-key="{column.key}" data-type="{column.kind}" '
        f'title="{html.escape(meaning, quote=True)}">{html.escape(column.label)}</th>'
    )


def _options(label: str, name: str, values: Iterable[tuple[str, str]]) -> str:
    options = "".join(
        f'<option value="{html.escape(v, quote=True)}">{html.escape(text)}</option>' for v, text in values
    )
    return (
        f'<label>{html.escape(label)} <select data-filter="{name}"><option value="">all</option>'
        f"{options}</select></label>"
    )


def _filters(cells: pd.DataFrame) -> str:
    """The env (id, and each variant where an id has several), agent and memory selects."""
    envs: list[tuple[str, str]] = []
    for env_id, group in cells.groupby("env_id", sort=True):
        variants = sorted(set(zip(group["horizon"], group["env_kwargs"], strict=True)))
        envs.append((f"env:{env_id}", str(env_id) + (" (every variant)" if len(variants) > 1 else "")))
        if len(variants) > 1:
            for _, kwargs in variants:
                text = f"{env_id} {_kwargs_text(kwargs)}".strip()
                envs.append((f"variant:{text}", f"  {text}"))
    kinds = set(cells["memory"])
    memories = [k for k in MEMORY_KINDS if k in kinds] + sorted(kinds - set(MEMORY_KINDS))
    return (
        '<div class="filters" role="group" aria-label="filter the cells">'
        + _options("env", "env", envs)
        + _options("agent", "agent", [(a, a) for a in sorted(set(cells["agent"]))])
        + _options("memory", "memory", [(m, m) for m in memories])
        + '<button type="button" class="reset">show all</button>'
        + '<output class="count" aria-live="polite"></output></div>'
    )


def _definitions(columns: list[_Column]) -> str:
    """The meaning of every column shown: the README's schema, and the page's own."""
    items = []
    for column in columns:
        if column.label in _PAGE_COLUMNS:
            items.append(
                f"<dt>{html.escape(column.label)}</dt><dd>{html.escape(_PAGE_COLUMNS[column.label])}</dd>"
            )
        for name in column.defines:
            kind, meaning = CELL_COLUMNS[name]
            items.append(f"<dt><code>{name}</code> <small>{kind}</small></dt><dd>{html.escape(meaning)}</dd>")
    return (
        '<details class="defs"><summary>Column definitions (the schema of README.md)</summary>'
        f"<dl>{''.join(items)}</dl></details>"
    )


def _figure(name: str) -> str:
    """A figure beside the page, by its relative path; the horizon figure spans the row."""
    src = html.escape(name, quote=True)
    alt = html.escape(name.rsplit("/", 1)[-1].rsplit(".", 1)[0].replace("_", " "), quote=True)
    wide = "wide" if name.endswith(("_horizon.svg", "_solve_cost.svg")) else "narrow"
    return (
        f'<figure class="{wide}"><a href="{src}"><img src="{src}" alt="{alt}" loading="lazy"></a>'
        f"<figcaption>{html.escape(name)}</figcaption></figure>"
    )


def _suite_section(page: SuitePage, details: dict[str, Any]) -> str:
    """One suite: provenance, figures, filters, the table and its column definitions."""
    slug = _html_id(page.name)
    cells = _cell_order(page.cells).reset_index(drop=True)
    solving = cells["steps_to_solve"].notna().any() if len(cells) else False
    columns = [c for c in _COLUMNS if c.key != "steps_to_solve" or solving]
    grouped = (
        {_cell_key(*key): group for key, group in page.runs.groupby(CELL_KEYS, dropna=False, sort=True)}
        if len(page.runs)
        else {}
    )
    curves = {
        key: group[["timesteps", "mean_return"]].to_numpy(dtype=np.float64)
        for key, group in page.curves.sort_values(["run_key", "timesteps"]).groupby("run_key", sort=True)
    }
    rows = []
    for i, cell in cells.iterrows():
        cell_id = f"{slug}-{i}"
        runs = grouped.get(_cell_key(*(cell[k] for k in CELL_KEYS)), page.runs.iloc[0:0])
        details[cell_id] = _detail(cell, runs.sort_values("seed"), curves)
        rows.append(_cell_row(cell_id, cell, details[cell_id]["iqm_ci"], columns))
    provenance = "".join(f"<li>{_inline_markdown(line)}</li>" for line in page.provenance)
    files = ", ".join(f'<a href="{html.escape(f, quote=True)}">{html.escape(f)}</a>' for f in page.files)
    figures = "".join(_figure(f) for f in page.figures)
    table = (
        f'<div class="table-wrap" tabindex="0" role="region" aria-label="{html.escape(page.name)} cells">'
        f'<table class="lb" id="table-{slug}"><caption>{html.escape(page.name)}: {len(cells)} cells</caption>'
        f"<thead><tr>{''.join(_header(c) for c in columns)}"
        '<th scope="col"><span class="sr">details</span></th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    return (
        f'<section class="suite" id="suite-{slug}" aria-labelledby="h-{slug}">'
        f'<h2 id="h-{slug}">Suite <code>{html.escape(page.name)}</code></h2>'
        + "<h3>Cells</h3>"
        + _filters(cells)
        + table
        + f'<h3>How it was made</h3><ul class="provenance">{provenance}</ul>'
        + (f'<p class="files">Tables: {files}</p>' if files else "")
        + _definitions(columns)
        + (f'<h3>Figures</h3><div class="figures">{figures}</div>' if figures else "")
        + "</section>"
    )


def _cell_order(cells: pd.DataFrame) -> pd.DataFrame:
    """Cells in reading order: env, then horizon as a number (corridor 10 before 100),
    then agent, memory and BPTT length."""
    if cells.empty:
        return cells
    return cells.sort_values(
        ["env_id", "horizon", "env_kwargs", "agent", "memory", "bptt_length"],
        kind="stable",
        na_position="first",
    )


def _answer_section(page: SuitePage, ladder: list[pd.DataFrame] | None = None) -> str:
    """The answer the page opens on: per agent and memory kind (rows) and env (columns),
    the limit's text by :func:`limits.limit_text` over ``ladder`` (the horizon tables of
    the page's suite and the suites that extend it, :data:`limits.LADDERS`), with pieces
    that cover the episode, then the figure and the suite's provenance."""
    answer = limits.answer_limits(ladder if ladder is not None else [page.horizon])
    envs = sorted({env for env, _, _ in answer})
    keys = sorted({(agent, kind) for _, agent, kind in answer})
    header = (
        '<th scope="col" tabindex="0" aria-sort="none" data-key="agent" data-type="str">agent</th>'
        '<th scope="col" tabindex="0" aria-sort="none" data-key="memory" data-type="str">memory</th>'
        + "".join(
            f'<th scope="col" tabindex="0" aria-sort="none" data-key="h-{_html_id(env)}" data-type="num" '
            f'title="longest horizon learned, every shorter one learned too">{html.escape(env)}</th>'
            for env in envs
        )
    )
    rows = []
    for agent, kind in keys:
        tds = [
            _table_cell("agent", agent, html.escape(agent)),
            _table_cell("memory", kind, f"<code>{html.escape(kind)}</code>"),
        ]
        for env in envs:
            text = answer.get((env, agent, kind))
            if text is None:
                tds.append(
                    _table_cell(f"h-{_html_id(env)}", None, '<span class="na">not tried</span>', "num")
                )
                continue
            tds.append(_table_cell(f"h-{_html_id(env)}", limits.sort_value(text), html.escape(text), "num"))
        rows.append(
            f'<tr data-agent="{html.escape(agent, quote=True)}" data-memory="{html.escape(kind, quote=True)}">'
            f"{''.join(tds)}</tr>"
        )
    names = ", ".join(limits.LADDERS.get(page.name, (page.name,)))
    figure = "".join(_figure(f) for f in page.figures if f.endswith("_horizon.svg"))
    provenance = "".join(f"<li>{_inline_markdown(line)}</li>" for line in page.provenance)
    return (
        '<section class="answer" id="answer" aria-labelledby="h-answer">'
        '<h2 id="h-answer">The answer: how far each memory kind remembers</h2>'
        "<p>The longest horizon each kind learned, with every shorter horizon learned too, "
        "trained on pieces that cover an episode, over the suites of one ladder. &ge;: the next horizon was "
        "not tried, or cut short by a plateau or cap, so the limit may be higher. A bracket: a longer "
        "horizon learned above one not learned. none: nothing learned in the horizons tried. "
        "The README and the docs write each limit by the same rule. Its cells are in suite "
        f'<a href="#suite-{_html_id(page.name)}"><code>{html.escape(page.name)}</code></a> below.</p>'
        '<div class="table-wrap" tabindex="0" role="region" aria-label="longest horizon learned">'
        f'<table class="lb" id="table-answer"><caption>longest horizon learned, from {html.escape(names)}'
        f"</caption><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        + (f'<div class="figures">{figure}</div>' if figure else "")
        + f'<h3>How it was made</h3><ul class="provenance">{provenance}</ul>'
        + "</section>"
    )


def page_order(suites: list[SuitePage], answer: str = "horizon", main: str = "memory") -> list[SuitePage]:
    """The suites in the page's order: the suite the answer comes from, then ``main``,
    then the rest by name. The answer comes from ``answer`` where it spans several
    horizons, else from the first suite that does."""
    spanning = [p for p in suites if p.spans_horizons()]
    first = next((p for p in spanning if p.name == answer), spanning[0] if spanning else None)
    rank = {id(first): 0} if first is not None else {}
    return sorted(suites, key=lambda p: (rank.get(id(p), 1), p.name != main, p.name))


def _legend() -> str:
    """How to read the verdict drawing, with one drawn example."""
    example = pd.Series({"ff_ceiling": 0.5, "optimal_return": 1.0, "learned": True})
    return (
        '<p class="legend">'
        + _verdict_svg(0.9, 1.0, 0.96, example)
        + " The verdict as a reader decides it: the bar is the 95% interval of the mean return over seeds, "
        "the dot the mean, the dashed line the feedforward ceiling (the best a memoryless policy can do) "
        "and the solid line the optimum. A cell has <em>learned</em> when its bar starts right of the "
        "short tick halfway from the ceiling to the optimum.</p>"
    )


def _json_script(data: Any) -> str:
    """``data`` as JSON inside a script element: sorted keys, and no ``<`` that could end it."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    text = text.replace("<", "\\u003c")
    return f'<script type="application/json" id="cell-data">{text}</script>'


def render_page(suites: list[SuitePage]) -> str:
    """The page for ``suites``, as text (the same tables give the same text)."""
    details: dict[str, Any] = {}
    suites = page_order(suites)
    answer = ""
    if suites and suites[0].spans_horizons():
        ladder = limits.LADDERS.get(suites[0].name, (suites[0].name,))
        by_name = {p.name: p.horizon for p in suites}
        answer = _answer_section(suites[0], [by_name[n] for n in ladder if n in by_name])
    sections = [answer] + [_suite_section(page, details) for page in suites]
    nav = ('<li><a href="#answer">the answer</a></li>' if answer else "") + "".join(
        f'<li><a href="#suite-{_html_id(p.name)}"><code>{html.escape(p.name)}</code></a> ({len(p.cells)} cells)</li>'
        for p in suites
    )
    css = (_ASSETS / "html_page.css").read_text()
    script = (_ASSETS / "html_page.js").read_text()
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>pomdp-bench leaderboards</title>"
        f"<style>{css}</style></head><body>"
        "<header><h1>pomdp-bench leaderboards</h1>"
        "<p>Which memory kind, trained with which BPTT length, gets beyond what a memoryless policy can do, "
        "on which task? One table per suite, one row per cell "
        "<code>(env, env kwargs, agent, memory, BPTT length)</code> with statistics over seeds. Sort by any "
        "column (click a header, or focus it and press Enter), filter by env, agent and memory, and open a "
        "cell's details for its learning curves and per-seed returns.</p>"
        + _legend()
        + "<p>Written by <code>python -m pomdp_bench.report</code> from the results store, with the CSVs and "
        'figures beside it; <a href="README.md">README.md</a> holds the statistics behind the verdicts and '
        "the full column schema.</p>"
        f'<nav aria-label="suites"><ul>{nav}</ul></nav></header><main>' + "".join(sections) + "</main>"
        '<dialog id="detail" aria-labelledby="detail-title"><div class="dialog-head">'
        '<h2 id="detail-title"></h2><button type="button" class="close" aria-label="close the details">'
        'close</button></div><div id="detail-body"></div></dialog>'
        + _json_script({"cells": details})
        + f"<script>{script}</script></body></html>\n"
    )


def write_page(suites: list[SuitePage], out: str | Path) -> Path:
    """Write :func:`render_page` to ``<out>/index.html``; returns its path."""
    path = Path(out) / PAGE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render_page(suites).encode("utf-8"))
    return path
