"""The persistent embedding cache (SQLite), shared by `index`, `hook`, `route` and the explorer.

Keyed by model identity (name + weights sha256) and a hash of the embedded text, so a
changed description or a different model never reads a stale vector. A corrupt file is
moved aside and rebuilt; a locked one is bypassed. Both come back as warnings, never as
crashes, because the cache only ever saves time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from explorer.engine.base import paths
from explorer.engine.discovery.bodies import BodyOnDisk
from explorer.engine.discovery.skills import Skill, skill_from_data, skill_record
from explorer.engine.inference.embed import BulkEmbedder, Embedder

SCHEMA_VERSION = 3
PARSER_VERSION = 5  # bump when parsing or derived fields change: old records are then ignored
CACHE_FILE = "embeddings.sqlite3"
LOCK_TIMEOUT_S = 2.0  # a writer holds the lock for milliseconds; longer means something is stuck


def default_cache_dir() -> Path:
    return paths.cache_dir()


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class KnownSkill(NamedTuple):
    """A skill's row in the cache, as a memo reads it."""

    hash: str  # content hash of the file it was parsed from
    record: str  # skill_record without the body
    stamp: str | None  # discovery.skills.file_stamp of that file; None: read it to tell


class SkillRow(NamedTuple):
    """A parsed skill as the cache stores it."""

    path: str
    hash: str
    record: str
    stamp: str | None


class EmbeddingCache:
    """Vectors by (model identity, text hash), and remembered checksums of model files."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory else default_cache_dir()
        self.path = self.directory / CACHE_FILE
        self.warnings: list[str] = []
        self.read_only = False  # a file this process may read but not write: nothing is saved
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._open()

    @property
    def available(self) -> bool:
        return self._connection is not None

    def _open(self) -> None:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._connection = self._connect()
            except sqlite3.DatabaseError as error:
                if _corrupt(error):
                    self._rebuild(error)
                elif _read_only(error) and self._open_read_only():
                    pass
                elif not _transient(error):  # a full disk, a read-only or missing directory
                    self._bypass(f"embedding cache {self.path} is unusable ({error}); not using it")
                elif time.monotonic() < deadline:  # another process is setting the file up
                    time.sleep(0.02)
                    continue
                else:
                    self._bypass(f"embedding cache {self.path} is locked ({error}); not using it")
            except OSError as error:
                message = f"embedding cache {self.path} cannot be opened ({error}); not using it"
                self._bypass(message)
            return

    def _connect(self) -> sqlite3.Connection:
        # One connection, shared by the threads of a process (the live index re-indexes in
        # its own thread) and serialised by self._lock.
        connection = sqlite3.connect(
            self.path, timeout=LOCK_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, 1, 2, SCHEMA_VERSION):
                raise _SchemaError(f"unknown cache schema version {version}")
            connection.executescript(
                """
                CREATE TABLE IF NOT EXISTS vectors (
                    model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
                    UNIQUE (model, text_hash));
                CREATE TABLE IF NOT EXISTS skills (
                    path TEXT PRIMARY KEY, hash TEXT NOT NULL, parser INTEGER NOT NULL,
                    record TEXT NOT NULL, stamp TEXT);
                CREATE TABLE IF NOT EXISTS file_checks (
                    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                    sha256 TEXT NOT NULL);
                """
            )
            if version != SCHEMA_VERSION:
                # Only a new or an older file has its version written: the write took
                # 17-20 ms (a WAL commit) on every hook call, a tenth of loading the model.
                _upgrade(connection)
            # One page read proves the file is a database; count(*) read every page (14 ms
            # warm, 0.4 s from a cold disk, at 26,000 vectors).
            connection.execute("SELECT 1 FROM vectors LIMIT 1").fetchone()
        except BaseException:
            connection.close()
            raise
        return connection

    def _open_read_only(self) -> bool:
        """A cache this process may not write (a shared one, a read-only home) is still
        read: its vectors spare the hook its embedding time. Only a file of this schema:
        an older one cannot be upgraded in place. A WAL file in a directory it may not
        write cannot even be opened read-only (SQLite makes its shared-memory file first),
        so it is opened as immutable: a writer changing it meanwhile can only make a read
        fail, which is a miss."""
        for mode in ("ro", "ro&immutable=1"):
            try:
                connection = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode={mode}",
                    uri=True,
                    timeout=LOCK_TIMEOUT_S,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except (sqlite3.DatabaseError, OSError, ValueError):
                continue
            try:
                if connection.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    raise sqlite3.DatabaseError("of another schema version")
                connection.execute("SELECT 1 FROM vectors LIMIT 1").fetchone()
            except sqlite3.DatabaseError:
                connection.close()
                continue
            break
        else:
            return False
        self._connection = connection
        self._now_read_only()
        return True

    def _now_read_only(self) -> None:
        self.read_only = True
        self.warnings.append(
            f"embedding cache {self.path} is read-only: its vectors are read, nothing new is saved"
        )

    def _write_failed(self, error: sqlite3.DatabaseError, message: str) -> None:
        """A write refused because the file is read-only (it opened: opening wrote nothing)
        makes the cache read-only, said once; any other failure is `message`, if any."""
        if _read_only(error):
            if not self.read_only:
                self._now_read_only()
        elif message:
            self.warnings.append(message)

    def _rebuild(self, error: Exception) -> None:
        aside = self.path.with_name(f"{CACHE_FILE}.corrupt-{int(time.time())}")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(f"{self.path}{suffix}")
                if source.exists():
                    source.replace(Path(f"{aside}{suffix}"))
            self._connection = self._connect()
            self.warnings.append(
                f"embedding cache {self.path} was unreadable ({error}); moved to {aside.name} "
                "and rebuilt"
            )
        except (OSError, sqlite3.DatabaseError) as second:
            self._bypass(f"embedding cache {self.path} is unusable ({second}); not using it")

    def _bypass(self, message: str) -> None:
        self._connection = None
        self.warnings.append(message)

    def get_many(self, model: str, hashes: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        if self._connection is None or not hashes:
            return found
        rows = self._select_in(
            "SELECT text_hash, vector FROM vectors WHERE model = ? AND text_hash IN",
            model,
            hashes,
        )
        invalid = 0
        for key, blob in rows:
            if not isinstance(blob, bytes) or len(blob) != dim * 4:
                continue  # another dimension (or not a vector at all): a miss
            vector = np.frombuffer(blob, dtype=np.float32)
            # A NaN or infinite value poisons every cosine it enters, silently: such a row
            # is a miss, so the caller embeds the text again and overwrites it.
            if np.isfinite(vector).all():
                found[key] = vector
            else:
                invalid += 1
        if invalid:
            self.warnings.append(
                f"embedding cache {self.path}: {invalid} cached vectors held NaN or infinite "
                "values; rebuilt"
            )
        return found

    def _select_in(self, query: str, first: object, keys: Sequence[str]) -> list[tuple[Any, ...]]:
        """Rows of `query (?, ?, …)` over `keys`, in chunks under SQLite's variable limit."""
        rows: list[tuple[Any, ...]] = []
        with self._lock:
            try:
                for start in range(0, len(keys), 500):
                    chunk = list(keys[start : start + 500])
                    marks = ",".join("?" * len(chunk))
                    assert self._connection is not None
                    rows += self._connection.execute(f"{query} ({marks})", [first, *chunk])
            except sqlite3.DatabaseError as error:
                if _transient(error):
                    # Another process is creating the file or recovering its WAL: a miss
                    # for this call only. Bypassing here silently dropped every later write.
                    self.warnings.append(f"embedding cache read skipped ({error})")
                    return []
                self._bypass(f"embedding cache read failed ({error}); not using it")
        return rows

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        if self._connection is None or self.read_only or not vectors:
            return
        rows = [
            (model, key, np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for key, vector in vectors.items()
        ]
        try:
            with self._transaction():
                self._connection.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows
                )
        except sqlite3.DatabaseError as error:
            self._write_failed(error, f"embedding cache write failed ({error}); vectors not saved")

    def skill_records(self, paths: Sequence[str]) -> dict[str, KnownSkill]:
        """path -> what the cache knows of the skill there, parsed by this parser version."""
        found: dict[str, KnownSkill] = {}
        if self._connection is None:
            return found
        rows = self._select_in(
            "SELECT path, hash, record, stamp FROM skills WHERE parser = ? AND path IN",
            PARSER_VERSION,
            paths,
        )
        found.update((path, KnownSkill(*known)) for path, *known in rows)
        return found

    def store_skill_records(self, rows: Sequence[SkillRow]) -> None:
        """One row per path, so edits never pile up. No body: a recalled skill reads it
        from its file (`CachedSkills`)."""
        if self._connection is None or self.read_only or not rows:
            return
        try:
            with self._transaction():
                self._connection.executemany(
                    "INSERT OR REPLACE INTO skills VALUES (?, ?, ?, ?, ?)",
                    [(row.path, row.hash, PARSER_VERSION, row.record, row.stamp) for row in rows],
                )
        except sqlite3.DatabaseError as error:
            self._write_failed(error, f"skill cache write failed ({error}); not saved")

    def restamp_skills(self, stamps: Sequence[tuple[str, str]]) -> None:
        """(path, stamp) of files read again and found as parsed: next time, not read."""
        if self._connection is None or self.read_only or not stamps:
            return
        try:
            with self._transaction():
                self._connection.executemany(
                    "UPDATE skills SET stamp = ? WHERE path = ?",
                    [(stamp, path) for path, stamp in stamps],
                )
        except sqlite3.DatabaseError as error:
            self._write_failed(error, f"skill cache write failed ({error}); not saved")

    def remembered_checksum(self, path: str, size: int, mtime_ns: int) -> str | None:
        if self._connection is None:
            return None
        with self._lock:
            try:
                row = self._connection.execute(
                    "SELECT sha256 FROM file_checks WHERE path = ? AND size = ? AND mtime_ns = ?",
                    (path, size, mtime_ns),
                ).fetchone()
            except sqlite3.DatabaseError:
                return None
        return row[0] if row else None

    def remember_checksum(self, path: str, size: int, mtime_ns: int, sha256: str) -> None:
        if self._connection is None or self.read_only:
            return
        try:
            with self._transaction():
                self._connection.execute(
                    "INSERT OR REPLACE INTO file_checks VALUES (?, ?, ?, ?)",
                    (path, size, mtime_ns, sha256),
                )
        except sqlite3.DatabaseError as error:
            self._write_failed(error, "")  # a checksum not kept is computed again

    def count(self, model: str | None = None) -> int:
        if self._connection is None:
            return 0
        if model is None:
            return int(self._connection.execute("SELECT count(*) FROM vectors").fetchone()[0])
        row = self._connection.execute(
            "SELECT count(*) FROM vectors WHERE model = ?", (model,)
        ).fetchone()
        return int(row[0])

    def _transaction(self) -> _Transaction:
        assert self._connection is not None
        return _Transaction(self._connection, self._lock)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _upgrade(connection: sqlite3.Connection) -> None:
    """Bring a file of an earlier schema to SCHEMA_VERSION, keeping every vector.

    Schema 1 kept vectors in a WITHOUT ROWID table. Its rows live in the primary key's
    b-tree, where SQLite stores about 1 KB of a row in place and spills the rest of a
    1.5-2 KB vector to an overflow page of its own: reading 52,000 vectors took 0.75-0.93 s,
    against 0.25-0.38 s in an ordinary table with an index on the key (models.md, "The
    cache"). Its skill records held each skill's body, which loading a library decoded
    and dropped. Skill rows gain the stamp of the file they were parsed from (NULL until
    a load reads the file again). One transaction, then a VACUUM to give back the old
    table's pages; a process that finds another has already upgraded the file does
    nothing.

    A `bodies` table that earlier builds of this schema keep (and still write, when one
    shares the file) is left as it is: nothing here reads or writes it.
    """
    with _Transaction(connection, threading.RLock()):  # not shared yet: a lock of its own
        if connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        columns = {row[1] for row in connection.execute("PRAGMA table_info(skills)")}
        if "stamp" not in columns:
            connection.execute("ALTER TABLE skills ADD COLUMN stamp TEXT")
        old = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'"
        ).fetchone()
        if old is not None:
            connection.execute(
                "INSERT OR IGNORE INTO vectors SELECT model, text_hash, vector FROM embeddings"
            )
            connection.execute("DROP TABLE embeddings")
            try:
                connection.execute("UPDATE skills SET record = json_remove(record, '$.body')")
            except sqlite3.OperationalError:  # an SQLite built without JSON: parse again
                connection.execute("DELETE FROM skills")
        connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    if old is not None:
        # The old table's pages, free now: about 40 % of the file at 26,000 skills. While
        # another process reads, VACUUM fails, and the free pages serve later writes.
        with contextlib.suppress(sqlite3.DatabaseError):
            connection.execute("VACUUM")


class _SchemaError(sqlite3.DatabaseError):
    """A database of another (future or foreign) layout: moved aside like a damaged file."""


def _corrupt(error: sqlite3.DatabaseError) -> bool:
    """SQLite's own word that the file is not (or no longer) a database: only that is damage.
    A full disk (SQLITE_FULL), an I/O error or a read-only directory is the machine's
    state, not the file's: a healthy cache is never moved aside for it."""
    if isinstance(error, _SchemaError):
        return True
    name = getattr(error, "sqlite_errorname", None)
    if name is not None:
        return str(name).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    text = str(error)
    return "malformed" in text or "not a database" in text


def _read_only(error: sqlite3.DatabaseError) -> bool:
    """The file, or its directory, may be read but not written by this process."""
    name = str(getattr(error, "sqlite_errorname", ""))
    return name.startswith("SQLITE_READONLY") or "readonly" in str(error)


def _transient(error: sqlite3.DatabaseError) -> bool:
    """A lock another process holds for now, not damage to the file."""
    return "locked" in str(error) or "busy" in str(error)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT: concurrent writers queue on the lock instead of failing."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.RLock) -> None:
        self._connection = connection
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()
        try:
            self._connection.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            self._connection.execute("ROLLBACK" if kind else "COMMIT")
        finally:
            self._lock.release()


class CachedSkills:
    """A SkillMemo over the cache: unchanged files come back without YAML or tokenising,
    and files whose stamp is unchanged without being read.

    A record holds every field but the body, so a recalled skill is a `BodyOnDisk`: the
    live index drops bodies anyway, and at 26,000 skills they were two thirds of the
    records' 170 MB, all decoded while a library loads."""

    def __init__(self, cache: EmbeddingCache) -> None:
        self._cache = cache
        self._known: dict[str, KnownSkill] = {}
        self._new: list[SkillRow] = []
        self._restamped: list[tuple[str, str]] = []

    def prepare(self, paths: Sequence[str]) -> None:
        self._known = self._cache.skill_records(paths)

    def recall_unchanged(self, path: str, stamp: str) -> Skill | None:
        known = self._known.get(path)
        if known is None or known.stamp != stamp:
            return None
        return _recorded_skill(known.record)

    def recall(self, path: str, digest: str, stamp: str | None) -> Skill | None:
        known = self._known.get(path)
        if known is None or known.hash != digest:
            return None
        skill = _recorded_skill(known.record)
        if skill is not None and stamp is not None and stamp != known.stamp:
            self._restamped.append((path, stamp))  # touched, or stamped too fresh before
        return skill

    def remember(self, skill: Skill, stamp: str | None) -> None:
        record = skill_record(skill, body=False)
        self._new.append(SkillRow(skill.path, skill.hash, record, stamp))

    def flush(self) -> None:
        self._cache.store_skill_records(self._new)
        self._cache.restamp_skills(self._restamped)
        self._new, self._restamped = [], []


def _recorded_skill(record: str) -> Skill | None:
    try:
        data = json.loads(record)
        data["body"] = ""  # recorded without it: a BodyOnDisk reads it from its file
        return skill_from_data(data, BodyOnDisk)
    except (ValueError, TypeError, KeyError):
        return None  # a record from an incompatible build: parse the file again


def pinned_file_problem(
    path: Path, expected: str, cache: EmbeddingCache | None, what: str, reinstall: str
) -> str | None:
    """Why a packaged model file is not the one pinned (missing or altered), or None.

    A model's calibrated bars and the relevance model were fitted on exact weights, so a
    file that differs is refused, with the package to reinstall."""
    if not path.is_file():
        return f"{what} file missing: {path}"
    actual = file_sha256(path, cache, expected=expected)
    if actual != expected:
        return f"{what} file {path} has sha256 {actual}, expected {expected}; reinstall {reinstall}"
    return None


def file_sha256(
    path: str | os.PathLike[str],
    cache: EmbeddingCache | None = None,
    *,
    expected: str | None = None,
) -> str:
    """sha256 of a file, remembered by (path, size, mtime) so cold starts skip re-hashing.

    With `expected`, a remembered value that differs from it is not believed: the file is
    hashed again and what it really holds is remembered, so one damaged row of the cache
    cannot make a good model look altered."""
    stat = os.stat(path)
    key = os.path.abspath(path)
    if cache is not None:
        remembered = cache.remembered_checksum(key, stat.st_size, stat.st_mtime_ns)
        if remembered and (expected is None or remembered == expected):
            return remembered
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if cache is not None:
        cache.remember_checksum(key, stat.st_size, stat.st_mtime_ns, value)
    return value


# (texts embedded so far, texts to embed); what it returns is ignored (a front end may
# pass a lambda that posts a message and so returns a bool).
Progress = Callable[[int, int], object]
CHUNK_TEXTS = 256  # texts embedded between cache writes: an interrupted build keeps these
# Texts embedded between two progress reports: a chunk of 256 took seconds on a cold
# cache, and the explorer's "embedding 0/235 descriptions" did not move until it ended.
PROGRESS_TEXTS = 32
FIRST_TIMED_CHUNK = 4  # under a deadline, the texts embedded before the rate is known
# From this many texts to embed, the model's bulk session is opened for them (embed.py,
# `OnnxEmbedder.bulk`): its load, about 55 ms (8 texts' embedding on two cores), is then
# under 3 % of the work.
BULK_TEXTS = 256


class OutOfTime(Exception):
    """The deadline came before every text was embedded. What was embedded is in the cache
    (the next call resumes there); `left` texts of `total` have no vector yet."""

    def __init__(self, left: int, total: int) -> None:
        super().__init__(f"{left} of {total} descriptions not embedded yet")
        self.left, self.total = left, total


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache | None,
    known: Mapping[str, np.ndarray] | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray, int]:
    """The texts' vectors as one [len(texts), dim] matrix, and how many the model computed
    (the rest came from `known` or the cache: `embed_blocks_with_cache`)."""
    blocks, embedded = embed_blocks_with_cache(
        embedder, texts, cache, known, progress, deadline, block_rows=max(len(texts), 1)
    )
    return blocks[0], embedded


def embed_blocks_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache | None,
    known: Mapping[str, np.ndarray] | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
    *,
    block_rows: int,
) -> tuple[list[np.ndarray], int]:
    """Embed texts: from `known` (text hash -> vector, e.g. the previous snapshot), then the
    cache, then the model; returns (vectors, how many the model computed). The vectors
    come as arrays of `block_rows` rows (the last may be shorter; one empty array for no
    texts), the form a snapshot keeps them in: a whole matrix copied into blocks would
    hold the library's vectors twice over, beside the ones read from the cache, at the
    first build's peak.

    What the model computes is written to the cache every `CHUNK_TEXTS` texts, so an
    interrupted cold build (Ctrl-C, a crash) keeps what it embedded and the next run
    resumes there. Texts go to the model shortest first, so a build the hook's budget
    cuts short has embedded as many skills as it could; `progress` hears after each
    chunk.

    `deadline` (a `time.monotonic()` value; the hook's time budget): chunks are sized by
    the rate measured so far to end before it, and none starts that would not; then
    OutOfTime says how many texts are left, after what was embedded is cached.
    """
    identity, dim = embedder.identity, embedder.dim
    hashes = [text_hash(text) for text in texts]
    found = {key: known[key] for key in hashes if known and key in known}
    wanted = [key for key in dict.fromkeys(hashes) if key not in found]
    if cache and wanted:
        found.update(cache.get_many(identity, wanted, dim))
    missing = list(dict.fromkeys(key for key in hashes if key not in found))
    if missing:
        first_text = dict(zip(hashes, texts, strict=True))
        missing.sort(key=lambda key: len(first_text[key]))
        if progress is not None:
            progress(0, len(missing))
        start, seconds_per_text = 0, 0.0
        # Under a deadline (the hook's) time is what counts: no session is opened for it.
        bulk = (
            embedder.bulk()
            if isinstance(embedder, BulkEmbedder)
            and len(missing) >= BULK_TEXTS
            and deadline is None
            else contextlib.nullcontext()
        )
        with bulk:
            while start < len(missing):
                size = CHUNK_TEXTS
                if deadline is not None:
                    left = deadline - time.monotonic()
                    size = (
                        min(CHUNK_TEXTS, int(left / seconds_per_text))
                        if seconds_per_text
                        else FIRST_TIMED_CHUNK
                    )
                    if left <= 0 or size < 1:
                        raise OutOfTime(len(missing) - start, len(missing))
                chunk = missing[start : start + size]
                began = time.monotonic()
                computed: list[np.ndarray] = []
                for at in range(0, len(chunk), PROGRESS_TEXTS):  # said as it goes
                    part = chunk[at : at + PROGRESS_TEXTS]
                    computed.extend(embedder.embed_documents([first_text[key] for key in part]))
                    if progress is not None and at + len(part) < len(chunk):
                        progress(start + at + len(part), len(missing))
                seconds_per_text = (time.monotonic() - began) / len(chunk)  # the latest pace
                fresh = dict(zip(chunk, computed, strict=True))
                found.update(fresh)
                if cache:
                    cache.put_many(identity, fresh)
                start += len(chunk)
                if progress is not None:
                    progress(start, len(missing))
    blocks = [
        np.array([found[key] for key in hashes[start : start + block_rows]], dtype=np.float32)
        for start in range(0, len(hashes), block_rows)
    ]
    return blocks or [np.zeros((0, dim), dtype=np.float32)], len(missing)
