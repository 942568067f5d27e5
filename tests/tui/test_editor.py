"""explorer/tui/editor.py: the one place the explorer and the what-if screen run $EDITOR."""

from __future__ import annotations

import contextlib
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from explorer.tui.editor import open_in_editor


class Notes:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, message: str, **options: Any) -> None:
        self.calls.append((message, options))


def _app(suspend: Any = contextlib.nullcontext) -> Any:
    return SimpleNamespace(suspend=suspend)  # only suspend() is used: no terminal in a test


def test_the_editor_runs_on_the_file_with_the_terminal_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = tmp_path / "fake-editor"
    script = "#!/bin/sh\nfor last; do :; done\nprintf 'edited\\n' > \"$last\"\n"  # the file: last
    editor.write_text(script, encoding="utf-8")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("VISUAL", f"{editor} --wait")  # a command line, split as a shell would
    target = tmp_path / "SKILL.md"
    target.write_text("before\n", encoding="utf-8")
    notes = Notes()
    assert open_in_editor(_app(), notes, str(target))
    assert target.read_text(encoding="utf-8") == "edited\n" and notes.calls == []


def test_visual_wins_over_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", "no-such-visual")
    monkeypatch.setenv("EDITOR", "true")
    notes = Notes()
    assert not open_in_editor(_app(), notes, str(tmp_path / "f"))
    assert "'no-such-visual' not found" in notes.calls[0][0]


def test_a_missing_editor_names_the_file_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer's ctrl+o names the skill's file (open it by hand) and keeps the message
    10 s; the what-if screen's names nothing (its file is a temporary one)."""
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "no-such-editor-anywhere --wait")
    path = str(tmp_path / "SKILL.md")
    named, plain = Notes(), Notes()
    assert not open_in_editor(_app(), named, path, name_file=True)
    assert not open_in_editor(_app(), plain, path)
    assert named.calls == [
        (
            f"editor 'no-such-editor-anywhere --wait' not found: set $VISUAL or $EDITOR "
            f"(file: {path})",
            {"severity": "error", "timeout": 10, "markup": False},
        )
    ]
    assert plain.calls == [
        (
            "editor 'no-such-editor-anywhere --wait' not found: set $VISUAL or $EDITOR",
            {"severity": "error", "timeout": None, "markup": False},
        )
    ]


def test_an_unreadable_setting_and_a_failed_run_are_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", 'vi "unclosed')
    notes = Notes()
    assert not open_in_editor(_app(), notes, str(tmp_path / "f"))
    assert notes.calls[0][0].startswith("cannot read $EDITOR 'vi \"unclosed'")

    def no_terminal() -> Any:
        raise RuntimeError("no terminal to hand over")

    monkeypatch.setenv("VISUAL", "true")
    notes = Notes()
    assert not open_in_editor(_app(no_terminal), notes, str(tmp_path / "f"))
    assert notes.calls == [
        (
            "cannot run 'true': no terminal to hand over",
            {"severity": "error", "timeout": 10, "markup": False},
        )
    ]
