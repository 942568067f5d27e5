"""The skill roots a command works on (engine/discovery/roots.py gives the order)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from explorer.engine import LoadedConfig
from explorer.engine.discovery import resolve_roots


def command_roots(args: argparse.Namespace, loaded: LoadedConfig) -> list[str] | None:
    """--skills DIR or positional DIRs, else $SKILL_EXPLORER_ROOTS, $SKI_ROOTS, the config's
    roots, or the reference's default roots that exist; None after saying so."""
    named = [*(getattr(args, "dirs", None) or []), *(getattr(args, "skills", None) or [])]
    found = resolve_roots(named, loaded.config.roots)
    if not found.roots:
        looked = ", ".join(found.looked)
        positional = " (or DIR)" if hasattr(args, "dirs") else ""
        print(
            f"skill-explorer: no skills root: pass --skills DIR{positional}, set roots in the "
            "config, $SKILL_EXPLORER_ROOTS or $SKI_ROOTS; none of the default roots exists "
            f"({looked})",
            file=sys.stderr,
        )
        return None
    return list(found.roots)


def watchable(roots: Sequence[str]) -> bool:
    """Whether any root exists (a directory, or one SKILL.md): when none does there is
    nothing to watch or explore, and a root made later would never be seen."""
    return any(os.path.exists(root) for root in roots)
