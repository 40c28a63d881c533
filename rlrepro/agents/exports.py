"""Lazy package exports (PEP 562) for the agent packages.

``from rlrepro.agents.impala import ImpalaConfig`` still works, but importing one of a package's JAX-free modules
(``rlrepro.agents.impala.config``, as ``rlrepro plan`` and the tables do) no longer runs an ``__init__`` that imports the
learner and networks, and with them JAX: planning stays free of JAX, as the workflow promises.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]) -> tuple[Callable, Callable, list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``: ``exports`` maps a submodule's name to the names it
    exports; a name is imported from its submodule on first use, then kept on the package."""
    where = {name: f"{package}.{module}" for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name]), name)
        setattr(sys.modules[package], name, value)  # found as a plain attribute from now on
        return value

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
