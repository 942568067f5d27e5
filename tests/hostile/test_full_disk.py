"""Full disks: a failed cache write is a miss, not corruption; the models load
from the package when their optimised copy cannot be written; a healthy cache is never
moved aside for lack of space; a wrong remembered checksum does not disable the models.

The real thing runs on a 2 MB tmpfs (root only; skipped where mounting is not allowed);
the fast tests simulate ENOSPC where onnxruntime and SQLite would meet it."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.host.hook import answer_hook
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference import embed
from explorer.engine.inference.cache import CACHE_FILE, EmbeddingCache, file_sha256
from explorer.engine.inference.models import PACKAGED_ENCODER_SHA256, load_models, packaged_encoder
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS, link_optimised_graphs

PROMPT = "merge these two report.pdf files into one"


def test_models_load_when_the_optimised_copy_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime raises its own error (not OSError) when it cannot write the optimised
    graph; both models used to fail to load on every call then."""
    onnxruntime = embed.quiet_onnxruntime()
    real = onnxruntime.InferenceSession
    attempts: list[str] = []

    def session(path: str, options, **kwargs):  # type: ignore[no-untyped-def]
        attempts.append(options.optimized_model_filepath)
        if options.optimized_model_filepath:
            raise RuntimeError("[ONNXRuntimeError] : 1 : FAIL : No space left on device")
        return real(path, options, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", session)
    models = load_models(Config(), EmbeddingCache(tmp_path / "cache"))
    assert models.embedder is not None, models.status.dense_error
    assert models.reranker is not None, models.status.reranker_note
    assert not [w for w in models.warnings if "failed" in w or "unavailable" in w]
    assert any(attempts) and "" in attempts  # tried to save, then loaded unsaved
    assert not list((tmp_path / "cache" / "onnx").glob("*"))  # no partial copy left


@pytest.mark.parametrize(
    "message",
    ["database or disk is full", "disk I/O error", "attempt to write a readonly database"],
)
def test_a_healthy_cache_is_never_moved_aside_for_lack_of_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    first = EmbeddingCache(tmp_path)
    first.put_many("m", {"k": __import__("numpy").ones(4, dtype="float32")})
    first.close()
    error = sqlite3.OperationalError(message)
    error.sqlite_errorname = {  # type: ignore[attr-defined]
        "database or disk is full": "SQLITE_FULL",
        "disk I/O error": "SQLITE_IOERR_WRITE",
        "attempt to write a readonly database": "SQLITE_READONLY",
    }[message]

    def failing(self: EmbeddingCache) -> sqlite3.Connection:
        raise error

    monkeypatch.setattr(EmbeddingCache, "_connect", failing)
    cache = EmbeddingCache(tmp_path)
    if "readonly" in message:  # read, not written (test_cache_degraded.py)
        assert cache.available and cache.read_only and "read-only" in cache.warnings[0]
        cache.close()
    else:
        assert not cache.available and "unusable" in cache.warnings[0]
    assert not list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))
    monkeypatch.undo()
    again = EmbeddingCache(tmp_path)
    assert again.get_many("m", ["k"], 4)  # the vectors are all still there


def test_a_failed_cache_write_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors that cannot be saved are still used; the next run computes them again."""
    from explorer.engine.inference import cache as cache_module

    cache = EmbeddingCache(tmp_path)

    class Full:
        def __init__(self, *_: object) -> None:
            pass

        def __enter__(self) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        def __exit__(self, *_: object) -> None:
            return None

    monkeypatch.setattr(cache_module, "_Transaction", Full)
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.inference.models import assemble_models

    index = build_index([SAMPLE_SKILLS], Config(), assemble_models(BowEmbedder()), cache)
    assert index.vectors is not None and index.embedded == len(index)
    assert any("not saved" in warning for warning in cache.warnings)
    assert cache.available and not list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))


def test_a_wrong_remembered_checksum_does_not_disable_the_models(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """A damaged row of the checksum table used to disable both models with 'reinstall'."""
    link_optimised_graphs(warm_cache_dir, tmp_path)
    cache = EmbeddingCache(tmp_path)
    model, tokenizer = packaged_encoder(cache)
    for path in (model, tokenizer):
        info = os.stat(path)
        cache.remember_checksum(os.path.abspath(path), info.st_size, info.st_mtime_ns, "0" * 64)
    models = load_models(Config(), cache)
    assert models.embedder is not None, models.status.dense_error
    assert models.reranker is not None, models.status.reranker_note
    assert not any("reinstall" in warning for warning in models.warnings)
    info = os.stat(model)
    remembered = cache.remembered_checksum(os.path.abspath(model), info.st_size, info.st_mtime_ns)
    assert remembered == PACKAGED_ENCODER_SHA256  # what the file holds, remembered again
    assert file_sha256(model, cache) == PACKAGED_ENCODER_SHA256


def test_a_store_that_cannot_be_written_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from explorer.engine.index import store

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "save_store", full)
    answer = answer_hook(
        json.dumps({"prompt": PROMPT}),
        cli_roots=[str(SAMPLE_SKILLS)],
        assignments=("model=bow", "reranker=off"),
        use_ski_config=False,
        cache_dir=str(tmp_path / "cache"),
    )
    assert answer.payload is not None, answer.debug
    assert any("not written" in line and "No space" in line for line in answer.debug)


# -- a real full disk --------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(directory: Path, size: str) -> Iterator[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace')}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)


def _fill(directory: Path) -> None:
    """Write until the disk says ENOSPC."""
    with open(directory / "filler", "wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()


@pytest.mark.slow
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None,
    reason="mounting a tmpfs needs root",
)
def test_on_a_2_mb_tmpfs_the_default_models_load_and_route_as_on_a_roomy_disk(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """The cache directory on a 2 MB tmpfs: the optimised copies (23 MB) cannot be written,
    then the disk is filled to the last byte under a healthy cache. Recall and false
    injections on sample_skills/cases.toml equal a roomy disk's; the cache is never moved
    aside; the hook answers."""
    roomy_models = load_models(Config(), EmbeddingCache(warm_cache_dir))
    roomy = build_index([SAMPLE_SKILLS], Config(), roomy_models, EmbeddingCache(warm_cache_dir))
    cases = load_cases(SAMPLE_SKILLS / "cases.toml").cases
    expected = [decide(case.prompt, roomy, Config()).injected_ids for case in cases]
    with tmpfs(tmp_path / "small", "2m") as small:
        cache = EmbeddingCache(small / "cache")
        models = load_models(Config(), cache)
        assert models.embedder is not None, models.status.dense_error
        assert models.reranker is not None, models.status.reranker_note
        index = build_index([SAMPLE_SKILLS], Config(), models, cache)
        got = [decide(case.prompt, index, Config()).injected_ids for case in cases]
        assert got == expected
        cache.close()
        _fill(small)
        full = EmbeddingCache(small / "cache")
        assert not list((small / "cache").glob(f"{CACHE_FILE}.corrupt-*")), full.warnings
        models = load_models(Config(), full)
        assert models.embedder is not None and models.reranker is not None, models.warnings
        answer = subprocess.run(
            [
                sys.executable,
                "-m",
                "explorer",
                "hook",
                "--skills",
                str(SAMPLE_SKILLS),
                "--cache-dir",
                str(small / "cache"),
                "--no-ski-config",
            ],
            input=json.dumps({"prompt": PROMPT}),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "SKILL_EXPLORER_DEBUG": "1"},
        )
        assert answer.returncode == 0 and "Traceback" not in answer.stderr
        assert "pdf" in json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
        assert not list((small / "cache").glob(f"{CACHE_FILE}.corrupt-*"))
