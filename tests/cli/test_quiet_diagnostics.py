"""Skipped files and parse warnings: a few are named, many are counted in one line.

A real 2,289-skill library has ~280 duplicate names: one stderr line each, on every call,
buried the answer. `-v` names them all again.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.cli.library import LIST_UP_TO, problem_lines
from explorer.engine.discovery.skills import Problem


@dataclass
class _Library:  # the attributes problem_lines reads from an Index
    rejected: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    notes: tuple[str, ...] = ()


def _library(duplicates: int, unreadable: int, warnings: int) -> _Library:
    return _Library(
        tuple(
            Problem(f"/l/d{n}/SKILL.md", f"duplicate skill id 's{n}'; /l/s{n} wins")
            for n in range(duplicates)
        )
        + tuple(
            Problem(f"/l/u{n}/SKILL.md", "missing or empty 'description'")
            for n in range(unreadable)
        ),
        tuple(Problem(f"/l/w{n}/SKILL.md", "invalid YAML frontmatter") for n in range(warnings)),
    )


def test_many_problems_are_one_line_that_counts_them_by_kind() -> None:
    lines = problem_lines(_library(280, 2, 3))  # type: ignore[arg-type]
    assert lines == [
        "skipped 280 duplicate names, 2 broken files and 3 parse warnings; "
        "run `skill-explorer lint` (or add -v) to list them"
    ]
    assert problem_lines(_library(5, 0, 0)) == [  # type: ignore[arg-type]
        "skipped 5 duplicate names; run `skill-explorer lint` (or add -v) to list them"
    ]


def test_verbose_names_every_problem_with_path_and_reason() -> None:
    lines = problem_lines(_library(280, 2, 3), verbose=True)  # type: ignore[arg-type]
    assert len(lines) == 285
    assert "skipped /l/u1/SKILL.md: missing or empty 'description'" in lines
    assert "warning: /l/w2/SKILL.md: invalid YAML frontmatter" in lines


def test_a_few_problems_are_named_one_by_one() -> None:
    lines = problem_lines(_library(1, 1, 1))  # type: ignore[arg-type]
    assert len(lines) == 3 == LIST_UP_TO
    assert lines[0].startswith("skipped /l/d0/SKILL.md: duplicate skill id")
    assert problem_lines(_library(0, 0, 0)) == []  # type: ignore[arg-type]
