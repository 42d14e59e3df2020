"""Argument checks shared by envs, memory kinds and agents.

Each check raises ``TypeError`` for a wrong type and ``ValueError`` for a value
out of range, and the message names the argument, the value and what is valid.
"""

from __future__ import annotations

import argparse
import numbers
import sys
from collections.abc import Iterable
from typing import Any


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong type.

    It is both a ``TypeError`` (what Python raises for a wrong type) and a
    ``ValueError`` (what Gymnasium users catch for a bad env kwarg).
    """


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` if it is an integer in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_minimum: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` in ``[minimum, maximum]`` (or ``(minimum, ...`` if strict)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be a number, got {value!r} of type {type(value).__name__}")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        op = ">" if strict_minimum else ">="
        raise ValueError(f"{name} must be {op} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``."""
    choices = list(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (numpy bools included)."""
    if not isinstance(value, (bool,)) and type(value).__name__ != "bool_":
        raise ArgumentTypeError(f"{name} must be a bool, got {value!r} of type {type(value).__name__}")
    return bool(value)


def check_module_name(value: Any, *, what: str = "module") -> str:
    """Return ``value`` if it is a dotted module name (``"popgym"``, ``"mypkg.envs"``).

    Each dot-separated part must be a Python identifier (``str.isidentifier``); nothing
    else is read from it. Use it on a module name that data (a suite, a card, a save)
    asks to import, before importing it.

    Raises:
        ArgumentTypeError: ``value`` is not a string.
        ValueError: ``value`` is not dotted identifiers (the message names it and the
            valid form).
    """
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{what} must be a module name (dotted identifiers, e.g. 'mypkg.envs'), "
            f"got {value!r} of type {type(value).__name__}"
        )
    if not all(part.isidentifier() for part in value.split(".")):
        raise ValueError(
            f"{what} must be a module name: identifiers separated by dots, e.g. 'mypkg.envs'; got {value!r}"
        )
    return value


def check_import_path(value: Any, *, what: str = "import path", attribute: bool = False) -> str:
    """Return ``value`` if it is ``"module:Name"`` (or, unless ``attribute``, ``"module"``).

    ``module`` is dotted identifiers and ``Name`` one identifier (each checked with
    ``str.isidentifier``); nothing else is evaluated. This is the form of a wrapper path
    (``"minigrid.wrappers:ImgObsWrapper"``) and a card's ``entry_point``.

    Args:
        value: the path.
        what: what the path is, for the message (``"wrapper path"``).
        attribute: whether ``":Name"`` is required.

    Raises:
        ArgumentTypeError: ``value`` is not a string.
        ValueError: ``value`` has another form (the message names it and the valid form).
    """
    form = "'module:Name'" if attribute else "'module:Name' or 'module'"
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{what} must be a string of the form {form}, got {value!r} of type {type(value).__name__}"
        )
    module, colon, name = value.partition(":")
    valid = all(part.isidentifier() for part in module.split(".")) and (
        name.isidentifier() if colon else not attribute
    )
    if not valid:
        raise ValueError(
            f"{what} must have the form {form} (dotted identifiers, e.g. "
            f"'minigrid.wrappers:ImgObsWrapper'), got {value!r}"
        )
    return value


class OldOptionName(argparse.Action):
    """An option's old name on a command line: it sets the new option's value and says,
    on stderr, which name to use (``--out`` meant the results store in ``run`` and the
    leaderboards folder in ``report``; each now has one name of its own)."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"{parser.prog}: {option_string} is an old name; use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_old_name(parser: argparse.ArgumentParser, old: str, new: str, dest: str) -> None:
    """Add ``old`` to ``parser`` as the old name of option ``new`` (whose value is ``dest``):
    it still works, and says on stderr which name to use (:class:`OldOptionName`)."""
    parser.add_argument(
        old, dest=dest, action=OldOptionName, new=new, metavar="DIR", help=f"old name of {new}"
    )
