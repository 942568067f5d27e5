"""The Claude Code `UserPromptSubmit` hook (spec §7): fail open, never block a prompt.

`answer_hook` turns the host's stdin into a `HookAnswer`: the JSON payload to print (or
None for silence) and what may be said on stderr. It prints nothing itself; the `hook`
command writes the answer and always exits 0. It reads the persistent embedding cache,
so a prompt costs one query embedding plus parsing the library, never a re-embedding
of every description.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from explorer.engine.base.config import Config, load_config, user_state_dir
from explorer.engine.base.text import counted, scrub_surrogates
from explorer.engine.discovery.roots import ROOTS_VARIABLE, SKI_ROOTS_VARIABLE, resolve_roots
from explorer.engine.discovery.skills import SKILL_FILE, Skill, load_skill
from explorer.engine.host.telemetry import (
    CONSIDERED_TOP_K,
    ENABLE_VARIABLE,
    PROMPTS_VARIABLE,
    REFERENCE_ENABLE_VARIABLE,
    TELEMETRY_FILE,
    Ranked,
    TelemetryLog,
    switched_on,
)
from explorer.engine.host.trust import project_trust
from explorer.engine.index.opening import open_cache, open_engine, open_library
from explorer.engine.index.snapshot import BUDGET_NOTE, Index
from explorer.engine.index.store import prevalidate
from explorer.engine.route.decision import Decision, GateName, InjectionMode
from explorer.engine.route.pipeline import decide
from explorer.engine.route.session import LedgerUnavailable, Session, SessionStore

CONTROL_PREFIXES = ("<task-notification", "<system-reminder")
NO_ROOTS = (
    f"no skill roots (--skills, ${ROOTS_VARIABLE}, ${SKI_ROOTS_VARIABLE}, roots, "
    "or the default ~/.claude/skills, ~/.claude/plugins, ./.claude/skills)"
)


def is_control_payload(prompt: str) -> bool:
    """A message the host sends as a prompt that no user typed (a task notification, a
    system reminder): the hook routes none of them (docs/routing.md §7)."""
    return prompt.lstrip().startswith(CONTROL_PREFIXES)


def hook_output(context: str) -> dict[str, Any]:
    """The JSON a UserPromptSubmit hook prints to add `context` to the prompt."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": context,
        }
    }


@dataclass(frozen=True)
class HookAnswer:
    """What one hook call says: to the host (`payload`) and to a person (stderr lines)."""

    payload: dict[str, Any] | None = None  # None: print nothing, the prompt goes on as is
    warnings: tuple[str, ...] = ()  # always shown: a config the user wrote is being ignored
    debug: tuple[str, ...] = ()  # shown only with `hook -v` or SKILL_EXPLORER_DEBUG=1

    def stderr_lines(self, debug: bool) -> tuple[str, ...]:
        return (*self.warnings, *self.debug) if debug else self.warnings


class HookEvent(StrEnum):
    """The host events the hook answers (Claude Code's `hook_event_name`)."""

    PROMPT = "UserPromptSubmit"  # route the prompt (§7)
    TOOL_USED = "PostToolUse"  # observe: the model loaded a skill itself (§10)
    SESSION_START = "SessionStart"  # refresh the index; a compaction re-arms the ledger (§10)


def answer_hook(
    stdin_text: str,
    *,
    event: str | None = None,
    cli_roots: Sequence[str] = (),
    config_file: str | None = None,
    assignments: Sequence[str] = (),
    use_ski_config: bool = True,
    cache_dir: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    started: float | None = None,
) -> HookAnswer:
    """Answer one hook call. Never raises: any failure is a silent answer (§7).

    The event is `event` when given (`hook --event`), else the payload's
    `hook_event_name`, else UserPromptSubmit (hosts that do not name it). The time budget
    (`hook_budget_ms`) runs from `started` (time.monotonic(); default: now).
    """
    started = time.monotonic() if started is None else started
    warnings: tuple[str, ...] = ()
    try:
        payload = json.loads(stdin_text.removeprefix("\ufeff"))  # a BOM some shells write
        if not isinstance(payload, dict):
            return HookAnswer(debug=("the payload is not a JSON object",))
        name = event or payload.get("hook_event_name") or HookEvent.PROMPT
        try:
            kind = HookEvent(name)
        except ValueError:
            return HookAnswer(debug=(f"event {name!r} is not one the hook answers",))
        cwd = payload.get("cwd")
        workdir = cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None
        project = project_dir(workdir)
        loaded = load_config(
            config_file,
            assignments,
            use_ski_config=use_ski_config,
            cwd=project,
            strict=False,
            trust=project_trust(),  # a cloned repository's config waits for the user's trust
        )
        warnings = tuple(loaded.warnings)
        call = _Call(
            payload,
            loaded.config,
            workdir,
            project,
            Path(state_dir) if state_dir else user_state_dir(),
            cli_roots,
            cache_dir,
            started + loaded.config.hook_budget_ms / 1000,
        )
        if kind is HookEvent.TOOL_USED:
            return HookAnswer(warnings=warnings, debug=_observe(call))
        if kind is HookEvent.SESSION_START:
            return HookAnswer(warnings=warnings, debug=_session_start(call))
        output, debug = _route(call)
        return HookAnswer(output, warnings, debug)
    except Exception as error:  # fail open (§7)
        return HookAnswer(warnings=warnings, debug=(f"{type(error).__name__}: {error}",))


PROJECT_VARIABLE = "CLAUDE_PROJECT_DIR"  # Claude Code's project root, set for every hook


def project_dir(workdir: str | None) -> str | None:
    """The project's root: `$CLAUDE_PROJECT_DIR` when it names a directory, else the event's
    cwd. The agent's cwd follows its `cd`s into subdirectories, where the project's
    skill-explorer.toml and ./.claude/skills are not."""
    root = os.environ.get(PROJECT_VARIABLE, "")
    return root if root and os.path.isdir(root) else workdir


@dataclass(frozen=True)
class _Call:
    """One hook call's inputs, shared by the three events."""

    payload: dict[str, Any]
    config: Config
    workdir: str | None  # the event's cwd: the project channel's manifests walk up from it
    project: str | None  # project_dir: its skill-explorer.toml and ./.claude/skills
    state_dir: Path
    cli_roots: Sequence[str]
    cache_dir: str | None
    deadline: float  # time.monotonic() at which the budget ends: no new embedding after it

    @property
    def session_id(self) -> str:
        value = self.payload.get("session_id")
        return value if isinstance(value, str) else ""

    @property
    def ledger(self) -> SessionStore | None:
        """The session's store, or None when the host sent no session id."""
        return SessionStore(self.state_dir / "sessions") if self.session_id else None

    def telemetry(self) -> TelemetryLog | None:
        config = self.config
        if not switched_on(config.telemetry, ENABLE_VARIABLE) and not switched_on(
            False, REFERENCE_ENABLE_VARIABLE
        ):
            return None
        keep = switched_on(config.telemetry_prompts, PROMPTS_VARIABLE)
        return TelemetryLog(self.state_dir / TELEMETRY_FILE, keep_prompts=keep)

    def roots(self) -> list[str]:
        return list(resolve_roots(self.cli_roots, self.config.roots, cwd=self.project).roots)


def _route(call: _Call) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """UserPromptSubmit: decide with the session's ledger and window; record the turn."""
    prompt = call.payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None, ("no prompt in the payload",)
    prompt = scrub_surrogates(prompt)  # kept in the ledger and the telemetry as UTF-8
    if is_control_payload(prompt):
        return None, ("control payload ignored",)
    roots = call.roots()
    if not roots:
        return None, (NO_ROOTS,)
    notes: list[str] = []
    store, depth = call.ledger, call.config.context_depth
    ledger = None
    if store is not None:
        try:
            ledger = store.load(call.session_id)
        except LedgerUnavailable as error:  # route without it: never block the prompt
            notes.append(f"session ledger skipped: {error}")
    cache = open_cache(call.config, call.cache_dir)
    pending = prevalidate(roots, call.config, cache)  # stat the library while the model loads
    engine = open_engine(call.config, cache=cache)
    index = open_library(
        roots, call.config, engine=engine, persisted=True, pending=pending, deadline=call.deadline
    )
    # Past the budget the index has no dense model and no reranker (snapshot.lexical_only).
    cut_short = next((note for note in index.notes if note.startswith(BUDGET_NOTE)), "")
    context = tuple(ledger.recent_prompts[-depth:]) if ledger is not None and depth > 0 else ()
    # §3.5: the working directory and the recent turns feed the project and file channels
    # (src/hook.rs); §10: the ledger holds back what the conversation already has.
    decision = decide(prompt, index, call.config, context=context, cwd=call.workdir, ledger=ledger)
    if store is not None and ledger is not None:

        def record(session: Session) -> None:
            session.push_prompt(prompt, depth)
            for injection in decision.injected:
                session.mark_recommended(injection.id, injection.confidence)

        try:
            store.update(call.session_id, record)
        except LedgerUnavailable as error:
            notes.append(f"session ledger not updated: {error}")
    log = call.telemetry()
    if log is not None:
        failed = [gate.name for gate in decision.gates if not gate.passed and not gate.skipped]
        log.recommend(
            call.session_id,
            prompt,
            str(decision.stage),
            [Ranked(row.id, row.score) for row in decision.rows[:CONSIDERED_TOP_K]],
            [Ranked(injection.id, injection.confidence) for injection in decision.injected],
            abstained="" if decision.injected else str(failed[-1] if failed else "no_hit"),
            budget=cut_short,
            bodies=[item.id for item in decision.injected if item.mode is InjectionMode.BODY],
        )
    debug = (
        *engine.warnings,
        *_root_problems(index, roots),
        *index.notes,
        *notes,
        f"stage={decision.stage} injected={list(decision.injected_ids)}{_held_back(decision)}",
    )
    return (hook_output(decision.text) if decision.text else None), debug


def _held_back(decision: Decision) -> str:
    """` held back by the session ledger: pdf (already_recommended)`, or nothing."""
    gate = next((g for g in decision.gates if g.name == GateName.SESSION_LEDGER), None)
    held = gate.inputs.get("held") if gate is not None else None
    if not held:
        return ""
    reasons = ", ".join(f"{skill_id} ({reason})" for skill_id, reason in held.items())
    return f" held back by the session ledger: {reasons}"


def _root_problems(index: Index, roots: Sequence[str]) -> list[str]:
    """A root that is not there, named; the files that did not parse, counted (lint names
    them): the debug line of a hook that injected nothing then says why."""

    def where(path: str) -> str:
        return os.path.abspath(os.path.expanduser(path))

    given = {where(root) for root in roots}
    named = [f"skipped {p.path}: {p.message}" for p in index.rejected if where(p.path) in given]
    files = len(index.rejected) - len(named)
    if files:
        rejected = counted(files, "SKILL.md file")
        named.append(f"{rejected} rejected; `skill-explorer lint` names them")
    return named


def loaded_skill_id(payload: dict[str, Any]) -> str | None:
    """The skill a PostToolUse loaded: a Read of a SKILL.md (its name, as the index would
    id it) or a Skill tool call (`plugin:skill` names `skill`), as src/observe.rs reads it.
    The Skill tool's input names the skill in `skill`; earlier Claude Code releases named
    it `command`, read too so a ledger on those still learns what the model loaded."""
    tool = str(payload.get("tool_name", "")).lower()
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    if tool == "read":
        path = tool_input.get("file_path")
        if not isinstance(path, str) or os.path.basename(path.strip()) != SKILL_FILE:
            return None
        skill = load_skill(path.strip())
        return skill.id if isinstance(skill, Skill) else None
    if tool == "skill":
        name = tool_input.get("skill") or tool_input.get("command")
        if isinstance(name, str) and name.strip():
            return name.strip().rsplit(":", 1)[-1].strip() or None
    return None


def _observe(call: _Call) -> tuple[str, ...]:
    """PostToolUse: the model loaded a skill itself; it is never injected again (§10)."""
    skill_id = loaded_skill_id(call.payload)
    store = call.ledger
    if skill_id is None or store is None:
        return ("no skill loaded by this tool call",)
    store.update(call.session_id, lambda session: session.mark_loaded(skill_id))
    log = call.telemetry()
    if log is not None:
        via = "read" if str(call.payload.get("tool_name", "")).lower() == "read" else "skill"
        log.use(call.session_id, skill_id, via)
    return (f"loaded by the model: {skill_id}",)


def _session_start(call: _Call) -> tuple[str, ...]:
    """SessionStart: a compaction re-arms the ledger; any start refreshes the index cache."""
    notes: list[str] = []
    store = call.ledger
    if store is not None and str(call.payload.get("source", "")).lower() == "compact":
        store.update(call.session_id, Session.rearm)
        notes.append("compaction: session ledger re-armed")
        log = call.telemetry()
        if log is not None:
            log.compact(call.session_id)
    roots = call.roots()
    if roots:  # parse and embed what changed now (within the budget), so the first prompt
        # pays only its own query; a complete index is persisted for it to open
        engine = open_engine(call.config, call.cache_dir)
        index = open_library(
            roots, call.config, engine=engine, persisted=True, deadline=call.deadline
        )
        notes += [*index.notes, f"index refreshed: {len(index)} skills"]
    return tuple(notes)
