"""The embedding cache when it cannot help: every failure is a warning and a miss, never a
crash, and the caller embeds what the cache could not give (explorer/engine/inference/cache.py)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.discovery.skills import parse_skill
from explorer.engine.inference import cache as cache_module
from explorer.engine.inference.cache import (
    CACHE_FILE,
    SCHEMA_VERSION,
    CachedSkills,
    EmbeddingCache,
    SkillRow,
    embed_with_cache,
    file_sha256,
)
from explorer.engine.inference.embed import BowEmbedder


class Failing:
    """A connection whose every statement fails as a damaged or full disk would."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def execute(self, *_: object) -> object:
        raise self.error

    def executemany(self, *_: object) -> object:
        raise self.error


def test_a_cache_directory_that_cannot_be_made_is_bypassed(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    cache = EmbeddingCache(tmp_path / "file" / "cache")
    assert not cache.available
    assert "cannot be opened" in cache.warnings[0] and str(tmp_path / "file") in cache.warnings[0]
    # Every call is a miss or a no-op, and embedding still works.
    assert cache.get_many("m", ["a"], 4) == {}
    assert cache.skill_records(["x"]) == {}
    assert cache.remembered_checksum("x", 1, 1) is None
    assert cache.count() == 0
    cache.put_many("m", {"a": np.ones(4, dtype=np.float32)})
    cache.store_skill_records([SkillRow("x", "h", "{}", None)])
    cache.remember_checksum("x", 1, 1, "s")
    vectors, computed = embed_with_cache(BowEmbedder(), ["pdf"], cache)
    assert computed == 1 and vectors.shape == (1, 256)


def test_an_unknown_schema_version_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / CACHE_FILE) as connection:
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION + 7}")
    cache = EmbeddingCache(tmp_path)
    assert cache.available
    assert f"unknown cache schema version {SCHEMA_VERSION + 7}" in cache.warnings[0]
    assert "rebuilt" in cache.warnings[0]
    assert list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))
    reopened = sqlite3.connect(tmp_path / CACHE_FILE)
    assert reopened.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_file_that_cannot_be_rebuilt_either_is_bypassed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / CACHE_FILE).write_bytes(b"not a database at all" * 100)

    def refuse(self: EmbeddingCache) -> sqlite3.Connection:
        raise sqlite3.DatabaseError("file is not a database")

    monkeypatch.setattr(EmbeddingCache, "_connect", refuse)
    cache = EmbeddingCache(tmp_path)
    assert not cache.available
    assert "is unusable (file is not a database); not using it" in cache.warnings[-1]


def test_a_lock_held_past_the_deadline_is_bypassed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "LOCK_TIMEOUT_S", 0.05)
    calls: list[int] = []

    def locked(self: EmbeddingCache) -> sqlite3.Connection:
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(EmbeddingCache, "_connect", locked)
    cache = EmbeddingCache(tmp_path)
    assert not cache.available and "is locked" in cache.warnings[0]
    assert len(calls) >= 2  # it waited and tried again before giving up


def test_failed_writes_are_warnings_and_the_cache_stays_open(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    real = cache._connection
    cache._connection = Failing(sqlite3.OperationalError("disk I/O error"))  # type: ignore[assignment]
    cache.put_many("m", {"a": np.ones(4, dtype=np.float32)})
    cache.store_skill_records([SkillRow("x", "h", "{}", None)])
    cache.remember_checksum("x", 1, 1, "s")  # a checksum is only a shortcut: silent
    assert cache.remembered_checksum("x", 1, 1) is None
    assert cache.warnings == [
        "embedding cache write failed (disk I/O error); vectors not saved",
        "skill cache write failed (disk I/O error); not saved",
    ]
    cache._connection = real
    assert cache.available and cache.count() == 0


def test_a_read_that_fails_for_good_bypasses_the_cache(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache._connection = Failing(sqlite3.DatabaseError("database disk image is malformed"))  # type: ignore[assignment]
    assert cache.get_many("m", ["a"], 4) == {}
    assert not cache.available
    assert "read failed (database disk image is malformed); not using it" in cache.warnings[0]


def test_a_skill_record_from_another_build_is_parsed_again(tmp_path: Path) -> None:
    text = "---\nname: pdf\ndescription: Merge PDF files.\n---\nbody\n"
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_text(text)  # a recalled skill reads its body here
    skill = parse_skill(str(tmp_path / "pdf" / "SKILL.md"), text.encode())
    cache = EmbeddingCache(tmp_path / "c")
    memo = CachedSkills(cache)
    memo.remember(skill, None)
    memo.flush()
    cache.store_skill_records([SkillRow("/elsewhere/SKILL.md", "h1", '{"not": "a skill"}', None)])
    memo.prepare([skill.path, "/elsewhere/SKILL.md", "/never/stored"])
    assert memo.recall(skill.path, skill.hash, None) == skill
    assert memo.recall(skill.path, "another hash", None) is None  # the file changed
    assert memo.recall("/elsewhere/SKILL.md", "h1", None) is None  # an incompatible record
    assert memo.recall("/never/stored", "h", None) is None


def test_file_sha256_without_a_cache_and_after_a_change(tmp_path: Path) -> None:
    target = tmp_path / "weights.bin"
    target.write_bytes(b"abc")
    cache = EmbeddingCache(tmp_path / "c")
    assert file_sha256(target) == file_sha256(target, cache) == hashlib.sha256(b"abc").hexdigest()
    target.write_bytes(b"abcd")  # another size: the remembered sum no longer applies
    assert file_sha256(target, cache) == hashlib.sha256(b"abcd").hexdigest()


def test_embedding_goes_known_then_cache_then_model_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "CHUNK_TEXTS", 2)
    embedder = BowEmbedder()
    cache = EmbeddingCache(tmp_path)
    texts = ["a pdf", "a longer spreadsheet text", "b", "a pdf", "docker images"]
    known = dict(zip([cache_module.text_hash("b")], embedder.embed_documents(["b"]), strict=True))
    cache.put_many(
        embedder.identity, {cache_module.text_hash("docker images"): np.ones(256, np.float32)}
    )
    heard: list[tuple[int, int]] = []
    vectors, computed = embed_with_cache(
        embedder,
        texts,
        cache,
        known=known,
        progress=lambda done, total: heard.append((done, total)),
    )
    assert computed == 2  # "a pdf" once (a repeat), the spreadsheet text; b known, docker cached
    assert heard == [(0, 2), (2, 2)]
    assert np.array_equal(vectors[0], vectors[3])
    assert np.array_equal(vectors[4], np.ones(256, np.float32))  # the cache's, not the model's
    assert cache.count(embedder.identity) == 3  # what the model computed was written


def test_a_cache_it_may_not_write_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm cache this process may read but not write (a shared one, a read-only home)
    was thrown away: every hook embedded from nothing, over its budget, and said the next
    call would embed more. Its vectors are read now, and nothing is written."""
    warm = EmbeddingCache(tmp_path)
    warm.put_many("m", {"a": np.ones(4, dtype=np.float32)})
    warm.close()

    def refused(self: EmbeddingCache) -> sqlite3.Connection:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(EmbeddingCache, "_connect", refused)
    cache = EmbeddingCache(tmp_path)
    assert cache.available and cache.read_only
    assert cache.warnings == [
        f"embedding cache {cache.path} is read-only: its vectors are read, nothing new is saved"
    ]
    assert np.array_equal(cache.get_many("m", ["a"], 4)["a"], np.ones(4, dtype=np.float32))
    cache.put_many("m", {"b": np.ones(4, dtype=np.float32)})
    cache.store_skill_records([SkillRow("x", "h", "{}", None)])
    cache.remember_checksum("x", 1, 1, "s")
    assert cache.count("m") == 1 and cache.warnings[1:] == []  # no write tried, none failed
    vectors, computed = embed_with_cache(BowEmbedder(), ["pdf"], cache)
    assert computed == 1 and vectors.shape == (1, 256)
    cache.close()
    (tmp_path / CACHE_FILE).unlink()  # nothing to read: bypassed as before
    assert not EmbeddingCache(tmp_path).available
