"""Card formulas as data: arithmetic on an env's kwargs, never Python code.

A card may compute a fact from the env's kwargs (``memory_horizon_formula: delay + 1``,
``ff_ceiling_formula: 1 / num_cues``). A card can come from any suite file or
``--cards`` folder, so a formula is read as data: :func:`check_formula` parses it with
:mod:`ast` and accepts only

- numbers (``int`` or ``float``; not ``bool``, not complex),
- names of the env's kwargs,
- the binary operators ``+ - * / // % **``, unary ``+`` and ``-``, and parentheses.

Anything else (attribute access, calls, subscripts, comprehensions, lambdas, strings,
comparisons, ...) is refused with a ``ValueError`` that names the formula, the card and
what is allowed. :func:`evaluate_formula` walks the checked tree with plain arithmetic;
no formula reaches ``eval``. Sizes are bounded: a formula holds at most
:data:`MAX_FORMULA_LENGTH` characters and :data:`MAX_FORMULA_DEPTH` levels of nesting,
and every value, literals and intermediates included, must be finite and within int64's
range (a power is refused before it is computed when its result would not be).
"""

from __future__ import annotations

import ast
import math
import numbers
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

#: The longest formula accepted, in characters.
MAX_FORMULA_LENGTH = 1000
#: The deepest formula tree accepted (``delay + 1`` is 3 levels: expression, ``+``, operands).
MAX_FORMULA_DEPTH = 32
#: The largest magnitude of any value in a formula (int64's maximum).
MAX_MAGNITUDE = 2**63 - 1

#: What a formula may hold, for error messages.
ALLOWED = (
    "A formula may hold only numbers (int or float), the card's kwarg names, the operators "
    "+ - * / // % **, unary + and -, and parentheses"
)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}

Number = int | float


class _Refused(Exception):
    """A reason to refuse a formula; turned into a ``ValueError`` naming it."""


def check_formula(formula: Any, names: Collection[str], *, card: str, field: str) -> ast.Expression:
    """Parse ``formula`` and check that it is arithmetic on ``names`` only.

    Call it when a card is read, so that a bad formula fails before anything runs.

    Args:
        formula: the formula text, e.g. ``"corridor_length + 1"``.
        names: the names it may use (the card's kwargs).
        card: the card's env id, for the message.
        field: the card field holding the formula (``memory_horizon_formula``, ...), for
            the message.

    Returns:
        the checked tree, for :func:`evaluate_formula`.

    Raises:
        ValueError: ``formula`` is not a string, is too long or too deep, does not parse,
            or holds anything but numbers, ``names``, ``+ - * / // % **``, unary ``+ -``
            and parentheses. The message names the formula, the card and what is allowed.
    """
    try:
        return _parse(formula, frozenset(names))
    except _Refused as reason:
        raise ValueError(_message(formula, card, field, str(reason), names)) from None


def evaluate_formula(formula: Any, values: Mapping[str, Any], *, card: str, field: str) -> Number:
    """The value of ``formula`` (arithmetic on kwarg names) for the kwargs ``values``.

    The arithmetic is Python's (``1 / 4`` is ``0.25``, ``7 // 2`` is ``3``), on ``int``
    and ``float`` only, so a shipped formula gives what ``eval`` gave.

    Args:
        formula: the formula text; checked as :func:`check_formula` does, with the names
            of ``values`` allowed.
        values: the kwargs by name (the card's, updated with a run's ``env_kwargs``).
            Each one the formula uses must be an ``int`` or a ``float`` (not a ``bool``).
        card: the card's env id, for messages.
        field: the card field holding the formula, for messages.

    Returns:
        the value, an ``int`` or a ``float``.

    Raises:
        ValueError: the formula is refused (:func:`check_formula`), a kwarg it uses is not
            a finite number within int64's range, it divides by zero, or a value (a
            power's result included) would leave int64's range or be infinite or NaN.
    """
    tree = check_formula(formula, values.keys(), card=card, field=field)
    try:
        return _evaluate(tree.body, values)
    except _Refused as reason:
        raise ValueError(_message(formula, card, field, str(reason), values.keys())) from None


def _message(formula: Any, card: str, field: str, reason: str, names: Collection[str]) -> str:
    shown = formula if not isinstance(formula, str) or len(formula) <= 80 else formula[:77] + "..."
    return (
        f"card {card}: {field} {shown!r} is refused: {reason}. {ALLOWED} "
        f"(this card's kwargs: {sorted(names)})"
    )


def _parse(formula: Any, names: frozenset[str]) -> ast.Expression:
    if not isinstance(formula, str):
        raise _Refused(f"it must be a string, got {type(formula).__name__}")
    if len(formula) > MAX_FORMULA_LENGTH:
        raise _Refused(f"it is {len(formula)} characters long, the most is {MAX_FORMULA_LENGTH}")
    deepest, open_brackets = 0, 0
    for char in formula:  # brackets add no tree level, so they are counted here
        open_brackets += (char in "([{") - (char in ")]}")
        deepest = max(deepest, open_brackets)
    if deepest > MAX_FORMULA_DEPTH:
        raise _Refused(f"it nests brackets deeper than {MAX_FORMULA_DEPTH} levels")
    try:
        tree = ast.parse(formula.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise _Refused(f"it is not an expression ({type(err).__name__}: {err})") from None
    # Depth first, without recursion, so that a deep tree is refused before it is walked.
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_FORMULA_DEPTH:
            raise _Refused(f"it nests deeper than {MAX_FORMULA_DEPTH} levels")
        _check_node(node, names)
        stack.extend((child, depth + 1) for child in _children(node))
    return tree


def _children(node: ast.AST) -> list[ast.AST]:
    """The operands of an accepted node (operators and contexts are not walked)."""
    if isinstance(node, ast.Expression):
        return [node.body]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    return []


def _check_node(node: ast.AST, names: frozenset[str]) -> None:
    if isinstance(node, ast.Expression):
        return
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise _Refused(f"the operator {type(node.op).__name__} is not allowed")
        return
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise _Refused(f"the unary operator {type(node.op).__name__} is not allowed")
        return
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Refused(f"the constant {value!r} ({type(value).__name__}) is not a number")
        _check_value(value, f"the number {value!r}")
        return
    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load) or node.id not in names:
            raise _Refused(f"the name {node.id!r} is not one of the card's kwargs")
        return
    raise _Refused(f"{type(node).__name__} ({_source(node)}) is not allowed")


def _source(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_value(value: Number, label: str) -> Number:
    """``value`` if it is finite and within int64's range; ``label`` names it in the message."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _Refused(f"{label} is not finite")
    if abs(value) > MAX_MAGNITUDE:
        raise _Refused(f"{label} exceeds int64's range (magnitude at most 2**63 - 1)")
    return value


def _evaluate(node: ast.AST, values: Mapping[str, Any]) -> Number:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = values[node.id]
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _Refused(f"the kwarg {node.id} = {value!r} is not a number")
        value = value if isinstance(value, (int, float)) else _plain(value)
        return _check_value(value, f"the kwarg {node.id} = {value!r}")
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values))
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        shown = f"{_show(left)} {_symbol(node.op)} {_show(right)}"
        if isinstance(node.op, ast.Pow):
            _check_power(left, right, shown)
        try:
            result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise _Refused(f"it divides by zero ({shown})") from None
        except OverflowError:
            raise _Refused(f"{shown} overflows") from None
        if isinstance(result, complex):
            raise _Refused(f"{shown} is a complex number")
        return _check_value(result, f"{shown} = {result!r}")
    raise _Refused(f"{type(node).__name__} is not allowed")  # never: check_formula refused it


def _plain(value: numbers.Real) -> Number:
    """A numpy or other ``numbers.Real`` as a Python ``int`` or ``float``."""
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _show(value: Number) -> str:
    return f"({value!r})" if value < 0 else repr(value)


def _check_power(base: Number, exponent: Number, shown: str) -> None:
    """Refuse ``base ** exponent`` before computing it when its magnitude would pass
    2**64 (the exact bound, 2**63 - 1, is checked on the result)."""
    if base == 0:
        if exponent < 0:
            raise _Refused(f"it divides by zero ({shown})")
        return
    if abs(base) == 1:
        return
    bits = exponent * math.log2(abs(base))  # log2 of the result's magnitude
    if bits > 64:
        raise _Refused(f"{shown} would exceed int64's range (refused before computing it)")


def _symbol(op: ast.operator) -> str:
    return {
        ast.Add: "+",
        ast.Sub: "-",
        ast.Mult: "*",
        ast.Div: "/",
        ast.FloorDiv: "//",
        ast.Mod: "%",
        ast.Pow: "**",
    }[type(op)]


__all__ = [
    "ALLOWED",
    "MAX_FORMULA_DEPTH",
    "MAX_FORMULA_LENGTH",
    "MAX_MAGNITUDE",
    "check_formula",
    "evaluate_formula",
]
