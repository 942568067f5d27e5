"""The skill roots a command works on: the ones named on its command line, else the config's."""

from __future__ import annotations

import argparse
import os
import sys

from explorer.engine.config import LoadedConfig


def command_roots(args: argparse.Namespace, loaded: LoadedConfig) -> list[str] | None:
    """--skills DIR or positional DIRs, else `roots` from the config; None after saying so."""
    roots = list(getattr(args, "skills", None) or getattr(args, "dirs", None) or [])
    roots = roots or [os.path.expanduser(root) for root in loaded.config.roots]
    if not roots:
        print(
            "skill-explorer: no skills root: pass --skills DIR (or DIR) or set roots in the config",
            file=sys.stderr,
        )
        return None
    return roots
