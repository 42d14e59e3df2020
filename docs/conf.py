"""Sphinx configuration of the pomdp-bench docs (``make docs``; CI builds them with -W -n)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))

project = "pomdp-bench"
author = "pomdp-bench developers"
copyright = "2026, pomdp-bench developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "pomdp_docs",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_theme = "furo"
html_title = "pomdp-bench"

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Attributes as fields, not object entries: dataclass fields are not documented twice.
napoleon_use_ivar = True

# The build is offline: no intersphinx. Names from other libraries in the docstrings
# (numpy, torch, Gymnasium, pandas, the standard library) cannot resolve, so -n ignores them.
nitpick_ignore_regex = [
    (r"py:.*", r"(np|numpy|torch|nn|gym|gymnasium|pd|pandas|optuna|ray|scipy|sqlite3|yaml)(\..*)?"),
    (r"py:.*", r"(collections|typing|pathlib|dataclasses|os|argparse|abc|enum|contextlib)\..*"),
    # The API page documents a selection: a docstring may name a helper it leaves out.
    (r"py:.*", r"pomdp_bench\..*"),
    (r"py:.*", r"(Memory|MemoryConfig\.from_any|new_owner|StoreError|StopRule|EnvCard)"),
    (r"py:class", r"The id to build the env from"),
    (
        r"py:class",
        r"(Path|Any|Callable|Iterable|Iterator|Mapping|Sequence|Tensor|ndarray|Env|VectorEnv|Space|optional)",
    ),
]
