"""Shared fixtures: isolated config/cache homes, small skill libraries, and real models."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import Config
from explorer.engine.embed import BowEmbedder
from explorer.engine.models import Models, assemble_models, load_models
from explorer.engine.snapshot import Index, build_index

REPO = Path(__file__).resolve().parent.parent
# Collection imports onnxruntime (tests/support) before any fixture moves $HOME: with its
# telemetry on, that import writes a device id into the developer's own cache.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
SAMPLE_SKILLS = REPO / "sample_skills"


def pytest_configure(config: pytest.Config) -> None:
    """Property tests try every example only when the slow tests run too (tests/support/
    examples.py): the default selection is `-m 'not slow'` (pyproject.toml)."""
    from tests.support.examples import THOROUGH_ENV

    thorough = config.getoption("markexpr", "").strip() != "not slow"
    os.environ[THOROUGH_ENV] = "1" if thorough else "0"


@pytest.fixture(autouse=True)
def isolated_homes(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """No test reads the developer's own config, cache, state or reference-router models."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # ledgers, telemetry
    monkeypatch.delenv("SKILL_EXPLORER_ROOTS", raising=False)
    monkeypatch.delenv("SKILL_EXPLORER_DEBUG", raising=False)
    # A pipe's page width is $COLUMNS or 200 (explorer/terminal.py): a runner that exports
    # its own (pytest-xdist's workers set 80) must not change what a CLI test reads.
    monkeypatch.delenv("COLUMNS", raising=False)


def write_skill(root: Path, name: str, description: str, body: str = "", **extra: str) -> Path:
    """A SKILL.md with a quoted description, so any text is valid YAML."""
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    quoted = description.replace("\\", "\\\\").replace('"', '\\"')
    lines = ["---", f"name: {name}", f'description: "{quoted}"']
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines += ["---", textwrap.dedent(body).strip() or f"# {name}\n\nSteps for {name}."]
    path = directory / "SKILL.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def make_library(tmp_path: Path) -> Callable[[Mapping[str, str]], Path]:
    def make(descriptions: Mapping[str, str]) -> Path:
        root = tmp_path / "skills"
        for name, description in descriptions.items():
            write_skill(root, name, description)
        return root

    return make


LIBRARY = {
    "pdf": "Extract text and tables from PDF files, merge and split PDF documents, fill forms.",
    "xlsx": "Build spreadsheets with formulas, clean CSV exports and summarise workbook data.",
    "docker-helper": "Shrink Docker images, write multi-stage Dockerfiles and speed up builds.",
    "git-commit-writer": "Write clear git commit messages from the staged diff.",
    "changelog-generator": "Generate release notes and a CHANGELOG from git commit history.",
}


@pytest.fixture
def bow_index(make_library: Callable[[Mapping[str, str]], Path]) -> Index:
    """The offline lane (§6): deterministic, fast, no ONNX."""
    root = make_library(LIBRARY)
    return build_index([root], Config(), assemble_models(BowEmbedder()))


@pytest.fixture(scope="session")
def minilm_models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    """The packaged default model, loaded once for the whole run."""
    cache = EmbeddingCache(tmp_path_factory.mktemp("model-cache"))
    models = load_models(Config(reranker="off"), cache)
    assert models.embedder is not None, models.status.dense_error
    return models


@pytest.fixture(scope="session")
def warm_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the run, for tests that only read libraries through it: the
    default model's optimised graph and sample_skills' vectors are computed once, not once
    per test. Tests about the cache itself (cold builds, corruption) use their own."""
    return tmp_path_factory.mktemp("warm-cache-home") / "skill-explorer"
