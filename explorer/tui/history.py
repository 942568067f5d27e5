"""Files the explorer writes: prompt history, kept across runs like a shell's; exports."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from explorer.engine.base import paths, write_atomically

HISTORY_LIMIT = 500


def history_path() -> Path:
    return paths.state_dir() / "history.txt"


class PromptHistory:
    """Oldest first; walking with up/down starts after the newest entry.

    Several explorers may run at once. Each add re-reads the file under a lock, merges
    the new prompt into what is there and replaces the file atomically, so no explorer
    overwrites another's prompts and a crash never leaves half a file.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()
        self.entries: list[str] = self._read()
        self.position = len(self.entries)
        self.draft = ""  # what was typed before walking back: the walk forward ends on it

    def _read(self) -> list[str]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = []
        return [line for line in lines if line.strip()][-HISTORY_LIMIT:]

    def add(self, prompt: str) -> None:
        prompt = " ".join(prompt.split())
        if not prompt:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.with_name(f".{self.path.name}.lock")):
                self.entries = _merged(self._read(), prompt)
                write_atomically(self.path, "\n".join(self.entries) + "\n")
        except OSError:
            # history is a convenience: a read-only home must not break the app
            self.entries = _merged(self.entries, prompt)
        self.position = len(self.entries)
        self.draft = ""

    def older(self, current: str = "") -> str | None:
        """The entry before the current one; leaving the unsubmitted draft keeps it."""
        if self.position == 0:
            return None
        if self.position == len(self.entries):
            self.draft = current
        self.position -= 1
        return self.entries[self.position]

    def newer(self) -> str | None:
        if self.position >= len(self.entries):
            return None
        self.position += 1
        return self.entries[self.position] if self.position < len(self.entries) else self.draft


def _merged(entries: list[str], prompt: str) -> list[str]:
    merged = [entry for entry in entries if entry != prompt] + [prompt]
    return merged[-HISTORY_LIMIT:]


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+b") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the atomic rename still holds
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def write_new_file(stem: str, suffix: str, text: str, directory: str | None = None) -> Path:
    """Write `text` to a new file named by the time, never over an existing one.

    Two exports in the same second get `-2`, `-3`, … (O_EXCL decides, so two explorers
    cannot pick the same name either). Raises OSError when nothing can be written there.
    """
    import time

    where = Path(directory or os.getcwd())
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for number in range(1, 1000):
        path = where / f"{stem}-{stamp}{'' if number == 1 else f'-{number}'}{suffix}"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path
    raise FileExistsError(f"{where}: too many {stem}-{stamp}* files")
