"""The Claude Code `UserPromptSubmit` hook (spec §7): fail open, always exit 0.

It reads the persistent embedding cache, so a prompt costs one query embedding plus
parsing the library, never a re-embedding of every description.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, TextIO

from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import load_config
from explorer.engine.models import load_models
from explorer.engine.pipeline import decide
from explorer.engine.roots import ROOTS_VARIABLE, SKI_ROOTS_VARIABLE, resolve_roots
from explorer.engine.snapshot import build_index
from explorer.engine.trust import project_trust

DEBUG_VARIABLE = "SKILL_EXPLORER_DEBUG"
CONTROL_PREFIXES = ("<task-notification", "<system-reminder")


def hook_output(context: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": context,
        }
    }


def run_hook(
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    *,
    cli_roots: Sequence[str] = (),
    config_file: str | None = None,
    assignments: Sequence[str] = (),
    use_ski_config: bool = True,
    cache_dir: str | None = None,
) -> int:
    """Answer one hook call. Returns 0 whatever happens: a router must never block a prompt."""
    debug = os.environ.get(DEBUG_VARIABLE) == "1"
    try:
        payload = json.loads(stdin.read())
        prompt = payload.get("prompt") if isinstance(payload, dict) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return _quiet(stderr, debug, "no prompt in the payload")
        if prompt.lstrip().startswith(CONTROL_PREFIXES):
            return _quiet(stderr, debug, "control payload ignored")
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
        for message in loaded.warnings:  # a config the user wrote is being ignored: say so
            print(f"skill-explorer hook: {message}", file=stderr)
        config = loaded.config
        roots = list(resolve_roots(cli_roots, config.roots, cwd=workdir).roots)
        if not roots:
            return _quiet(
                stderr,
                debug,
                f"no skill roots (--skills, ${ROOTS_VARIABLE}, ${SKI_ROOTS_VARIABLE}, roots, "
                "or the default ~/.claude/skills, ~/.claude/plugins, ./.claude/skills)",
            )
        cache = EmbeddingCache(cache_dir or config.cache_dir or None)
        models = load_models(config, cache)
        index = build_index(roots, config, models, cache)
        # §3.5: the session's working directory feeds the project channel (src/hook.rs)
        decision = decide(prompt, index, config, cwd=cwd if isinstance(cwd, str) else None)
        if debug:
            for message in (*cache.warnings, *models.warnings):
                print(f"skill-explorer hook: {message}", file=stderr)
            print(
                f"skill-explorer hook: stage={decision.stage} "
                f"injected={list(decision.injected_ids)}",
                file=stderr,
            )
        if decision.text:
            stdout.write(json.dumps(hook_output(decision.text)))
            stdout.write("\n")
        return 0
    except Exception as error:  # fail open (§7)
        return _quiet(stderr, debug, f"{type(error).__name__}: {error}")


def _quiet(stderr: TextIO, debug: bool, message: str) -> int:
    if debug:
        print(f"skill-explorer hook: {message}", file=stderr)
    return 0
