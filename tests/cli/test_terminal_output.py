"""Plain lines the CLI prints: wrapped with a hanging indent on a terminal, whole in a pipe."""

from __future__ import annotations

import io
import os

import pytest

from explorer import terminal
from explorer.terminal import Verbatim, emit

GATE = (
    "  ✗ confident_winner   §5.1  c1=0.493 c2=0.155 gap=0.338 top=pdf  "
    "| high_conf=2.000 clear_gap=0.120"
)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_line_on_a_terminal_wraps_under_its_own_indent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 60 columns a gate line continues four columns past its indent, not at column 0,
    and no word is lost or cut."""
    monkeypatch.setattr(terminal.shutil, "get_terminal_size", lambda: os.terminal_size((60, 24)))
    out = Terminal()
    emit("short line", GATE, file=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "short line"
    assert len(lines) == 3 and all(len(line) <= 60 for line in lines)
    assert lines[1].startswith("  ✗ confident_winner") and lines[2].startswith("      ")
    assert " ".join(" ".join(lines[1:]).split()) == " ".join(GATE.split())


def test_a_line_of_wide_characters_is_left_to_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its length is not its width in cells: wrapped by characters it would still overflow."""
    monkeypatch.setattr(terminal.shutil, "get_terminal_size", lambda: os.terminal_size((60, 24)))
    line = "  prompt: " + "帮我写一个正则表达式来匹配邮箱地址 " * 4
    out = Terminal()
    emit(line, file=out)
    assert out.getvalue() == line + "\n"


def test_what_the_hook_would_inject_keeps_its_own_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal.shutil, "get_terminal_size", lambda: os.terminal_size((60, 24)))
    out = Terminal()
    emit(Verbatim(GATE), file=out)
    assert out.getvalue() == GATE + "\n"


def test_a_pipe_gets_every_line_whole() -> None:
    out = io.StringIO()
    emit(GATE, file=out)
    assert out.getvalue() == GATE + "\n"
