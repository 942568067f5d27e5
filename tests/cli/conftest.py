"""CLI tests share one warm embedding cache: each command still opens it cold in-process,
but the sample library's vectors and the optimised ONNX graph are computed once per run
instead of once per test. Tests about the cache itself pass their own --cache-dir."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_cache_home(warm_cache_dir: Path) -> Path:
    """$XDG_CACHE_HOME whose skill-explorer cache is the run's warm one (tests/conftest.py)."""
    return warm_cache_dir.parent


@pytest.fixture(autouse=True)
def warm_cache(
    isolated_homes: None, shared_cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache_home))
