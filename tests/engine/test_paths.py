"""Config, cache and state directories: the platform's (platformdirs), XDG obeyed on Linux."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from explorer.engine.base import paths
from explorer.engine.base.config import ski_config_path, user_config_path
from explorer.engine.inference.cache import EmbeddingCache
from explorer.tui.history import history_path

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the XDG rules are Linux's")


def test_xdg_variables_are_read_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "k"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    assert user_config_path() == tmp_path / "c" / "skill-explorer" / "config.toml"
    assert EmbeddingCache().directory == tmp_path / "k" / "skill-explorer"
    assert history_path() == tmp_path / "s" / "skill-explorer" / "history.txt"
    assert ski_config_path() == tmp_path / "c" / "ski" / "config.toml"


def test_without_xdg_the_home_directory_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.config_dir() == tmp_path / ".config" / "skill-explorer"
    assert paths.cache_dir() == tmp_path / ".cache" / "skill-explorer"
    assert paths.state_dir() == tmp_path / ".local" / "state" / "skill-explorer"
    assert paths.ski_config_dir() == tmp_path / ".config" / "ski"
