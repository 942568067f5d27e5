"""Lazy public names for the engine's packages (PEP 562).

A package's public name is looked up in its module the first time it is asked for, so
importing the engine (the hook's process, `explorer/__init__` before numpy: base/threads.py)
costs nothing until a name is used. Engine modules import each other's modules directly.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

MODULE = "<module>"  # a table value for a public name that is the room's module itself


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: public name -> the module (relative to
    `package`) that defines it, or MODULE."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if where == MODULE:
            value = importlib.import_module(f"{package}.{name}")
        else:
            value = getattr(importlib.import_module(f"{package}.{where}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(table) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
