"""The persistent embedding cache: reuse, model isolation, corruption, concurrency."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Skill
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference import cache as cache_module
from explorer.engine.inference.cache import (
    CACHE_FILE,
    SCHEMA_VERSION,
    EmbeddingCache,
    embed_blocks_with_cache,
    embed_with_cache,
    file_sha256,
)
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models


class CountingBow(BowEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.calls += len(texts)
        return super().embed_documents(texts)


def test_second_build_embeds_nothing(tmp_path: Path, make_library) -> None:
    root = make_library({"a": "Merge pdf files.", "b": "Spreadsheet formulas.", "c": "Docker."})
    embedder = CountingBow()
    models = assemble_models(embedder)
    first = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    second = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    assert (first.embedded, second.embedded, embedder.calls) == (3, 0, 3)
    assert np.array_equal(first.vectors, second.vectors)


def test_vectors_are_keyed_by_model_identity(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.put_many("model-a", {"h": np.ones(4, dtype=np.float32)})
    assert set(cache.get_many("model-a", ["h"], 4)) == {"h"}
    assert cache.get_many("model-b", ["h"], 4) == {}
    assert cache.get_many("model-a", ["h"], 8) == {}  # a wrong dimension is a miss


def test_vectors_come_in_blocks_of_the_rows_asked_for(tmp_path: Path) -> None:
    """A snapshot keeps its vectors in row blocks (rows.py); they are made in that form,
    from the cache and the model alike, never as one matrix copied into blocks."""
    from explorer.engine.index.rows import DenseRows

    texts = [f"text {i}" for i in range(5)]
    cache = EmbeddingCache(tmp_path)
    embed_with_cache(BowEmbedder(), texts[:2], cache)  # two cached, three computed
    blocks, computed = embed_blocks_with_cache(BowEmbedder(), texts, cache, block_rows=2)
    assert computed == 3 and [block.shape for block in blocks] == [(2, 256), (2, 256), (1, 256)]
    assert np.array_equal(np.concatenate(blocks), embed_with_cache(BowEmbedder(), texts, None)[0])
    empty, _ = embed_blocks_with_cache(BowEmbedder(), [], cache, block_rows=2)
    assert [block.shape for block in empty] == [(0, 256)]
    with pytest.raises(ValueError, match="every block but the last"):
        DenseRows.adopt([blocks[2], blocks[0]])


class BulkBow(BowEmbedder):
    """A bag-of-words embedder that says whether each batch ran in a bulk session."""

    def __init__(self) -> None:
        super().__init__()
        self.open = 0
        self.opened = 0
        self.batches: list[tuple[int, bool]] = []

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        self.open += 1
        self.opened += 1
        try:
            yield
        finally:
            self.open -= 1

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.batches.append((len(texts), self.open > 0))
        return super().embed_documents(texts)


def test_a_large_build_embeds_in_one_bulk_session(tmp_path: Path, monkeypatch) -> None:
    """From BULK_TEXTS texts to embed, every chunk runs inside one bulk session (the
    model's arena session, embed.py); fewer, such as a save's one description, never
    open it, nor does the hook's build under its deadline."""
    monkeypatch.setattr(cache_module, "BULK_TEXTS", 4)
    monkeypatch.setattr(cache_module, "CHUNK_TEXTS", 2)
    cache = EmbeddingCache(tmp_path)
    few = BulkBow()
    embed_with_cache(few, ["one", "two", "three"], cache)
    assert (few.opened, few.batches) == (0, [(2, False), (1, False)])
    many = BulkBow()
    embed_with_cache(many, [f"text {i}" for i in range(5)], cache)
    assert (many.opened, many.open) == (1, 0)
    assert many.batches == [(2, True), (2, True), (1, True)]
    hook = BulkBow()
    embed_with_cache(hook, [f"new {i}" for i in range(5)], cache, deadline=time.monotonic() + 60)
    assert hook.opened == 0 and all(not in_bulk for _, in_bulk in hook.batches)


def test_a_corrupt_file_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / CACHE_FILE).write_bytes(b"this is not a database" * 100)
    cache = EmbeddingCache(tmp_path)
    assert cache.available and "rebuilt" in cache.warnings[0]
    vectors, computed = embed_with_cache(BowEmbedder(), ["pdf files"], cache)
    assert computed == 1 and vectors.shape == (1, 256)
    assert list(tmp_path.glob(f"{CACHE_FILE}.corrupt-*"))


def test_a_truncated_write_recovers(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embed_with_cache(BowEmbedder(), [f"text {i}" for i in range(200)], cache)
    cache.close()
    path = tmp_path / CACHE_FILE
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    reopened = EmbeddingCache(tmp_path)
    _, computed = embed_with_cache(BowEmbedder(), ["text 1", "text 2"], reopened)
    assert reopened.available and computed <= 2


def test_a_locked_cache_is_bypassed_not_fatal(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_module, "LOCK_TIMEOUT_S", 0.2)  # the wait, shortened from 2 s
    EmbeddingCache(tmp_path).close()
    holder = sqlite3.connect(tmp_path / CACHE_FILE, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    cache = EmbeddingCache(tmp_path)
    assert not cache.available and "locked" in cache.warnings[0]
    vectors, computed = embed_with_cache(BowEmbedder(), ["pdf"], cache)
    assert computed == 1 and vectors.shape == (1, 256)
    holder.execute("ROLLBACK")


def _writer(directory: str, offset: int) -> None:
    cache = EmbeddingCache(directory)
    for start in range(0, 200, 20):
        texts = [f"process {offset} text {i}" for i in range(start, start + 20)]
        embed_with_cache(BowEmbedder(), texts, cache)


@pytest.mark.slow  # two spawned interpreters; the killed-writer test below keeps one child
def test_two_processes_write_at_once(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), n)) for n in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = EmbeddingCache(tmp_path)
    assert cache.count() == 400
    assert cache._connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_file_checksums_are_remembered(tmp_path: Path) -> None:
    target = tmp_path / "weights.bin"
    target.write_bytes(b"abc")
    cache = EmbeddingCache(tmp_path / "c")
    digest = file_sha256(target, cache)
    assert digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert cache.remembered_checksum(str(target), 3, target.stat().st_mtime_ns) == digest


def test_unchanged_files_are_not_parsed_again(tmp_path: Path, make_library, monkeypatch) -> None:
    from explorer.engine.discovery import skills as skills_module

    root = make_library({"a": "Merge pdf files.", "b": "Spreadsheet formulas."})
    models = assemble_models(BowEmbedder())
    first = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    parsed: list[str] = []
    real_parse = skills_module.parse_skill

    def counting_parse(path, data, digest=None):  # type: ignore[no-untyped-def]
        parsed.append(Path(path).parent.name)
        return real_parse(path, data, digest)

    monkeypatch.setattr(skills_module, "parse_skill", counting_parse)
    second = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    assert parsed == [] and second.skills == first.skills
    (root / "b" / "SKILL.md").write_text(
        "---\nname: b\ndescription: Pivot tables in spreadsheets.\n---\nbody\n"
    )
    third = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    assert parsed == ["b"]
    assert third.skills[1].description == "Pivot tables in spreadsheets."


_KILL_WRITER = """
import sys, numpy as np
from explorer.engine.inference.cache import EmbeddingCache
cache = EmbeddingCache(sys.argv[1])
print("ready", flush=True)
n = 0
while True:
    cache.put_many("m", {f"k{n}-{i}": np.full(64, n, dtype=np.float32) for i in range(200)})
    n += 1
"""


def test_a_writer_killed_mid_write_leaves_a_usable_cache(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    writer = subprocess.Popen(
        [sys.executable, "-c", _KILL_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 30
    while EmbeddingCache(tmp_path).count() < 2000 and time.monotonic() < deadline:
        time.sleep(0.05)  # let it commit several transactions, then kill it mid-stream
    writer.send_signal(signal.SIGKILL)
    writer.wait(10)
    cache = EmbeddingCache(tmp_path)
    assert cache.available and cache.warnings == []
    assert cache._connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert cache.count() >= 2000 and cache.count() % 200 == 0  # whole transactions only
    _, computed = embed_with_cache(BowEmbedder(), ["after the crash"], cache)
    assert computed == 1 and cache.count(BowEmbedder.identity) == 1


def test_nan_and_inf_vectors_are_rebuilt_with_a_warning(tmp_path: Path, make_library) -> None:
    """A corrupted row once made a skill never inject, silently: values are checked too."""
    root = make_library({"pdf": "Merge pdf files.", "b": "Spreadsheet formulas.", "c": "Docker."})
    models = assemble_models(BowEmbedder())
    first = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    with sqlite3.connect(tmp_path / "c" / CACHE_FILE) as connection:
        rows = connection.execute("SELECT model, text_hash, vector FROM vectors").fetchall()
        for (model, key, blob), bad in zip(rows, (np.nan, np.inf), strict=False):
            vector = np.frombuffer(blob, dtype=np.float32).copy()
            vector[3] = bad
            connection.execute(
                "UPDATE vectors SET vector = ? WHERE model = ? AND text_hash = ?",
                (vector.tobytes(), model, key),
            )
    cache = EmbeddingCache(tmp_path / "c")
    second = build_index([root], Config(), models, cache)
    assert second.embedded == 2
    assert np.isfinite(second.vectors).all()
    assert np.array_equal(first.vectors, second.vectors)
    assert any("2 cached vectors" in warning and "rebuilt" in warning for warning in cache.warnings)
    third = build_index([root], Config(), models, EmbeddingCache(tmp_path / "c"))
    assert third.embedded == 0


def test_a_read_that_meets_a_lock_is_a_miss_and_the_cache_stays_in_use(tmp_path: Path) -> None:
    """Seen in CI: a read during another process's set-up bypassed the cache for good, so
    none of that process's vectors were saved (200 of 400 in the two-writer test)."""
    cache = EmbeddingCache(tmp_path)
    real = cache._connection
    assert real is not None

    class LockedOnce:
        calls = 0

        def execute(self, *args: object) -> object:
            LockedOnce.calls += 1
            if LockedOnce.calls == 1:
                raise sqlite3.OperationalError("database is locked")
            return real.execute(*args)

        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

    cache._connection = LockedOnce()  # type: ignore[assignment]
    assert cache.get_many("m", ["a"], 2) == {}
    assert cache.available
    cache._connection = real
    cache.put_many("m", {"a": np.ones(2, dtype=np.float32)})
    assert cache.count() == 1


def test_opening_an_existing_cache_writes_nothing_and_reads_one_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook opens the cache on every prompt. Stamping the schema version
    again was a WAL commit each time (17-20 ms) and count(*) read every page of the
    vectors (0.4 s from a cold disk at 26,000); an existing file now gets neither."""
    import sqlite3

    EmbeddingCache(tmp_path).close()
    statements: list[str] = []
    real_connect = sqlite3.connect

    def traced(*args, **kwargs):  # type: ignore[no-untyped-def]
        connection = real_connect(*args, **kwargs)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    cache = EmbeddingCache(tmp_path)
    assert cache.available
    assert not [s for s in statements if "user_version=" in s.replace(" ", "")]
    assert not [s for s in statements if "count(" in s.lower()]
    cache.put_many("m", {"h": np.ones(3, dtype=np.float32)})
    assert list(cache.get_many("m", ["h"], 3)) == ["h"]
    fresh = EmbeddingCache(tmp_path / "new")  # a new file is still stamped
    assert [s for s in statements if "user_version=" in s.replace(" ", "")]
    fresh.close()


def _schema_one_file(path: Path) -> None:
    """A cache as the previous schema wrote it: vectors in a WITHOUT ROWID table, skill
    records with their bodies."""
    with sqlite3.connect(path) as connection:
        connection.executescript(
            """
            CREATE TABLE embeddings (
                model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
                PRIMARY KEY (model, text_hash)) WITHOUT ROWID;
            CREATE TABLE skills (
                path TEXT PRIMARY KEY, hash TEXT NOT NULL, parser INTEGER NOT NULL,
                record TEXT NOT NULL);
            CREATE TABLE file_checks (
                path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                sha256 TEXT NOT NULL);
            PRAGMA user_version=1;
            """
        )
        connection.execute(
            "INSERT INTO embeddings VALUES (?, ?, ?)",
            ("m", "h", np.arange(384, dtype=np.float32).tobytes()),
        )


def test_a_cache_of_the_previous_schema_keeps_its_vectors(tmp_path: Path) -> None:
    _schema_one_file(tmp_path / CACHE_FILE)
    cache = EmbeddingCache(tmp_path)
    assert cache.available and not cache.warnings
    found = cache.get_many("m", ["h"], 384)
    assert np.array_equal(found["h"], np.arange(384, dtype=np.float32))
    cache.close()
    with sqlite3.connect(tmp_path / CACHE_FILE) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
        assert "embeddings" not in tables
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert EmbeddingCache(tmp_path).count("m") == 1  # and opens again as it is


def test_skill_records_hold_no_body_and_recalled_skills_read_it(
    tmp_path: Path, make_library
) -> None:
    """A body in the records was decoded for every skill of every load and then dropped
    by the live index: at 26,000 skills two thirds of the records' 170 MB."""
    from explorer.engine.discovery.bodies import BodyOnDisk
    from explorer.engine.discovery.skills import load_skills
    from explorer.engine.inference.cache import CachedSkills

    root = make_library({"pdf": "Merge pdf files."})
    path = str(root / "pdf" / "SKILL.md")
    cache = EmbeddingCache(tmp_path / "c")
    memo = CachedSkills(cache)
    parsed = load_skills([path], memo)[path]
    memo.flush()
    ((_, record, _),) = cache.skill_records([path]).values()
    assert '"body"' not in record and isinstance(parsed, Skill) and parsed.body
    recalled = load_skills([path], CachedSkills(cache))[path]
    assert isinstance(recalled, BodyOnDisk) and recalled == parsed
    assert recalled.body == parsed.body


def test_skill_records_of_an_earlier_schema_lose_their_bodies(tmp_path: Path, make_library) -> None:
    from explorer.engine.discovery.skills import load_skills, skill_record
    from explorer.engine.inference.cache import PARSER_VERSION, CachedSkills

    root = make_library({"pdf": "Merge pdf files."})
    path = str(root / "pdf" / "SKILL.md")
    skill = load_skills([path])[path]
    assert isinstance(skill, Skill)
    _schema_one_file(tmp_path / CACHE_FILE)
    with sqlite3.connect(tmp_path / CACHE_FILE) as connection:
        connection.execute(
            "INSERT INTO skills VALUES (?, ?, ?, ?)",
            (path, skill.hash, PARSER_VERSION, skill_record(skill)),
        )
    cache = EmbeddingCache(tmp_path)
    ((_, record, _),) = cache.skill_records([path]).values()
    assert '"body"' not in record
    recalled = load_skills([path], CachedSkills(cache))[path]
    assert recalled == skill and isinstance(recalled, Skill) and recalled.body == skill.body


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from explorer.engine.discovery import skills as skills_module

    reads: list[str] = []
    real = skills_module.read_skill_bytes

    def counting(path: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(Path(path).parent.name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(skills_module, "read_skill_bytes", counting)
    return reads


def _load(paths: list[str], cache: EmbeddingCache) -> dict[str, object]:
    from explorer.engine.discovery.skills import load_skills
    from explorer.engine.inference.cache import CachedSkills

    memo = CachedSkills(cache)
    loaded = load_skills(paths, memo)
    memo.flush()
    return dict(loaded)


def test_a_file_whose_stamp_did_not_move_is_not_read(
    tmp_path: Path, make_library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening 26,000 skills read every file to hash it: 0.5 s warm, 2.3 s cold."""
    from explorer.engine.discovery import skills as skills_module

    monkeypatch.setattr(skills_module, "RACY_NS", 0)
    root = make_library({"pdf": "Merge pdf files.", "xlsx": "Spreadsheet formulas."})
    paths = [str(root / name / "SKILL.md") for name in ("pdf", "xlsx")]
    cache = EmbeddingCache(tmp_path / "c")
    first = _load(paths, cache)
    reads = _counting_reads(monkeypatch)
    second = _load(paths, cache)
    assert reads == [] and second == first
    # The same size, the same modification time: the change time still tells.
    pdf = root / "pdf" / "SKILL.md"
    before = pdf.stat()
    pdf.write_text(pdf.read_text().replace("Merge pdf files.", "Split pdf pages."))
    os.utime(pdf, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert pdf.stat().st_size == before.st_size
    third = _load(paths, cache)
    assert reads == ["pdf"]
    assert isinstance(third[paths[0]], Skill) and "Split" in third[paths[0]].description


def test_a_file_changed_just_now_is_read_again(
    tmp_path: Path, make_library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within a tick of the file system's clock a write can leave every stamp as it was."""
    root = make_library({"pdf": "Merge pdf files."})
    path = str(root / "pdf" / "SKILL.md")
    cache = EmbeddingCache(tmp_path / "c")
    _load([path], cache)
    assert cache.skill_records([path])[path].stamp is None
    reads = _counting_reads(monkeypatch)
    _load([path], cache)
    assert reads == ["pdf"]


def test_a_file_read_and_found_as_parsed_gets_its_stamp(
    tmp_path: Path, make_library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record without a stamp (an upgraded cache, a file parsed fresh) is read once
    more, then no longer."""
    from explorer.engine.discovery import skills as skills_module

    root = make_library({"pdf": "Merge pdf files."})
    path = str(root / "pdf" / "SKILL.md")
    cache = EmbeddingCache(tmp_path / "c")
    _load([path], cache)  # fresh: no stamp
    monkeypatch.setattr(skills_module, "RACY_NS", 0)
    reads = _counting_reads(monkeypatch)
    _load([path], cache)
    assert reads == ["pdf"] and cache.skill_records([path])[path].stamp is not None
    _load([path], cache)
    assert reads == ["pdf"]
