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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from explorer.engine.config import load_config
from explorer.engine.library import open_engine, open_library
from explorer.engine.pipeline import decide
from explorer.engine.roots import ROOTS_VARIABLE, SKI_ROOTS_VARIABLE, resolve_roots
from explorer.engine.trust import project_trust

DEBUG_VARIABLE = "SKILL_EXPLORER_DEBUG"
CONTROL_PREFIXES = ("<task-notification", "<system-reminder")
NO_ROOTS = (
    f"no skill roots (--skills, ${ROOTS_VARIABLE}, ${SKI_ROOTS_VARIABLE}, roots, "
    "or the default ~/.claude/skills, ~/.claude/plugins, ./.claude/skills)"
)


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
    debug: tuple[str, ...] = ()  # shown only with SKILL_EXPLORER_DEBUG=1

    def stderr_lines(self, debug: bool) -> tuple[str, ...]:
        return (*self.warnings, *self.debug) if debug else self.warnings


def answer_hook(
    stdin_text: str,
    *,
    cli_roots: Sequence[str] = (),
    config_file: str | None = None,
    assignments: Sequence[str] = (),
    use_ski_config: bool = True,
    cache_dir: str | None = None,
) -> HookAnswer:
    """Answer one hook call. Never raises: any failure is a silent answer (§7)."""
    warnings: tuple[str, ...] = ()
    try:
        payload = json.loads(stdin_text)
        prompt = payload.get("prompt") if isinstance(payload, dict) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return HookAnswer(debug=("no prompt in the payload",))
        if prompt.lstrip().startswith(CONTROL_PREFIXES):
            return HookAnswer(debug=("control payload ignored",))
        cwd = payload.get("cwd")
        workdir = cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None
        loaded = load_config(
            config_file,
            assignments,
            use_ski_config=use_ski_config,
            cwd=workdir,
            strict=False,
            trust=project_trust(),  # a cloned repository's config waits for the user's trust
        )
        warnings = tuple(loaded.warnings)
        config = loaded.config
        roots = list(resolve_roots(cli_roots, config.roots, cwd=workdir).roots)
        if not roots:
            return HookAnswer(warnings=warnings, debug=(NO_ROOTS,))
        engine = open_engine(config, cache_dir)
        index = open_library(roots, config, engine=engine)
        # §3.5: the session's working directory feeds the project channel (src/hook.rs)
        decision = decide(prompt, index, config, cwd=cwd if isinstance(cwd, str) else None)
        debug = (
            *engine.warnings,
            f"stage={decision.stage} injected={list(decision.injected_ids)}",
        )
        output = hook_output(decision.text) if decision.text else None
        return HookAnswer(output, warnings, debug)
    except Exception as error:  # fail open (§7)
        return HookAnswer(warnings=warnings, debug=(f"{type(error).__name__}: {error}",))
