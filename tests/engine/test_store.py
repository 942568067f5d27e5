"""The persisted index (explorer/engine/store.py): same answers, validated by stat, lazy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from explorer.engine.cache import EmbeddingCache
from explorer.engine.cases import load_cases
from explorer.engine.config import Config
from explorer.engine.embed import BowEmbedder
from explorer.engine.models import Models, assemble_models
from explorer.engine.pipeline import decide
from explorer.engine.snapshot import build_index
from explorer.engine.store import StoredSkills, open_index, prevalidate
from tests.conftest import SAMPLE_SKILLS, write_skill


def _answer(decision) -> dict:
    data = decision.to_dict()
    data.pop("timings_ms")
    return data


def test_decisions_on_the_sample_cases_are_identical_from_the_store(
    minilm_models: Models, tmp_path: Path
) -> None:
    """Every case of sample_skills/cases.toml, the whole decision JSON: store == fresh build."""
    config = Config(reranker="off")
    cache = EmbeddingCache(tmp_path / "cache")
    fresh = build_index([SAMPLE_SKILLS], config, minilm_models, cache)
    first = open_index([SAMPLE_SKILLS], config, minilm_models, cache)
    stored = open_index([SAMPLE_SKILLS], config, minilm_models, cache)
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
