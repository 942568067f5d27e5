"""Prompt history, kept across runs like a shell's."""

from __future__ import annotations

import os
from pathlib import Path

HISTORY_LIMIT = 500


def history_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "skill-explorer" / "history.txt"


class PromptHistory:
    """Oldest first; walking with up/down starts after the newest entry."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        self.entries: list[str] = [line for line in lines if line.strip()][-HISTORY_LIMIT:]
        self.position = len(self.entries)

    def add(self, prompt: str) -> None:
        prompt = " ".join(prompt.split())
        if not prompt:
            return
        if prompt in self.entries:
            self.entries.remove(prompt)
        self.entries.append(prompt)
        del self.entries[:-HISTORY_LIMIT]
        self.position = len(self.entries)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("\n".join(self.entries) + "\n", encoding="utf-8")
        except OSError:
            pass  # history is a convenience: a read-only home must not break the app

    def older(self) -> str | None:
        if self.position == 0:
            return None
        self.position -= 1
        return self.entries[self.position]

    def newer(self) -> str | None:
        if self.position >= len(self.entries):
            return None
        self.position += 1
        return self.entries[self.position] if self.position < len(self.entries) else ""
