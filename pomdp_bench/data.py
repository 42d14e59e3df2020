"""Where the shipped data lives: env cards, tuned settings and suites (YAML)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["data_dir"]

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder of shipped YAML data ``name`` (``"envs"``, ``"agents"``, ``"suites"`` or ``"references"``).

    An installed wheel carries it under ``pomdp_bench/_data``; a source checkout
    (editable install) reads it from the top of the repository.
    """
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"pomdp_bench data folder {name!r} not found next to {_PACKAGE_DIR}")
