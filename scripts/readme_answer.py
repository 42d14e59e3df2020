"""Write the README's headline answer from the published horizon leaderboard.

The block between ``<!-- answer:start -->`` and ``<!-- answer:end -->`` in README.md is
generated: per memory kind, the longest horizon PPO learned on T-Maze and on cue recall,
from ``leaderboards/horizon_horizon.csv`` and ``horizon-long_horizon.csv`` (pieces that
cover an episode; the text of each limit by :func:`pomdp_bench.reporting.limits.limit_text`),
the figure beside it, the other agents' limits by the same rule, and every agent's T-Maze limit beside Ni et al.'s
(``leaderboards/reference_ni2023.csv``, which ``report`` writes), POPGym's diagnostic envs,
and memory length against credit length (the ``credit`` and ``key-to-door`` suites).
``tests/test_readme_answer.py`` checks that the block equals what this writes. It also
writes docs/findings.md's limits table (``<!-- limits:start -->`` to ``<!-- limits:end -->``)
and its table of suites (``<!-- suites:start -->``: cells, learned cells, runs and failed
runs per published suite), the table of envs from their cards in README.md and
docs/envs.md (``<!-- envs:start -->``), and docs/harness.md's table of suites
(``<!-- suite-list:start -->``).

Usage: ``python scripts/readme_answer.py`` (rewrites README.md), ``--check`` (exit 1 if stale).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from pomdp_bench.memory import MEMORY_KINDS
from pomdp_bench.reporting import limits, mmer, references

ROOT = Path(__file__).resolve().parent.parent
CSV = "leaderboards/horizon_horizon.csv"
LONG_CSV = "leaderboards/horizon-long_horizon.csv"
FIGURE = "leaderboards/horizon/horizon_horizon.svg"
REFERENCE = "leaderboards/reference_ni2023.csv"
POPGYM = "leaderboards/popgym.csv"
POPGYM_TAU = "leaderboards/popgym_reference_tau.csv"
CREDIT = "leaderboards/credit_credit.csv"
CREDIT_MODEL = "leaderboards/credit_credit_model.csv"
CREDIT_FIGURE = "leaderboards/credit/credit_credit_CueRecall-v0_ppo.svg"
KEY_TO_DOOR = "leaderboards/key-to-door.csv"
START, END = "<!-- answer:start -->", "<!-- answer:end -->"
FINDINGS = "docs/findings.md"
FINDINGS_MARKERS = ("<!-- limits:start -->", "<!-- limits:end -->")
SUITES_MARKERS = ("<!-- suites:start -->", "<!-- suites:end -->")
PQN_MARKERS = ("<!-- pqn-answer:start -->", "<!-- pqn-answer:end -->")
ANSWER_SUITE = "answer"
NI_REFERENCE = "references/ni2023.yaml"
ENVS_MARKERS = ("<!-- envs:start -->", "<!-- envs:end -->")
SUITE_LIST_MARKERS = ("<!-- suite-list:start -->", "<!-- suite-list:end -->")
COVERAGE_MARKERS = ("<!-- coverage:start -->", "<!-- coverage:end -->")
EXAMPLE_ROW_MARKERS = ("<!-- example-row:start -->", "<!-- example-row:end -->")
#: What each shipped suite asks, for docs/harness.md's table (any other suite: its
#: description's first clause).
SUITE_QUESTIONS = {
    "smoke": "whether the plumbing works, in two minutes",
    "memory": "which kind, with which BPTT length, beats a memoryless policy (the main job)",
    "memory-long": "the memory suite's cells beyond its hour on 2 cores",
    "horizon": "where each kind stops remembering, on T-Maze and cue recall",
    "horizon-long": "the same beyond one hour on 2 cores, for a Ray cluster",
    "credit": "memory length crossed with credit length, on cue recall",
    "key-to-door": "Ni et al.'s credit task, at two distractor lengths",
    "key-to-door-long": "Ni et al.'s credit task at all their distractor lengths and budgets",
    "parity": "our PPO against sb3-contrib's `RecurrentPPO`",
    "popgym": "POPGym's diagnostic envs at Easy, to convergence, with its metric",
    "popgym-newest": "the popgym suite for the newest kinds",
    "popgym-40k": "all of POPGym's envs at a small budget (the first look)",
    "popgym-long": "POPGym's full protocol, for a Ray cluster",
}
#: The published suites, in the order the findings page reads them.
SUITES = (
    "memory",
    "memory-long",
    "horizon",
    "horizon-long",
    "credit",
    "key-to-door",
    "popgym",
    "popgym-40k",
    "parity",
)
LIMIT_RULE = (  # {docs}: the path from the page to docs/
    "A limit is the longest horizon learned with every shorter one learned too, over the horizon suite "
    "and horizon-long. `20, not 50 (cap)`: 50 ran and was not learned in its cap, with the probes' failure classes "
    "and, on the T-Maze, the behaviour readings; `failed` where its runs had 10x the steps that solved 20. ≥ marks a lower bound: the next "
    "horizon was not tried or has no verdict. `learned at 10, not at 5`: a longer horizon learned above "
    "one not learned. none: nothing learned in the horizons tried "
    "([the rule]({docs}statistics.md#the-horizon-limit))."
)
ORDER = list(MEMORY_KINDS)  # the shipped kinds, in the order tables list them
#: The shipped envs in the order the env table lists them; any other card comes after.
ENV_ORDER = [
    "MaskedCartPole-v0",
    "MaskedPendulum-v0",
    "TMaze-v1",
    "TMazeActive-v1",
    "CueRecall-v0",
    "KeyToDoor-v0",
]
TASKS = {"TMaze-v1": "T-Maze corridor", "CueRecall-v0": "cue-recall delay"}


def _kind_key(kind: str) -> tuple[int, str]:
    """Sort key of a memory kind: the shipped kinds in :data:`ORDER`, any other after them."""
    return (ORDER.index(kind) if kind in ORDER else len(ORDER), kind)


def _limits(root: Path) -> dict[tuple[str, str, str], str]:
    """Every limit's text over the horizon ladder (horizon, then horizon-long), by
    (env, agent, kind), with pieces that cover an episode: :func:`limits.answer_limits`."""
    return limits.answer_limits(limits.read_tables(root))


def block(root: Path = ROOT) -> str:
    """The generated block, markers included."""
    answer = _limits(root)
    table: dict[str, dict[str, str]] = {}
    for (env, agent, kind), text in answer.items():
        if agent == "ppo":
            table.setdefault(kind, {})[env] = text
    kinds = sorted(table, key=_kind_key)
    lines = [
        START,
        f"<!-- generated by scripts/readme_answer.py from {CSV} and {LONG_CSV}; do not edit by hand -->",
        "",
        "| memory | " + " | ".join(f"longest {name} learned" for name in TASKS.values()) + " |",
        "|---|" + "---|" * len(TASKS),
    ]
    lines += [
        f"| `{kind}` | " + " | ".join(table[kind].get(env, "—") for env in TASKS) + " |" for kind in kinds
    ]
    lines += [
        "",
        LIMIT_RULE.format(docs="docs/"),
        "",
        f"![Longest horizon learned per memory kind]({FIGURE})",
        "",
        "The memory kinds page compares all kinds, with horizon-long's limits, cost per step and verdicts: "
        "[all kinds side by side](docs/memory-kinds.md#all-kinds-side-by-side). "
        "The [findings](docs/findings.md) give the other agents' limits by the same rule.",
        "",
    ]
    reference = root / REFERENCE
    if reference.is_file():  # every agent's T-Maze limit beside Ni et al.'s (report writes it)
        lines += [
            f"Every agent's longest T-Maze corridor, beside Ni et al.'s (from `{REFERENCE}`):",
            "",
            references.markdown(pd.read_csv(reference)),
            "",
        ]
    lines += _popgym(root)
    lines += _credit(root)
    lines += _key_to_door(root)
    lines += [END]
    return "\n".join(lines)


def _popgym(root: Path) -> list[str]:
    """POPGym's metric per kind on its diagnostic envs (the ``popgym`` suite's finished
    cells), and Kendall's tau against POPGym's order where the reference was read."""
    path = root / POPGYM
    if not path.is_file():
        return []
    cells = pd.read_csv(path)
    if "mmer_mean" not in cells or cells.empty:
        return []
    envs = sorted(set(cells["env_id"]))
    names = [e.removeprefix("popgym-").removesuffix("-v0") for e in envs]
    kinds = sorted(set(cells["memory"]), key=_kind_key)
    by = {(r.memory, r.env_id): r for r in cells.itertuples()}

    def entry(kind: str, env: str) -> str:
        row = by.get((kind, env))
        if row is None or pd.isna(row.mmer_mean):
            return "—"
        text = f"{row.mmer_mean:.2f}"
        return f"**{text}**" if mmer.above_line(row.mmer_ci_low, row.ff_ceiling, row.optimal_return) else text

    lines = [
        f"POPGym's diagnostic envs, in POPGym's metric MMER, from `{POPGYM}`. Each entry is the mean over 5 "
        "seeds. **Bold** marks a verdict on MMER itself: its 95% interval lies above the line halfway from "
        "the feedforward ceiling to the optimum. A dash marks a cell not finished.",
        "",
        "| memory | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    lines += [f"| `{kind}` | " + " | ".join(entry(kind, env) for env in envs) + " |" for kind in kinds]
    tau_path = root / POPGYM_TAU
    tau = pd.read_csv(tau_path).iloc[0] if tau_path.is_file() else None
    if tau is not None and not pd.isna(tau["tau"]):
        lines += [
            "",
            f"Kendall's tau of the kinds' order against POPGym's: {tau['tau']:.2f} [{tau['tau_ci_low']:.2f}, {tau['tau_ci_high']:.2f}] over {int(tau['n_envs'])} envs.",
        ]
    else:
        lines += [
            "",
            "POPGym's own per-env numbers were not in our sources, so the comparison is not published: [the log](docs/notes/popgym-convergence.md).",
        ]
    return [*lines, ""]


def _ratio(row: Any, name: str) -> str:
    value = row[f"{name}_ratio"]
    if pd.isna(value):
        return "no fit"
    return f"{value:.2f} [{row[f'{name}_ratio_ci_low']:.2f}, {row[f'{name}_ratio_ci_high']:.2f}]"


def _credit(root: Path) -> list[str]:
    """Per kind, how its steps to solve grow with memory length and with credit length
    (the ``credit`` suite's model), and its solve rate at each pair of lengths."""
    model_path, cells_path = root / CREDIT_MODEL, root / CREDIT
    if not model_path.is_file() or not cells_path.is_file():
        return []
    model = pd.read_csv(model_path)
    cells = pd.read_csv(cells_path)
    if model.empty:
        return []
    pairs = sorted(
        {(int(m), int(c)) for m, c in zip(cells["memory_length"], cells["credit_length"], strict=True)}
    )
    rate = {
        (r.memory, int(r.memory_length), int(r.credit_length)): r.solved_fraction for r in cells.itertuples()
    }
    kinds = sorted(set(model["memory"]), key=_kind_key)
    by = {r["memory"]: r for _, r in model.iterrows()}
    lines = [
        f"Memory length against credit length, on cue recall with a reward delay (from `{CREDIT_MODEL}`). "
        "A factor is how much 10 more steps multiply the steps to solve, with its 95% interval. "
        "Solve rates are over 5 seeds at (memory, credit) lengths.",
        "",
        "| memory | factor per 10 steps of memory | per 10 steps of credit | grows with | "
        + " | ".join(f"({m}, {c})" for m, c in pairs)
        + " |",
        "|---|---|---|---|" + "---|" * len(pairs),
    ]
    for kind in kinds:
        row = by[kind]
        solved = [rate.get((kind, m, c)) for m, c in pairs]
        lines.append(
            f"| `{kind}` | {_ratio(row, 'memory')} | {_ratio(row, 'credit')} | {row['grows_with'] or '—'} | "
            + " | ".join("—" if v is None or pd.isna(v) else f"{v:.1f}" for v in solved)
            + " |"
        )
    lines += ["", f"![Solve rate per memory and credit length]({CREDIT_FIGURE})", ""]
    return lines


def _key_to_door(root: Path) -> list[str]:
    """Key-to-Door's success rate per kind and distractor length, beside Ni et al.'s finding."""
    path = root / KEY_TO_DOOR
    if not path.is_file():
        return []
    cells = pd.read_csv(path)
    if cells.empty or "success_rate" not in cells or cells["success_rate"].isna().all():
        return []
    cells["distractor"] = [json.loads(k).get("distractor") for k in cells["env_kwargs"]]
    lengths = sorted({int(d) for d in cells["distractor"]})
    kinds = sorted(set(cells["memory"]), key=_kind_key)
    by = {(r.memory, int(r.distractor)): r for r in cells.itertuples()}

    def entry(kind: str, length: int) -> str:
        row = by.get((kind, length))
        if row is None or pd.isna(row.success_rate):
            return "—"
        return f"{row.success_rate:.2f} [{row.success_ci_low:.2f}, {row.success_ci_high:.2f}]"

    lines = [
        f"Key-to-Door (Ni et al.'s credit-assignment task), success rate with its 95% interval over 5 seeds (from `{KEY_TO_DOOR}`). "
        "Ni et al. find that a transformer does not assign credit better than an lstm.",
        "",
        "| memory | " + " | ".join(f"distractor {n}" for n in lengths) + " |",
        "|---|" + "---|" * len(lengths),
    ]
    lines += [f"| `{kind}` | " + " | ".join(entry(kind, n) for n in lengths) + " |" for kind in kinds]
    return [*lines, "", "[The log](docs/notes/credit-assignment.md) reads both.", ""]


def _other_agents(answer: dict[tuple[str, str, str], str]) -> list[str]:
    """The Q-learning and SAC limits (pieces that cover an episode), per agent and kind,
    by the same rule as the PPO table."""
    table: dict[tuple[str, str], dict[str, str]] = {}
    for (env, agent, kind), text in answer.items():
        if agent != "ppo":
            table.setdefault((agent, kind), {})[env] = text
    if not table:
        return []
    keys = sorted(table, key=lambda k: (k[0], *_kind_key(k[1])))
    lines = [
        f"The other agents, by the same rule (from `{CSV}` and `{LONG_CSV}`; a dash: not tried):",
        "",
        "| agent | memory | " + " | ".join(f"longest {name} learned" for name in TASKS.values()) + " |",
        "|---|---|" + "---|" * len(TASKS),
    ]
    lines += [
        f"| {agent} | `{kind}` | " + " | ".join(table[agent, kind].get(env, "—") for env in TASKS) + " |"
        for agent, kind in keys
    ]
    return [*lines, ""]


def findings_block(root: Path = ROOT) -> str:
    """docs/findings.md's limits table, markers included: PPO's limits per task, longest
    first, with pieces that cover an episode and with pieces half the horizon."""
    ladders = limits.read_tables(root)
    rows = [
        ("", limits.answer_limits(ladders)),
        (", pieces half the horizon", limits.answer_limits(ladders, ("short",))),
    ]
    lines = [
        FINDINGS_MARKERS[0],
        f"<!-- generated by scripts/readme_answer.py from {CSV} and {LONG_CSV}; do not edit by hand -->",
        "",
        "| task | PPO's kinds: longest horizon learned |",
        "|---|---|",
    ]
    for suffix, answer in rows:
        for env, name in TASKS.items():
            entries = [
                (kind, text) for (e, agent, kind), text in answer.items() if e == env and agent == "ppo"
            ]
            if not entries:
                continue
            entries.sort(key=lambda e: (-limits.sort_value(e[1]), e[1].startswith("none"), _kind_key(e[0])))
            lines.append(f"| {name}{suffix} | " + " · ".join(f"`{k}` {t}" for k, t in entries) + " |")
    lines += ["", LIMIT_RULE.format(docs=""), ""]
    lines += _other_agents(rows[0][1])
    lines += [FINDINGS_MARKERS[1]]
    return "\n".join(lines)


def _ni_limits(root: Path) -> dict[str, str]:
    """Ni et al.'s longest passive T-Maze per kind they ran, from the reference file
    (``not read`` where the source gave none)."""
    path = root / NI_REFERENCE
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = {}
    for row in data.get("rows", []):
        text = (
            f"{row['longest_horizon']:,} ({row['model'].split(' (')[0]})"
            if row.get("longest_horizon")
            else "not read"
        )
        for kind in row.get("kinds", []):
            out[kind] = text
    return out


def _next_rung_costs() -> dict[tuple[str, str, int], float]:
    """Worker-hours of each rung of the answer suite's ladders (agent PQN, pieces that cover
    an episode), by (env, kind, horizon): the dry run's point estimate of its runs
    (:func:`pomdp_bench.harness.estimate.estimate`, from the published runs and
    ``agents/rates.yaml``; a rung not yet run counts its whole cap)."""
    from pomdp_bench.harness.climb import ladders
    from pomdp_bench.harness.estimate import estimate
    from pomdp_bench.harness.suites import expand, load_suite

    costs = {}
    for (_, env, kind, pieces), rungs in ladders(expand(load_suite(ANSWER_SUITE))).items():
        if pieces == "long":
            for rung in rungs:
                hours = estimate(rung, (), suite=ANSWER_SUITE).worker_seconds / 3600
                costs[(env, kind, rung[0].horizon)] = hours
    return costs


_COSTS: dict[tuple[str, str, int], float] | None = None


def _cost_to_go(env: str, kind: str, text: str) -> str:
    """What a ``≥ L`` limit costs to go on: `` (next 21: 0.3 worker-h)``, the next rung of
    its ladder and its worker-hours, or `` (top of the ladder)``."""
    global _COSTS
    if _COSTS is None:
        _COSTS = _next_rung_costs()
    limit = limits.sort_value(text)
    above = sorted(h for (e, k, h) in _COSTS if e == env and k == kind and h > limit)
    if not above:
        return " (top of the ladder)" if any(e == env and k == kind for e, k, _ in _COSTS) else ""
    return f" (next {above[0]}: {_COSTS[(env, kind, above[0])]:.1f} worker-h)"


def pqn_answer_block(root: Path = ROOT, docs: str = "docs/") -> str:
    """README.md's first table, markers included: per kind, the longest T-Maze corridor
    and cue-recall delay PQN learned in the answer suite's climb (``limits.limit_text``,
    with the failure classes where the next rung was not learned), the parameter count of the
    kind's first rung, and Ni et al.'s limit beside the kinds they ran. ``docs``: the path
    from the page to docs/ (the README's default; ``""`` on docs/findings.md)."""
    lines = [
        PQN_MARKERS[0],
        f"<!-- generated by scripts/readme_answer.py from leaderboards/{ANSWER_SUITE}_horizon.csv and "
        f"leaderboards/{ANSWER_SUITE}.csv; do not edit by hand -->",
        "",
    ]
    tables = limits.read_tables(root, ANSWER_SUITE)
    if not tables:
        lines += [
            f"The answer suite (`suites/{ANSWER_SUITE}.yaml`) has published no cell yet.",
            "",
            PQN_MARKERS[1],
        ]
        return "\n".join(lines)
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for table in tables:
        for row in table.to_dict("records"):
            if str(row["pieces"]) in limits.COVERING_PIECES and row["agent"] == "pqn":
                grouped.setdefault((row["env_id"], row["memory"]), []).append(row)
    cells = pd.read_csv(root / f"leaderboards/{ANSWER_SUITE}.csv")
    first = cells.sort_values("horizon").groupby("memory")["parameters"].first()
    ni = _ni_limits(root)
    kinds = sorted({kind for _, kind in grouped}, key=_kind_key)
    lines += [
        "| memory | "
        + " | ".join(f"longest {name} learned" for name in TASKS.values())
        + " | parameters | Ni et al., T-Maze |",
        "|---|" + "---|" * (len(TASKS) + 2),
    ]
    for kind in kinds:
        texts = []
        for env in TASKS:
            rows = grouped.get((env, kind))
            text = limits.limit_text(rows) if rows else limits.NOT_TRIED
            texts.append(text + _cost_to_go(env, kind, text) if text.startswith("≥") else text)
        params = f"{int(first[kind]):,}" if kind in first and pd.notna(first[kind]) else "—"
        lines.append(f"| `{kind}` | " + " | ".join(texts) + f" | {params} | {ni.get(kind, '—')} |")
    tried = {
        (row["env_id"], row["memory"], h)
        for rows in grouped.values()
        for row in rows
        for h in (int(float(x)) for x in str(row["horizons_tried"]).split(";") if x)
    }
    global _COSTS
    if _COSTS is None:
        _COSTS = _next_rung_costs()
    to_go = [hours for key, hours in _COSTS.items() if key not in tried]
    lines += [
        "",
        f"Every rung not yet run, as if each ran to its cap: {len(to_go)} cells, "
        f"{sum(to_go):,.0f} worker-hours (the dry run's estimate; on a Ray cluster, over its workers).",
    ]
    lines += [
        "",
        "PQN, one set of settings, every kind with 64 units; caps are Ni et al.'s budgets. A rung runs only "
        f"once the one below it is learned (`climb`); [the results page]({docs}results/{ANSWER_SUITE}.md) gives "
        "every cell. "
        + LIMIT_RULE.format(docs=docs).split(". ", 1)[1]
        + " Beside a ≥: the next rung and its cost in worker-hours, the dry run's estimate of its whole cap "
        "(on a Ray cluster, the same worker-hours spread over its workers).",
        "",
        PQN_MARKERS[1],
    ]
    return "\n".join(lines)


def suites_block(root: Path = ROOT) -> str:
    """docs/findings.md's table of published suites, markers included: per suite, its
    cells, the cells learned (of those with a verdict), its runs and the failed runs."""
    lines = [
        SUITES_MARKERS[0],
        "<!-- generated by scripts/readme_answer.py from leaderboards/<suite>.csv and <suite>_runs.csv; "
        "do not edit by hand -->",
        "",
        "| suite | cells | learned, of the cells with a verdict | runs | failed runs |",
        "|---|---|---|---|---|",
    ]
    for suite in SUITES:
        cells_csv, runs_csv = root / f"leaderboards/{suite}.csv", root / f"leaderboards/{suite}_runs.csv"
        if not (cells_csv.is_file() and runs_csv.is_file()):
            continue
        cells, runs = pd.read_csv(cells_csv), pd.read_csv(runs_csv)
        verdicts = cells["learned"].dropna() if "learned" in cells else pd.Series(dtype=object)
        learned = int((verdicts.astype(str) == "True").sum())
        failed = int((runs["status"] != "ok").sum()) if "status" in runs else 0
        lines.append(
            f"| [{suite}](results/{suite}.md) | {len(cells)} | {f'{learned} of {len(verdicts)}' if len(verdicts) else 'no verdict (success rates)'} | "
            f"{len(runs)} | {failed} |"
        )
    lines += ["", SUITES_MARKERS[1]]
    return "\n".join(lines)


def _card_number(value: float) -> str:
    """A card's return as the table prints it: ``500``, ``1.0``, ``−147.8`` (a true minus)."""
    text = str(int(value)) if float(value).is_integer() and abs(value) >= 10 else f"{value:g}"
    text = f"{value:.1f}" if text in ("1", "0") else text
    return text.replace("-", "−")


def envs_block(root: Path = ROOT) -> str:
    """The table of shipped envs (superseded ids left out) from their cards in ``envs/``,
    markers included: memory horizon, optimal return and feedforward ceiling."""
    cards = [
        yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted((root / "envs").glob("*.yaml"))
    ]
    cards = [card for card in cards if not card.get("superseded_by")]
    cards.sort(
        key=lambda card: (
            ENV_ORDER.index(card["id"]) if card["id"] in ENV_ORDER else len(ENV_ORDER),
            card["id"],
        )
    )
    lines = [
        ENVS_MARKERS[0],
        "<!-- generated by scripts/readme_answer.py from the cards in envs/; do not edit by hand -->",
        "",
        "| id | memory horizon | optimal return | feedforward ceiling |",
        "|---|---|---|---|",
    ]
    for card in cards:
        horizon = card.get("memory_horizon_formula") or f"{card['memory_horizon']} steps"
        optimal = card.get("optimal_return")
        optimal_text = "not derived" if optimal is None else _card_number(optimal)
        ceiling = card.get("ff_ceiling")
        if ceiling is None:
            ceiling_text = "none given (see its card)"
        else:
            ceiling_text = (
                f"{card.get('ff_ceiling_formula') or _card_number(ceiling)} ({card['ff_ceiling_source']})"
            )
        lines.append(f"| `{card['id']}` | {horizon} | {optimal_text} | {ceiling_text} |")
    lines += ["", ENVS_MARKERS[1]]
    return "\n".join(lines)


def suite_list_block() -> str:
    """docs/harness.md's table of shipped suites, markers included: each suite's runs
    (its expanded run specs, as ``--dry-run`` counts them) and its description's first
    sentence."""
    from pomdp_bench.harness.suites import available_suites, expand, load_suite

    lines = [
        SUITE_LIST_MARKERS[0],
        "<!-- generated by scripts/readme_answer.py from suites/*.yaml; do not edit by hand -->",
        "",
        "| suite | runs | what it asks |",
        "|---|---|---|",
    ]
    for name in available_suites():
        suite = load_suite(name)
        first = " ".join(suite.description.split()).split(". ")[0].split(" (")[0].split(": ")[0]
        lines.append(f"| `{name}` | {len(expand(suite)):,} | {SUITE_QUESTIONS.get(name, first)} |")
    lines += ["", SUITE_LIST_MARKERS[1]]
    return "\n".join(lines)


def rewrite(text: str, new_block: str, markers: tuple[str, str] = (START, END)) -> str:
    """``text`` with its block between ``markers`` replaced by ``new_block``."""
    head, rest = text.split(markers[0], 1)
    _, tail = rest.split(markers[1], 1)
    return head + new_block + tail


def coverage_block(root: Path = ROOT) -> str:
    """docs/statistics.md's coverage table, markers included: per seeds' spread and true
    rate, the share of simulated cells each interval held the truth
    (``leaderboards/success_interval_coverage.csv``, by scripts/success_interval_coverage.py)."""
    data = pd.read_csv(root / "leaderboards/success_interval_coverage.csv")
    rates = list(dict.fromkeys(data["true_rate"]))
    names = {"none": "none (binomial)"}
    lines = [
        COVERAGE_MARKERS[0],
        "<!-- generated by scripts/readme_answer.py from leaderboards/success_interval_coverage.csv; "
        "do not edit by hand -->",
        "",
        "| interval | seeds' spread | " + " | ".join(f"`{r:g}`" for r in rates) + " |",
        "|---|---|" + "---|" * len(rates),
    ]
    for column, interval in (("coverage", "Korn-Graubard"), ("coverage_t", "t")):
        for spread, group in data.groupby("spread", sort=False):
            label = names.get(spread, f"Beta, concentration {str(spread).removeprefix('beta_')}")
            by_rate = dict(zip(group["true_rate"], group[column], strict=True))
            lines.append(f"| {interval} | {label} | " + " | ".join(f"{by_rate[r]:.3f}" for r in rates) + " |")
    lines += ["", COVERAGE_MARKERS[1]]
    return "\n".join(lines)


def example_row_block(root: Path = ROOT) -> str:
    """docs/your-memory-kind.md's table, markers included: the example kind's row beside
    the published kinds' rows of the same cell
    (``leaderboards/your_memory_kind_example.csv``, by scripts/your_memory_kind_row.py)."""
    data = pd.read_csv(root / "leaderboards/your_memory_kind_example.csv")
    lines = [
        EXAMPLE_ROW_MARKERS[0],
        "<!-- generated by scripts/readme_answer.py from leaderboards/your_memory_kind_example.csv; "
        "do not edit by hand -->",
        "",
        "| memory | env | BPTT | seeds | parameters | return, mean [95% CI] | learned |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in data.to_dict("records"):
        kwargs = ", ".join(f"{k}={v}" for k, v in json.loads(row["env_kwargs"]).items())
        bptt = "—" if pd.isna(row["bptt_length"]) else str(int(row["bptt_length"]))
        interval = f"{row['return_mean']:.2f} [{row['return_ci_low']:.2f}, {row['return_ci_high']:.2f}]"
        lines.append(
            f"| `{row['memory']}` | {row['env_id']} ({kwargs}) | {bptt} | {int(row['n_seeds'])} | "
            f"{int(row['parameters']):,} | {interval} | {'yes' if row['learned'] else 'no'} |"
        )
    lines += ["", EXAMPLE_ROW_MARKERS[1]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md's block is stale")
    args = parser.parse_args(argv)
    stale = False
    for path, new_block, markers in (
        (ROOT / "README.md", block(), (START, END)),
        (ROOT / "README.md", pqn_answer_block(), PQN_MARKERS),
        (ROOT / "README.md", envs_block(), ENVS_MARKERS),
        (ROOT / "docs/envs.md", envs_block(), ENVS_MARKERS),
        (ROOT / FINDINGS, pqn_answer_block(docs=""), PQN_MARKERS),
        (ROOT / FINDINGS, findings_block(), FINDINGS_MARKERS),
        (ROOT / FINDINGS, suites_block(), SUITES_MARKERS),
        (ROOT / "docs/harness.md", suite_list_block(), SUITE_LIST_MARKERS),
        (ROOT / "docs/statistics.md", coverage_block(), COVERAGE_MARKERS),
        (ROOT / "docs/your-memory-kind.md", example_row_block(), EXAMPLE_ROW_MARKERS),
    ):
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, new_block, markers)
        stale = stale or new != text
        if not args.check:
            path.write_text(new, encoding="utf-8")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
