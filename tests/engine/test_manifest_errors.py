"""A libraries manifest or --library argument that cannot be used says where and why
(explorer/engine/qa/libraries.py): `calibrate --manifest`, `eval --by-library`, `bench`."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.qa.libraries import LibraryError, parse_library_arg, read_manifest

GOOD = '[[library]]\nname = "k"\nskills = "libs/k"\ntrain = "t.tsv"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[library]\n", "invalid TOML"),
        ('name = "k"\n', r"no \[\[library\]\] tables"),
        ("library = [1]\n", "library 1: not a table"),
        ('[[library]]\nname = "k"\nskills = "s"\ntrain = "t"\ncolour = "red"\n', "unknown key"),
        ('[[library]]\nskills = "s"\ntrain = "t"\n', "library 1: 'name' is missing"),
        ('[[library]]\nname = "k"\ntrain = "t"\n', r"\(k\): 'skills' must be a path or a list"),
        ('[[library]]\nname = "k"\nskills = ["a", 1]\ntrain = "t"\n', "'skills' must be"),
        ('[[library]]\nname = "k"\nskills = "s"\ntrain = 3\n', "'train' must be a path"),
        ('[[library]]\nname = "k"\nskills = "s"\n', "give 'train' \\(and 'validation'\\) or"),
        (
            '[[library]]\nname = "k"\nskills = "s"\ncases = "c"\ntrain = "t"\n',
            "give either 'cases' or 'train'/'validation'",
        ),
        (GOOD + GOOD, "duplicate library name"),
    ],
)
def test_a_bad_manifest_names_the_file_the_library_and_the_problem(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "libraries.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LibraryError, match=message) as raised:
        read_manifest(path)
    assert str(path) in str(raised.value)


def test_a_missing_manifest_says_it_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match=r"nowhere\.toml: cannot read manifest"):
        read_manifest(tmp_path / "nowhere.toml")


def test_skills_may_be_one_path_or_several(tmp_path: Path) -> None:
    path = tmp_path / "libraries.toml"
    path.write_text(GOOD.replace('"libs/k"', '["a", "b"]'), encoding="utf-8")
    (spec,) = read_manifest(path)
    assert spec.roots == (str(tmp_path / "a"), str(tmp_path / "b"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("skills", "expected DIR=CASES or DIR=TRAIN,VALIDATION"),
        ("=cases.toml", "expected DIR=CASES"),
        ("skills=a,b,c", "give one cases file, or train,validation"),
    ],
)
def test_a_bad_library_argument_is_refused(text: str, message: str) -> None:
    with pytest.raises(LibraryError, match=message):
        parse_library_arg(text)


def test_a_library_argument_takes_a_name_or_the_directory_name() -> None:
    named = parse_library_arg("mine:/x/skills=train.tsv,val.tsv")
    assert (named.name, named.roots, named.train, named.validation) == (
        "mine",
        ("/x/skills",),
        "train.tsv",
        "val.tsv",
    )
    unnamed = parse_library_arg("/x/skills/=cases.toml")
    assert (unnamed.name, unnamed.cases) == ("skills", "cases.toml")
