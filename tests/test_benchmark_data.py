"""The labelled benchmark data stays usable: every file parses, every label names a real skill.

These read only the repository's own copies under benchmarks/ (never a shared corpus), so
they run wherever the repository is checked out.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.datasets import (
    GROUPS,
    HELD_BACK_COPIES,
    LIBRARIES,
    LIBRARIES_DIR,
    OPENCLAW_JSONL,
    Library,
    library_roots,
    load_labelled,
    materialise_jsonl,
    read_groups,
)
from benchmarks.split_labelled import Row, assign
from explorer.engine.discovery.skills import discover
from explorer.engine.qa.cases import load_cases

# The floor for each library, train and validation together.
MINIMUM_PROMPTS = {
    "anthropic-wshobson": 130,
    "k-dense-scientific-skills": 100,
    "alirezarezvani-claude-skills": 110,
    "openclaw-large": 110,
}
EXPECTED_SKILLS = {
    "anthropic-wshobson": 193,
    "k-dense-scientific-skills": 130,
    "alirezarezvani-claude-skills": 235,  # 241 files; duplicate names and one bad file drop 6
    "openclaw-large": 2018,  # 2,289 lines; repeated names keep their first line
}
_IDS: dict[str, frozenset[str]] = {}


def library_ids(name: str) -> frozenset[str]:
    """Skill ids as the engine derives them, once per library per session."""
    if name not in _IDS:
        with library_roots(name) as roots:
            _IDS[name] = frozenset(skill.id for skill in discover(roots).skills)
    return _IDS[name]


def labelled(name: str) -> dict[str, list]:
    library = LIBRARIES[name]
    return {split: load_labelled(library.cases_file(split)) for split in ("train", "val")}


@pytest.mark.slow  # over 7 s here; .ci/run runs it
@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_library_is_read_whole_by_the_engine(name: str) -> None:
    assert len(library_ids(name)) == EXPECTED_SKILLS[name]


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_every_file_parses_cleanly_with_valid_kinds_and_groups(name: str) -> None:
    for split in ("train", "val"):
        path = LIBRARIES[name].cases_file(split)
        cases = load_cases(path)
        assert not cases.warnings, cases.warnings  # the reader warns on duplicate prompts
        for case, group in load_labelled(path):
            assert group in GROUPS, f"{case.where}: group {group!r}"
            if group in ("near-miss", "negative"):
                assert case.kind == "negative" and not case.expect, case.where
            else:
                assert case.kind == group and case.expect, case.where


# openclaw-large is materialised from JSONL into 2,018 skills first: seconds, so slow.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow) if name == "openclaw-large" else name
        for name in sorted(LIBRARIES)
    ],
)
def test_every_expected_id_exists_in_the_library(name: str) -> None:
    ids = library_ids(name)
    missing = [
        f"{case.where}: {skill}"
        for cases in labelled(name).values()
        for case, _ in cases
        for skill in case.expect
        if skill not in ids
    ]
    assert not missing, missing


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_no_prompt_is_in_both_splits_or_twice(name: str) -> None:
    prompts = [
        " ".join(case.prompt.lower().split())
        for cases in labelled(name).values()
        for case, _ in cases
    ]
    repeated = [prompt for prompt, count in Counter(prompts).items() if count > 1]
    assert not repeated, repeated


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_split_sizes_and_mix(name: str) -> None:
    splits = labelled(name)
    total = sum(len(cases) for cases in splits.values())
    assert total >= MINIMUM_PROMPTS[name]
    by_group = {split: Counter(group for _, group in cases) for split, cases in splits.items()}
    for group in ("direct", "indirect", "near-miss", "negative"):
        train, val = by_group["train"][group], by_group["val"][group]
        assert train and val, f"{name}: {group} missing from a split"
        # The split rule: round(35 %) of each group in validation.
        assert val == int(0.35 * (train + val) + 0.5), f"{name}: {group} {train}/{val}"
    share = {group: sum(counts[group] for counts in by_group.values()) / total for group in GROUPS}
    assert share["direct"] + share["indirect"] >= 0.6
    assert share["near-miss"] >= 0.08 and share["negative"] >= 0.08


def test_training_libraries_never_label_a_held_back_skill() -> None:
    """The reranker trains on these files: none may point it at an evaluation skill."""
    for library in LIBRARIES.values():
        if library.held_back:
            continue
        for cases in labelled(library.name).values():
            for case, _ in cases:
                assert not set(case.expect) & set(HELD_BACK_COPIES), case.where


@pytest.mark.slow  # materialises openclaw-large (2,018 skills) first: seconds
def test_openclaw_carries_the_held_back_copies_it_is_documented_to() -> None:
    assert set(HELD_BACK_COPIES) <= library_ids("openclaw-large")


def test_materialise_keeps_names_as_ids_and_the_first_of_a_repeated_name(tmp_path: Path) -> None:
    jsonl = tmp_path / "skills.jsonl"
    rows = [
        {"name": "PDF Merge & Split", "description": "Merge: and split PDFs"},
        {"name": "todo", "description": "first todo"},
        {"name": "todo", "description": 'second "todo"'},
        {"name": "天气", "description": "查询天气 — 中文描述"},
    ]
    jsonl.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n")
    found = discover([materialise_jsonl(jsonl, tmp_path / "out")])
    by_id = {skill.id: skill for skill in found.skills}
    assert sorted(by_id) == sorted(["PDF Merge & Split", "todo", "天气"])
    assert by_id["todo"].description == "first todo"
    assert by_id["PDF Merge & Split"].description == "Merge: and split PDFs"
    assert not any(skill.warnings for skill in found.skills)
    assert len(found.rejected) == 1 and "duplicate skill id 'todo'" in found.rejected[0].message


@pytest.mark.slow  # over 7 s here; .ci/run runs it
def test_openclaw_materialises_every_line() -> None:
    lines = OPENCLAW_JSONL.read_text(encoding="utf-8").splitlines()
    with library_roots("openclaw-large") as roots:
        assert len(list(roots[0].glob("*/SKILL.md"))) == len(lines)
        found = discover(roots)
    assert len(found.skills) + len(found.rejected) == len(lines)
    assert all("duplicate skill id" in problem.message for problem in found.rejected)


def test_every_library_keeps_its_licence_beside_it() -> None:
    for library in LIBRARIES.values():
        for root in library.roots:
            folder = LIBRARIES_DIR / root
            if root == "anthropic-apache":
                for skill in folder.iterdir():
                    if skill.is_dir():
                        assert (skill / "LICENSE.txt").is_file(), skill
            else:
                assert (folder / "LICENSE").is_file(), folder


def test_libraries_are_unmodified_copies() -> None:
    """SHA256SUMS was taken from the upstream copies; a reformat or an edit shows up here."""
    manifest = (LIBRARIES_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    listed = set()
    for line in manifest:
        digest, name = line.split("  ", 1)
        listed.add(name)
        data = (LIBRARIES_DIR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
    present = {
        str(path.relative_to(LIBRARIES_DIR))
        for path in LIBRARIES_DIR.rglob("*")
        if path.is_file() and path.parent != LIBRARIES_DIR
    }
    assert present == listed  # nothing added inside a library, nothing lost


def test_groups_come_from_the_comment_above(tmp_path: Path) -> None:
    path = tmp_path / "cases.tsv"
    path.write_text(
        "a\tdirect\tfirst\n# group: near-miss\n(none)\tnegative\tsecond\n\n"
        "# group: negative\n(none)\tnegative\tthird\n"
    )
    assert read_groups(path) == {1: "direct", 3: "near-miss", 6: "negative"}


def test_split_rule_is_stratified_and_additive() -> None:
    rows = [Row("direct", ("a",), f"d{i}") for i in range(20)]
    rows += [Row("negative", (), f"n{i}") for i in range(6)]
    train, val = assign("lib", [], [], rows, seed=16)
    assert sum(row.group == "direct" for row in val) == 7
    assert sum(row.group == "negative" for row in val) == 2
    again = assign("lib", [], [], rows, seed=16)
    assert again == (train, val)  # a fixed seed gives the same split
    more = [Row("direct", ("a",), f"extra{i}") for i in range(10)]
    train2, val2 = assign("lib", train, val, [*rows, *more], seed=16)
    assert train2[: len(train)] == train and val2[: len(val)] == val  # nothing moves
    assert sum(row.group == "direct" for row in val2) == 11  # round(35 % of 30)


def test_libraries_table_is_consistent() -> None:
    held_back = {library.name for library in LIBRARIES.values() if library.held_back}
    assert held_back == {"anthropic-wshobson", "k-dense-scientific-skills"}
    for library in LIBRARIES.values():
        assert isinstance(library, Library)
        for root in library.roots:
            assert (LIBRARIES_DIR / root).is_dir()


def test_manifest_names_the_same_libraries_and_files() -> None:
    """benchmarks/libraries.toml (read by calibrate/eval/bench) and LIBRARIES agree."""
    from explorer.engine.qa.libraries import read_manifest

    specs = {spec.name: spec for spec in read_manifest(LIBRARIES_DIR.parent / "libraries.toml")}
    assert set(specs) == set(LIBRARIES)
    for name, library in LIBRARIES.items():
        spec = specs[name]
        roots = [Path(root).resolve() for root in spec.roots]
        if library.jsonl:
            assert roots == [OPENCLAW_JSONL.resolve()]
        else:
            assert roots == [(LIBRARIES_DIR / root).resolve() for root in library.roots]
        assert Path(spec.train or "").resolve() == library.cases_file("train").resolve()
        assert Path(spec.validation or "").resolve() == library.cases_file("val").resolve()


# The extra training prompts of the packaged reranker (data/README.md, "Extra training prompts").
EXTRA_TRAIN = {
    name: LIBRARIES_DIR.parent / "data" / f"{name}.extra-train.tsv"
    for name in ("alirezarezvani-claude-skills", "openclaw-large")
}


@pytest.mark.parametrize("name", sorted(EXTRA_TRAIN))
def test_extra_training_prompts_stay_off_what_validation_and_held_back_libraries_measure(
    name: str,
) -> None:
    extra = load_labelled(EXTRA_TRAIN[name])
    assert len(extra) >= 150
    assert {group for _, group in extra} == {"direct", "indirect", "near-miss", "negative"}
    validation = labelled(name)["val"]
    measured = {skill for case, _ in validation for skill in case.expect}
    prompts = {case.prompt for case, _ in validation} | {
        case.prompt for case, _ in labelled(name)["train"]
    }
    for case, _ in extra:
        assert not set(case.expect) & measured, case.where
        assert not set(case.expect) & set(HELD_BACK_COPIES), case.where
        assert case.prompt not in prompts, case.where


@pytest.mark.slow  # materialises openclaw-large first
@pytest.mark.parametrize("name", sorted(EXTRA_TRAIN))
def test_extra_training_labels_name_real_skills(name: str) -> None:
    ids = library_ids(name)
    for case, _ in load_labelled(EXTRA_TRAIN[name]):
        assert set(case.expect) <= ids, case.where
