"""The persisted index (explorer/engine/index/store.py): same answers, validated by stat, lazy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.index.store import (
    StoredSkills,
    _Reader,
    _stat_rows,
    open_index,
    prevalidate,
)
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import Models, assemble_models
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS, write_skill


def _answer(decision) -> dict:
    data = decision.to_dict()
    data.pop("timings_ms")
    return data


@pytest.mark.parametrize("model", ["bow", pytest.param("minilm", marks=pytest.mark.slow)])
def test_decisions_on_the_sample_cases_are_identical_from_the_store(
    model: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Every case of sample_skills/cases.toml, the whole decision JSON: store == fresh build.
    With MiniLM (each case's prompt through ONNX, twice) in the slow set."""
    config = Config(model=model, reranker="off")
    models = (
        assemble_models(BowEmbedder())
        if model == "bow"
        else request.getfixturevalue("minilm_models")
    )
    cache = EmbeddingCache(tmp_path / "cache")
    fresh = build_index([SAMPLE_SKILLS], config, models, cache)
    first = open_index([SAMPLE_SKILLS], config, models, cache)
    stored = open_index([SAMPLE_SKILLS], config, models, cache)
    assert (first.source, stored.source) == ("built", "store")
    assert isinstance(stored.index.skills, StoredSkills)
    cases = load_cases(SAMPLE_SKILLS / "cases.toml").cases
    assert len(cases) > 50
    modes = set()
    for case in cases:
        expected = decide(case.prompt, fresh, config)
        assert _answer(decide(case.prompt, stored.index, config)) == _answer(expected), case.prompt
        modes.update(item.mode for item in expected.injected)
    assert stored.index.rejected == fresh.rejected
    assert stored.index.warnings == fresh.warnings
    assert "body" in modes or "description" in modes


@pytest.fixture
def bow() -> Models:
    return assemble_models(BowEmbedder())


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    return root


def _open(root: Path, cache: EmbeddingCache, models: Models):
    return open_index([root], Config(), models, cache)


def _age(root: Path, seconds: float = 60.0) -> None:
    """Push every mtime into the past, so no file counts as racily clean."""
    past = os.stat(root).st_mtime - seconds
    for directory, _dirs, files in os.walk(root):
        for name in [*files, "."]:
            os.utime(os.path.join(directory, name), (past, past))


def test_an_unchanged_library_is_validated_by_stat_alone(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    assert _open(library, cache, bow).source == "built"
    again = _open(library, cache, bow)
    assert again.source == "store"
    assert again.validation is not None and again.validation.hashed == 0
    assert again.validation.stat_checks > len(again.index)


@pytest.mark.parametrize("root", ["empty", "missing"])
def test_a_library_of_no_skills_is_stored_and_read_back_whole(
    tmp_path: Path, bow: Models, root: str
) -> None:
    """No file (an empty folder, a root that is not there) is still a table of stat rows:
    the second open reads the store instead of calling it damaged and building again."""
    library = tmp_path / root
    if root == "empty":
        library.mkdir()
    cache = EmbeddingCache(tmp_path / "cache")
    assert _open(library, cache, bow).source == "built"
    again = _open(library, cache, bow)
    assert (again.source, len(again.index)) == ("store", 0), again.reason


def test_a_touched_file_is_hashed_once_and_still_valid(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    (library / "pdf" / "SKILL.md").touch()
    again = _open(library, cache, bow)
    assert again.source == "store"
    assert again.validation is not None and again.validation.hashed == 1


@pytest.mark.parametrize("change", ["edit", "same-size-same-mtime", "add", "nested", "delete"])
def test_any_change_on_disk_rebuilds_to_exactly_the_disk(
    library: Path, tmp_path: Path, bow: Models, change: str
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    skill_file = library / "pdf" / "SKILL.md"
    if change == "edit":
        write_skill(library, "pdf", "Bake sourdough bread with a starter.")
    elif change == "same-size-same-mtime":
        before = os.stat(skill_file)
        text = skill_file.read_text(encoding="utf-8")
        skill_file.write_text(text.replace("PDF", "QDF", 1), encoding="utf-8")
        os.utime(skill_file, ns=(before.st_atime_ns, before.st_mtime_ns))  # only ctime moves
    elif change == "add":
        write_skill(library, "sourdough", "Bake sourdough bread with a starter.")
    elif change == "nested":
        write_skill(library / "pdf" / "scripts", "sourdough", "Bake sourdough bread.")
    else:
        shutil.rmtree(library / "xlsx")
    again = _open(library, cache, bow)
    assert again.source == "built", again.reason
    said = {  # the first difference the stat pass finds, named
        "edit": f"{skill_file} changed size",
        "same-size-same-mtime": f"{skill_file} changed",
        "add": f"directory {library} changed",
        "nested": f"directory {library / 'pdf'} changed",
        "delete": f"directory {library} changed",  # before its gone child is stat'ed
    }[change]
    assert said in again.reason, again.reason
    fresh = build_index([library], Config(), bow)
    assert [s.id for s in again.index.skills] == [s.id for s in fresh.skills]
    assert [s.hash for s in again.index.skills] == [s.hash for s in fresh.skills]
    assert again.index.rejected == fresh.rejected
    settled = _open(library, cache, bow)
    assert settled.source == "store"
    prompt = "bake a loaf of sourdough bread from the pdf"
    assert _answer(decide(prompt, settled.index, Config())) == _answer(
        decide(prompt, fresh, Config())
    )


def test_the_stat_pass_stops_at_the_first_path_that_is_gone(tmp_path: Path) -> None:
    here = [tmp_path / name for name in ("a", "b", "c")]
    for path in here:
        path.write_text(path.name, encoding="utf-8")
    rows, gone = _stat_rows([str(path) for path in here])
    assert gone is None and rows.shape == (3, 4)
    assert rows[:, 2].tolist() == [1, 1, 1]  # st_size
    assert rows[:, 3].tolist() == [os.stat(path).st_ino for path in here]
    here[1].unlink()
    rows, gone = _stat_rows([str(path) for path in here])
    assert gone == 1 and rows.shape == (1, 4)


def test_bodies_are_read_on_demand_and_follow_the_file(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    stored = _open(library, cache, bow).index
    assert isinstance(stored.skills, StoredSkills)
    assert not stored.skills._made  # nothing materialised by opening
    position = stored.positions["pdf"]
    fresh = build_index([library], Config(), bow)
    assert stored.skills[position] == fresh.skills[fresh.positions["pdf"]]
    assert stored.skills[position].body == fresh.skills[fresh.positions["pdf"]].body
    assert list(stored.skills._made) == [position]


def test_the_skill_records_are_left_on_disk_until_a_skill_is_asked_for(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    path = _open(library, cache, bow).path
    assert path is not None
    reader = _Reader(path)
    records = reader.header["arrays"]["records.blob"]
    assert records["on_demand"] and records["length"] > 1000
    assert len(reader.view) == reader.start + records["offset"] < path.stat().st_size
    stored = _open(library, cache, bow).index
    assert stored.skills[stored.positions["pdf"]].description.startswith("Works with PDF files")


def test_a_damaged_store_is_rebuilt_not_fatal(library: Path, tmp_path: Path, bow: Models) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    first = _open(library, cache, bow)
    assert first.path is not None
    first.path.write_bytes(b"SKXIDX01garbage")
    again = _open(library, cache, bow)
    assert again.source == "built" and "unreadable" in again.reason
    assert [s.id for s in again.index.skills] == [s.id for s in first.index.skills]


class _OtherBow(BowEmbedder):
    identity = "bow-other-weights"


def test_a_store_made_with_another_model_is_not_used(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    other = _open(library, cache, assemble_models(_OtherBow()))
    assert other.source == "built" and "another model" in other.reason
    assert _open(library, cache, assemble_models(_OtherBow())).source == "store"


def test_a_store_whose_vectors_read_another_text_is_not_used(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    """§9.13: vectors of descriptions alone are not vectors of descriptions and bodies."""
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    stored = _open(library, cache, bow)
    assert stored.source == "store" and stored.index.dense_body_chars > 0
    alone = Config(dense_body_chars=0)
    other = open_index([library], alone, bow, cache)
    assert other.source == "built" and other.index.dense_body_chars == 0
    again = open_index([library], alone, bow, cache)
    assert again.source == "store" and again.index.dense_body_chars == 0
    assert again.index.vectors is not None and other.index.vectors is not None
    assert (again.index.vectors[:] == other.index.vectors[:]).all()


def test_the_hook_validates_the_store_while_the_model_loads(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    _age(library)
    _open(library, cache, bow)
    pending = prevalidate([library], Config(), cache)
    assert pending is not None
    opened = open_index([library], Config(), bow, cache, pending=pending)
    assert opened.source == "store" and opened.validation is not None
    write_skill(library, "sourdough", "Bake sourdough bread with a starter.")
    pending = prevalidate([library], Config(), cache)
    assert open_index([library], Config(), bow, cache, pending=pending).source == "built"


def _fake_store(directory: Path, name: str, header: dict | None, age_s: float) -> Path:
    """A file of the store's format (magic, header) with its mtime `age_s` in the past."""
    import json as json_module
    import time as time_module

    from explorer.engine.index.store import store_prefix

    path = directory / name
    if header is None:
        path.write_bytes(b"not a store")
    else:
        path.write_bytes(store_prefix(json_module.dumps(header).encode(), 0))
    when = time_module.time() - age_s
    os.utime(path, (when, when))
    return path


def test_old_stores_are_removed_but_never_a_recent_mapped_or_foreign_one(tmp_path: Path) -> None:
    """`<cache>/index/*.idx` does not pile up. Per library key only the newest
    survives; recent stores, stores another process has mapped and files that are not
    ours stay; crashed partial writes go after an hour."""
    import mmap

    from explorer.engine.index.store import clean_stores

    directory = tmp_path / "index"
    directory.mkdir()
    lib = {"roots": ["/skills"]}
    newest = _fake_store(directory, "a" * 24 + ".idx", {**lib, "library": "k1"}, 700)
    older = _fake_store(directory, "b" * 24 + ".idx", {**lib, "library": "k1"}, 800)
    recent_twin = _fake_store(directory, "c" * 24 + ".idx", {**lib, "library": "k1"}, 5)
    pre_key = _fake_store(directory, "d" * 24 + ".idx", lib, 900)
    broken = _fake_store(directory, "e" * 24 + ".idx", None, 900)
    other_settings = [
        _fake_store(directory, f"{n:024x}.idx", {**lib, "library": f"s{n}"}, 1000 + n)
        for n in range(4)
    ]
    other_roots = _fake_store(directory, "f" * 24 + ".idx", {"roots": ["/x"], "library": "k9"}, 9e5)
    mapped_old = _fake_store(directory, "9" * 24 + ".idx", {**lib, "library": "k1"}, 5000)
    partial_old = _fake_store(directory, "a" * 24 + ".idx.123.tmp", None, 4000)
    partial_new = _fake_store(directory, "b" * 24 + ".idx.456.tmp", None, 60)
    not_ours = _fake_store(directory, "notes.idx", {**lib, "library": "k1"}, 9e5)
    with open(mapped_old, "rb") as handle:
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        removed = set(clean_stores(directory, keep=newest))
        view.close()
    assert removed == {older, pre_key, broken, other_settings[2], other_settings[3], partial_old}
    for path in (newest, recent_twin, other_roots, mapped_old, partial_new, not_ours):
        assert path.exists()
    assert other_settings[0].exists() and other_settings[1].exists()


def test_a_rebuild_removes_the_store_an_older_program_wrote(
    library: Path, tmp_path: Path, bow: Models
) -> None:
    """The same library and settings, another version of the code: after the rebuild only
    the new store is left (the old one is past the grace period and mapped by no one)."""
    import time as time_module

    from explorer.engine.index import store as store_module

    cache = EmbeddingCache(tmp_path / "cache")
    first = _open(library, cache, bow)
    assert first.path is not None and first.path.exists()
    old = first.path.with_name("0" * 24 + ".idx")
    first.path.rename(old)  # as if written by another version: another fingerprint
    past = time_module.time() - 2 * store_module.STALE_GRACE_S
    os.utime(old, (past, past))
    second = _open(library, cache, bow)
    assert second.source == "built" and second.path == first.path
    assert sorted(p.name for p in second.path.parent.iterdir()) == [second.path.name]
