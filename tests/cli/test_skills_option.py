"""`--skills DIR` names a library on every command that reads one: one spelling works
everywhere. index, watch, lint and the explorer also keep their positional DIRs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from explorer.cli import build_parser, main
from explorer.cli.commands import REGISTRY
from tests.conftest import write_skill

# Each command that reads a library, with the arguments it needs besides --skills.
READS_A_LIBRARY: dict[str, list[str]] = {
    "explore": [],
    "route": ["a prompt"],
    "why": ["a prompt"],
    "hook": [],
    "index": [],
    "watch": [],
    "lint": [],
    "eval": ["cases.toml"],
    "calibrate": ["cases.toml"],
    "history": [],
    "doctor": [],
    "bench": [],
    "init": [],
    "tune": ["a-skill", "--cases", "evals.json"],
}


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_the_table_covers_every_command_but_trust() -> None:
    assert set(REGISTRY) - set(READS_A_LIBRARY) == {"trust"}


@pytest.mark.parametrize("command", sorted(READS_A_LIBRARY))
def test_every_command_that_reads_a_library_takes_skills(command: str) -> None:
    args = parse(command, *READS_A_LIBRARY[command], "--skills", "a", "--skills", "b")
    assert args.skills == ["a", "b"]


@pytest.mark.parametrize("command", ["index", "watch", "lint", "explore"])
def test_positional_dirs_stay(command: str) -> None:
    args = parse(command, "a", "--skills", "b")
    assert args.dirs == ["a"] and args.skills == ["b"]


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and fill PDF files and forms.")
    write_skill(root, "xlsx", "Build spreadsheets with formulas, pivots and charts.")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


@pytest.mark.parametrize("command", ["index", "lint"])
def test_skills_and_a_positional_dir_read_the_same_library(
    command: str, library: Path, warm_cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The run's warm cache: the reranker's optimised graph is made once, not per command.
    common = ["--set", "model=bow", "--no-ski-config", "--cache-dir", str(warm_cache_dir)]
    positional = run(capsys, command, str(library), *common)
    option = run(capsys, command, "--skills", str(library), *common)
    assert positional[0] == option[0] == 0
    if command == "index":
        assert "indexed 2 skills" in positional[1] and "indexed 2 skills" in option[1]
    else:
        assert option[1] == positional[1]


def test_index_with_neither_says_how_to_name_a_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKILL_EXPLORER_ROOTS", raising=False)
    monkeypatch.delenv("SKI_ROOTS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code = main(["index", "--no-ski-config", "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and "--skills DIR" in capsys.readouterr().err


def test_the_explorer_opens_the_skills_roots(
    library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: dict[str, Any] = {}

    class FakeApp:
        def __init__(self, roots: list[str], *args: Any, **kwargs: Any) -> None:
            opened["roots"] = roots

        def run(self) -> None:
            return None

    monkeypatch.setattr("explorer.tui.app.ExplorerApp", FakeApp)
    main(["--skills", str(library), "--no-ski-config"])
    assert opened["roots"] == [str(library)]
    main(["explore", "elsewhere", "--skills", str(library), "--no-ski-config"])
    assert opened["roots"] == ["elsewhere", str(library)]
    # No DIR: the roots every command reads ($SKILL_EXPLORER_ROOTS first), as `doctor`
    # names them, not the working directory.
    monkeypatch.setenv("SKILL_EXPLORER_ROOTS", str(library))
    main(["--no-ski-config"])
    assert opened["roots"] == [str(library)]
