"""The import graph runs one way (docs/DESIGN.md, "Layout"): no module imports a layer
above its own, at module level or inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pomdp_bench

PACKAGE = Path(pomdp_bench.__file__).parent

# Each unit (a subpackage or a top-level module of pomdp_bench) and its layer; a unit may
# import only units of lower layers. The package root (pomdp_bench/__init__.py) is the
# public front door: it may import anything, and anything may read its version.
LAYERS = {
    "validation": 0,
    "data": 0,
    "formulas": 0,
    "memory_names": 0,
    "imports": 0.5,  # above validation, below envs and memory
    "envs": 1,
    "memory": 1,
    "tuned": 2,
    "agents": 3,
    "harness": 4,
    "reporting": 5,
    "run": 6,
    "report": 6,
    "tune": 6,
    "demo": 6,
    "analyse": 6,
    "weights": 6,
}

# (importing file, imported module) pairs allowed to import a layer above, and why. Each
# must import inside a function, never at module level.
UPWARD_EXCEPTIONS = {
    ("pomdp_bench/harness/verdicts", "pomdp_bench.reporting.leaderboard"): (
        "the seed stages and the climb read the verdicts the tables publish, imported inside "
        "the one function that reads them"
    ),
    ("pomdp_bench/harness/run", "pomdp_bench.reporting.report"): (
        "a sweep writes its report when it ends (run's --no-report skips it); imported "
        "inside the function, so the sweep's modules never load reporting's"
    ),
}


def _unit(module: str) -> str:
    """``pomdp_bench.harness.run`` -> ``harness``; ``pomdp_bench.envs.cards`` -> ``cards``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(top_level: bool = False) -> list[tuple[str, str, int, str]]:
    """(importing file, imported module, line, importing unit) for every pomdp_bench import;
    ``top_level``: only those at module level (not inside a function or class)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(relative.parts)
        tree = ast.parse(path.read_text())
        nodes = _module_level(tree) if top_level else ast.walk(tree)
        for node in nodes:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *_submodules(node.module, [alias.name for alias in node.names])]
            else:
                continue
            found += [(relative.as_posix(), name, node.lineno, _unit(module)) for name in names]
    return found


def _submodules(package: str, names: list[str]) -> list[str]:
    """Those of ``from package import names`` that are modules of ours (``from
    pomdp_bench.harness import probes`` imports ``pomdp_bench.harness.probes``)."""
    folder = PACKAGE.parent.joinpath(*package.split("."))
    return [
        f"{package}.{name}"
        for name in names
        if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()
    ]


def _module_level(tree: ast.Module) -> list[ast.AST]:
    """The statements that run when a module is imported: its body, and the bodies of its
    top-level ``if``/``try`` blocks (a ``TYPE_CHECKING`` block never runs, but is kept)."""
    out: list[ast.AST] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If | ast.Try):
            todo += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return out


def test_every_unit_has_a_layer() -> None:
    units = {
        _unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")
    }
    missing = sorted(units - set(LAYERS) - {"__init__"})
    assert not missing, f"give these units a layer in LAYERS: {missing}"


def test_no_module_imports_upward() -> None:
    upward = []
    for where, name, line, unit in _imports():
        target = _unit(name)
        if not name.startswith("pomdp_bench") or unit in ("", "__init__") or target in ("", unit):
            continue
        if LAYERS[target] >= LAYERS[unit] and (where, name) not in UPWARD_EXCEPTIONS:
            upward.append(
                f"{where}:{line} ({unit}, layer {LAYERS[unit]}) imports {name} (layer {LAYERS[target]})"
            )
    assert not upward, "\n".join(upward)


# Inside agents/: common holds what the agents share, and each agent is a package of its
# own. Siblings stay apart, so an agent can be read, changed or removed alone.
AGENT_PACKAGES = ("ppo", "sac", "dqn", "pqn", "sb3")
# (importer, imported) pairs of agent packages allowed, and why.
AGENT_EXCEPTIONS = {
    ("sb3", "ppo"): "the sb3-contrib adapter wraps our PPO (its settings, its networks' layout)",
}


def _agents_part(module: str) -> str | None:
    """``pomdp_bench.agents.ppo.agent`` -> ``ppo``; ``pomdp_bench.agents`` -> ``""``; ``None``
    outside agents/."""
    parts = module.split(".")
    if parts[:2] != ["pomdp_bench", "agents"]:
        return None
    return parts[2] if len(parts) > 2 else ""


def test_every_agents_module_has_a_place() -> None:
    """agents/ holds the registry, common and one package per agent; nothing else."""
    folders = {p.parent.name for p in (PACKAGE / "agents").glob("*/__init__.py")}
    missing = sorted(folders - {"common", *AGENT_PACKAGES})
    assert not missing, f"add these agents/ packages to AGENT_PACKAGES (or fold them into common): {missing}"
    loose = sorted(
        p.name for p in (PACKAGE / "agents").glob("*.py") if p.stem not in ("__init__", "registry")
    )
    assert not loose, f"move these into common/ or an agent's package: {loose}"


def test_agent_packages_import_only_common_and_themselves() -> None:
    """``common`` imports no agent package; an agent package imports ``common``, itself and
    the exceptions in :data:`AGENT_EXCEPTIONS`, and neither the lazy ``pomdp_bench.agents``
    nor the registry (which would reach every agent)."""
    wrong = []
    for where, name, line, _ in _imports():
        importer = _agents_part(".".join(Path(where).parts))
        target = _agents_part(name)
        if importer in (None, "__init__", "registry") or target is None:
            continue
        allowed = {"common"} if importer == "common" else {"common", importer}
        if target in allowed or (importer, target) in AGENT_EXCEPTIONS:
            continue
        wrong.append(f"{where}:{line} ({importer}) imports {name}")
    assert not wrong, "\n".join(wrong)


def test_upward_exceptions_import_inside_a_function() -> None:
    """An exception of :data:`UPWARD_EXCEPTIONS` is still there (else drop it) and never
    imports at module level, so importing its module loads nothing above it."""
    found = {(where, name) for where, name, _, _ in _imports()}
    at_top = {(where, name) for where, name, _, _ in _imports(top_level=True)}
    assert set(UPWARD_EXCEPTIONS) <= found, sorted(set(UPWARD_EXCEPTIONS) - found)
    assert not set(UPWARD_EXCEPTIONS) & at_top, sorted(set(UPWARD_EXCEPTIONS) & at_top)


# Reporting computes everything from a results store and never builds an agent (no
# torch: tests/test_reporting_no_torch.py). Below its own package it reads only these.
REPORTING_READS = {
    "pomdp_bench.harness.spec": "RunSpec, the record of a run",
    "pomdp_bench.harness.store": "ResultStore, where the runs are",
    "pomdp_bench.harness.published": "publishing a suite's runs as records (report --published)",
    "pomdp_bench.harness.analysis_records": "what the analyses stored (probes, horizons, success)",
    "pomdp_bench.harness.cells": "a run's cell (the sweep declares cells with it)",
    "pomdp_bench.envs.cards": "the env cards: ceilings, optima, horizons",
    "pomdp_bench.memory_names": "the kinds' names, in the tables' order",
    "pomdp_bench.data": "where the shipped data lives (references/*.yaml)",
    "pomdp_bench.validation": "shared checks",
    "pomdp_bench.formulas": "card formulas as data",
}


def test_reporting_reads_only_records_cards_and_data() -> None:
    wrong = [
        f"{where}:{line} imports {name}"
        for where, name, line, unit in _imports()
        if unit == "reporting"
        and name.startswith("pomdp_bench")
        and not name.startswith("pomdp_bench.reporting")
        and name not in REPORTING_READS
    ]
    assert not wrong, "\n".join(wrong) + "\n(reporting reads only REPORTING_READS)"


# Inside harness/: the store's records at the bottom; above them two sides that never
# import each other, execution (a sweep's runs) and analysis (trained agents read back
# from the store); the commands that drive them at the top. A module imports its own
# layer's modules of its side, and lower layers.
HARNESS_LAYERS: dict[str, tuple[int, str]] = {
    # the records: what a run is and what the store keeps (no torch)
    "spec": (0, "records"),
    "store": (0, "records"),
    "provenance": (0, "records"),
    "cells": (0, "records"),
    "analysis_records": (0, "records"),
    "train_curve": (0, "records"),
    "published": (0, "records"),
    "kernels": (0, "records"),
    "weight_files": (0, "records"),
    # execution: expanding suites and training runs
    "stopping": (1, "execution"),
    "suites": (1, "execution"),
    "training": (1, "execution"),
    "backends": (1, "execution"),
    "progress": (1, "execution"),
    "rates": (1, "execution"),
    "estimate": (1, "execution"),
    # analysis: reading stored agents back
    "cue_tasks": (1, "analysis"),
    "probes": (1, "analysis"),
    "generalisation": (1, "analysis"),
    "success": (1, "analysis"),
    "analysis": (1, "analysis"),
    "tmaze_behaviour": (1, "analysis"),
    # the commands
    "run": (2, "commands"),
    "seed_stages": (2, "commands"),
    "climb": (2, "commands"),
    "verdicts": (2, "commands"),
    "beside": (2, "commands"),
    "tuning": (2, "commands"),
    "migrations": (2, "commands"),
}
# (importer, imported) pairs of harness modules allowed against HARNESS_LAYERS, and why.
HARNESS_EXCEPTIONS = {
    ("store", "training"): (
        "ResultStore.load_agent rebuilds a stored agent on the env its run trained on "
        "(training.prepare_env), imported inside the function so the store stays torch-free"
    ),
}


def _harness_part(module: str) -> str | None:
    """``pomdp_bench.harness.store`` -> ``store``; ``None`` outside harness/ (and for the
    package itself)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["pomdp_bench", "harness"] and len(parts) > 2 else None


def test_every_harness_module_has_an_inner_layer() -> None:
    modules = {p.stem for p in (PACKAGE / "harness").glob("*.py")} - {"__init__"}
    assert modules == set(HARNESS_LAYERS), (
        f"give these harness modules a place in HARNESS_LAYERS: {sorted(modules - set(HARNESS_LAYERS))}; "
        f"drop these: {sorted(set(HARNESS_LAYERS) - modules)}"
    )


def test_harness_modules_keep_their_inner_layers() -> None:
    """Records import no other side; execution and analysis never import each other; no
    module imports the commands; except :data:`HARNESS_EXCEPTIONS`."""
    wrong = []
    for where, name, line, _ in _imports():
        importer = _harness_part(".".join(Path(where).parts))
        target = _harness_part(name)
        if importer is None or target is None or importer == target:
            continue
        (low, side), (their_low, their_side) = HARNESS_LAYERS[importer], HARNESS_LAYERS[target]
        if their_low < low or (their_low == low and their_side == side):
            continue
        if (importer, target) not in HARNESS_EXCEPTIONS:
            wrong.append(f"{where}:{line} ({side}, {low}) imports {name} ({their_side}, {their_low})")
    assert not wrong, "\n".join(wrong)


def test_harness_exceptions_import_inside_a_function() -> None:
    at_top = {
        (_harness_part(".".join(Path(where).parts)), _harness_part(name))
        for where, name, _, _ in _imports(top_level=True)
    }
    assert not set(HARNESS_EXCEPTIONS) & at_top, sorted(set(HARNESS_EXCEPTIONS) & at_top)
