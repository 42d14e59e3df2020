"""Bringing outside code in: the modules a suite, a command line or a save names.

Importing a module runs its code, as ``pip install`` does. A module registers what it
brings (a memory kind with :func:`~pomdp_bench.memory.register_memory`, an agent, an env)
when it is imported, so every process that builds a run imports it first: the sweep's
own process and each worker (:attr:`~pomdp_bench.harness.spec.RunSpec.imports`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from pomdp_bench.validation import check_module_name


def import_modules(modules: Iterable[str], *, what: str = "module") -> None:
    """Import each of ``modules`` (dotted names) in turn.

    Raises:
        ValueError: a name that is not dotted identifiers, or a module that fails to
            import (the message names the module and its error).
    """
    for module in modules:
        check_module_name(module, what=what)
        try:
            importlib.import_module(module)
        except Exception as err:  # any error of the module's own code stops here, named
            raise ValueError(
                f"{what} {module!r} does not import: {type(err).__name__}: {err}. "
                "Is it on PYTHONPATH (or installed), and does it import on its own?"
            ) from err


def split_source(name: str) -> tuple[str | None, str]:
    """``"module:name"`` as ``("module", "name")``; a bare ``"name"`` as ``(None, "name")``.

    Raises:
        ValueError: a module part that is not dotted identifiers.
    """
    if ":" not in name:
        return None, name
    module, bare = name.split(":", 1)
    check_module_name(module, what=f"{name!r}: the module before ':'")
    return module, bare
