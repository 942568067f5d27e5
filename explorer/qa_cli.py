"""QA commands (eval, calibrate, lint): thin adapters over the engine's QA modules."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from explorer.engine.config import LoadedConfig

Handler = Callable[[argparse.Namespace, LoadedConfig], int]
HANDLERS: dict[str, Handler] = {}


def add_commands(commands: argparse._SubParsersAction, common: Callable[..., None]) -> None:
    """Register the QA subcommands; `common` adds the shared --config/--set/... options."""
