"""C++ fast paths built on first use: one extension per kernel, with the reason where it
cannot be built and the one warning of its fallback.

gru's and mamba's C++ paths (:mod:`gru_cpp`, :mod:`mamba_cpp`) are each an
:class:`InlineExtension`: torch's ``cpp_extension.load_inline`` with the system's C++
compiler and ``ninja``, ``-O3`` and no ``-march``, so the loops take the same path on any
x86-64 CPU. torch caches a build across processes.
"""

from __future__ import annotations

import warnings
from typing import Any


class InlineExtension:
    """A C++ extension from ``source`` exporting ``functions``, built once per process by
    :meth:`load`.

    Attributes:
        module: the built extension; ``None`` before :meth:`load` or where it failed.
        why_not: why the build failed (the first error line); ``None`` otherwise.
    """

    def __init__(self, name: str, source: str, functions: list[str]) -> None:
        self.name, self.source, self.functions = name, source, functions
        self.module: Any = None
        self.why_not: str | None = None

    def load(self) -> Any:
        """The built extension, or ``None`` where it cannot be built (:attr:`why_not`)."""
        if self.module is None and self.why_not is None:
            try:
                from torch.utils.cpp_extension import load_inline

                self.module = load_inline(
                    self.name,
                    cpp_sources=self.source,
                    functions=self.functions,
                    extra_cflags=["-O3"],
                    verbose=False,
                )
            except Exception as err:  # no compiler, no ninja, no headers: say which
                lines = [line for line in str(err).splitlines() if "error" in line.lower()] or [str(err)]
                self.why_not = f"{type(err).__name__}: {lines[0].strip()[:300]}"
        return self.module

    def warn_fallback(self, kind: str, default: str, note: str) -> None:
        """The one warning of a ``kind`` whose ``kernel: cpp`` cannot run here: it runs its
        ``default`` kernel instead (``note`` says what that is)."""
        warnings.warn(
            f"{kind}: {kind}'s kernel 'cpp' cannot run here ({self.why_not}); {kind} runs {note} "
            f"(kernel {default!r}), whose numbers differ slightly",
            RuntimeWarning,
            stacklevel=3,
        )
