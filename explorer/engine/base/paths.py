"""Where skill-explorer keeps its files: config, cache and state, per the platform's rules.

platformdirs gives the platform's answer: on Linux the XDG base directories
($XDG_CONFIG_HOME, $XDG_CACHE_HOME, $XDG_STATE_HOME, else ~/.config, ~/.cache,
~/.local/state), on macOS ~/Library/..., on Windows %APPDATA% and %LOCALAPPDATA%. Each
call reads the environment afresh, so a test (or a user) that sets $XDG_* is obeyed.

The reference router's own files are not ours to move: it reads
$XDG_CONFIG_HOME/ski (else ~/.config/ski) on every platform, so `ski_config_dir` does too.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "skill-explorer"


def config_dir() -> Path:
    """Our user config directory (config.toml, the trusted-projects list)."""
    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def cache_dir() -> Path:
    """The embedding and parse cache, and optimised model graphs: safe to delete."""
    return platformdirs.user_cache_path(APP_NAME, appauthor=False)


def state_dir() -> Path:
    """What should survive a restart but is not configuration (the prompt history)."""
    return platformdirs.user_state_path(APP_NAME, appauthor=False)


def ski_config_dir() -> Path:
    """The reference router's config directory, where it reads it (reference: src/paths.rs)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "ski"
