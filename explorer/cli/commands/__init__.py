"""The registry of subcommands: name -> the module that implements it, in help order.

Each module holds one Command subclass, a thin adapter: parse arguments, call the
engine, render. A new command is a new module plus one line here.
"""

from __future__ import annotations

import importlib
from functools import cache

from explorer.cli.base import Command

# name -> (module under explorer.cli.commands, class); the order is the order of --help.
REGISTRY: dict[str, tuple[str, str]] = {
    "route": ("route", "RouteCommand"),
    "why": ("why", "WhyCommand"),
    "hook": ("hook", "HookCommand"),
    "index": ("index", "IndexCommand"),
    "bench": ("bench", "BenchCommand"),
    "explore": ("explore", "ExploreCommand"),
    "watch": ("watch", "WatchCommand"),
    "eval": ("evaluate", "EvalCommand"),
    "calibrate": ("calibrate", "CalibrateCommand"),
    "tune": ("tune", "TuneCommand"),
    "lint": ("lint", "LintCommand"),
    "history": ("history", "HistoryCommand"),
    "init": ("init", "InitCommand"),
    "doctor": ("doctor", "DoctorCommand"),
    "trust": ("trust", "TrustCommand"),
}


@cache
def create_command(name: str) -> Command:
    """The command called `name` (KeyError for an unknown name)."""
    module_name, class_name = REGISTRY[name]
    module = importlib.import_module(f"explorer.cli.commands.{module_name}")
    command: Command = getattr(module, class_name)()
    if command.name != name:
        raise RuntimeError(f"{module.__name__}.{class_name} is called {command.name!r}")
    return command
