"""Wiring the hook into Claude Code's `settings.json`: merged, never clobbered, backed up.

`skill-explorer init` adds three entries that run `skill-explorer hook`: `UserPromptSubmit`
(route the prompt), `PostToolUse` for the `Read` and `Skill` tools (the model loaded a
skill itself: the session ledger notes it) and `SessionStart` (refresh the index; a
compaction re-arms the ledger), as the reference installs them (docs/routing.md §10).
Everything else in the file is kept as it was (key order included); an event that already
runs our hook is left alone, so running init twice changes nothing, and running it over
an older setup adds only the missing events. A file that is not a
JSON object, or whose `hooks` has an unexpected shape, is never rewritten: the error says
what is wrong and where. The previous file is copied to `settings.json.bak` (or `.bak.1`,
`.bak.2`… when a backup already exists) before it is replaced, atomically.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.engine.base.files import write_atomically

HOOK_EVENT = "UserPromptSubmit"
# event -> the tool matcher its entry carries (None: every occurrence of the event)
SESSION_EVENTS: dict[str, str | None] = {"PostToolUse": "Read|Skill", "SessionStart": None}
# `…/skill-explorer hook` (quoted or not) or `python -m explorer hook`
HOOK_RE = re.compile(r"""(skill-explorer['"]?|-m\s+explorer)\s+hook\b""")


class SetupError(ValueError):
    """settings.json cannot be merged safely; the message names the file and the problem."""


def hook_command(roots: list[str] | None = None) -> str:
    """The command Claude Code runs: this installation's program, by absolute path when
    it can be found, so the hook works whatever PATH the host passes on."""
    program = shutil.which("skill-explorer")
    words = [program, "hook"] if program else [sys.executable, "-m", "explorer", "hook"]
    for root in roots or []:
        words += ["--skills", os.path.abspath(os.path.expanduser(root))]
    return shlex.join(words)


def runs_our_hook(entry: Any) -> bool:
    """Whether a settings hook group already runs skill-explorer's hook."""
    if not isinstance(entry, dict):
        return False
    for hook in entry.get("hooks") or []:
        command = hook.get("command") if isinstance(hook, dict) else None
        if isinstance(command, str) and HOOK_RE.search(command):
            return True
    return False


@dataclass(frozen=True)
class Merge:
    settings: dict[str, Any]
    events: tuple[str, ...]  # the events an entry was added for; () when all were wired

    @property
    def added(self) -> bool:
        return bool(self.events)


def event_command(command: str, event: str) -> str:
    """The hook command for `event`: the prompt's as given, the others with --event."""
    return command if event == HOOK_EVENT else f"{command} --event {event}"


def merge_hook(settings: Any, command: str, path: str = "settings.json") -> Merge:
    """`settings` with our entries added for every event not wired yet (a new dict; the
    input is untouched). `command` is the UserPromptSubmit one."""
    if not isinstance(settings, dict):
        raise SetupError(f"{path}: the file must hold a JSON object")
    merged = json.loads(json.dumps(settings))  # a deep copy that keeps key order
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SetupError(f'{path}: "hooks" must be an object')
    added: list[str] = []
    for event, matcher in {HOOK_EVENT: None, **SESSION_EVENTS}.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise SetupError(f'{path}: "hooks.{event}" must be a list')
        if any(runs_our_hook(entry) for entry in entries):
            continue
        entry: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        entry["hooks"] = [{"type": "command", "command": event_command(command, event)}]
        entries.append(entry)
        added.append(event)
    return Merge(merged if added else settings, tuple(added))


@dataclass(frozen=True)
class Installed:
    path: Path
    events: tuple[str, ...]  # the events wired by this call
    backup: Path | None
    command: str


def settings_path(user: bool, cwd: str | os.PathLike[str] | None = None) -> Path:
    """`./.claude/settings.json` (the project), or `~/.claude/settings.json` (user-wide)."""
    base = Path(os.path.expanduser("~")) if user else Path(cwd or os.getcwd())
    return base / ".claude" / "settings.json"


def install_hook(path: Path, command: str, *, dry_run: bool = False) -> tuple[Installed, str]:
    """Merge the hook into `path`; returns what happened and the resulting text."""
    existing: Any = {}
    if path.exists():
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as error:
            raise SetupError(f"{path}: cannot read: {error.strerror}") from error
        try:
            existing = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as error:
            raise SetupError(
                f"{path}:{error.lineno}: not valid JSON ({error.msg}); fix it first"
            ) from error
    merge = merge_hook(existing, command, str(path))
    text = json.dumps(merge.settings, indent=2, ensure_ascii=False) + "\n"
    if not merge.added or dry_run:
        return Installed(path, merge.events, None, command), text
    backup = _backup(path) if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)  # through a symlink to its target, the link kept
    return Installed(path, merge.events, backup, command), text


def _backup(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    number = 0
    while candidate.exists():
        number += 1
        candidate = path.with_name(f"{path.name}.bak.{number}")
    shutil.copy2(path, candidate)
    return candidate


def hook_wired(path: Path) -> bool | None:
    """Whether `path` wires our hook; None when the file is missing or unreadable."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    entries = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    return isinstance(entries, list) and any(runs_our_hook(entry) for entry in entries)


def missing_session_events(path: Path) -> tuple[str, ...]:
    """The session events (§10) `path` does not wire to our hook; () when all are, or when
    the file is missing or unreadable (hook_wired says so)."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return ()
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return tuple(SESSION_EVENTS)
    return tuple(
        event
        for event in SESSION_EVENTS
        if not (
            isinstance(hooks.get(event), list)
            and any(runs_our_hook(entry) for entry in hooks[event])
        )
    )
