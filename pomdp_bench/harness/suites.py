"""Suites: experiment grids declared as YAML data in ``suites/``, expanded into run specs.

A suite file looks like this (see ``suites/README.md``)::

    name: memory                        # required
    description: every memory kind on every env, across BPTT lengths
    seeds: 5                            # seeds per cell (default 5; --seeds overrides)
    seed_stages: [10, 20]               # optional: a borderline cell grows to 10, then 20 seeds
    climb: true                         # optional: a ladder's next horizon runs once the last is learned
    kernels: avx2                       # the CPU kernel setting (default native; --kernels overrides)
    eval_episodes: 20
    budget_scale: 1.0                   # fraction of each card's budget (default 1)
    stop: true                          # budgets are caps: stop solved or plateaued runs
                                        # (true: StopRule's defaults; a dict: its fields)
    groups:                             # required
      - agent: ppo                      # required
        memory: [none, framestack, gru, lstm, transformer, mamba]   # required unless each env has one
        hyperparams: {}                 # overrides for every env of the group
        steps: 100000                   # optional: env steps per run for every env of the group
        envs:                           # required
          - id: TMaze-v1                # required
            env_kwargs: {corridor_length: 10}
            horizon: 10                 # optional: must equal the card's (its formula of the kwargs)
            bptt: [4, 8, 16]            # for kinds trained through time
            budget_scale: 0.2           # this env's fraction of its card budget (default: the suite's)
            eval_episodes: 100          # this env's evaluation episodes per run (default: the suite's)
            seeds: 20                   # this env's seeds per cell, 0 to 19 (default: the suite's)
            steps: 100000               # default: the card's budget for the agent x budget_scale
            hyperparams: {}             # overrides for this env
            memory: [...]               # replaces the group's list for this env
            stop: {...}                 # this env's stop rule (default: the suite's)
          - id: popgym-RepeatPreviousEasy-v0    # an outside env ("popgym:popgym-..." also works)
            import: popgym              # the module that registers the id
            card: {optimal_return: 1.0} # inline card facts; the rest is unknown (implicit card)
            wrappers: [minigrid.wrappers:ImgObsWrapper]   # by import path, each copy, first to last
            steps: 50000                # an env without a card budget needs steps
    cards: my_cards/                    # optional: a folder of card YAMLs (relative to the suite)

Kinds not trained through time (``none``, ``framestack``) get one cell with
``bptt_length: null``. The agent's hyperparameters come from
``agents/<agent>.yaml`` (the env id's entry, else ``default``), then the group's,
then the env entry's overrides.

An env without a shipped card (an outside env, or one whose card was added at run
time) gets the card it has (``--cards DIR``, a suite's ``cards`` folder,
``register_card``) or an *implicit* one (:func:`pomdp_bench.envs.cards.implicit_card`):
its optimum unknown unless the entry's ``card`` gives it, its ceiling measured from
the suite's memory=none cells. Each of its runs carries that card, so workers and
Ray tasks need nothing else.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import pomdp_bench
from pomdp_bench.agents.registry import agent_module, check_agent_name, get_agent
from pomdp_bench.envs.cards import (
    EnvCard,
    add_card,
    card_data,
    check_card_data,
    data_dir,
    get_card,
    implicit_card,
    is_shipped,
    load_cards,
    read_card,
)
from pomdp_bench.envs.make import import_env_module
from pomdp_bench.envs.wrappers import check_wrappers
from pomdp_bench.harness.kernels import check_setting
from pomdp_bench.harness.spec import RunSpec
from pomdp_bench.harness.stopping import StopRule
from pomdp_bench.imports import import_modules, split_source
from pomdp_bench.memory import MEMORY_KINDS, MemoryConfig, memory_class
from pomdp_bench.tuned import tuned_hyperparameters
from pomdp_bench.validation import (
    ArgumentTypeError,
    check_float,
    check_import_path,
    check_int,
    check_module_name,
)

# The shipped kinds whose BPTT length matters (``Memory.trains_through_time``); the
# others act on the current window only.
TIME_KINDS = tuple(k for k in MEMORY_KINDS if memory_class(k).trains_through_time)
_SUITE_KEYS = {
    "name",
    "description",
    "seeds",
    "seed_stages",
    "climb",
    "kernels",
    "import",
    "eval_episodes",
    "eval_points",
    "budget_scale",
    "stop",
    "groups",
    "cards",
}
_GROUP_KEYS = {"agent", "memory", "hyperparams", "envs", "steps"}
_ENV_KEYS = {
    "id",
    "env_kwargs",
    "horizon",
    "bptt",
    "budget_scale",
    "eval_episodes",
    "steps",
    "hyperparams",
    "memory",
    "stop",
    "import",
    "card",
    "wrappers",
    "seeds",
}


@dataclass(frozen=True)
class Suite:
    """A parsed suite file."""

    name: str
    description: str
    seeds: int
    groups: list[dict[str, Any]]
    eval_episodes: int = 20
    eval_points: int = 10
    budget_scale: float = 1.0
    stop: StopRule | None = None
    seed_stages: tuple[int, ...] = ()
    climb: bool = False  # harness/climb.py: a ladder's next horizon only once the last is learned
    kernels: str = "native"
    imports: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None  # the suite file (a relative ``cards`` folder is read from it)


def available_suites() -> list[str]:
    """Names of the shipped suites."""
    return sorted(p.stem for p in data_dir("suites").glob("*.yaml"))


# Seeds per cell where a suite does not say.
DEFAULT_SEEDS = 5
# A one-line YAML example of each required key, for the message that asks for it.
_REQUIRED_EXAMPLES = {
    "name": "name: my-suite",
    "groups": "groups: [{agent: ppo, memory: [none, gru], envs: [{id: TMaze-v1}]}]",
    "agent": "agent: ppo",
    "envs": "envs: [{id: TMaze-v1, env_kwargs: {corridor_length: 10}}]",
    "memory": "memory: [none, gru]",
    "id": "id: TMaze-v1",
}


def _check_keys(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; valid keys: {sorted(allowed)}")


def _require(where: str, data: dict[str, Any], key: str) -> None:
    """Refuse ``data`` without ``key``, naming it with a YAML example."""
    if key not in data:
        raise ValueError(f"{where}: missing required key {key!r}, e.g. {_REQUIRED_EXAMPLES[key]}")


def _mapping(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ArgumentTypeError(f"{where} must be a mapping of keys, got {value!r}")
    return value


def _mappings(where: str, value: Any, key: str) -> list[dict[str, Any]]:
    """A list of mappings (a suite's groups, a group's envs)."""
    if not isinstance(value, list) or not value:
        raise ArgumentTypeError(
            f"{where}: {key} must be a non-empty list, e.g. {_REQUIRED_EXAMPLES[key]}; got {value!r}"
        )
    return [_mapping(f"{where} {key}[{i}]", item) for i, item in enumerate(value)]


def load_suite(name: str) -> Suite:
    """Read the shipped suite ``suites/<name>.yaml``, or a suite file at the path ``name``."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else data_dir("suites") / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"unknown suite {name!r}; available suites: {available_suites()}")
    raw = _mapping(f"suite {name}", yaml.safe_load(path.read_text()))
    _check_keys(f"suite {name}", raw, _SUITE_KEYS)
    for key in ("name", "groups"):
        _require(f"suite {name}", raw, key)
    for i, group in enumerate(_mappings(f"suite {name}", raw["groups"], "groups")):
        _check_keys(f"suite {name} group {i}", group, _GROUP_KEYS)
        for key in ("agent", "envs"):
            _require(f"suite {name} group {i}", group, key)
        try:
            check_agent_name(group["agent"])
        except (TypeError, ValueError) as err:
            raise type(err)(f"suite {name} group {i}: {err}") from err
        for j, env in enumerate(_mappings(f"suite {name} group {i}", group["envs"], "envs")):
            _check_keys(f"suite {name} group {i} env {env.get('id', j)}", env, _ENV_KEYS)
            _require(f"suite {name} group {i} env {j}", env, "id")
            if "memory" not in group:  # each env entry then names its own kinds
                _require(f"suite {name} group {i} env {env['id']} (its group has none)", env, "memory")
            if "budget_scale" in env:
                where = f"suite {name} group {i} env {env.get('id')}: budget_scale"
                check_float(where, env["budget_scale"], minimum=0.0, strict_minimum=True)
            if "stop" in env:
                StopRule.from_any(env["stop"])
            where = f"suite {name} group {i} env {env.get('id')}"
            if "wrappers" in env:
                try:
                    check_wrappers(env["wrappers"])
                except (TypeError, ValueError) as err:
                    raise type(err)(f"{where}: {err}") from err
            if "import" in env:
                check_module_name(env["import"], what=f"{where}: import")
            env_id, _ = env_source(env)  # a module:Id prefix must be a module name too
            if "card" in env:  # its formulas and entry points checked now, before any import
                if not isinstance(env["card"], dict):
                    raise TypeError(f"{where}: card must be a mapping of card keys, got {env['card']!r}")
                try:
                    check_card_data(env_id, env["card"])
                except ValueError as err:  # an ArgumentTypeError stays one
                    raise type(err)(f"{where}: {err}") from err
            if "seeds" in env:
                check_int(f"{where}: seeds", env["seeds"], minimum=1)
            if "eval_episodes" in env:
                check_int(
                    f"suite {name} group {i} env {env.get('id')}: eval_episodes",
                    env["eval_episodes"],
                    minimum=1,
                )
    seeds = check_int(f"suite {name}: seeds", raw.get("seeds", DEFAULT_SEEDS), minimum=1)
    climb = raw.get("climb", False)
    if not isinstance(climb, bool):
        raise TypeError(f"suite {name}: climb must be true or false, got {climb!r}")
    return Suite(
        name=raw["name"],
        description=raw.get("description", ""),
        seeds=seeds,
        seed_stages=check_seed_stages(f"suite {name}: seed_stages", raw.get("seed_stages", []), seeds),
        climb=climb,
        kernels=_suite_kernels(raw["name"], raw.get("kernels", "native")),
        imports=_suite_imports_field(raw["name"], raw.get("import", [])),
        groups=raw["groups"],
        eval_episodes=int(raw.get("eval_episodes", 20)),
        eval_points=int(raw.get("eval_points", 10)),
        budget_scale=check_float(
            "budget_scale", raw.get("budget_scale", 1.0), minimum=0.0, strict_minimum=True
        ),
        stop=StopRule.from_any(raw.get("stop")),
        raw=raw,
        path=path,
    )


def _suite_imports_field(name: str, value: object) -> tuple[str, ...]:
    """A suite's ``import:``: module names (one name, or a list), checked, not imported."""
    modules = [value] if isinstance(value, str) else value
    if not isinstance(modules, list):
        raise ArgumentTypeError(
            f"suite {name}: import must be a module name or a list of them, got {value!r}"
        )
    return tuple(check_module_name(m, what=f"suite {name}: import") for m in modules)


def _kind_source(mem: Any) -> tuple[str | None, Any]:
    """A suite's memory entry with a ``module:kind`` name split: ``(module, entry)``, the
    entry naming the bare kind; ``(None, mem)`` for a bare kind."""
    kind = mem.get("kind") if isinstance(mem, dict) else mem
    if not isinstance(kind, str):
        return None, mem
    module, bare = split_source(kind)
    if module is None:
        return None, mem
    return module, ({**mem, "kind": bare} if isinstance(mem, dict) else bare)


def _suite_kernels(name: str, value: object) -> str:
    """A suite's ``kernels``: a kernel setting (:mod:`~pomdp_bench.harness.kernels`)."""
    try:
        return check_setting(value)
    except ValueError as err:
        raise ValueError(f"suite {name}: {err}") from None


def check_seed_stages(where: str, stages: object, seeds: int) -> tuple[int, ...]:
    """A suite's ``seed_stages``: the seed counts a borderline cell grows to in turn
    (:mod:`~pomdp_bench.harness.seed_stages`), each above the suite's ``seeds`` and the one
    before it. ``[]`` or none: every cell runs ``seeds`` only.

    Raises:
        TypeError: not a list of whole numbers.
        ValueError: counts that do not rise above ``seeds`` (the message names them).
    """
    if not isinstance(stages, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) for n in stages
    ):
        raise TypeError(f"{where} must be a list of seed counts, e.g. [10, 20], got {stages!r}")
    if any(b <= a for a, b in itertools.pairwise([seeds, *stages])):
        raise ValueError(
            f"{where} must rise above seeds ({seeds}) count by count, e.g. [10, 20], got {stages}"
        )
    return tuple(stages)


def parse_env_kwargs(values: str | list[str] | None) -> dict[str, Any]:
    """Env kwargs given on the command line (``--env-kwargs`` of ``run`` and ``tune``).

    Each value is a ``KEY=VALUE`` pair, its value read as YAML (``delay=10``,
    ``sizes=[2, 3]``, ``name=hard``), or one whole mapping in YAML or JSON
    (``'{corridor_length: 10}'``, ``'{"corridor_length": 10}'``). ``None`` or no
    values give ``{}``.

    Raises:
        ValueError: a value of neither form, or a key given twice (the message names it).
    """
    if values is None:
        return {}
    out: dict[str, Any] = {}
    for value in [values] if isinstance(values, str) else values:
        text = value.strip()
        if text.startswith("{"):
            try:
                parsed = yaml.safe_load(text)
            except yaml.YAMLError as err:
                raise ValueError(f"--env-kwargs {value!r} is not a YAML or JSON mapping: {err}") from None
            if not isinstance(parsed, dict) or not all(isinstance(k, str) for k in parsed):
                raise ValueError(f"--env-kwargs {value!r} must map names to values, e.g. '{{delay: 10}}'")
            pairs = list(parsed.items())
        elif "=" in text and text.split("=", 1)[0].strip():
            key, raw = text.split("=", 1)
            try:
                pairs = [(key.strip(), yaml.safe_load(raw))]
            except yaml.YAMLError as err:
                raise ValueError(f"--env-kwargs {value!r}: its value is not YAML: {err}") from None
        else:
            raise ValueError(
                f"--env-kwargs takes KEY=VALUE pairs or one YAML/JSON mapping, got {value!r}; "
                "e.g. --env-kwargs corridor_length=10, or --env-kwargs '{corridor_length: 10}'"
            )
        for key, parsed_value in pairs:
            if key in out:
                raise ValueError(f"--env-kwargs gives {key!r} twice")
            out[key] = parsed_value
    return out


def entry_kwargs(card: EnvCard, env: dict[str, Any]) -> dict[str, Any]:
    """The kwargs a suite entry makes its env with: the card's default ``kwargs``
    updated by the entry's ``env_kwargs``."""
    return dict(card.kwargs or {}) | dict(env.get("env_kwargs") or {})


def env_source(env: dict[str, Any]) -> tuple[str, str | None]:
    """A suite entry's env id and the module that registers it: ``id: "module:Id"`` as in
    ``gym.make``, or ``id`` with ``import: module``.

    Raises:
        ValueError: the module is not a dotted module name (the message names it), or the
            id's prefix and ``import`` differ.
    """
    env_id, module = str(env["id"]), env.get("import")
    if module is not None:
        check_module_name(module, what=f"env {env_id}: import")
    if ":" in env_id:
        prefix, env_id = env_id.split(":", 1)
        check_module_name(prefix, what=f"env id {env['id']!r}: the module before ':'")
        if module is not None and module != prefix:
            raise ValueError(f"env {env['id']!r} names module {prefix!r} but import: {module!r}")
        module = prefix
    if module == "pomdp_bench":  # "pomdp_bench:TMaze-v1": ours, nothing to import
        module = None
    return env_id, module


def suite_cards(suite: Suite, folder: str | Path | None = None) -> list[EnvCard]:
    """Register the cards of ``folder`` (``--cards DIR``) and of the suite's ``cards``
    folder (relative to the suite file): every ``*.yaml`` in them, as
    :func:`pomdp_bench.envs.register_card` does; a card without an ``entry_point`` (an
    env another module registers) is only added, leaving that registration alone.

    Raises:
        ValueError: a folder does not exist, or a card is malformed or has a shipped id.
    """
    from pomdp_bench.envs import register_card

    cards = []
    for path in _card_folders(suite, folder):
        if not path.is_dir():
            raise ValueError(f"cards folder {str(path)!r} does not exist")
        for card_path in sorted(path.glob("*.y*ml")):
            card = read_card(card_path)
            if card.entry_point:
                register_card(card)
            else:
                add_card(card)
            cards.append(card)
    return cards


def _card_folders(suite: Suite, folder: str | Path | None) -> list[Path]:
    """``folder`` (``--cards DIR``) and the suite's ``cards`` folder (relative to the suite file)."""
    folders = [Path(folder)] if folder is not None else []
    if suite.raw.get("cards"):
        base = suite.path.parent if suite.path is not None else Path.cwd()
        folders.append(base / str(suite.raw["cards"]))
    return folders


def suite_imports(suite: Suite, cards: str | Path | None = None) -> list[str]:
    """The modules that expanding and running ``suite`` imports, read from its data
    without importing anything, sorted: each entry's ``import:`` module and the module
    of a ``module:Id`` id, the module of a ``module:name`` agent, the module of each
    wrapper path, and the module of each
    ``entry_point`` and ``vector_entry_point`` of the cards in ``cards`` (``--cards
    DIR``) and the suite's ``cards`` folder. pomdp_bench's own modules are left out.

    Importing a module runs its code, as ``pip install`` does: ``python -m
    pomdp_bench.run`` prints this list before it expands the suite, so that the reader
    sees whose code a shared suite file runs.
    """
    modules: set[str] = set(suite.imports)
    for group in suite.groups:
        agent_source = agent_module(group["agent"])  # an agent named as module:name
        if agent_source is not None:
            modules.add(agent_source)
        entries = [
            *(group.get("memory") or []),
            *(m for env in group["envs"] for m in env.get("memory") or []),
        ]
        modules.update(m for m in (_kind_source(mem)[0] for mem in entries) if m is not None)  # module:kind
        for env in group["envs"]:
            module = env_source(env)[1]
            if module is not None:
                modules.add(module)
            for wrapper in check_wrappers(env.get("wrappers")):
                modules.add(wrapper["path"].split(":")[0])
    for folder in _card_folders(suite, cards):
        for card_path in sorted(folder.glob("*.y*ml")) if folder.is_dir() else []:
            raw = yaml.safe_load(card_path.read_text())
            for name in ("entry_point", "vector_entry_point"):
                value = raw.get(name) if isinstance(raw, dict) else None
                if value:  # its form is checked when the card is read
                    modules.add(check_import_path(value, what=f"card {card_path}: {name}").split(":")[0])
    return sorted(m for m in modules if m != "pomdp_bench" and not m.startswith("pomdp_bench."))


def suite_card(suite: Suite, env_id: str, module: str | None, env: dict[str, Any]) -> EnvCard:
    """The card of a suite entry: the known card of ``env_id`` (shipped or added), else
    an implicit one from the entry's ``card`` facts. The id must be registered with
    Gymnasium (after importing ``module``).

    Raises:
        ValueError: an inline card for an id that has a card, or an id Gymnasium does
            not know (the message says to add ``import:``).
    """
    where = f"suite {suite.name} env {env_id}"
    if module is not None:
        import_env_module(f"{module}:{env_id}")
        import gymnasium as gym

        if env_id not in gym.registry:
            raise ValueError(f"{where}: {module} registers no such env; {registered_by(module)}")
    known = env_id in load_cards()
    if "card" in env:
        if known:
            raise ValueError(f"{where}: has a card already; leave out the suite's inline card")
        try:
            return implicit_card(env_id, env["card"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from err
    if known:
        return get_card(env_id)
    import gymnasium as gym

    if env_id not in gym.registry:
        raise ValueError(
            f"{where}: no env card and no Gymnasium registration for {env_id!r}; name the module "
            f"that registers it (import: <module>, or id: <module>:{env_id}), or give a card "
            "(--cards DIR, the suite's cards folder, or pomdp_bench.envs.register_card)"
        )
    return implicit_card(env_id)


_DIFFICULTY = re.compile(r"^(?P<family>.+?)(?P<difficulty>Easy|Medium|Hard)-v\d+$")


def registered_by(module: str) -> str:
    """What ``module`` (imported) registers with Gymnasium, for an error message: its
    families and difficulties where every id reads ``<family><Easy|Medium|Hard>-vN``
    (POPGym's ids), else the ids."""
    import gymnasium as gym

    top = module.split(".")[0]
    ids = sorted(
        i
        for i, spec in gym.registry.items()
        if isinstance(spec.entry_point, str) and spec.entry_point.split(":")[0].split(".")[0] == top
    )
    if not ids:
        return "it registers no env ids"
    matches = [_DIFFICULTY.match(i) for i in ids]
    if all(matches):
        families = sorted({m["family"] for m in matches})
        difficulties = [d for d in ("Easy", "Medium", "Hard") if any(m["difficulty"] == d for m in matches)]
        return f"its families: {families}, at difficulties {difficulties} (ids <family><difficulty>-v0)"
    return f"its ids: {ids}"


def agent_hyperparams(agent: str, env_id: str, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The tuned kwargs of ``agent`` for ``env_id`` (and the horizon band of
    ``env_kwargs``) from ``agents/<tuned_file>.yaml`` (the registry entry's file)."""
    return tuned_hyperparameters(get_agent(agent).tuned_file, env_id, env_kwargs)


def _check_hyperparams(suite: str, agent: str, env_id: str, hyperparams: dict[str, Any]) -> None:
    """Refuse hyperparameters the agent's settings do not take, before any run starts."""
    settings_class = get_agent(agent).load_settings_class()  # imports torch
    try:
        settings_class.make(**hyperparams)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"suite {suite!r}, agent {agent!r}, env {env_id!r}: {exc}") from exc


def expand(
    suite: Suite,
    *,
    envs: list[str] | None = None,
    agents: list[str] | None = None,
    memory: list[str] | None = None,
    bptt: list[int] | None = None,
    seeds: int | None = None,
    steps: int | None = None,
    device: str = "cpu",
    cards: str | Path | None = None,
    env_kwargs: dict[str, Any] | None = None,
    kernels: str | None = None,
    imports: list[str] | None = None,
) -> list[RunSpec]:
    """Every run of ``suite``, after the filters and overrides (``None`` keeps the suite's),
    on ``device`` under the CPU kernel setting ``kernels``
    (:mod:`~pomdp_bench.harness.kernels`; ``None``: the suite's); ``cards``: a folder of env cards to register first (``--cards DIR``;
    the suite's own ``cards`` folder is registered too).

    ``env_kwargs`` keeps the env entries whose kwargs hold each of its pairs
    (:func:`entry_kwargs`: the card's defaults updated by the entry's ``env_kwargs``);
    it changes no entry's kwargs.

    ``imports``: modules to import first (``--import``), as the suite's ``import:`` list
    is; a run of a kind they register (not a shipped kind) carries them in
    :attr:`RunSpec.imports`, with the module of a ``module:kind`` name.

    ``seeds`` replaces every entry's count (the suite's ``seeds``, or an env entry's
    own, for a cell whose verdict needs more).

    Listed seed by seed (every cell's seed 0, then every cell's seed 1, ...), which
    is the order a sweep runs them in: an interrupted sweep holds some seeds of
    every cell, and agents compared in one suite (ours and sb3-contrib's in
    ``parity``) take turns on the machine, so a slow spell of a shared machine
    does not land on one agent only.
    """
    suite_cards(suite, cards)
    kernels = suite.kernels if kernels is None else kernels
    # Modules that register kinds of a user's own: imported here, and by each worker
    # before it builds a run of such a kind (RunSpec.imports).
    outside = [*suite.imports, *(imports or [])]
    import_modules(outside, what="import")
    cells: dict[int, list[RunSpec]] = {}  # seed -> that seed's run of every cell
    for group in suite.groups:
        agent = group["agent"]
        if agents and agent not in agents:
            continue
        for env in group["envs"]:
            env_id, module = env_source(env)
            if envs and env_id not in envs:
                continue
            card = suite_card(suite, env_id, module, env)
            if env_kwargs:
                made = entry_kwargs(card, env)
                if any(key not in made or made[key] != value for key, value in env_kwargs.items()):
                    continue
            hp = agent_hyperparams(agent, env_id, env.get("env_kwargs")) | dict(
                group.get("hyperparams") or {}
            )
            hp |= dict(env.get("hyperparams") or {})
            _check_hyperparams(suite.name, agent, env_id, hp)
            budget = steps if steps is not None else env.get("steps", group.get("steps"))
            if budget is None and card.implicit and not card.budget:
                raise ValueError(
                    f"suite {suite.name} env {env_id}: no card gives it a budget; give steps: "
                    "(env steps per run) in the suite entry"
                )
            if budget is None:  # the card's budget, scaled by the env entry or else the suite
                budget = round(card.budget_for(agent) * float(env.get("budget_scale", suite.budget_scale)))
            budget = int(budget)
            # Binary-outcome tasks need many episodes: with 20, the share of one cue
            # among them moves a constant-answer policy 0.1 off its expected return.
            eval_episodes = int(env.get("eval_episodes", suite.eval_episodes))
            stop = StopRule.from_any(env["stop"]) if "stop" in env else suite.stop
            horizon = card.horizon_for(env.get("env_kwargs"))
            if card.implicit and "horizon" in env:  # the suite knows what the card does not
                horizon = int(env["horizon"])
            if "horizon" in env and int(env["horizon"]) != horizon:
                raise ValueError(
                    f"suite {suite.name} env {env_id} {env.get('env_kwargs') or {}}: horizon "
                    f"{env['horizon']} contradicts the card's {horizon}"
                    + (f" ({card.memory_horizon_formula})" if card.memory_horizon_formula else "")
                    + "; leave horizon out to take the card's"
                )
            n_seeds = seeds if seeds is not None else int(env.get("seeds", suite.seeds))
            carried = None if is_shipped(env_id) else card_data(card)
            wrappers = check_wrappers(env.get("wrappers"))
            for entry in env["memory"] if "memory" in env else group["memory"]:
                kind_module, mem = _kind_source(entry)
                if kind_module is not None:
                    import_modules([kind_module], what=f"suite {suite.name}: memory {entry!r}")
                cfg = MemoryConfig.from_any(mem).to_dict()
                run_imports = (
                    []
                    if cfg["kind"] in MEMORY_KINDS
                    else sorted({*outside, *([kind_module] if kind_module else [])})
                )
                if memory and cfg["kind"] not in memory:
                    continue
                through_time = memory_class(cfg["kind"]).trains_through_time
                lengths = list(env.get("bptt") or [None]) if through_time else [None]
                for length in lengths:
                    if bptt and length not in bptt:
                        continue
                    for seed in range(n_seeds):
                        cells.setdefault(seed, []).append(
                            RunSpec(
                                env_id=env_id,
                                env_kwargs=dict(env.get("env_kwargs") or {}),
                                agent=agent,
                                memory=cfg,
                                bptt_length=None if length is None else int(length),
                                seed=seed,
                                total_timesteps=budget,
                                hyperparams=hp,
                                eval_episodes=eval_episodes,
                                eval_points=suite.eval_points,
                                horizon=horizon,
                                version=pomdp_bench.__version__,
                                stop=None if stop is None else stop.to_dict(),
                                device=device,
                                env_import=module,
                                env_wrappers=wrappers,
                                card=carried,
                                cell_seeds=n_seeds,
                                kernels=kernels,
                                imports=run_imports,
                            )
                        )
    return [spec for seed in sorted(cells) for spec in cells[seed]]
