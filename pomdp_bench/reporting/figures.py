"""Figures typed in the docs' prose, and the markers that tie a typed figure to its data.

A figure the prose must type carries a marker right after it, an HTML comment that
Markdown, MyST and GitHub all hide::

    lstm solves 8 <!-- figure: leaderboards/horizon-long.csv | env_id=TMaze-v1, horizon=100, agent=ppo | seeds_above_line -->
    of 20 seeds <!-- figure: leaderboards/horizon-long.csv | env_id=TMaze-v1, horizon=100, agent=ppo | n_seeds -->.

The marker names a source (a CSV, or a YAML file), a row and a value:

- a CSV: the row is ``column=value`` (or ``column~text``: the cell contains ``text``)
  terms, comma-separated, that select rows (a value compares as text, or as a number
  where it is one; an empty selector takes every row). The value is a column of the one selected row, or ``count`` (how many rows were
  selected), or ``sum:COLUMN``, ``min:COLUMN``, ``max:COLUMN`` over them;
- a YAML file: the row is empty and the value is a dotted key path (``budget.total_timesteps``);
- ``py:MODULE``: an API constant or default; the row is empty and the value is an
  attribute path with optional indexes (``StopRule.plateau_fraction``,
  ``PROBE_FRACTIONS[0]``). The test imports the module: markers name this package's
  modules only.

A value may end in ``/N`` (``sum:wall_seconds/60``: minutes). The typed figure agrees
when it equals the value rounded to the figure's own decimals (``0.59`` for 0.5913;
``1,490`` for 1490; ``45%`` for 0.45 with the percent sign).

:func:`typed_figures` finds the figures that carry no marker, outside code, generated
blocks (``<!-- name:start -->`` to ``<!-- name:end -->``), HTML comments and link targets;
:func:`check_markers` checks every marker against its data. ``tests/test_typed_figures.py``
runs both over README.md and ``docs/``. Pure Python and pandas: no torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

#: A number as prose types it: ``5``, ``0.59``, ``1,490``, ``−148``, ``45%``, ``3.6×``.
#: Digits inside a word or a name (``TMaze-v1``, ``Mamba-2``, ``k3``) are not figures.
NUMBER = re.compile(
    r"(?:(?<![\w.])[-+−](?=\d)|(?<![\w.\-+−/]))(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:%|×|[kM](?!\w))?(?!\w)"
)
MARKER = re.compile(
    r"<!--\s*figure:\s*(?P<source>[^|]+?)\s*\|\s*(?P<row>[^|]*?)\s*\|\s*(?P<value>[^|]+?)\s*-->"
)
_GENERATED = re.compile(r"<!-- (?P<name>[\w-]+):start.*?<!-- (?P=name):end -->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>\n]+>")


@dataclass(frozen=True)
class Figure:
    """A number typed in a page: its 1-based ``line``, its ``text`` and the line's text."""

    line: int
    text: str
    context: str


@dataclass(frozen=True)
class Marked:
    """A typed figure with its marker: the figure's ``text`` and what the marker names."""

    line: int
    text: str
    source: str
    row: str
    value: str


def _blank(match: re.Match[str]) -> str:
    """The match replaced by its newlines only, so line numbers stay."""
    return "\n" * match.group(0).count("\n")


def _prose(text: str) -> str:
    """``text`` without what is not typed prose: generated blocks, fenced and inline
    code, link targets and HTML tags. Comments stay (markers are comments)."""
    text = _GENERATED.sub(_blank, text)
    text = _FENCE.sub(_blank, text)
    text = _INLINE_CODE.sub("", text)
    return _LINK_TARGET.sub("]", text)


def _plain(line: str) -> str:
    """``line`` with its comments and HTML tags blanked to spaces (positions stay)."""
    spaces = lambda m: " " * len(m.group(0))  # noqa: E731
    return _HTML_TAG.sub(spaces, _COMMENT.sub(spaces, line))


def marked_figures(text: str) -> list[Marked]:
    """Every marker in ``text``'s prose, with the figure typed right before it.

    Raises:
        ValueError: a marker with no figure directly before it (emphasis may sit between).
    """
    out = []
    for number, line in enumerate(_prose(text).splitlines(), start=1):
        plain = _plain(line)
        for marker in MARKER.finditer(line):
            before = plain[: marker.start()]
            figures = list(NUMBER.finditer(before))
            if not figures or before[figures[-1].end() :].strip(" *_"):
                raise ValueError(
                    f"line {number}: a figure marker must follow its figure directly; got {line.strip()!r}"
                )
            out.append(Marked(number, figures[-1].group(0), *marker.group("source", "row", "value")))
    return out


def typed_figures(text: str, allow: list[re.Pattern[str]] | tuple[re.Pattern[str], ...] = ()) -> list[Figure]:
    """Every figure typed in ``text``'s prose without a marker, and not matched by a
    pattern of ``allow`` (each pattern is searched in the line with its comments blanked;
    a match covers the figures inside its span)."""
    out = []
    for number, line in enumerate(_prose(text).splitlines(), start=1):
        plain = _plain(line)
        covered: list[tuple[int, int]] = []
        for marker in MARKER.finditer(line):  # checked by check_markers, not reported here
            figures = list(NUMBER.finditer(plain[: marker.start()]))
            if figures:
                covered.append(figures[-1].span())
        for pattern in allow:
            covered += [m.span() for m in pattern.finditer(plain)]
        for figure in NUMBER.finditer(plain):
            if not any(a <= figure.start() and figure.end() <= b for a, b in covered):
                out.append(Figure(number, figure.group(0), line.strip()))
    return out


def parse_figure(text: str) -> tuple[float, int]:
    """A typed figure's value and decimals: ``"1,490"`` -> (1490.0, 0), ``"−0.05"`` ->
    (-0.05, 2), ``"45%"`` -> (0.45, 2), ``"3.6×"`` -> (3.6, 1), ``"4.8M"`` -> (4.8e6, -5)."""
    body = text.replace(",", "").replace("−", "-").rstrip("×")
    scale = {"%": 0.01, "k": 1e3, "M": 1e6}.get(body[-1:], 1.0)
    body = body.rstrip("%kM")
    decimals = len(body.split(".")[1]) if "." in body else 0
    # a figure of d decimals in units of `scale` is exact to d - log10(scale) decimals
    return float(body) * scale, decimals - round(math.log10(scale))


def marker_value(root: Path, marked: Marked) -> float:
    """The value a marker names, read from its source under ``root``.

    Raises:
        ValueError: a source that is missing or not CSV/YAML, a selector that matches no
            row or (for a column) more than one, or an unknown column or key.
    """
    value, _, divisor = marked.value.partition("/")
    scale = float(divisor) if divisor else 1.0
    if marked.source.startswith("py:"):
        return _attribute(marked.source[3:], value, marked) / scale
    path = root / marked.source
    if not path.is_file():
        raise ValueError(f"line {marked.line}: figure source {marked.source!r} does not exist")
    if path.suffix in (".yaml", ".yml"):
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        for key in value.split("."):
            if not isinstance(data, dict) or key not in data:
                raise ValueError(f"line {marked.line}: {marked.source} has no key {value!r}")
            data = data[key]
        return float(data) / scale
    if path.suffix != ".csv":
        raise ValueError(f"line {marked.line}: figure source {marked.source!r} is not a .csv or .yaml file")
    table = pd.read_csv(path)
    rows = _select(table, marked.row, marked)
    how, _, column = value.partition(":")
    if how == "count" and not column:
        return len(rows) / scale
    if column:
        if how not in ("sum", "min", "max"):
            raise ValueError(f"line {marked.line}: {how!r} is not one of count, sum:, min:, max:")
        _check_column(table, column, marked)
        return float(getattr(rows[column], how)()) / scale
    _check_column(table, value, marked)
    if len(rows) != 1:
        raise ValueError(
            f"line {marked.line}: {marked.row!r} selects {len(rows)} rows of {marked.source}; a column needs one"
        )
    return float(rows[value].iloc[0]) / scale


def _attribute(module: str, path: str, marked: Marked) -> float:
    """The number at attribute ``path`` (``Class.field``, ``NAME[1]``) of ``module``, one of
    this package's."""
    import importlib

    if module.split(".")[0] != "pomdp_bench":
        raise ValueError(f"line {marked.line}: a py: figure names a pomdp_bench module, got {module!r}")
    try:
        target: Any = importlib.import_module(module)
        for part in re.findall(r"[A-Za-z_]\w*|\[\d+\]", path):
            target = target[int(part[1:-1])] if part.startswith("[") else getattr(target, part)
        return float(target)
    except (ImportError, AttributeError, IndexError, TypeError, ValueError) as err:
        raise ValueError(f"line {marked.line}: {module} has no number at {path!r} ({err})") from None


def _check_column(table: pd.DataFrame, column: str, marked: Marked) -> None:
    if column not in table.columns:
        raise ValueError(f"line {marked.line}: {marked.source} has no column {column!r}")


def _select(table: pd.DataFrame, selector: str, marked: Marked) -> pd.DataFrame:
    """The rows of ``table`` that ``column=value, ...`` selects."""
    mask = pd.Series(True, index=table.index)
    for part in filter(None, (p.strip() for p in selector.split(","))):
        contains = "~" in part.split("=", 1)[0]
        column, sep, want = part.partition("~" if contains else "=")
        column, want = column.strip(), want.strip()
        if not sep:
            raise ValueError(
                f"line {marked.line}: a row selector is column=value or column~text, got {part!r}"
            )
        _check_column(table, column, marked)
        cells = table[column]
        if contains:
            mask &= cells.astype(str).str.contains(want, regex=False)
            continue
        try:
            number = float(want)
            matches = pd.to_numeric(cells, errors="coerce") == number
        except ValueError:
            matches = cells.astype(str) == want
        mask &= matches
    if not mask.any():
        raise ValueError(f"line {marked.line}: {selector!r} selects no row of {marked.source}")
    return table[mask]


def agrees(typed: str, value: float) -> bool:
    """Whether a typed figure equals ``value`` rounded to the figure's decimals."""
    figure, decimals = parse_figure(typed)
    if math.isnan(value):
        return False
    return math.isclose(round(value, decimals), figure, abs_tol=10 ** -(decimals + 6))


def check_markers(text: str, root: Path) -> list[str]:
    """What disagrees in ``text``'s markers: one message per marker whose figure differs
    from its data or whose data cannot be read (empty: all agree)."""
    problems = []
    for marked in marked_figures(text):
        try:
            value = marker_value(root, marked)
        except ValueError as err:
            problems.append(str(err))
            continue
        if not agrees(marked.text, value):
            problems.append(
                f"line {marked.line}: typed {marked.text}, but {marked.source} | {marked.row} | "
                f"{marked.value} gives {value:g}"
            )
    return problems
