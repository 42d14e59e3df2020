"""One rule for the text of a horizon limit, read by every answer table.

The README's answer block, ``leaderboards/index.html``, ``docs/memory-kinds.md`` and
``docs/findings.md`` all write a kind's limit with :func:`limit_text`, from the rows of
the ``<suite>_horizon.csv`` tables (:func:`~pomdp_bench.reporting.leaderboard.horizon_frame`).
``tests/test_answer_tables.py`` checks that they agree cell for cell.

The rule, for one env, agent and kind, with pieces that cover an episode:

1. The suites of one ladder (:data:`LADDERS`: ``horizon`` then ``horizon-long``) are read
   as one list of horizons tried. A horizon counts as learned where any suite learned it.
   A row gives its learned horizons as its monotone limit ``longest_horizon_learned``,
   every horizon tried up to it, and those up to ``max_horizon_learned`` that its
   ``horizon_note`` does not list as not learned.
2. Nothing learned: ``none (tried 5…100)``, the shortest and longest horizon tried.
3. The limit ``L`` is the longest horizon learned with every shorter one tried learned
   too. It is written ``≥ L`` when the next horizon above it was not tried or has no
   verdict (too few seeds). Where the next horizon ``N`` ran and was not learned, it is
   ``L, not N (how)``: ``failed`` where every unsolved run used at least 10x the steps
   that solved ``L`` (``next_outcome`` failed), ``cap`` where some stopped sooner (its
   cap or a plateau), then the probes' failure classes where read, e.g.
   ``20, not 50 (cap; kept_cue_unused 3)``.
4. A longer horizon ``M`` learned above one not learned is written as a bracket:
   ``learned at M, not at G`` (``G``: the horizons not learned below ``M``), after the
   limit when ``L > 0``: ``5 (learned at 20, not at 10)``. Never a bare ``none``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

LADDERS: dict[str, tuple[str, ...]] = {"horizon": ("horizon", "horizon-long")}
"""Suites whose horizon tables form one ladder of horizons, by the suite the answer reads."""

COVERING_PIECES = ("long", "n/a")
"""Piece policies of the answer: pieces that cover an episode (``n/a``: a kind without memory)."""

NOT_TRIED = "—"


def _int(value: Any) -> int | None:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return int(float(value))


def _text(value: Any) -> str:
    return (
        ""
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
        else str(value)
    )


def _horizons(text: Any) -> list[int]:
    return [int(float(h)) for h in str(text).split(";") if h.strip()]


def learned_horizons(row: Mapping[str, Any]) -> set[int]:
    """The horizons one horizon-table row says were learned (see the module's rule 1)."""
    tried = _horizons(row["horizons_tried"])
    longest = _int(row["longest_horizon_learned"]) or 0
    highest = _int(row.get("max_horizon_learned")) or longest
    note = str(row.get("horizon_note") or "")
    gaps = set(_horizons(note.split("not at", 1)[1].replace(",", ";"))) if "not at" in note else set()
    return {h for h in tried if h <= longest or (h <= highest and h not in gaps)}


def limit_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """The text of a limit from the horizon-table rows of one env, agent and kind (one
    row per suite of a ladder); ``—`` without rows. The rule is the module's."""
    rows = list(rows)
    if not rows:
        return NOT_TRIED
    tried = sorted({h for row in rows for h in _horizons(row["horizons_tried"])})
    learned = set().union(*(learned_horizons(row) for row in rows))
    if not learned:
        span = str(tried[0]) if len(tried) == 1 else f"{tried[0]}…{tried[-1]}"
        return f"none (tried {span})"
    limit = 0
    for h in tried:
        if h not in learned:
            break
        limit = h
    above = [h for h in tried if h > limit]
    following = [r for r in rows if above and _int(r.get("next_horizon")) == above[0]]
    outcomes = {str(r["next_outcome"]) for r in following}
    if not following or outcomes & {"not tried", "no verdict"}:
        base = f"≥ {limit}"
    else:  # the next rung ran and was not learned: a bracket, with how it ended
        why = "failed" if outcomes == {"failed"} else "cap"
        read = [_text(r.get("next_failure_classes")) for r in following]
        classes = next((c for c in read if c), "").replace(";", ", ")
        base = f"{limit}, not {above[0]} ({why}{'; ' + classes if classes else ''})"
    highest = max(learned)
    if highest == limit:
        return base
    # a longer horizon learned above one not learned: the bracket names both
    gaps = ", ".join(str(h) for h in tried if h < highest and h not in learned)
    bracket = f"learned at {highest}, not at {gaps}"
    return f"{limit} ({bracket})" if limit else bracket


def sort_value(text: str) -> int:
    """A number to sort a limit's text by: its monotone limit, 0 for none or a bare bracket."""
    head = text.removeprefix("≥ ").split(" ", 1)[0].rstrip(",")
    return int(head) if head.isdigit() else 0


def answer_limits(
    tables: Iterable[pd.DataFrame], pieces: tuple[str, ...] = COVERING_PIECES
) -> dict[tuple[str, str, str], str]:
    """Per (env_id, agent, memory), the limit's text over the horizon ``tables`` of one
    ladder, with the piece policies ``pieces`` (by default those covering an episode;
    ``("short",)``: pieces half the horizon)."""
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for table in tables:
        if table is None or table.empty:
            continue
        for row in table.to_dict("records"):
            if str(row["pieces"]) in pieces:
                grouped.setdefault((row["env_id"], row["agent"], row["memory"]), []).append(row)
    return {key: limit_text(rows) for key, rows in grouped.items()}


def read_tables(root: str | Path, suite: str = "horizon") -> list[pd.DataFrame]:
    """The horizon tables of ``suite``'s ladder under ``<root>/leaderboards``, those that exist."""
    out = []
    for name in LADDERS.get(suite, (suite,)):
        path = Path(root) / "leaderboards" / f"{name}_horizon.csv"
        if path.is_file():
            out.append(pd.read_csv(path, keep_default_na=False, na_values=[""]))
    return out
