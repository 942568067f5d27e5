"""The persisted index: what `hook`, `route` and `why` open instead of re-reading a library.

Without it, every hook call walked the library, read and hashed every SKILL.md, decoded
every parse record and every cached vector, and rebuilt BM25: 1.9 s at 26,000 skills,
7x the cost of loading the model. With it, a call

1. re-validates the last walk by `stat` alone: every directory that was listed and every
   SKILL.md that was found keeps its (mtime, ctime, size, inode). A file whose stat moved
   is read and content-hashed, and only a changed hash counts as a change (a `touch` or a
   `git checkout` of identical content is not one). A file modified within `RACY_S` of
   the store being written is hashed too, because a later edit in the same clock tick
   would leave its stat unchanged (git's "racily clean" entries); once such files are
   confirmed and old enough, the store's clean-as-of time is moved forward in place.
2. reads the file into memory and views the arrays in it without copying: the vectors
   matrix, the BM25 postings in CSR form with their precomputed weights, the keyword and
   trigger-phrase tables, id order. Terms and keys are found by binary search over a
   sorted key blob, so nothing is decoded that the prompt does not touch.
   The file verifies itself before anything in it is used: its header and every section
   carry a CRC-32, and the sections are checked for shape (offsets that increase and end
   at their blob, postings and positions inside the library, finite vectors and weights).
   A store that fails any check (a flipped byte, a truncated or half-overwritten file,
   NaN vectors, garbage postings) is rebuilt from the files, with a note that says so,
   and never served. It is read, not mapped: a mapped file that another process
   truncates kills its reader with SIGBUS, a read file is only short.
3. materialises a `Skill` only when the cascade asks for one (the injected ones, the
   rerank pool), from its record, which is read from the store's file then: the records
   lie after every other section and are left out of step 2 (44 MB of the 109 MB at
   26,000 skills), each with a CRC-32 of its own, checked when read; one that fails
   removes the store and raises `StoreDamaged`. Its body is read from its file too, never
   held for the whole library.

Anything changed (or a store from another model, configuration, parser or engine build)
means one ordinary build through the parse and embedding caches, and a new store written
beside the old one and swapped in with `os.replace`, so a concurrent reader sees either
the old file or the new one, whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import operator
import os
import re
import threading
import time
import zlib
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from explorer.engine.base.config import Config, dense_body_chars, model_key
from explorer.engine.discovery.bodies import read_body
from explorer.engine.discovery.skills import (
    Discovery,
    Problem,
    Skill,
    assemble,
    content_hash,
    find_skill_files,
    load_skill,
    read_skill_bytes,
    skill_from_data,
    skill_record,
)
from explorer.engine.index.lexical import LexicalIndex
from explorer.engine.index.rows import DenseRows
from explorer.engine.index.snapshot import Index, builds_multilingual, index_skills
from explorer.engine.inference.cache import PARSER_VERSION, EmbeddingCache, Progress
from explorer.engine.inference.models import Models

STORE_VERSION = 4  # 4: the skill records are read one at a time (`_Reader.records`)
MAGIC = b"SKXIDX02"  # 02: a CRC-32 of the header and of every section (store version 3)
PREFIX = 32  # magic, written_ns, header length, header CRC-32: 8 bytes each
RACY_S = 2.0  # files modified this close to the store's writing are re-hashed on every open
# Cleaning old stores: a store written this recently, or mapped by a running
# process, is never removed (another process may be about to open or be reading it);
# a partial write (`.tmp`) older than an hour is a crashed writer's.
STALE_GRACE_S = 600.0
PARTIAL_GRACE_S = 3600.0
KEEP_PER_ROOTS = 3  # stores of one set of roots under other settings (models, BM25, …)
_STORE_NAME = re.compile(r"[0-9a-f]{24}\.idx")
_PARTIAL_NAME = re.compile(r"[0-9a-f]{24}\.idx\.[0-9]+\.tmp")
# The modules whose code decides what an index holds: a store written by other code is stale.
_CODE = (
    "discovery/bodies.py",
    "discovery/skills.py",
    "discovery/line_reader.py",
    "base/text.py",
    "index/lexical.py",
    "index/snapshot.py",
    "index/store.py",
    "inference/cache.py",
)


# -- keys: sorted strings in one blob, found by binary search -----------------------------


class SortedKeys:
    """Strings sorted by their UTF-8 bytes, stored as one blob plus offsets."""

    def __init__(self, blob: bytes | memoryview, offsets: np.ndarray) -> None:
        self._blob = blob
        self._offsets = offsets
        self.count = len(offsets) - 1

    def key(self, ordinal: int) -> str:
        start, end = int(self._offsets[ordinal]), int(self._offsets[ordinal + 1])
        return bytes(self._blob[start:end]).decode("utf-8")

    def find(self, key: str) -> int:
        """The ordinal of `key`, or -1."""
        wanted = key.encode("utf-8")
        low, high = 0, self.count
        offsets, blob = self._offsets, self._blob
        while low < high:
            middle = (low + high) // 2
            probe = bytes(blob[int(offsets[middle]) : int(offsets[middle + 1])])
            if probe < wanted:
                low = middle + 1
            else:
                high = middle
        found = low < self.count and bytes(blob[int(offsets[low]) : int(offsets[low + 1])])
        return low if found == wanted else -1

    def __iter__(self) -> Iterator[str]:
        return (self.key(ordinal) for ordinal in range(self.count))


def _encode_strings(values: Sequence[str]) -> tuple[bytes, np.ndarray]:
    encoded = [value.encode("utf-8") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    if encoded:
        offsets[1:] = np.cumsum([len(item) for item in encoded])
    return b"".join(encoded), offsets


def _decode_strings(blob: bytes | memoryview, offsets: np.ndarray) -> list[str]:
    text = bytes(blob)
    bounds = offsets.tolist()
    return [text[bounds[i] : bounds[i + 1]].decode("utf-8") for i in range(len(bounds) - 1)]


class Spans:
    """term -> (start, end) in a CSR array, over SortedKeys: the `_spans` of a LexicalIndex."""

    def __init__(self, keys: SortedKeys, bounds: np.ndarray) -> None:
        self._keys, self.bounds = keys, bounds

    def get(self, term: str, default: Any = None) -> Any:
        ordinal = self._keys.find(term)
        if ordinal < 0:
            return default
        return int(self.bounds[ordinal]), int(self.bounds[ordinal + 1])

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self._keys.find(term) >= 0

    def __len__(self) -> int:
        return self._keys.count

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)


class KeywordPostings(Mapping[str, np.ndarray]):
    """keyword (§3.2) or ecosystem token (§3.5) -> skill positions, read on lookup."""

    def __init__(self, spans: Spans, values: np.ndarray) -> None:
        self._spans, self._values = spans, values

    def __getitem__(self, key: str) -> np.ndarray:
        span = self._spans.get(key)
        if span is None:
            raise KeyError(key)
        return self._values[span[0] : span[1]]

    def get(self, key: str, default: Any = None) -> Any:
        span = self._spans.get(key)
        return default if span is None else self._values[span[0] : span[1]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)


class PhraseTable(Mapping[str, tuple[tuple[int, tuple[str, ...]], ...]]):
    """first token -> ((position, phrase tokens), …) (§3.3), read from the store on lookup."""

    def __init__(
        self, spans: Spans, positions: np.ndarray, texts: bytes | memoryview, offsets: np.ndarray
    ) -> None:
        self._spans, self._positions = spans, positions
        self._texts, self._offsets = texts, offsets

    def _entries(self, span: tuple[int, int]) -> tuple[tuple[int, tuple[str, ...]], ...]:
        entries = []
        for entry in range(span[0], span[1]):
            start, end = int(self._offsets[entry]), int(self._offsets[entry + 1])
            tokens = tuple(bytes(self._texts[start:end]).decode("utf-8").split("\x1f"))
            entries.append((int(self._positions[entry]), tokens))
        return tuple(entries)

    def __getitem__(self, key: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
        span = self._spans.get(key)
        if span is None:
            raise KeyError(key)
        return self._entries(span)

    def get(self, key: str, default: Any = None) -> Any:
        span = self._spans.get(key)
        return default if span is None else self._entries(span)

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)


# -- skills, materialised on demand -------------------------------------------------------


_Item = TypeVar("_Item")


class _ReadOnDemand(Sequence[_Item]):
    """A sequence whose items are made when indexed (`_item`), by position or slice."""

    @abstractmethod
    def _item(self, position: int) -> _Item: ...

    @overload
    def __getitem__(self, position: int) -> _Item: ...

    @overload
    def __getitem__(self, position: slice) -> list[_Item]: ...

    def __getitem__(self, position: int | slice) -> _Item | list[_Item]:
        if isinstance(position, slice):
            return [self._item(i) for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(position)
        return self._item(position)


class StoredSkills(_ReadOnDemand[Skill]):
    """The library's skills, each built from its stored record when first asked for.

    Records hold every derived field except the body; the body is read from the file
    when the skill is materialised, and checked against the stored content hash.
    """

    def __init__(self, records: Sequence[str], warnings: tuple[Problem, ...]) -> None:
        self._records = records
        self._made: dict[int, Skill] = {}
        self.warnings = warnings

    def __len__(self) -> int:
        return len(self._records)

    def _item(self, position: int) -> Skill:
        made = self._made.get(position)
        if made is None:
            data = json.loads(self._records[position])
            data["body"] = read_body(data["path"], data["hash"])
            made = self._made[position] = skill_from_data(data)
        return made

    def __iter__(self) -> Iterator[Skill]:
        return (self[position] for position in range(len(self)))


def _file_digest(path: str) -> str:
    """The content hash of a SKILL.md, read as discovery reads it (regular files only, never
    blocking, never past the size cap); for a file that cannot be read, its reason."""
    data = read_skill_bytes(path)
    if isinstance(data, Problem):
        return f"problem: {data.message}"
    return content_hash(data)


# -- the file -----------------------------------------------------------------------------


def _fingerprint(roots: Sequence[str], config: Config) -> str:
    """What an index depends on besides the files: a different value is a different store.

    The model is named by the config's model fields here (the hook looks the store up
    before the model has loaded); its exact identity, weights checksum included, is in
    the store's header and checked when the models are there.
    """
    here = Path(__file__).resolve().parents[1]  # explorer/engine
    code = []
    for name in _CODE:
        try:
            stat = os.stat(here / name)
            code.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            code.append(f"{name}:-")
    parts = {
        "store": STORE_VERSION,
        "parser": PARSER_VERSION,
        "roots": list(roots),
        "model": list(model_key(config)),
        "dense": dense_body_chars(config),
        "bm25": [config.bm25_index_name_keywords, config.bm25_k1, config.bm25_b],
        "code": code,
    }
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=12).hexdigest()


def _library_key(roots: Sequence[str], config: Config) -> str:
    """The library and the settings a store answers for, without the code that wrote it:
    two stores with the same key differ only by the program's version, and the older one
    will never be opened again."""
    parts = {
        "roots": list(roots),
        "model": list(model_key(config)),
        "dense": dense_body_chars(config),
        "bm25": [config.bm25_index_name_keywords, config.bm25_k1, config.bm25_b],
    }
    return hashlib.blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=12).hexdigest()


def store_path(cache: EmbeddingCache, roots: Sequence[str], config: Config) -> Path:
    return cache.directory / "index" / f"{_fingerprint(roots, config)}.idx"


def _model_identity(models: Models, multilingual: bool) -> str | None:
    """The dense model's identity, and the multilingual model's when its vectors are kept."""
    if models.embedder is None:
        return None
    if multilingual and models.multilingual is not None:
        return f"{models.embedder.identity}+{models.multilingual.identity}"
    return models.embedder.identity


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.table: dict[str, dict[str, Any]] = {}
        self.size = 0
        self._on_demand: list[tuple[str, bytes]] = []

    def array(self, name: str, value: np.ndarray) -> None:
        value = np.ascontiguousarray(value)
        self._add(name, value.tobytes(), dtype=value.dtype.str, shape=list(value.shape))

    def blob(self, name: str, value: bytes) -> None:
        self._add(name, value, dtype="blob", shape=[len(value)])

    def strings(self, name: str, values: Sequence[str]) -> None:
        blob, offsets = _encode_strings(values)
        self.blob(f"{name}.blob", blob)
        self.array(f"{name}.offsets", offsets)

    def strings_on_demand(self, name: str, values: Sequence[str]) -> None:
        """Strings a reader takes one at a time from the file (`_Reader.records`): their
        offsets and one CRC-32 each are sections like any other; the blob goes after
        every other section, where a reader can leave it unread."""
        blob, offsets = _encode_strings(values)
        self.array(f"{name}.offsets", offsets)
        view = memoryview(blob)
        crc = [zlib.crc32(view[start:end]) for start, end in pairwise(offsets.tolist())]
        self.array(f"{name}.crc", np.array(crc, dtype=np.int64))
        self._on_demand.append((f"{name}.blob", blob))

    def _add(self, name: str, data: bytes, **meta: Any) -> None:
        meta.setdefault("on_demand", False)
        padding = (-self.size) % 64  # aligned, so every array view is aligned too
        if padding:
            self.parts.append(b"\0" * padding)
            self.size += padding
        self.table[name] = {
            "offset": self.size,
            "length": len(data),
            "crc": zlib.crc32(data),
            **meta,
        }
        self.parts.append(data)
        self.size += len(data)

    def write(self, path: Path, header: dict[str, Any], written_ns: int) -> None:
        for name, blob in self._on_demand:
            self._add(name, blob, dtype="blob", shape=[len(blob)], on_demand=True)
        self._on_demand = []
        meta = json.dumps({**header, "size": self.size, "arrays": self.table}).encode("utf-8")
        prefix = store_prefix(meta, written_ns)
        start = len(prefix) + (-len(prefix)) % 64
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with open(partial, "wb") as handle:
                handle.write(prefix + b"\0" * (start - len(prefix)))
                for part in self.parts:
                    handle.write(part)
            # Offsets in the table are relative to `start`, recorded in the header.
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)


def store_prefix(meta: bytes, written_ns: int) -> bytes:
    """The bytes before a store's sections: magic, written_ns, the header and its CRC-32.

    written_ns (bytes 8-16) is outside the CRC: `_mark_clean` moves it forward in place."""
    return (
        MAGIC
        + written_ns.to_bytes(8, "little")
        + len(meta).to_bytes(8, "little")
        + zlib.crc32(meta).to_bytes(8, "little")
        + meta
    )


DAMAGED = "store damaged"  # the start of Opened.reason for a store that failed its checks
UNREADABLE = "store unreadable"


class StoreDamaged(ValueError):
    """A store whose bytes are not the ones written: it is rebuilt, never served."""


# What a section may hold: the dtypes the writer uses, nothing an attacker could pick.
_DTYPES: dict[str, np.dtype[Any]] = {
    "<i8": np.dtype("<i8"),
    "<f4": np.dtype("<f4"),
    "<f8": np.dtype("<f8"),
}


class _Reader:
    """A store read into memory and verified (CRC-32 of the header and every section,
    then the shape of what the sections say) before any of it is used.

    Sections written on demand (the skill records: 44 MB of the 109 MB at 26,000 skills,
    of which a decision reads a few dozen) lie at the end of the file and are not read
    here: the file stays open, and each string is read when asked for and checked
    against its own CRC-32 (`records`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        handle = open(path, "rb")  # noqa: SIM115 - kept open for the sections read on demand
        try:
            self._load(handle)
        except BaseException:
            handle.close()
            raise
        if self._on_demand_from is None:
            handle.close()  # every section is in memory
        self._handle = handle
        self._handle_lock = threading.Lock()

    def _load(self, handle: io.BufferedReader) -> None:
        size = os.fstat(handle.fileno()).st_size
        self._inode = os.fstat(handle.fileno()).st_ino
        prefix_bytes = handle.read(PREFIX)
        if prefix_bytes[:8] != MAGIC and size >= 8:
            raise ValueError("not an index store")
        if size < PREFIX:
            raise StoreDamaged(f"{size} bytes, shorter than a store's header")
        self.written_ns = int.from_bytes(prefix_bytes[8:16], "little")
        length = int.from_bytes(prefix_bytes[16:24], "little")
        if PREFIX + length > size:
            raise StoreDamaged("truncated inside its header")
        meta = handle.read(length)
        if len(meta) != length:
            raise StoreDamaged("truncated inside its header (while read)")
        if zlib.crc32(meta) != int.from_bytes(prefix_bytes[24:32], "little"):
            raise StoreDamaged("header checksum mismatch")
        header = json.loads(meta)
        if not isinstance(header, dict) or header.get("version") != STORE_VERSION:
            raise StoreDamaged("header of another store version")
        self.header: dict[str, Any] = header
        prefix = PREFIX + length
        self.start = prefix + (-prefix) % 64
        if self.start + int(header["size"]) != size:
            raise StoreDamaged(f"{size} bytes, {self.start + int(header['size'])} written")
        entries = header["arrays"]
        on_demand = [int(entry["offset"]) for entry in entries.values() if entry["on_demand"]]
        self._on_demand_from = min(on_demand) if on_demand else None
        loaded = size if self._on_demand_from is None else self.start + self._on_demand_from
        handle.seek(0)
        buffer = np.empty(loaded, dtype=np.uint8)
        got = handle.readinto(buffer.data)
        if got != loaded:
            raise StoreDamaged(f"read {got} of {loaded} bytes (truncated while read)")
        view = buffer.data
        self._buffer, self.view = buffer, view
        for name, entry in entries.items():
            begin, end = self._bounds(name, entry)
            if entry["on_demand"]:
                continue
            if end > loaded:
                raise StoreDamaged(f"section {name} lies among the sections read on demand")
            if zlib.crc32(view[begin:end]) != entry["crc"]:
                raise StoreDamaged(f"section {name}: checksum mismatch")
        check_sections(self)

    def records(self, name: str) -> OnDemandStrings:
        """The strings of a section written on demand (`_Writer.strings_on_demand`)."""
        return OnDemandStrings(self, name)

    def read_on_demand(self, name: str, start: int, end: int) -> bytes:
        """Bytes start:end of an on-demand section, from the file opened at load (a store
        replaced since is not read: the old file stays readable through its handle)."""
        entry = self.header["arrays"][name]
        if not entry["on_demand"] or not 0 <= start <= end <= int(entry["length"]):
            raise StoreDamaged(f"section {name}: {start}:{end} is not a part of it")
        with self._handle_lock:
            self._handle.seek(self.start + int(entry["offset"]) + start)
            return self._handle.read(end - start)

    def discard(self) -> None:
        """Remove the store from the cache (a damaged part was found while in use), unless
        another program has replaced it since: the next call builds a new one."""
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()

    def _bounds(self, name: str, entry: dict[str, Any]) -> tuple[int, int]:
        offset, length = int(entry["offset"]), int(entry["length"])
        if offset < 0 or length < 0 or offset + length > int(self.header["size"]):
            raise StoreDamaged(f"section {name} lies outside the file")
        dtype = entry["dtype"]
        if dtype != "blob":
            if dtype not in _DTYPES:
                raise StoreDamaged(f"section {name}: unknown dtype {dtype!r}")
            shape = entry["shape"]
            if any(not isinstance(side, int) or side < 0 for side in shape) or (
                int(np.prod(shape)) * _DTYPES[dtype].itemsize != length
            ):
                raise StoreDamaged(f"section {name}: shape {shape} does not fit its bytes")
        begin = self.start + offset
        return begin, begin + length

    def blob(self, name: str) -> memoryview:
        entry = self.header["arrays"][name]
        begin = self.start + entry["offset"]
        return self.view[begin : begin + entry["length"]]

    def array(self, name: str) -> np.ndarray:
        entry = self.header["arrays"][name]
        array: np.ndarray = np.frombuffer(
            self._buffer.data,
            dtype=_DTYPES[entry["dtype"]],
            count=int(np.prod(entry["shape"])) if entry["shape"] else 1,
            offset=self.start + entry["offset"],
        ).reshape(entry["shape"])
        array.flags.writeable = False  # a view of the store: shared by every reader of it
        return array

    def strings(self, name: str) -> list[str]:
        return _decode_strings(self.blob(f"{name}.blob"), self.array(f"{name}.offsets"))

    def keys(self, name: str) -> SortedKeys:
        return SortedKeys(self.blob(f"{name}.blob"), self.array(f"{name}.offsets"))


class OnDemandStrings(_ReadOnDemand[str]):
    """A store's strings read one at a time from its file, each checked against its own
    CRC-32 when read. A string that fails removes the store (it is rebuilt on the next
    call) and raises StoreDamaged."""

    def __init__(self, reader: _Reader, name: str) -> None:
        self._reader, self._name = reader, name
        self._offsets = reader.array(f"{name}.offsets")
        self._crc = reader.array(f"{name}.crc")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def _item(self, position: int) -> str:
        start, end = int(self._offsets[position]), int(self._offsets[position + 1])
        data = self._reader.read_on_demand(f"{self._name}.blob", start, end)
        if len(data) != end - start or zlib.crc32(data) != int(self._crc[position]):
            self._reader.discard()
            raise StoreDamaged(f"section {self._name}.blob: entry {position} checksum mismatch")
        return data.decode("utf-8")


def check_sections(reader: _Reader) -> None:
    """What the sections say must be usable: every offset table increases from 0 to the end
    of its blob, every CSR table ends at its values, every posting and position names a
    skill of the library, vectors and BM25 weights are finite. Vectorised: about 20 ms of
    the open at 26,000 skills. Raises StoreDamaged naming the first section that fails."""
    header = reader.header
    count = int(header["count"])
    arrays = header["arrays"]

    def need(ok: bool, name: str, what: str) -> None:
        if not ok:
            raise StoreDamaged(f"section {name}: {what}")

    def rising(name: str, end: int) -> np.ndarray:
        bounds = reader.array(name)
        need(
            bounds.ndim == 1
            and len(bounds) >= 1
            and int(bounds[0]) == 0
            and int(bounds[-1]) == end
            and bool(np.all(bounds[1:] >= bounds[:-1])),
            name,
            "offsets do not rise from 0 to the end of what they index",
        )
        return bounds

    def inside(name: str, length: int | None = None) -> np.ndarray:
        values = reader.array(name)
        need(values.ndim == 1 and (length is None or len(values) == length), name, "wrong length")
        need(
            not len(values) or (int(values.min()) >= 0 and int(values.max()) < count),
            name,
            "names a skill outside the library",
        )
        return values

    def finite(name: str) -> None:
        need(bool(np.isfinite(reader.array(name)).all()), name, "holds NaN or infinite values")

    strings_count: dict[str, int] = {}
    for name, entry in arrays.items():
        if name.endswith(".offsets"):
            base = name[: -len(".offsets")]
            need(f"{base}.blob" in arrays, name, "has no blob")
            strings_count[base] = len(rising(name, int(arrays[f"{base}.blob"]["length"]))) - 1
        elif entry["dtype"] == "blob":
            need(name.endswith(".blob"), name, "a blob of no known table")
    for name in ("ids", "paths", "records"):
        need(strings_count.get(name) == count, name, f"does not hold {count} entries")
    need(arrays["records.blob"]["on_demand"], "records.blob", "is not read on demand")
    need(reader.array("records.crc").shape == (count,), "records.crc", "one CRC per record")
    dirs, files = strings_count.get("dirs", -1), strings_count.get("files", -1)
    need(reader.array("dirs.stat").shape == (dirs, 4), "dirs.stat", "one row per directory")
    need(reader.array("files.stat").shape == (files, 4), "files.stat", "one row per file")
    need(strings_count.get("files.hash") == files, "files.hash", "one hash per file")
    inside("id_rank", count)
    for name in ("vectors", "multilingual"):
        if name in arrays:
            matrix = reader.array(name)
            need(matrix.ndim == 2 and len(matrix) == count, name, "one row per skill")
            finite(name)
    terms = strings_count.get("terms", -1)
    bounds = reader.array("terms.bounds")
    need(bounds.ndim == 1 and len(bounds) == terms + 1, "terms.bounds", "one span per term")
    total = int(bounds[-1]) if len(bounds) else 0
    rising("terms.bounds", total)
    inside("bm25.docs", total)
    for name in ("bm25.tf", "bm25.weights"):
        need(reader.array(name).shape == (total,), name, "one value per posting")
        finite(name)
    for name in ("bm25.dl", "bm25.unique"):
        need(reader.array(name).shape == (count,), name, "one value per skill")
    finite("bm25.dl")
    bm25 = header["bm25"]
    need(
        int(bm25["n"]) == count
        and all(np.isfinite(float(bm25[key])) for key in ("avgdl", "k1", "b")),
        "bm25",
        "statistics do not fit the library",
    )
    for table in ("keywords", "ecosystem"):
        table_bounds = reader.array(f"{table}.bounds")
        need(
            len(table_bounds) == strings_count.get(table, -1) + 1,
            f"{table}.bounds",
            "one span per key",
        )
        values = inside(f"{table}.values")
        rising(f"{table}.bounds", len(values))
    positions = inside("phrases.positions")
    need(
        len(reader.array("phrases.bounds")) == strings_count.get("phrases", -1) + 1,
        "phrases.bounds",
        "one span per first token",
    )
    rising("phrases.bounds", len(positions))
    need(strings_count.get("phrases.tokens") == len(positions), "phrases.tokens", "one per entry")


# What a stat says of a file or directory for the store: changed when any of them moved.
_STAT_FIELDS = operator.attrgetter("st_mtime_ns", "st_ctime_ns", "st_size", "st_ino")


def _stat_row(info: os.stat_result) -> list[int]:
    return list(_STAT_FIELDS(info))


def _stat_table(infos: Sequence[os.stat_result]) -> np.ndarray:
    """One row of the four _STAT_FIELDS per path; no path at all (an empty root) is still
    a table of four columns, which the reader checks."""
    return np.array([_stat_row(info) for info in infos], dtype=np.int64).reshape(-1, 4)


def _sorted_csr(
    table: Mapping[str, Sequence[int]] | Mapping[str, np.ndarray],
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """keys sorted by UTF-8 bytes, CSR bounds, and the concatenated values."""
    keys = sorted(table, key=lambda key: key.encode("utf-8"))
    lengths = [len(table[key]) for key in keys]
    bounds = np.zeros(len(keys) + 1, dtype=np.int64)
    if keys:
        bounds[1:] = np.cumsum(lengths)
    values = (
        np.concatenate([np.asarray(table[key], dtype=np.int64) for key in keys])
        if keys
        else np.zeros(0, dtype=np.int64)
    )
    return keys, bounds, values


def save_store(
    path: Path,
    index: Index,
    dirs: Sequence[tuple[str, os.stat_result]],
    files: Sequence[tuple[str, os.stat_result, str]],
    missing_roots: Sequence[str],
    library_key: str = "",
) -> None:
    """Write `index` and the stats that validate it; atomically replaces any older store."""
    writer = _Writer()
    writer.strings("dirs", [path for path, _ in dirs])
    writer.array("dirs.stat", _stat_table([info for _, info in dirs]))
    writer.strings("files", [path for path, _, _ in files])
    writer.array("files.stat", _stat_table([info for _, info, _ in files]))
    writer.strings("files.hash", [digest for _, _, digest in files])
    if index.vectors is not None:
        writer.array("vectors", np.asarray(index.vectors, dtype=np.float32))
    if index.multilingual is not None:
        writer.array("multilingual", np.asarray(index.multilingual, dtype=np.float32))
    writer.array("id_rank", index.id_rank)
    writer.strings("ids", index.ids)
    writer.strings("paths", index.paths)
    # One JSON encoding per skill, without its body (read from the file when materialised).
    writer.strings_on_demand("records", [skill_record(skill, body=False) for skill in index.skills])

    lexical = index.lexical.compacted()
    terms = list(lexical._spans)
    ordered = sorted(range(len(terms)), key=lambda t: terms[t].encode("utf-8"))
    spans = [lexical._spans.get(terms[t]) for t in ordered]
    lengths = np.array([end - start for start, end in spans], dtype=np.int64)
    bounds = np.zeros(len(terms) + 1, dtype=np.int64)
    bounds[1:] = np.cumsum(lengths)
    take = (
        np.concatenate([np.arange(start, end, dtype=np.int64) for start, end in spans])
        if spans
        else np.zeros(0, dtype=np.int64)
    )
    writer.strings("terms", [terms[t] for t in ordered])
    writer.array("terms.bounds", bounds)
    writer.array("bm25.docs", lexical._docs[take])
    writer.array("bm25.tf", lexical._tf[take])
    writer.array("bm25.weights", lexical.weights()[take])
    writer.array("bm25.dl", lexical.dl)
    writer.array("bm25.unique", lexical._unique)

    keywords, keyword_bounds, keyword_values = _sorted_csr(index.keyword_postings)
    writer.strings("keywords", keywords)
    writer.array("keywords.bounds", keyword_bounds)
    writer.array("keywords.values", keyword_values)

    eco_keys, token_bounds, token_values = _sorted_csr(index.ecosystem_postings)
    writer.strings("ecosystem", eco_keys)
    writer.array("ecosystem.bounds", token_bounds)
    writer.array("ecosystem.values", token_values)

    firsts = sorted(index.phrase_table, key=lambda key: key.encode("utf-8"))
    phrase_bounds = np.zeros(len(firsts) + 1, dtype=np.int64)
    phrase_positions: list[int] = []
    phrase_texts: list[str] = []
    for ordinal, first in enumerate(firsts):
        for position, tokens in index.phrase_table[first]:
            phrase_positions.append(position)
            phrase_texts.append("\x1f".join(tokens))
        phrase_bounds[ordinal + 1] = len(phrase_positions)
    writer.strings("phrases", firsts)
    writer.array("phrases.bounds", phrase_bounds)
    writer.array("phrases.positions", np.array(phrase_positions, dtype=np.int64))
    writer.strings("phrases.tokens", phrase_texts)

    written_ns = time.time_ns()
    header = {
        "version": STORE_VERSION,
        "library": library_key,
        "roots": list(index.roots),
        "missing_roots": list(missing_roots),
        "count": len(index),
        "model": _model_identity(index.models, index.multilingual is not None),
        "bm25": {"n": lexical.n, "avgdl": lexical.avgdl, "k1": lexical.k1, "b": lexical.b},
        "rejected": [_problem(problem) for problem in index.rejected],
        "warnings": [_problem(problem) for problem in index.warnings],
    }
    writer.write(path, header, written_ns)


def _problem(problem: Problem) -> dict[str, Any]:
    return dataclasses.asdict(problem)


@dataclass
class Validation:
    """The outcome of re-checking a store against the disk."""

    valid: bool
    reason: str = ""
    stat_checks: int = 0
    hashed: int = 0


def validate(reader: _Reader) -> Validation:
    """Is the disk exactly as when the store was written? Stat first, hash only on doubt.

    The stats are taken in one pass per table and compared as arrays: at 26,000 skills
    they are 52,000 calls, made while the hook's models load on the other core, and a
    Python loop around each call (its comparison, its list of four ints) held the GIL
    that the model's load needed as well."""
    started_ns = time.time_ns()
    header = reader.header
    for root in header["missing_roots"]:
        if os.path.exists(root):
            return Validation(False, f"root {root} appeared")
    dir_paths = reader.strings("dirs")
    dir_rows, gone = _stat_rows(dir_paths)
    changed = np.flatnonzero((dir_rows != reader.array("dirs.stat")[: len(dir_rows)]).any(axis=1))
    if len(changed):
        first = int(changed[0])
        return Validation(False, f"directory {dir_paths[first]} changed", first + 1)
    if gone is not None:
        return Validation(False, f"directory {dir_paths[gone]} is gone", gone + 1)
    checks = len(dir_paths)
    file_paths = reader.strings("files")
    file_rows, gone = _stat_rows(file_paths)
    known = reader.array("files.stat")[: len(file_rows)]
    same = (file_rows == known).all(axis=1)
    # A file written within RACY_S of the store could change again without its stat
    # moving: its content is hashed even when the stat is the same.
    racy = same & (file_rows[:, 0] >= reader.written_ns - int(RACY_S * 1e9))
    hashed = 0
    hashes: list[str] | None = None
    for position in np.flatnonzero(~same | racy).tolist():
        path = file_paths[position]
        if file_rows[position, 2] != known[position, 2]:
            return Validation(False, f"{path} changed size", checks + position + 1, hashed)
        if hashes is None:
            hashes = reader.strings("files.hash")
        hashed += 1
        if _file_digest(path) != hashes[position]:
            return Validation(False, f"{path} changed", checks + position + 1, hashed)
    if gone is not None:
        return Validation(False, f"{file_paths[gone]} is gone", checks + gone + 1, hashed)
    if racy.any():
        _mark_clean(reader, started_ns)
    return Validation(True, "", checks + len(file_paths), hashed)


def _stat_rows(paths: Sequence[str]) -> tuple[np.ndarray, int | None]:
    """The `_stat_row` of each of `paths` as an (n, 4) array, up to the first that cannot
    be stat'ed (gone, or unreadable), and that one's position (None: every path)."""
    gone = None
    try:
        rows = list(map(_STAT_FIELDS, map(os.stat, paths)))
    except OSError:
        rows = []
        for position, path in enumerate(paths):
            try:
                rows.append(_STAT_FIELDS(os.stat(path)))
            except OSError:
                gone = position
                break
    return np.array(rows, dtype=np.int64).reshape(len(rows), 4), gone


def _mark_clean(reader: _Reader, checked_ns: int) -> None:
    """Racily clean files were hashed and found equal: if they are old enough now, record
    that in place (8 bytes), so later calls trust their stat again."""
    newest = checked_ns - int(RACY_S * 1e9)
    if newest <= reader.written_ns:
        return
    try:
        with open(reader.path, "r+b") as handle:
            handle.seek(8)
            handle.write(newest.to_bytes(8, "little"))
    except OSError:
        pass


def load_store(reader: _Reader, config: Config, models: Models) -> Index:
    """An Index over the mapped store: arrays are views, skills are materialised on demand."""
    header = reader.header
    ids = reader.strings("ids")
    bm25 = header["bm25"]
    terms = Spans(reader.keys("terms"), reader.array("terms.bounds"))
    lexical = LexicalIndex.from_arrays(
        ids,
        k1=bm25["k1"],
        b=bm25["b"],
        dl=reader.array("bm25.dl"),
        avgdl=bm25["avgdl"],
        docs=reader.array("bm25.docs"),
        tf=reader.array("bm25.tf"),
        weights=reader.array("bm25.weights"),
        spans=terms,
        unique=reader.array("bm25.unique"),
    )
    vectors = None
    if "vectors" in header["arrays"] and models.embedder is not None:
        vectors = DenseRows.from_array(reader.array("vectors"), copy=False)
    multilingual = None
    if "multilingual" in header["arrays"] and builds_multilingual(config, models):
        multilingual = DenseRows.from_array(reader.array("multilingual"), copy=False)
    warnings = tuple(Problem(**item) for item in header["warnings"])
    skills = StoredSkills(reader.records("records"), warnings)
    return Index(
        skills=skills,
        rejected=tuple(Problem(**item) for item in header["rejected"]),
        roots=tuple(header["roots"]),
        models=models,
        vectors=vectors,
        lexical=lexical,
        keyword_postings=KeywordPostings(
            Spans(reader.keys("keywords"), reader.array("keywords.bounds")),
            reader.array("keywords.values"),
        ),
        phrase_table=PhraseTable(
            Spans(reader.keys("phrases"), reader.array("phrases.bounds")),
            reader.array("phrases.positions"),
            reader.blob("phrases.tokens.blob"),
            reader.array("phrases.tokens.offsets"),
        ),
        ecosystem_postings=KeywordPostings(
            Spans(reader.keys("ecosystem"), reader.array("ecosystem.bounds")),
            reader.array("ecosystem.values"),
        ),
        id_rank=reader.array("id_rank"),
        positions={skill_id: position for position, skill_id in enumerate(ids)},
        paths=tuple(reader.strings("paths")),
        dense_body_chars=dense_body_chars(config),
        multilingual=multilingual,
    )


class PendingStore:
    """A store opened and validated in a thread, while the caller loads the models.

    The `stat` calls and onnxruntime's session set-up both release the GIL, so on two
    cores the validation of a 26,000-skill library hides behind the model's load.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._result: tuple[_Reader | None, Validation | None, str] = (None, None, "")
        self._thread = threading.Thread(target=self._run, name="store-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if not self.path.is_file():
                self._result = (None, None, "no store yet")
                return
            reader = _Reader(self.path)
            self._result = (reader, validate(reader), "")
        except StoreDamaged as error:
            self._result = (None, None, f"{DAMAGED} ({error})")
        except Exception as error:  # whatever else its bytes do to the reader: not served
            self._result = (None, None, f"{UNREADABLE} ({type(error).__name__}: {error})")

    def result(self) -> tuple[_Reader | None, Validation | None, str]:
        self._thread.join()
        return self._result


def prevalidate(
    roots: Sequence[str | os.PathLike[str]], config: Config, cache: EmbeddingCache | None
) -> PendingStore | None:
    """Start checking the library's store now; pass the result to `open_index`."""
    if cache is None or not cache.available:
        return None
    absolute = [os.path.abspath(os.fspath(root)) for root in roots]
    return PendingStore(store_path(cache, absolute, config))


@dataclass
class Opened:
    """An index for a command, and how it was obtained (for `index` and debug output)."""

    index: Index
    source: str  # "store" (validated and mapped) or "built"
    reason: str  # why the store could not be used, when built
    path: Path | None
    validation: Validation | None = None


def open_index(
    roots: Sequence[str | os.PathLike[str]],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    pending: PendingStore | None = None,
    deadline: float | None = None,
) -> Opened:
    """The library's index from its persisted store when the disk still matches it, else
    built through the caches and persisted for the next call.

    `deadline` (the hook's time budget, time.monotonic()): a build that cannot embed every
    new description before it answers from the lexical channels and writes no store
    (snapshot.index_skills); what it embedded is cached for the next call."""
    absolute = [os.path.abspath(os.fspath(root)) for root in roots]
    if cache is None or not cache.available:
        from explorer.engine.index.snapshot import build_index

        index = build_index(absolute, config, models, cache, progress=progress, deadline=deadline)
        return Opened(index, "built", "no cache", None)
    path = store_path(cache, absolute, config)
    reason = "rebuild asked for" if rebuild else "no store yet"
    if not rebuild:
        if pending is not None and pending.path == path:
            reader, checked, problem = pending.result()
        else:
            reader, checked, problem = PendingStore(path).result()
        reason = problem or reason
        try:
            if reader is not None and checked is not None:
                if not checked.valid:
                    reason = checked.reason
                elif reader.header.get("model") != _model_identity(
                    models, builds_multilingual(config, models)
                ):
                    reason = "store made with another model"
                else:
                    return Opened(load_store(reader, config, models), "store", "", path, checked)
        except Exception as error:  # verified, yet unusable: rebuilt like a damaged one
            reason = f"{UNREADABLE} ({type(error).__name__}: {error})"
    index = build_and_save(absolute, config, models, cache, path, progress, deadline)
    if reason.startswith((DAMAGED, UNREADABLE)):
        note = f"index store {path} {reason.removeprefix('store ')}; rebuilt from the files"
        index = dataclasses.replace(index, notes=(*index.notes, note))
    return Opened(index, "built", reason, path)


def build_and_save(
    roots: Sequence[str],
    config: Config,
    models: Models,
    cache: EmbeddingCache,
    path: Path,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> Index:
    """A full build through the caches that records the stats a later call validates; one
    cut short by `deadline` (no vectors for some skills) is not saved."""
    from explorer.engine.inference.cache import CachedSkills

    started = time.perf_counter()
    visited: list[tuple[str, os.stat_result]] = []
    linked: list[str] = []
    paths, problems = find_skill_files(roots, linked, visited)
    file_stats: list[tuple[str, os.stat_result]] = []
    for file_path in paths:
        try:
            file_stats.append((file_path, os.stat(file_path)))
        except OSError:
            continue
    memo = CachedSkills(cache)
    memo.prepare(paths)
    results = {file_path: load_skill(file_path, memo) for file_path in paths}
    memo.flush()
    found: Discovery = assemble(results, problems, tuple(dict.fromkeys(linked)))
    parsed = time.perf_counter()
    index = index_skills(found, roots, config, models, cache, progress=progress, deadline=deadline)
    index.timings_ms["parse"] = (parsed - started) * 1000
    if index.models is not models:  # out of time: lexical only, for this call alone
        return index
    files = []
    for file_path, info in file_stats:
        result = results.get(file_path)
        digest = result.hash if isinstance(result, Skill) else _file_digest(file_path)
        files.append((file_path, info, digest))
    missing = [root for root in roots if not os.path.exists(root)]
    try:
        save_store(path, index, visited, files, missing, _library_key(roots, config))
    except OSError as error:  # a full disk: this call is served from memory, the next rebuilds
        note = f"index store {path} not written ({error})"
        index = dataclasses.replace(index, notes=(*index.notes, note))
    else:
        with contextlib.suppress(OSError):  # housekeeping: never a reason to fail a command
            clean_stores(path.parent, keep=path)
    index.timings_ms["total"] = (time.perf_counter() - started) * 1000
    return index


# -- housekeeping: old stores ------------------------------------------------------------


def _mapped_paths() -> set[str] | None:
    """Files that running processes have mapped (Linux /proc); None where unknown."""
    proc = Path("/proc")
    if not (proc / "self" / "maps").exists():
        return None
    mapped: set[str] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            with open(entry / "maps", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.rstrip().endswith(".idx"):
                        mapped.add(line.split(None, 5)[-1].strip())
        except OSError:
            continue  # gone, or another user's: it cannot map our cache anyway
    return mapped


def _store_header(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(PREFIX)
            if head[:8] != MAGIC:
                return None
            length = int.from_bytes(head[16:24], "little")
            header = json.loads(handle.read(min(length, 1 << 24)))
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None


def clean_stores(
    directory: Path, *, keep: Path | None = None, now: float | None = None
) -> list[Path]:
    """Remove index stores that will never be opened again; returns what was removed.

    Every rebuild writes a store named by the library, settings and code that made it,
    so stores of an older version of the program (or of settings no longer used) pile up
    under `<cache>/index/`. Removed, in this directory and of our own naming only:
    stores with the same library key as a newer one (only the program's version
    differs), stores beyond the newest `KEEP_PER_ROOTS` of one set of roots, unreadable
    or pre-key stores, and partial writes older than an hour. Never removed: `keep`, a
    store modified in the last `STALE_GRACE_S` seconds (another process may
    have just written it or be about to map it), or one a running process has mapped.
    """
    now = time.time() if now is None else now
    stores: list[tuple[float, Path, dict[str, Any] | None]] = []
    removed: list[Path] = []
    for path in directory.iterdir():
        try:
            info = path.stat()
        except OSError:
            continue
        if _PARTIAL_NAME.fullmatch(path.name):
            if now - info.st_mtime > PARTIAL_GRACE_S:
                path.unlink(missing_ok=True)
                removed.append(path)
        elif _STORE_NAME.fullmatch(path.name):
            stores.append((info.st_mtime, path, _store_header(path)))
    stores.sort(key=lambda item: item[0], reverse=True)  # newest first
    doomed: list[Path] = []
    seen_keys: set[str] = set()
    per_roots: dict[str, int] = {}
    for _, path, header in stores:
        key = header.get("library") if header else None
        if not key:
            doomed.append(path)
            continue
        roots = json.dumps(header.get("roots") if header else None)
        if key in seen_keys or per_roots.get(roots, 0) >= KEEP_PER_ROOTS:
            doomed.append(path)
            continue
        seen_keys.add(key)
        per_roots[roots] = per_roots.get(roots, 0) + 1
    candidates = [
        path
        for used, path, _ in stores
        if path in doomed and path != keep and now - used > STALE_GRACE_S
    ]
    if not candidates:
        return removed
    mapped = _mapped_paths() or set()
    for path in candidates:
        if str(path) in mapped or str(path.resolve()) in mapped:
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed
