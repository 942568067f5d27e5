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
# A shell word that sets a variable for the command after it (`DEBUG=1 skill-explorer hook`).
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
# The words that end one command of a shell line and start the next (a subshell's too).
_SEPARATORS = frozenset({"&&", "||", ";", ";;", "|", "|&", "&", "(", ")"})
# Programs that run the command after them (`env X=1 …`, `timeout 5 …`, `uv run …`).
_WRAPPERS = frozenset({"env", "exec", "command", "nohup", "nice", "time", "timeout", "uvx"})
_RUNNERS = frozenset({"uv", "pipx"})  # with `run`
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})  # `bash -c '…'`: the string is read too
_DURATION = re.compile(r"\d+(\.\d+)?[smhd]?")  # `timeout 5s`, `nice -n 5`


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


@dataclass(frozen=True)
class WiredCommand:
    """A settings command that runs our hook, read as the shell would split it."""

    text: str
    program: str  # what the shell runs first: `…/skill-explorer`, a python, `uvx`, `bash`
    roots: tuple[str, ...]  # its --skills values, as written


def parse_hook_command(command: str) -> WiredCommand | None:
    """`command` as our hook, or None: `…/skill-explorer hook …` or `python … -m explorer
    hook …`, after `VAR=value` words and wrappers (`env`, `exec`, `timeout 5`, `uvx`,
    `uv run`, `pipx run`), in any one command of a `;`, `&&` or `|` chain or a subshell,
    or in the string of `bash -c`. A command that only names it (`echo skill-explorer
    hook`) does not run it."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # unbalanced quotes: not a command the shell would run either
        return None
    start = 0
    for end in [*(at for at, word in enumerate(words) if word in _SEPARATORS), len(words)]:
        found = _run_by(words[start:end], command)
        if found is not None:
            return found
        start = end + 1
    return None


def _run_by(part: list[str], command: str) -> WiredCommand | None:
    """One command of a shell line as our hook, or None."""
    program = ""
    at = 0
    while at < len(part):
        word = part[at]
        name = os.path.basename(word).lower().removesuffix(".exe")
        skippable = _ASSIGNMENT.fullmatch(word) or (program and word.startswith("-"))
        # timeout's duration, an option's number (`nice -n 5`)
        argument = at and _DURATION.fullmatch(word) and part[at - 1].startswith(("-", "timeout"))
        if skippable or argument or (name == "run" and part[at - 1] in _RUNNERS):
            at += 1
            continue
        program = program or word
        rest = part[at + 1 :]
        if name in _SHELLS and "-c" in rest and rest.index("-c") + 1 < len(rest):
            inner = parse_hook_command(rest[rest.index("-c") + 1])
            return None if inner is None else WiredCommand(command, program, inner.roots)
        if name.startswith("python"):
            options = 0
            while options < len(rest) and rest[options].startswith("-") and rest[options] != "-m":
                options += 1
            rest = rest[options:]
            if rest[:2] != ["-m", "explorer"]:
                return None
            rest = rest[2:]
        elif name != "skill-explorer":
            if name in _WRAPPERS or name in _RUNNERS:
                at += 1
                continue
            return None
        return (
            WiredCommand(command, program, _skills_values(rest[1:]))
            if rest[:1] == ["hook"]
            else None
        )
    return None


def _skills_values(words: list[str]) -> tuple[str, ...]:
    roots = []
    for at, word in enumerate(words):
        if word == "--skills" and at + 1 < len(words):
            roots.append(words[at + 1])
        elif word.startswith("--skills="):
            roots.append(word.removeprefix("--skills="))
    return tuple(roots)


def _our_command(hook: Any) -> WiredCommand | None:
    """A settings hook (one item of a group's `hooks`) as our hook, or None."""
    command = hook.get("command") if isinstance(hook, dict) else None
    return parse_hook_command(command) if isinstance(command, str) else None


def our_commands(entry: Any) -> list[WiredCommand]:
    """The commands of a settings hook group that run skill-explorer's hook."""
    if not isinstance(entry, dict) or not isinstance(entry.get("hooks"), list):
        return []
    return [wired for hook in entry["hooks"] if (wired := _our_command(hook)) is not None]


def runs_our_hook(entry: Any) -> bool:
    """Whether a settings hook group already runs skill-explorer's hook."""
    return bool(our_commands(entry))


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


def merge_hook(
    settings: Any, command: str, path: str = "settings.json", *, replace: bool = False
) -> Merge:
    """`settings` with our entries added for every event not wired yet (a new dict; the
    input is untouched). `command` is the UserPromptSubmit one. `replace`: our commands
    already there go first (every other hook stays), so each event gets `command` anew."""
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
        if replace:
            entries[:] = [kept for entry in entries if (kept := _without_ours(entry))]
        if any(runs_our_hook(entry) for entry in entries):
            continue
        entry: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        entry["hooks"] = [{"type": "command", "command": event_command(command, event)}]
        entries.append(entry)
        added.append(event)
    if not added or merged == settings:  # a replace that writes what was there
        return Merge(settings, ())
    return Merge(merged, tuple(added))


def _without_ours(entry: Any) -> Any:
    """A hook group without the commands that run our hook; None when nothing is left."""
    if not runs_our_hook(entry):
        return entry
    kept = [hook for hook in entry["hooks"] if _our_command(hook) is None]
    return {**entry, "hooks": kept} if kept else None


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


def install_hook(
    path: Path, command: str, *, dry_run: bool = False, replace: bool = False
) -> tuple[Installed, str]:
    """Merge the hook into `path` (`replace`: over our own entries there); returns what
    happened and the resulting text."""
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
    merge = merge_hook(existing, command, str(path), replace=replace)
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


def _hooks(path: Path) -> dict[str, Any] | None:
    """The `hooks` object of a settings file ({} when it has none of that shape); None
    when the file is missing or unreadable."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    return hooks if isinstance(hooks, dict) else {}


def _event_commands(hooks: dict[str, Any], event: str) -> list[WiredCommand]:
    entries = hooks.get(event)
    if not isinstance(entries, list):
        return []
    return [command for entry in entries for command in our_commands(entry)]


def wired_commands(path: Path) -> list[WiredCommand] | None:
    """The UserPromptSubmit commands of `path` that run our hook; None when the file is
    missing or unreadable."""
    hooks = _hooks(path)
    return None if hooks is None else _event_commands(hooks, HOOK_EVENT)


def missing_session_events(path: Path) -> tuple[str, ...]:
    """The session events (§10) `path` does not wire to our hook; () when all are, or when
    the file is missing or unreadable (`wired_commands` says so)."""
    hooks = _hooks(path)
    if hooks is None:
        return ()
    return tuple(event for event in SESSION_EVENTS if not _event_commands(hooks, event))
