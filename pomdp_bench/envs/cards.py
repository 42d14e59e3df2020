"""Environment cards: the YAML facts each environment ships with.

A card (``envs/<id>.yaml`` in the repository, ``pomdp_bench/_data/envs`` in an
installed wheel) holds an env's id, entry points, default kwargs, its
documentation table, the memory horizon, the optimal return, the feedforward
ceiling with how it was derived, and a default training budget. Registration
reads the cards, and so does the harness: they are the single source of truth.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from pomdp_bench.data import data_dir
from pomdp_bench.formulas import check_formula, evaluate_formula
from pomdp_bench.validation import ArgumentTypeError, check_import_path

#: The card fields that hold a formula of the kwargs (:mod:`pomdp_bench.formulas`).
FORMULA_FIELDS = ("memory_horizon_formula", "ff_ceiling_formula", "episode_length_formula")


def check_card_data(env_id: str, card: Mapping[str, Any]) -> None:
    """Refuse a card (its keys as a mapping) whose fields would run code: a card is
    checked when it is read, so a bad one fails before anything runs.

    Each of :data:`FORMULA_FIELDS` that is given must be arithmetic on the card's kwargs
    (:func:`pomdp_bench.formulas.check_formula`); ``entry_point`` and
    ``vector_entry_point``, when given, must be ``"module:Name"`` (dotted identifiers,
    :func:`pomdp_bench.validation.check_import_path`). Gymnasium imports that module when
    the env is made: a card with an entry point is a trust decision, like ``pip install``.

    Raises:
        ValueError: a formula is refused (the message names the formula, the card and
            what a formula may hold), an entry point has another form, or ``kwargs`` is
            not a mapping.
    """
    kwargs = card.get("kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ArgumentTypeError(f"card {env_id}: kwargs must be a mapping of kwarg names, got {kwargs!r}")
    for name in FORMULA_FIELDS:
        formula = card.get(name)
        if formula is not None and formula != "":  # absent: the card's plain number holds
            check_formula(formula, kwargs.keys(), card=env_id, field=name)
    for name in ("entry_point", "vector_entry_point"):
        value = card.get(name)
        if value:  # "" or None: another module registers the env, or it has no vector twin
            check_import_path(value, what=f"card {env_id}: {name}", attribute=True)
    success = card.get("success_kwargs") or {}
    if not isinstance(success, Mapping):
        raise ArgumentTypeError(f"card {env_id}: success_kwargs must be a mapping of kwargs, got {success!r}")
    unknown = sorted(set(success) - set(kwargs))
    if unknown:
        raise ValueError(
            f"card {env_id}: success_kwargs names {unknown}, not among the card's kwargs {sorted(kwargs)}"
        )
    check_cue(env_id, card.get("cue") or {}, kwargs)


#: How a card's ``cue.read`` names the cue from step 0's observation (``cue.index``: where).
CUE_READS = {
    "sign": "the sign of observation[index]: + is cue 0, - is cue 1 (count must be 2)",
    "one_hot": "the one-hot at observation[index : index + count]: its argmax",
}
#: The keys of a card's ``cue``; all but ``when`` are required.
CUE_KEYS = ("horizon_kwarg", "horizon_max", "count", "read", "index", "when")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_cue(env_id: str, cue: Mapping[str, Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse a card's ``cue`` (the facts a cue analysis reads; empty: the env has none).

    Raises:
        ValueError: ``cue`` is not a mapping, lacks a key or has an unknown one, or a value
            is invalid; the message names the card, the value and what is valid.
    """
    where = f"card {env_id}: cue"
    if not isinstance(cue, Mapping):
        raise ArgumentTypeError(f"{where} must be a mapping of {list(CUE_KEYS)}, got {cue!r}")
    if not cue:
        return
    unknown = sorted(set(cue) - set(CUE_KEYS))
    missing = [k for k in CUE_KEYS if k != "when" and k not in cue]
    if unknown or missing:
        raise ValueError(
            f"{where} has unknown keys {unknown} and lacks {missing}; its keys: {list(CUE_KEYS)}"
        )
    if cue["horizon_kwarg"] not in kwargs:
        raise ValueError(
            f"{where}.horizon_kwarg {cue['horizon_kwarg']!r} is not among the card's kwargs {sorted(kwargs)}"
        )
    for name, low in (("horizon_max", 1), ("index", 0)):
        if not _is_int(cue[name]) or cue[name] < low:
            raise ValueError(f"{where}.{name} must be an int >= {low}, got {cue[name]!r}")
    if cue["read"] not in CUE_READS:
        raise ValueError(f"{where}.read must be one of {sorted(CUE_READS)}, got {cue['read']!r}")
    count = cue["count"]
    if _is_int(count):
        if count < 2:
            raise ValueError(f"{where}.count must be at least 2 cues, got {count!r}")
    elif isinstance(count, str):
        check_formula(count, kwargs.keys(), card=env_id, field="cue.count")
    else:
        raise ValueError(f"{where}.count must be an int >= 2 or a formula of the kwargs, got {count!r}")
    if cue["read"] == "sign" and count != 2:
        raise ValueError(f"{where}.count must be 2 where read is 'sign', got {count!r}")
    when = cue.get("when") or {}
    if not isinstance(when, Mapping) or sorted(set(when) - set(kwargs)):
        raise ValueError(
            f"{where}.when must map some of the card's kwargs {sorted(kwargs)} to values, got {when!r}"
        )


@dataclass(frozen=True)
class EnvCard:
    """The facts of one registered environment id (docs/DESIGN.md, "Environments"; the
    shipped cards are ``envs/*.yaml``)."""

    id: str
    entry_point: str
    vector_entry_point: str | None  # None: agents step copies with Gymnasium's SyncVectorEnv
    kwargs: dict[str, Any]
    max_episode_steps: int | None
    observation: str
    action: str
    reward: str
    termination: str
    truncation: str
    memory_horizon: int
    optimal_return: float
    ff_ceiling: float
    ff_ceiling_source: str
    ff_ceiling_derivation: str
    budget: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    ff_ceiling_formula: str = ""
    memory_horizon_formula: str = ""  # the horizon from the kwargs, e.g. "delay + 1"
    # Where every episode lasts the same number of steps: that number from the kwargs,
    # e.g. "corridor_length + 1" (tuned settings may then count in episodes, "4T").
    episode_length_formula: str = ""
    superseded_by: str | None = None  # a newer version of this env that suites now use
    # Kwargs under which an episode's return is 1 when it succeeds and 0 otherwise, for an
    # env scored by success rate (KeyToDoor-v0: no apple reward, a door worth 1). Empty:
    # the env has no success measure. harness/success.py evaluates trained agents under them.
    success_kwargs: dict[str, Any] = field(default_factory=dict)
    # The cue a cue analysis follows (harness/cue_tasks.py): it shows at step 0 and is needed
    # memory_horizon steps later. Empty: the env has no such cue. Keys (check_cue):
    # horizon_kwarg sets the horizon, horizon_max is the largest value the env takes for it,
    # count is how many cues (a number or a formula), read and index say where step 0's
    # observation shows it (CUE_READS), and when gives kwargs it needs (active: false).
    cue: dict[str, Any] = field(default_factory=dict)
    # True for a card the harness made for an outside env (implicit_card): facts it was not
    # given are unknown (NaN optimum or ceiling, horizon 0), not measured.
    implicit: bool = False

    @property
    def optimum_known(self) -> bool:
        """Whether the card gives the optimal return (an implicit card may not)."""
        return not math.isnan(float(self.optimal_return))

    @property
    def ceiling_known(self) -> bool:
        """Whether the card gives a feedforward ceiling; if not, the leaderboard takes the
        suite's memory=none cells (``ff_ceiling_source: empirical``)."""
        return not math.isnan(float(self.ff_ceiling))

    def budget_for(self, agent: str) -> int:
        """Training budget in env steps for ``agent`` (the card's ``budget.<agent>``,
        else ``budget.total_timesteps``): what a run needs to reach its plateau."""
        if agent in self.budget:
            return int(self.budget[agent])
        if "total_timesteps" not in self.budget:
            raise ValueError(
                f"card {self.id}: budget has neither {agent!r} nor total_timesteps: {self.budget}"
            )
        return int(self.budget["total_timesteps"])

    def ceiling_for(self, env_kwargs: dict[str, Any] | None = None) -> float:
        """The feedforward ceiling for these env kwargs (on top of the card's).

        An analytic ceiling that depends on a kwarg has an ``ff_ceiling_formula``
        in the card (arithmetic on kwarg names, e.g. ``1 / num_cues``).
        """
        if not self.ff_ceiling_formula:
            return float(self.ff_ceiling)
        return float(self._evaluate("ff_ceiling_formula", self.ff_ceiling_formula, env_kwargs))

    def horizon_for(self, env_kwargs: dict[str, Any] | None = None) -> int:
        """The memory horizon for these env kwargs: the card's ``memory_horizon_formula``
        (e.g. ``delay + 1``), else its ``memory_horizon``."""
        if not self.memory_horizon_formula:
            return int(self.memory_horizon)
        return int(self._evaluate("memory_horizon_formula", self.memory_horizon_formula, env_kwargs))

    def episode_length_for(self, env_kwargs: dict[str, Any] | None = None) -> int | None:
        """The fixed episode length ``T`` for these env kwargs (the card's
        ``episode_length_formula``), or ``None`` where episodes vary in length."""
        if not self.episode_length_formula:
            return None
        return int(self._evaluate("episode_length_formula", self.episode_length_formula, env_kwargs))

    def cue_count_for(self, env_kwargs: dict[str, Any] | None = None) -> int:
        """How many cues there are under these env kwargs (the card's ``cue.count``).

        Raises:
            ValueError: the card gives no ``cue``.
        """
        if not self.cue:
            raise ValueError(f"card {self.id}: gives no cue")
        count = self.cue["count"]
        return count if isinstance(count, int) else int(self._evaluate("cue.count", count, env_kwargs))

    def _evaluate(self, name: str, formula: str, env_kwargs: dict[str, Any] | None) -> int | float:
        """Arithmetic on kwarg names (the card's kwargs, then ``env_kwargs``), read as data
        by :func:`pomdp_bench.formulas.evaluate_formula`, never ``eval``."""
        names = {**self.kwargs, **(env_kwargs or {})}
        return evaluate_formula(formula, names, card=self.id, field=name)

    def __post_init__(self) -> None:
        check_card_data(self.id, self.__dict__)
        if self.ff_ceiling_source not in ("analytic", "empirical"):
            raise ValueError(
                f"card {self.id}: ff_ceiling_source must be 'analytic' or 'empirical', "
                f"got {self.ff_ceiling_source!r}"
            )


# An implicit card's facts where the suite gives none (everything not known is said so).
_IMPLICIT_DEFAULTS: dict[str, Any] = {
    "entry_point": "",
    "vector_entry_point": None,
    "kwargs": {},
    "max_episode_steps": None,
    "observation": "as the env declares it",
    "action": "as the env declares it",
    "reward": "as the env defines it",
    "termination": "as the env defines it",
    "truncation": "as the env defines it",
    "memory_horizon": 0,  # unknown: pieces are n/a, cue_reach empty
    "optimal_return": math.nan,  # unknown: no normalised score, no verdict
    "ff_ceiling": math.nan,  # unknown: the suite's best converged memory=none cell
    "ff_ceiling_source": "empirical",
    "ff_ceiling_derivation": (
        "Implicit card: the best memory=none cell of the same suite and agent, counted only where "
        "its runs converged (else the leaderboard marks it lower_bound)."
    ),
}


def implicit_card(env_id: str, given: Mapping[str, Any] | None = None) -> EnvCard:
    """The card of an env that ships none: the facts ``given`` (a suite's inline ``card``:
    any :class:`EnvCard` keys), the rest unknown (:data:`_IMPLICIT_DEFAULTS`).

    An unknown optimum (``optimal_return`` absent or null) leaves the normalised score
    and the verdict empty; an unknown ceiling makes the leaderboard measure it from the
    suite's memory=none cells. A ``given`` that holds every key is an ordinary card.

    Raises:
        ValueError: an unknown key or an invalid value (the message names the env).
    """
    given = dict(given or {})
    if "id" in given and given["id"] != env_id:
        raise ValueError(f"inline card of {env_id!r} has id {given['id']!r}; leave id out or make them equal")
    complete = all(f.name in given for f in fields(EnvCard) if f.default is MISSING and f.name != "id")
    raw = {**_IMPLICIT_DEFAULTS, "implicit": not complete, **given, "id": env_id}
    for name in ("optimal_return", "ff_ceiling"):  # null in YAML: unknown
        raw[name] = math.nan if raw[name] is None else raw[name]
    if not raw.get("entry_point"):
        try:
            spec = gym.spec(env_id)
        except gym.error.Error:
            spec = None
        raw["entry_point"] = "" if spec is None or not isinstance(spec.entry_point, str) else spec.entry_point
    return read_card(raw)


def card_data(card: EnvCard) -> dict[str, Any]:
    """``card`` as plain data (what a run spec carries), NaN written as None."""
    data = asdict(card)
    for name in ("success_kwargs", "cue"):  # added later: absent when empty, so older specs keep their keys
        if not data[name]:
            del data[name]
    for name in ("optimal_return", "ff_ceiling"):
        if isinstance(data[name], float) and math.isnan(data[name]):
            data[name] = None
    return data


def card_of(env_id: str, card: Mapping[str, Any] | None = None) -> EnvCard:
    """The card a run reads: ``card`` (a spec's carried card data, for an env whose card
    is not shipped) or else the known card of ``env_id``."""
    return implicit_card(env_id, card) if card is not None else get_card(env_id)


def is_shipped(env_id: str) -> bool:
    """Whether ``env_id`` has a card shipped with pomdp_bench (``envs/*.yaml``)."""
    return env_id.removeprefix("pomdp_bench:") in _shipped_cards()


def read_card(source: str | Path | Mapping[str, Any]) -> EnvCard:
    """An :class:`EnvCard` from a YAML file or a dict with the card's keys.

    A null ``optimal_return`` or ``ff_ceiling`` reads as NaN: unknown.

    Raises:
        ValueError: a key is missing or unknown, or a value is invalid; the message
            names the card.
    """
    raw = yaml.safe_load(Path(source).read_text()) if isinstance(source, (str, Path)) else dict(source)
    if not isinstance(raw, dict):
        raise ValueError(f"env card {source} is not a mapping of card keys")
    for name in ("optimal_return", "ff_ceiling"):  # null in YAML: unknown (KeyToDoor-v0's card)
        if name in raw and raw[name] is None:
            raw[name] = math.nan
    try:
        return EnvCard(**raw)
    except TypeError as err:
        valid = [f.name for f in fields(EnvCard)]
        raise ValueError(
            f"env card {raw.get('id', source)!r} is malformed: {err}; card keys: {valid}"
        ) from err


@functools.cache
def _shipped_cards() -> dict[str, EnvCard]:
    cards: dict[str, EnvCard] = {}
    for path in sorted(data_dir("envs").glob("*.yaml")):
        card = read_card(path)
        cards[card.id] = card
    return cards


# Cards added at run time (pomdp_bench.envs.register_card), by env id.
_ADDED: dict[str, EnvCard] = {}


def add_card(card: EnvCard) -> None:
    """Make ``card`` known to :func:`get_card` and :func:`load_cards` (registering its id
    with Gymnasium is :func:`pomdp_bench.envs.register_card`'s part).

    Raises:
        ValueError: a shipped card has this id.
    """
    if card.id in _shipped_cards():
        raise ValueError(f"{card.id!r} is a shipped env card; give the new env another id (or version)")
    _ADDED[card.id] = card


def load_cards() -> dict[str, EnvCard]:
    """All env cards, keyed by env id: the shipped ones, then those added."""
    return {**_shipped_cards(), **_ADDED}


def current_env_id(env_id: str) -> str:
    """``env_id``, or the id of the version that supersedes it (following ``superseded_by``);
    an id without a known card (an outside env) as it is."""
    if env_id.removeprefix("pomdp_bench:") not in load_cards():
        return env_id
    card = get_card(env_id)
    return env_id if card.superseded_by is None else current_env_id(card.superseded_by)


def get_card(env_id: str) -> EnvCard:
    """The card of ``env_id`` (a ``pomdp_bench:`` prefix is accepted)."""
    env_id = env_id.removeprefix("pomdp_bench:")
    cards = load_cards()
    if env_id not in cards:
        raise ValueError(
            f"no env card for {env_id!r}; known ids: {sorted(cards)}. An env of your own needs a "
            f"card first: pomdp_bench.envs.register_card (examples/new_env.py)"
        )
    return cards[env_id]
