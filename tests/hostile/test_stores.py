"""Stores that verify themselves: the persisted index (explorer/engine/index/store.py)
with flipped bytes, truncated, overwritten, NaN vectors or garbage postings written with
valid checksums, and truncated by another process while in use. Each is rebuilt from the
files with a note, never served and never a traceback; `index` repairs it."""

from __future__ import annotations

import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.store import (
    DAMAGED,
    PREFIX,
    StoreDamaged,
    _Reader,
    open_index,
    store_prefix,
)
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import Models, assemble_models
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS

PROMPT = "merge these two report.pdf files into one"


@pytest.fixture
def bow() -> Models:
    return assemble_models(BowEmbedder())


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    past = os.stat(root).st_mtime - 60  # nothing racily clean: the store opens by stat
    for directory, _dirs, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(directory, name), (past, past))
    return root


def _open(root: Path, cache: EmbeddingCache, models: Models):
    return open_index([root], Config(), models, cache)


def _stored(library: Path, tmp_path: Path, bow: Models) -> tuple[EmbeddingCache, Path, dict]:
    cache = EmbeddingCache(tmp_path / "cache")
    first = _open(library, cache, bow)
    assert first.path is not None and _open(library, cache, bow).source == "store"
    return cache, first.path, _Reader(first.path).header


def _section(path: Path, header: dict, name: str) -> tuple[int, int]:
    """Where section `name` lies in the file: (start, length)."""
    length = int.from_bytes(path.read_bytes()[16:24], "little")
    start = PREFIX + length + (-(PREFIX + length)) % 64
    entry = header["arrays"][name]
    return start + entry["offset"], entry["length"]


def _rewrite(path: Path, header: dict, name: str, data: bytes) -> None:
    """Replace section `name` with `data` of the same length and a valid checksum: a store
    as a buggy writer would have left it, which only the shape checks can catch."""
    raw = bytearray(path.read_bytes())
    begin, length = _section(path, header, name)
    assert len(data) == length
    raw[begin : begin + length] = data
    header = json.loads(json.dumps(header))
    header["arrays"][name]["crc"] = zlib.crc32(data)
    old_length = int.from_bytes(raw[16:24], "little")
    meta = json.dumps(header).encode()
    body = bytes(raw[PREFIX + old_length + (-(PREFIX + old_length)) % 64 :])
    prefix = store_prefix(meta, int.from_bytes(raw[8:16], "little"))
    path.write_bytes(prefix + b"\0" * ((-len(prefix)) % 64) + body)


def _assert_rebuilt(library: Path, cache: EmbeddingCache, bow: Models, needle: str) -> None:
    reference = decide(
        PROMPT, _open(library, EmbeddingCache(cache.directory / "x"), bow).index, Config()
    )
    again = _open(library, cache, bow)
    assert again.source == "built", again
    assert needle in again.reason, again.reason
    assert any("rebuilt from the files" in note for note in again.index.notes), again.index.notes
    assert decide(PROMPT, again.index, Config()).injected_ids == reference.injected_ids
    assert _open(library, cache, bow).source == "store"  # and the rebuilt one is served after


SECTIONS = [
    "vectors",
    "bm25.docs",
    "bm25.weights",
    "records.offsets",
    "records.crc",
    "terms.blob",
    "id_rank",
    "keywords.values",
    "phrases.positions",
    "files.hash.blob",
]


@pytest.mark.parametrize("section", SECTIONS)
def test_a_flipped_byte_in_any_section_is_caught_by_its_checksum(
    section: str, library: Path, tmp_path: Path, bow: Models
) -> None:
    cache, path, header = _stored(library, tmp_path, bow)
    begin, length = _section(path, header, section)
    assert length > 0
    raw = bytearray(path.read_bytes())
    raw[begin + length // 2] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreDamaged, match=f"section {section}: checksum"):
        _Reader(path)
    _assert_rebuilt(library, cache, bow, DAMAGED)


def test_a_flipped_byte_in_the_header_is_caught(library: Path, tmp_path: Path, bow: Models) -> None:
    cache, path, _ = _stored(library, tmp_path, bow)
    raw = bytearray(path.read_bytes())
    at = raw.index(b'"count"')
    raw[at + 2] ^= 0x01  # still JSON, another key
    path.write_bytes(bytes(raw))
    with pytest.raises(StoreDamaged, match="header checksum"):
        _Reader(path)
    _assert_rebuilt(library, cache, bow, DAMAGED)


@pytest.mark.parametrize("keep", [0, 7, 31, 100, 0.5, 0.999])
def test_a_truncated_store_is_rebuilt(
    keep: float, library: Path, tmp_path: Path, bow: Models
) -> None:
    cache, path, _ = _stored(library, tmp_path, bow)
    size = path.stat().st_size
    os.truncate(path, int(size * keep) if isinstance(keep, float) else keep)
    _assert_rebuilt(library, cache, bow, "store")


def test_a_store_grown_by_garbage_is_rebuilt(library: Path, tmp_path: Path, bow: Models) -> None:
    cache, path, _ = _stored(library, tmp_path, bow)
    with open(path, "ab") as handle:
        handle.write(b"\xff" * 4096)
    _assert_rebuilt(library, cache, bow, DAMAGED)


def test_nan_vectors_with_a_valid_checksum_are_never_served(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache, path, header = _stored(library, tmp_path, bow)
    _, length = _section(path, header, "vectors")
    vectors = np.full(length // 4, np.nan, dtype="<f4")
    _rewrite(path, header, "vectors", vectors.tobytes())
    with pytest.raises(StoreDamaged, match="vectors: holds NaN"):
        _Reader(path)
    _assert_rebuilt(library, cache, bow, "NaN")


@pytest.mark.parametrize(
    ("section", "value", "needle"),
    [
        ("bm25.docs", 10**9, "outside the library"),
        ("bm25.docs", -1, "outside the library"),
        ("keywords.values", 99_999, "outside the library"),
        ("phrases.positions", -5, "outside the library"),
        ("id_rank", 12345, "outside the library"),
        ("terms.bounds", 7, "offsets do not rise"),
        ("records.offsets", 3, "offsets do not rise"),
        ("bm25.weights", float("inf"), "NaN or infinite"),
    ],
)
def test_garbage_postings_with_a_valid_checksum_are_never_served(
    section: str, value: float, needle: str, library: Path, tmp_path: Path, bow: Models
) -> None:
    cache, path, header = _stored(library, tmp_path, bow)
    dtype = header["arrays"][section]["dtype"]
    begin, length = _section(path, header, section)
    array = np.frombuffer(path.read_bytes()[begin : begin + length], dtype=dtype).copy()
    array[len(array) // 2] = value
    _rewrite(path, header, section, array.tobytes())
    with pytest.raises(StoreDamaged, match=needle):
        _Reader(path)
    _assert_rebuilt(library, cache, bow, needle)


def test_a_flipped_byte_in_a_skill_record_is_caught_when_the_record_is_read(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    """The records are read one at a time when a decision needs them, each checked against
    its own checksum: a damaged one stops that call (the hook answers nothing, as for any
    failure) and removes the store, so the next call builds a new one."""
    cache, path, header = _stored(library, tmp_path, bow)
    opened = _open(library, cache, bow)
    position = opened.index.positions["pdf"]
    offsets = _Reader(path).array("records.offsets")
    begin, _length = _section(path, header, "records.blob")
    raw = bytearray(path.read_bytes())
    raw[begin + int(offsets[position]) + 2] ^= 0x20
    path.write_bytes(bytes(raw))
    opened = _open(library, cache, bow)
    assert opened.source == "store"  # the damage is not in what the open verifies
    assert all(opened.index.skills[i].id for i in range(len(opened.index)) if i != position)
    with pytest.raises(StoreDamaged, match=rf"records\.blob: entry {position} checksum"):
        opened.index.skills[position]
    assert not path.exists()
    again = _open(library, cache, bow)
    assert again.source == "built" and again.reason == "no store yet"
    assert again.index.skills[again.index.positions["pdf"]].id == "pdf"


def test_a_store_truncated_by_another_process_while_in_use_is_survived(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    """The store is read, not mapped (a mapped file truncated under a running decision was
    SIGBUS on the next page touched): what the open read stays whole, a skill record read
    after the truncation fails its check, and the store is removed for the next call."""
    cache, path, _ = _stored(library, tmp_path, bow)
    opened = _open(library, cache, bow)
    assert opened.source == "store"
    os.truncate(path, 64)
    with pytest.raises(StoreDamaged, match=r"records\.blob: entry \d+ checksum"):
        decide(PROMPT, opened.index, Config())
    assert not path.exists()
    assert _open(library, cache, bow).source == "built"


def test_commands_on_a_damaged_store_say_so_and_index_repairs_it(
    tmp_path: Path, library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`route` and `why` answer from the files with a warning, no traceback; `index` writes a
    good store again (before, `index` validated by stat and served the damaged one)."""
    from explorer.cli import main

    cache = tmp_path / "cache"
    common = [
        "--skills",
        str(library),
        "--cache-dir",
        str(cache),
        "--set",
        "model=bow",
        "--set",
        "reranker=off",
        "--no-ski-config",
    ]

    def run(*args: str) -> tuple[int, str, str]:
        """The command in this process (an exception would fail the test: no traceback)."""
        code = main([*args, *common])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("index")[0] == 0
    [path] = (cache / "index").glob("*.idx")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    for command in (["route", PROMPT], ["why", PROMPT]):
        damaged = bytes(raw)
        path.write_bytes(damaged)
        code, out, err = run(*command)
        assert code == 0, err
        assert "damaged" in err and "rebuilt from the files" in err
        assert "pdf" in out
    path.write_bytes(bytes(raw))
    code, out, err = run("index")
    assert code == 0 and "rebuilt from the files" in out + err
    _Reader(path)  # verified: a good store again
