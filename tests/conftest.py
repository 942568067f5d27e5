"""Shared fixtures: isolated config/cache homes, small skill libraries, and real models."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import Models, assemble_models, load_models

REPO = Path(__file__).resolve().parent.parent
# pytest keeps a test module's assert-rewritten code in __pycache__ only when bytecode may
# be written; under PYTHONDONTWRITEBYTECODE (set in many containers) every worker of every
# run re-parses and re-rewrites all test modules and recompiles the package, about
# 4 CPU-seconds a process. The caches are what a plain checkout writes anyway (ignored by
# git), so the test run writes them whatever the shell says.
sys.dont_write_bytecode = False
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


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject.toml) starts a worker per core and one more. About a quarter of
    the default selection's time is spent waiting with no CPU used (real watcher events,
    subprocesses, Pilot's idle checks); the extra worker runs tests in those gaps. Idle,
    on 2 cores, interleaved: 35-38 s with two workers, 29-32 s with three."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


@pytest.fixture(scope="session", autouse=True)
def quick_idle_checks() -> Iterator[None]:
    """Textual's Pilot waits for the process to go idle after every key and every bare
    pause, in steps of 20 ms (`textual._wait`): two steps a key at least, and more while any
    thread works, which made most of a Pilot test's time waiting with no CPU used. In steps
    of 5 ms the check is the same (idle: under 1 ms of CPU in a step), only asked sooner."""
    from textual import _wait

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_wait, "SLEEP_GRANULARITY", 0.005, raising=False)
        yield


@pytest.fixture(scope="session")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each test's home directory is made (isolated_homes)."""
    return tmp_path_factory.mktemp("homes")


_HOME_NUMBERS = itertools.count()


@pytest.fixture(autouse=True)
def isolated_homes(homes: Path, monkeypatch: pytest.MonkeyPatch):
    """No test reads the developer's own config, cache, state or reference-router models.

    Each home is a numbered directory of one session directory, not a `mktemp` of its own:
    `mktemp` lists every directory of the run's base to find the next number, and a home
    per test made that a scan of thousands of entries before every test (seconds a run)."""
    home = homes / str(next(_HOME_NUMBERS))
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # ledgers, telemetry
    monkeypatch.delenv("SKILL_EXPLORER_ROOTS", raising=False)
    monkeypatch.delenv("SKILL_EXPLORER_DEBUG", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)  # the hook's project root
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
def minilm_models(warm_cache_dir: Path) -> Models:
    """The packaged default model, loaded once per test process (its optimised graph from
    the run's warm cache)."""
    models = load_models(Config(model="minilm", reranker="off"), EmbeddingCache(warm_cache_dir))
    assert models.embedder is not None, models.status.dense_error
    return models


@pytest.fixture(scope="session")
def warm_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the whole run, for tests that only read libraries through it:
    the default models' optimised graphs and sample_skills' vectors are computed once, not
    once per test or per pytest-xdist worker. The workers share it (the cache is safe for
    concurrent processes); the first to ask warms it under a lock while the others wait.
    Tests about the cache itself (cold builds, corruption) use their own."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / WARM_CACHE / "skill-explorer"
    with _locked(shared / "warm-cache.lock"):
        warmed = cache / "warmed"
        if not warmed.exists():
            from explorer.engine.index.opening import open_engine, open_library

            config = Config()
            open_library([SAMPLE_SKILLS], config, engine=open_engine(config, cache))
            warmed.touch()
    return cache


WARM_CACHE = "warm-cache-home"


def link_optimised_graphs(warm_cache: Path, cache: Path) -> None:
    """Give `cache` the warm cache's optimised ONNX graphs as hard links, not ~110 MB of
    copies or a fresh optimisation. A graph is only ever replaced whole (written aside,
    then renamed) or unlinked, so a test that damages its own link leaves the shared file
    intact."""
    (cache / "onnx").mkdir(parents=True, exist_ok=True)
    for graph in (warm_cache / "onnx").glob("*.ort.onnx"):
        os.link(graph, cache / "onnx" / graph.name)


@pytest.fixture(scope="session", autouse=True)
def shared_warm_sessions() -> Iterator[None]:
    """An ONNX session whose optimised graph comes from the run's warm cache is made once
    per test process and handed to every later load of the same graph with the same thread
    count: a session is stateless between runs, and a MiniLM load costs about half a second,
    which the commands, hooks and doctors the tests run would otherwise pay dozens of times.
    Loads outside the warm cache (the tests about loading, optimising and repairing graphs
    use their own directories) are untouched."""
    from explorer.engine.base.threads import onnx_threads
    from explorer.engine.inference import embed, rerank

    real = embed.onnx_session
    sessions: dict[tuple[str, int, str, bool], Any] = {}

    def onnx_session(
        model_path: str, threads: int | None, optimized_dir: Any, *, arena: bool = False
    ) -> Any:
        if optimized_dir is None or WARM_CACHE not in Path(optimized_dir).parts:
            return real(model_path, threads, optimized_dir, arena=arena)
        key = (os.path.abspath(model_path), threads or onnx_threads(), str(optimized_dir), arena)
        if key not in sessions:
            sessions[key] = real(model_path, threads, optimized_dir, arena=arena)
        return sessions[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embed, "onnx_session", onnx_session)
        patch.setattr(rerank, "onnx_session", onnx_session)
        yield


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` across processes (pytest-xdist's workers)."""
    import fcntl

    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
