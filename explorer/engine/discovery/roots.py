"""Where the router looks for skills when it is not told (spec §1.2; the reference's roots).

Order, first that gives any root wins: the command line (`--skills DIR` or DIRs),
`$SKILL_EXPLORER_ROOTS`, the reference's `$SKI_ROOTS` (both colon-separated), `roots` in
the config (ours or the reference's config.toml), and last the reference's defaults for
Claude Code: `~/.claude/skills`, `~/.claude/plugins` and `./.claude/skills`, those that
exist (reference: src/config.rs host_roots).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

ROOTS_VARIABLE = "SKILL_EXPLORER_ROOTS"
SKI_ROOTS_VARIABLE = "SKI_ROOTS"


def default_roots(cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """The reference's Claude Code roots, in its order (existing or not)."""
    home = os.path.expanduser("~")
    local = os.path.join(os.fspath(cwd) if cwd else os.getcwd(), ".claude", "skills")
    return [
        os.path.join(home, ".claude", "skills"),
        os.path.join(home, ".claude", "plugins"),
        local,
    ]


def _from_env(name: str) -> list[str]:
    return [part for part in os.environ.get(name, "").split(os.pathsep) if part]


@dataclass(frozen=True)
class Roots:
    """The roots chosen and where they came from (for `doctor` and error messages)."""

    roots: tuple[str, ...]
    source: str  # "command line", "$SKILL_EXPLORER_ROOTS", "$SKI_ROOTS", "config", "defaults"
    looked: tuple[str, ...] = ()  # the default roots considered, when none existed


def resolve_roots(
    cli_roots: Sequence[str],
    config_roots: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> Roots:
    if cli_roots:
        return Roots(tuple(cli_roots), "command line")
    for name in (ROOTS_VARIABLE, SKI_ROOTS_VARIABLE):
        found = _from_env(name)
        if found:
            return Roots(tuple(os.path.expanduser(root) for root in found), f"${name}")
    if config_roots:
        return Roots(tuple(os.path.expanduser(root) for root in config_roots), "config")
    candidates = default_roots(cwd)
    existing = tuple(root for root in candidates if os.path.isdir(root))
    return Roots(existing, "defaults", tuple(candidates))
