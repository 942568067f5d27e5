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
from explorer.engine.snapshot import build_index

ROOTS_VARIABLE = "SKILL_EXPLORER_ROOTS"
DEBUG_VARIABLE = "SKILL_EXPLORER_DEBUG"
CONTROL_PREFIXES = ("<task-notification", "<system-reminder")


def hook_output(context: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": context,
        }
    }


def resolve_roots(cli_roots: Sequence[str], config_roots: Sequence[str]) -> list[str]:
    """--skills, else $SKILL_EXPLORER_ROOTS (colon-separated), else the config's roots."""
    if cli_roots:
        return list(cli_roots)
    from_env = [part for part in os.environ.get(ROOTS_VARIABLE, "").split(os.pathsep) if part]
    return from_env or [os.path.expanduser(root) for root in config_roots]


def run_hook(
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    *,
    cli_roots: Sequence[str] = (),
    config_file: str | None = None,
    assignments: Sequence[str] = (),
    use_ski_config: bool = False,
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
        loaded = load_config(
            config_file,
            assignments,
            use_ski_config=use_ski_config,
            cwd=cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None,
        )
        config = loaded.config
        roots = resolve_roots(cli_roots, config.roots)
        if not roots:
            return _quiet(stderr, debug, f"no skill roots (--skills, ${ROOTS_VARIABLE} or roots)")
        cache = EmbeddingCache(cache_dir or config.cache_dir or None)
        models = load_models(config, cache)
        index = build_index(roots, config, models, cache)
        # §3.5: the session's working directory feeds the project channel (src/hook.rs)
        decision = decide(prompt, index, config, cwd=cwd if isinstance(cwd, str) else None)
        if debug:
            for message in (*loaded.warnings, *cache.warnings, *models.warnings):
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
