"""Calibration over several libraries: manifests, the joint sweep, and its split discipline."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.qa.cases import Case
from explorer.engine.qa.libraries import (
    LibraryCases,
    LibraryError,
    LibrarySpec,
    library_roots,
    load_library_cases,
    parse_library_arg,
    read_manifest,
)
from explorer.engine.qa.multical import (
    Budget,
    FastPath,
    MultiGrid,
    Structure,
    calibrate_libraries,
)
from explorer.quality_report import calibration_markdown, calibration_text
from tests.conftest import write_skill

SMALL = {
    "pdf": "Merge and split PDF files and extract tables from PDF pages.",
    "git-commit-writer": "Write git commit messages from the staged diff.",
    "changelog-generator": "Generate release notes and a changelog from git history.",
    "css-layout-fixer": "Fix CSS layout: center boxes with flexbox and grid.",
}
OTHER = {
    "weather": "Forecast rain, wind and temperature for a city.",
    "recipes": "Suggest dinner recipes from the ingredients in the fridge.",
    "flights": "Compare flight prices and find cheap airline tickets.",
}
# Descriptions alone (§9.13): tests/data/multical-small.json was written on them.
CONFIG = Config(model="bow", reranker="off", dense_body_chars=0)
TRAIN_A = (
    Case("merge two pdf files", ("pdf",), "direct"),
    Case("pdf tables out of pages", ("pdf",), "indirect"),
    Case("commit messages for my diff", ("git-commit-writer",), "direct"),
    Case("release notes from history", ("changelog-generator",), "indirect"),
    Case("center a box with flexbox", ("css-layout-fixer",), "direct"),
    Case("git history: commit messages and release notes", ("changelog-generator",), "direct"),
    Case("merge pdf pages, then a git commit message", ("git-commit-writer",), "direct"),
    # third by score: only a sweep that caps at max_skills (2) gets this one right
    Case(
        "git commit messages, release notes changelog, css layout", ("css-layout-fixer",), "direct"
    ),
    Case("bake a cake", (), "negative"),
    Case("history of the roman empire", (), "negative"),
)
TRAIN_B = (
    Case("will it rain in paris", ("weather",), "direct"),
    Case("cheap tickets to rome", ("flights",), "indirect"),
    Case("dinner from eggs and leeks", ("recipes",), "indirect"),
    Case("fix my css grid", (), "negative"),
)
VALIDATION_A = (Case("split a pdf", ("pdf",), "direct"), Case("walk the dog", (), "negative"))


def _index(root: Path, library: dict[str, str]) -> Index:
    for name, description in library.items():
        write_skill(root, name, description)
    return build_index([root], CONFIG, assemble_models(BowEmbedder()))


def _cases(name: str, train: tuple[Case, ...], validation: tuple[Case, ...]) -> LibraryCases:
    tag = lambda cases, split: tuple(dataclasses.replace(c, split=split) for c in cases)  # noqa: E731
    spec = LibrarySpec(name, (name,), train="t", validation="v")
    return LibraryCases(spec, tag(train, "train"), tag(validation, "validation"), (), "test")


GRID = MultiGrid(
    structures=(Structure(0.0, False, 0.0), Structure(0.5, False, 0.0), Structure(0.5, True, 0.2)),
    fast_paths=(FastPath(0.0, 2.0, 0.0), FastPath(1.0, 0.5, 0.0)),
    floors=tuple(round(0.05 * step, 2) for step in range(1, 30)),
    slopes=(0.0, 0.05),
    margins=(0.12, 0.3),
)


@pytest.fixture
def libraries(tmp_path: Path) -> list[tuple[LibraryCases, Index]]:
    return [
        (_cases("small", TRAIN_A, VALIDATION_A), _index(tmp_path / "a", SMALL)),
        (_cases("other", TRAIN_B, ()), _index(tmp_path / "b", OTHER)),
    ]


def test_joint_sweep_agrees_with_decide(libraries) -> None:
    report = calibrate_libraries(libraries, CONFIG, grid=GRID)
    assert report.verified, report.verify_note
    assert set(report.recommended) >= {"bm25_weight", "min_similarity", "floor_log_slope"}
    small = report.libraries[0]
    assert small.train["recommended"].cases == len(TRAIN_A)
    assert small.validation["recommended"].cases == len(VALIDATION_A)
    assert set(small.train) == {"reference", "recommended"}
    # the recommendation is at least as good as the reference on train, by the objective
    rec = [lib.train["recommended"].recall for lib in report.libraries]
    ref = [lib.train["reference"].recall for lib in report.libraries]
    assert sum(r or 0 for r in rec) >= sum(r or 0 for r in ref) or any(
        (lib.train["reference"].false_inject_rate or 0) > report.budget.negatives
        for lib in report.libraries
    )
    text = calibration_text(report)
    assert "small" in text and "recommended" in text and "reciprocal-rank" in text
    markdown = calibration_markdown(report)
    assert "| library | N | split |" in markdown and "| bm25_weight |" in markdown


@pytest.mark.parametrize(
    "floors", [(0.3, 0.5), pytest.param((0.1, 0.7), marks=pytest.mark.slow)], ids=str
)
def test_sweep_equals_decide_at_every_point(libraries, floors: tuple[float, ...]) -> None:
    """Each point of a small grid: the vectorised cosine stage, fast path and cap give
    exactly what decide() gives at that point (the check the report makes of the point it
    chooses). The middle floors, where the sample's decisions change, by default; the outer
    ones in the slow set."""
    from explorer.engine.qa.evaluate import Rates, evaluate
    from explorer.engine.qa.multical import _prepare, _sweep, swept_config

    fast_paths = (FastPath(0.0, 2.0, 0.0), FastPath(1.0, 0.2, 0.0), FastPath(1.0, 0.2, 0.4))
    grid = MultiGrid(GRID.structures, fast_paths, floors, (0.0, 0.1), (0.02, 0.3))
    libs = [_prepare(cases, index) for cases, index in libraries]
    config = swept_config(CONFIG)
    sweep = _sweep(libs, config, grid, lambda _message: None)
    points = list(itertools.product(*(range(size) for size in sweep.hits.shape[:5])))
    assert len(points) == len(grid) == 72
    for point in points:
        tuned = config.replace(**sweep.values(point))
        for li, lib in enumerate(libs):
            routed = Rates.from_report(evaluate(lib.cases.train, lib.fast, tuned))
            swept = (sweep.hits[point][li], sweep.fis[point][li] + sweep.near_fis[point][li])
            assert (routed.hits, routed.false_injects) == swept, (sweep.values(point), li)
    assert any(fast.lexical_min > 0 for fast in grid.fast_paths)


def test_validation_never_changes_the_choice(libraries) -> None:
    first = calibrate_libraries(libraries, CONFIG, grid=GRID)
    (_, index), other = libraries
    flipped = (
        Case("walk the dog", ("pdf",), "direct"),
        Case("merge two pdf files", (), "negative"),
    )
    changed = [(_cases("small", TRAIN_A, flipped), index), other]
    second = calibrate_libraries(changed, CONFIG, grid=GRID)
    assert first.recommended == second.recommended
    assert first.libraries[0].validation != second.libraries[0].validation


def test_near_misses_are_held_to_their_own_budget(tmp_path: Path) -> None:
    """A near-miss that scores like a real request: a tight near-miss budget must raise the
    floor above it (and lose the request), a loose one keeps the request and reports the
    near-miss injection apart from the plain negatives."""
    near_miss = dataclasses.replace(
        Case("pdf files merge tables", (), "negative"), group="near-miss"
    )
    train = (
        Case("merge pdf files and tables", ("pdf",), "direct"),
        Case("commit messages for my diff", ("git-commit-writer",), "direct"),
        near_miss,
        Case("bake a cake", (), "negative"),
    )
    libraries = [(_cases("small", train, ()), _index(tmp_path / "a", SMALL))]
    grid = dataclasses.replace(GRID, fast_paths=(FastPath(0.0, 2.0, 0.0),))

    loose = calibrate_libraries(libraries, CONFIG, grid=grid, budget=Budget(0.0, 1.0))
    strict = calibrate_libraries(libraries, CONFIG, grid=grid, budget=Budget(0.0, 0.0))
    assert loose.verified and strict.verified
    loose_rates = loose.libraries[0].train["recommended"]
    strict_rates = strict.libraries[0].train["recommended"]
    assert (loose_rates.near_misses, loose_rates.near_miss_injects) == (1, 1)
    assert loose_rates.plain_false_injects == 0 and loose_rates.plain_negatives == 1
    assert strict_rates.near_miss_injects == 0
    assert (loose_rates.recall or 0) > (strict_rates.recall or 0)
    assert strict.recommended["min_similarity"] > loose.recommended["min_similarity"]
    assert "near-miss inject" in calibration_markdown(loose)


def test_manifest_paths_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text(
        '[[library]]\nname = "k"\nskills = "libs/k"\ntrain = "d/k.train.tsv"\n'
        'validation = "d/k.val.tsv"\n',
        encoding="utf-8",
    )
    (spec,) = read_manifest(tmp_path / "m.toml")
    assert spec.roots == (str(tmp_path / "libs/k"),)
    assert spec.train == str(tmp_path / "d/k.train.tsv")
    (tmp_path / "bad.toml").write_text('[[library]]\nname = "k"\nskills = "x"\n', "utf-8")
    with pytest.raises(LibraryError, match=r"bad.toml: library 1 \(k\): give 'train'"):
        read_manifest(tmp_path / "bad.toml")


def test_library_argument_and_split_files(tmp_path: Path) -> None:
    train = tmp_path / "t.tsv"
    validation = tmp_path / "v.tsv"
    train.write_text("pdf\tdirect\tmerge pdfs\n(none)\tnegative\tbake a cake\n", "utf-8")
    validation.write_text("pdf\tdirect\tsplit a pdf\n", "utf-8")
    spec = parse_library_arg(f"{tmp_path}/skills={train},{validation}")
    assert spec.name == "skills" and spec.train == str(train)
    loaded = load_library_cases(spec)
    assert [case.split for case in loaded.train] == ["train", "train"]
    assert [case.split for case in loaded.validation] == ["validation"]
    named = parse_library_arg(f"mine:{tmp_path}/skills={train}")
    assert named.name == "mine" and named.cases == str(train)
    # A one-letter name is a name: only Windows has drive letters (C:\\skills=...).
    short = parse_library_arg(f"s:{tmp_path}/skills={train}")
    assert short.name == "s" and short.roots == (f"{tmp_path}/skills",)
    with pytest.raises(LibraryError, match="expected DIR=CASES"):
        parse_library_arg("just-a-dir")


def test_jsonl_root_is_materialised_then_removed(tmp_path: Path) -> None:
    jsonl = tmp_path / "skills.jsonl"
    jsonl.write_text(
        '{"name": "PDF Merge & Split", "description": "Merge PDFs: \\"fast\\"."}\n'
        '{"name": "weather", "description": "Rain and wind."}\n'
        '{"name": "weather", "description": "A later copy."}\n',
        encoding="utf-8",
    )
    spec = LibrarySpec("big", (str(jsonl),), cases="c.tsv")
    with library_roots(spec) as roots:
        index = build_index(roots, CONFIG, assemble_models(BowEmbedder()))
        assert sorted(index.ids) == ["PDF Merge & Split", "weather"]
        assert index.skills[index.positions["weather"]].description == "Rain and wind."
        assert (
            index.skills[index.positions["PDF Merge & Split"]].description == 'Merge PDFs: "fast".'
        )
        made = Path(roots[0])
        assert made.is_dir()
    assert not made.exists()
    (tmp_path / "bad.jsonl").write_text('{"name": "x"}\n', encoding="utf-8")
    bad = LibrarySpec("bad", (str(tmp_path / "bad.jsonl"),), cases="c")
    with pytest.raises(LibraryError, match=r"bad\.jsonl:1"), library_roots(bad):
        pass
