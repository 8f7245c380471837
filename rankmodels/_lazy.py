"""Names a package exports from its submodules, imported on first use (PEP 562), so that
importing one light submodule (a format's constants, a config) does not load the numba,
scipy and xarray stack of its siblings: command-line help needs only the light ones."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """``(__getattr__, __all__)`` for ``package`` exporting ``name`` from submodule
    ``exports[name]`` (a path relative to the package, e.g. ``".io"``)."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    return __getattr__, sorted(exports)
