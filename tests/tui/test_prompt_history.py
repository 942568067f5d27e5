"""Prompt history: two explorers never lose each other's prompts; writes are atomic."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from explorer.tui.history import HISTORY_LIMIT, PromptHistory


def test_two_explorers_merge_instead_of_overwriting(tmp_path: Path) -> None:
    path = tmp_path / "history.txt"
    first, second = PromptHistory(path), PromptHistory(path)
    first.add("one")
    second.add("two")  # `second` read the file before "one" was written
    first.add("three")
    assert PromptHistory(path).entries == ["one", "two", "three"]
    assert first.entries == ["one", "two", "three"]  # up/down now walks the merged list
    second.add("one")  # a repeat moves to the end, once
    assert PromptHistory(path).entries == ["two", "three", "one"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".history.txt.lock", "history.txt"]


def _add_many(path: str, worker: int) -> None:
    history = PromptHistory(Path(path))
    for number in range(25):
        history.add(f"worker {worker} prompt {number}")


@pytest.mark.slow  # four spawned interpreters; the merge itself is tested above in-process
def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history.txt"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_many, args=(str(path), w)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    entries = PromptHistory(path).entries
    assert len(entries) == 100 and len(set(entries)) == 100


def test_the_limit_holds_and_a_bad_file_is_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "history.txt"
    # A full history on disk (written here in one go: 500 adds, each a locked atomic
    # rewrite, took seconds), a line that is not UTF-8 first; five more prompts.
    full = "".join(f"p{number}\n" for number in range(HISTORY_LIMIT - 1))
    path.write_bytes(b"\xff\xfe not utf-8\n" + full.encode())
    history = PromptHistory(path)
    for number in range(HISTORY_LIMIT - 1, HISTORY_LIMIT + 5):
        history.add(f"p{number}")
    entries = PromptHistory(path).entries
    assert len(entries) == HISTORY_LIMIT and entries[-1] == f"p{HISTORY_LIMIT + 4}"
    assert entries[0] == "p5"  # the oldest went first


def test_older_and_newer_walk_the_entries_and_keep_the_draft(tmp_path: Path) -> None:
    """What alt+up/down do in the prompt bar (test_app.py drives the keys, in the slow set)."""
    history = PromptHistory(tmp_path / "history.txt")
    history.add("first prompt")
    history.add("second prompt")
    assert history.newer() is None  # nothing newer than the draft
    assert history.older("half typed") == "second prompt"
    assert history.older("second prompt") == "first prompt"
    assert history.older("first prompt") is None  # the oldest stays
    assert history.newer() == "second prompt"
    assert history.newer() == "half typed"  # past the newest entry: the draft is back
    assert history.newer() is None
