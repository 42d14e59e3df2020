"""Card formulas are data (issue 46): arithmetic on kwarg names, read with ``ast``.

A hostile formula is refused when its card is read, at any depth of the object graph,
so a suite that carries one runs nothing, not even its ``--dry-run``.
"""

from __future__ import annotations

import math
import operator
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pomdp_bench.envs import register_card
from pomdp_bench.envs.cards import FORMULA_FIELDS, get_card, implicit_card, load_cards, read_card
from pomdp_bench.formulas import MAX_FORMULA_DEPTH, MAX_FORMULA_LENGTH, check_formula, evaluate_formula
from pomdp_bench.harness import run
from pomdp_bench.harness.suites import expand, load_suite

REPO = Path(__file__).resolve().parents[1]
KWARGS = {"delay": 4, "num_cues": 3, "corridor_length": 10}


def _escape(marker: Path) -> str:
    """A formula that, under the old co_names guard, ran code: the walk of the object
    graph sits inside a comprehension, whose names the outer code object does not list.
    Its payload only creates ``marker``."""
    return (
        "[w for t in [()] for c in t.__class__.__base__.__subclasses__() "
        "if c.__name__ == 'catch_warnings' "
        f"for w in [c()._module.__builtins__['open']({str(marker)!r}, 'w').close()]]"
    )


HOSTILE = {
    "attribute": "delay.real",
    "deep attribute": "().__class__.__base__.__subclasses__()",
    "list comprehension": "[x for x in (1, 2)]",
    "set comprehension": "{x for x in (1, 2)}",
    "dict comprehension": "{x: x for x in (1, 2)}",
    "generator": "sum(x for x in (1, 2))",
    "escape in a comprehension": _escape(Path("/nonexistent/marker")),
    "lambda": "(lambda: 1)()",
    "call": "int(delay)",
    "call of min": "min(delay, 3)",
    "call of abs": "abs(delay)",
    "keyword argument": "max(a=1)",
    "__import__": "__import__('os').system('true')",
    "subscript": "delay[0]",
    "string": "'delay'",
    "string concatenation": "'a' + 'b'",
    "f-string": "f'{delay}'",
    "bytes": "b'1'",
    "walrus": "(x := 1)",
    "starred": "[*delay]",
    "tuple": "(1, 2)",
    "list": "[1]",
    "dict": "{1: 2}",
    "true": "True",
    "bool arithmetic": "delay + True",
    "none": "None",
    "ellipsis": "...",
    "complex literal": "1j",
    "comparison": "delay > 1",
    "chained comparison": "1 < delay < 3",
    "boolean operator": "delay and 1",
    "not": "not delay",
    "conditional": "1 if delay else 2",
    "bit shift": "1 << 100",
    "bit and": "delay & 1",
    "bit invert": "~delay",
    "matrix product": "delay @ delay",
    "unknown name": "delay + steps",
    "builtin name": "len",
    "dunder name": "__builtins__",
    "huge power": "9**9**9",
    "huge float power": "10.0**400",
    "power past int64": "2**63",
    "product past int64": "2**62 * 4",
    "huge literal": "1" * 30,
    "infinite literal": "1e400",
    "float overflow": "1e18 / 1e-300",
    "division by zero": "delay / 0",
    "floor division by zero": "delay // (num_cues - 3)",
    "modulo by zero": "delay % 0",
    "zero to a negative power": "0 ** -1",
    "complex power": "(-8) ** 0.5",
    "200 nested parentheses": "(" * 200 + "delay" + ")" * 200,
    "deep unary chain": "-" * (MAX_FORMULA_DEPTH + 5) + "delay",
    "long sum": " + ".join(["delay"] * 60),
    "10 kB formula": "1 + " * 2500 + "1",
    "syntax error": "delay +",
    "statement": "import os",
    "null byte": "delay\x00",
    "empty parentheses": "()",
}


@pytest.mark.parametrize("formula", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_formula_is_refused_naming_it_the_card_and_what_is_allowed(formula: str) -> None:
    with pytest.raises(ValueError, match="is refused") as err:
        evaluate_formula(formula, KWARGS, card="Hostile-v0", field="memory_horizon_formula")
    message = str(err.value)
    assert "card Hostile-v0" in message and "memory_horizon_formula" in message
    assert repr(formula[:20])[1:-1] in message  # the formula (or its start, if long)
    assert "A formula may hold only numbers" in message


@pytest.mark.parametrize("formula", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_formula_is_refused_when_its_card_is_read(formula: str) -> None:
    card = {**_card_data("Hostile-v0"), "kwargs": dict(KWARGS), "ff_ceiling_formula": formula}
    if formula in _REFUSED_ONLY_WHEN_EVALUATED:
        card = read_card(card)  # arithmetic that fails on values: refused when evaluated
        with pytest.raises(ValueError, match="is refused"):
            card.ceiling_for()
        return
    with pytest.raises(ValueError, match=r"card Hostile-v0: ff_ceiling_formula .* is refused"):
        read_card(card)


# Well-formed arithmetic whose values fail: refused when evaluated, never computed unbounded.
_REFUSED_ONLY_WHEN_EVALUATED = {
    HOSTILE[k]
    for k in (
        "huge power",
        "huge float power",
        "power past int64",
        "product past int64",
        "float overflow",
        "division by zero",
        "floor division by zero",
        "modulo by zero",
        "zero to a negative power",
        "complex power",
    )
}


def test_the_hostile_corpus_covers_what_the_issue_names() -> None:
    assert len(HOSTILE["10 kB formula"]) >= 10_000 > MAX_FORMULA_LENGTH
    assert len(HOSTILE) == len(set(HOSTILE.values()))


def _card_data(env_id: str) -> dict:
    return {
        "id": env_id,
        "entry_point": "",
        "vector_entry_point": None,
        "kwargs": {},
        "max_episode_steps": None,
        "observation": "o",
        "action": "a",
        "reward": "r",
        "termination": "t",
        "truncation": "t",
        "memory_horizon": 1,
        "optimal_return": 1.0,
        "ff_ceiling": 0.5,
        "ff_ceiling_source": "analytic",
        "ff_ceiling_derivation": "d",
    }


@pytest.mark.parametrize(
    ("env_id", "env_kwargs", "horizon", "length", "ceiling"),
    [
        ("TMaze-v0", {}, 10, 11, 0.5),
        ("TMaze-v1", {}, 10, 11, 0.5),
        ("TMaze-v1", {"corridor_length": 40}, 40, 41, 0.5),
        ("TMazeActive-v0", {"corridor_length": 7}, 8, 10, 0.5),
        ("TMazeActive-v1", {}, 11, 13, 0.5),
        ("CueRecall-v0", {}, 11, 12, 0.25),
        ("CueRecall-v0", {"delay": 30, "num_cues": 8}, 31, 32, 0.125),
        ("CueRecall-v0", {"num_cues": 3}, 11, 12, 1 / 3),
        ("KeyToDoor-v0", {}, 85, 85, math.nan),  # no ceiling: its card says why
        ("KeyToDoor-v0", {"distractor": 250}, 275, 275, math.nan),
    ],
)
def test_every_shipped_formula_gives_its_value(env_id, env_kwargs, horizon, length, ceiling) -> None:
    card = get_card(env_id)
    assert card.horizon_for(env_kwargs) == horizon
    assert card.episode_length_for(env_kwargs) == length
    got = card.ceiling_for(env_kwargs)
    assert got == ceiling or (math.isnan(got) and math.isnan(ceiling))  # exactly: the same arithmetic


def test_every_shipped_formula_is_checked_and_covered_above() -> None:
    formulas = {
        (card.id, field): getattr(card, field)
        for card in load_cards().values()
        for field in FORMULA_FIELDS
        if getattr(card, field)
    }
    assert len(formulas) == 13  # a new one needs a row in the test above
    for (env_id, field), formula in formulas.items():
        check_formula(formula, get_card(env_id).kwargs, card=env_id, field=field)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("delay + 1", 5),
        ("-delay + +2", -2),
        ("(delay - 1) * (num_cues + 2)", 15),
        ("1 / num_cues", 1 / 3),
        ("7 // 2 % 2", 1),
        ("-7 // 2", -4),
        ("2 ** -1", 0.5),
        ("2 ** 62 + (2 ** 62 - 1)", 2**63 - 1),
        ("0.5 * corridor_length", 5.0),
        ("1e3", 1000.0),
    ],
)
def test_arithmetic_is_pythons(formula: str, expected: float) -> None:
    value = evaluate_formula(formula, KWARGS, card="C", field="f")
    assert value == expected and type(value) is type(expected)


_OPS: dict[str, Callable[[int, int], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
}


_INT64_MAX = 2**63 - 1


@st.composite
def _expressions(draw: st.DrawFn, depth: int = 0) -> tuple[str, float | None, float]:
    """A formula on small ints and ``delay``, with its value by Python's operators (None
    where Python divides by zero) and the largest magnitude of any value on the way."""
    if depth >= 3 or draw(st.booleans()):
        if draw(st.booleans()):
            return "delay", KWARGS["delay"], KWARGS["delay"]
        n = draw(st.integers(-9, 9))
        return (f"({n})" if n < 0 else str(n)), n, abs(n)
    if draw(st.booleans()):
        text, value, biggest = draw(_expressions(depth + 1))
        return f"-({text})", None if value is None else -value, biggest
    op = draw(st.sampled_from(sorted(_OPS)))
    left, a, big_a = draw(_expressions(depth + 1))
    right, b, big_b = draw(_expressions(depth + 1))
    if op == "**":  # a small exponent: Python computes it at once
        b = big_b = draw(st.integers(0, 3))
        right = str(b)
    biggest = max(big_a, big_b)
    if a is None or b is None or biggest > _INT64_MAX:
        return f"({left}) {op} ({right})", None, biggest
    try:
        value = _OPS[op](a, b)
    except ZeroDivisionError:
        return f"({left}) {op} ({right})", None, biggest
    return f"({left}) {op} ({right})", value, max(biggest, abs(value))


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_valid_arithmetic_agrees_with_python(case: tuple[str, float | None, float]) -> None:
    formula, expected, biggest = case
    if expected is None or biggest > _INT64_MAX:  # Python divides by zero, or leaves int64
        with pytest.raises(ValueError, match=r"divides by zero|int64"):
            evaluate_formula(formula, KWARGS, card="C", field="f")
        return
    value = evaluate_formula(formula, KWARGS, card="C", field="f")
    assert value == expected and type(value) is type(expected)


def test_kwarg_values_must_be_numbers() -> None:
    card = get_card("CueRecall-v0")
    for bad in ("5", True, None, [5]):
        with pytest.raises(ValueError, match=r"the kwarg delay = .* is not a number"):
            card.horizon_for({"delay": bad})


def test_a_name_must_be_one_of_the_cards_kwargs() -> None:
    data = {**_card_data("Names-v0"), "kwargs": {"delay": 3}, "memory_horizon_formula": "delay + steps"}
    with pytest.raises(ValueError, match=r"the name 'steps' is not one of the card's kwargs.*\['delay'\]"):
        read_card(data)
    assert read_card({**data, "memory_horizon_formula": "delay + 1"}).horizon_for({"delay": 6}) == 7


def test_a_formula_must_be_a_string() -> None:
    with pytest.raises(ValueError, match="it must be a string, got int"):
        read_card({**_card_data("Number-v0"), "memory_horizon_formula": 5})


def test_register_card_and_implicit_card_refuse_a_hostile_formula() -> None:
    data = {**_card_data("HostileRegister-v0"), "memory_horizon_formula": "().__class__"}
    with pytest.raises(ValueError, match="HostileRegister-v0: memory_horizon_formula"):
        register_card(data)
    assert "HostileRegister-v0" not in gym.registry and "HostileRegister-v0" not in load_cards()
    with pytest.raises(ValueError, match="CartPole-v1: episode_length_formula"):
        implicit_card("CartPole-v1", {"episode_length_formula": "[x for x in ()]"})


def _hostile_suite(tmp_path: Path, marker: Path, field: str = "memory_horizon_formula") -> Path:
    suite = {
        "name": "hostile",
        "seeds": 1,
        "groups": [
            {
                "agent": "ppo",
                "memory": ["none"],
                "envs": [
                    {
                        "id": "CartPole-v1",
                        "steps": 10,
                        "card": {"optimal_return": 500.0, field: _escape(marker)},
                    }
                ],
            }
        ],
    }
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_a_suite_with_a_hostile_inline_card_runs_nothing_not_even_its_dry_run(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    suite = _hostile_suite(tmp_path, marker)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-m", "pomdp_bench.run", "--suite", str(suite), "--dry-run"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert out.returncode != 0
    assert "memory_horizon_formula" in out.stderr and "is refused" in out.stderr
    assert "CartPole-v1" not in out.stdout  # no run was listed
    assert not marker.exists()


@pytest.mark.parametrize("field", FORMULA_FIELDS)
def test_the_suite_is_refused_when_it_is_read_before_any_import(tmp_path: Path, field: str) -> None:
    marker = tmp_path / "marker"
    path = _hostile_suite(tmp_path, marker, field)
    with pytest.raises(ValueError, match=f"hostile.yaml group 0 env CartPole-v1: .*{field}"):
        load_suite(str(path))
    with pytest.raises(SystemExit) as exit_:
        run.main(["--suite", str(path), "--dry-run"])
    assert exit_.value.code != 0
    assert not marker.exists()


def test_a_hostile_card_in_a_cards_folder_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = tmp_path / "cards"
    folder.mkdir()
    card = {**_card_data("HostileFolder-v0"), "ff_ceiling_formula": _escape(marker)}
    (folder / "HostileFolder-v0.yaml").write_text(yaml.safe_dump(card))
    with pytest.raises(ValueError, match="HostileFolder-v0: ff_ceiling_formula"):
        expand(load_suite("smoke"), cards=folder)
    assert not marker.exists()
