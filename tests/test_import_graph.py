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
    "envs": 1,
    "memory": 1,
    "tuned": 2,
    "agents": 3,
    "harness": 4,
    "run": 5,
    "report": 5,
    "tune": 5,
    "demo": 5,
    "analyse": 5,
}


def _unit(module: str) -> str:
    """``pomdp_bench.harness.run`` -> ``harness``; ``pomdp_bench.envs.cards`` -> ``cards``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports() -> list[tuple[str, str, int, str]]:
    """(importing file, imported module, line, importing unit) for every pomdp_bench import."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(relative.parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            found += [(str(relative), name, node.lineno, _unit(module)) for name in names]
    return found


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
        if LAYERS[target] >= LAYERS[unit]:
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
