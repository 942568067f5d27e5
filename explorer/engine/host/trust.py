"""Workspace trust: which directories' `skill-explorer.toml` the hook may read.

The hook runs for every prompt in whatever directory the agent works in, and reads the
project config found through the payload's `cwd`. A cloned repository could use that file
to move the cache anywhere, load a model or reranker of its choosing, or deny and force
skills. So, as editors do with workspace settings, a project config takes effect in the
hook only once the user has trusted its directory (`skill-explorer trust DIR`). Trusting
a directory trusts the directories under it. Commands a person runs by hand (`route`,
`why`, the explorer) read the project config of the directory they run in without asking:
running them there is the consent.

The list is a text file, one absolute real path per line, `#` comments allowed, under the
user's config directory. Writes merge with what is on disk under a lock and replace the
file atomically, so two processes never lose each other's entries.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from explorer.engine.base.config import user_config_path
from explorer.engine.base.files import write_atomically

TRUST_FILE_NAME = "trusted-dirs"


def trust_file() -> Path:
    return user_config_path().parent / TRUST_FILE_NAME


def _real(directory: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(directory)))


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _entry(line: str) -> str | None:
    """A usable entry: an absolute path that is not a comment."""
    text = line.strip()
    if not text or text.startswith("#") or not os.path.isabs(text):
        return None
    return os.path.normpath(text)


def trusted() -> list[str]:
    """The trusted directories, in the order they were added."""
    return list(dict.fromkeys(e for line in _read_lines(trust_file()) if (e := _entry(line))))


def is_trusted(directory: str | os.PathLike[str]) -> bool:
    """Whether `directory` (by its real path) is a trusted directory or lies under one."""
    return project_trust()(Path(directory))


def project_trust() -> Callable[[Path], bool]:
    """The check the hook gives `load_config`: the trust list is read once per call."""
    entries = trusted()

    def check(directory: Path) -> bool:
        real = _real(directory)
        return any(real == e or real.startswith(e.rstrip(os.sep) + os.sep) for e in entries)

    return check


def add_trusted(directory: str | os.PathLike[str]) -> bool:
    """Trust a directory; False when it already was."""
    real = _real(directory)
    if "\n" in real or "\r" in real:
        raise ValueError(f"cannot trust a path with a line break: {real!r}")
    with _locked_update() as lines:
        if real in {_entry(line) for line in lines}:
            return False
        lines.append(real)
        return True


def remove_trusted(directory: str | os.PathLike[str]) -> bool:
    """Stop trusting a directory (as given or by its real path); False when it was not."""
    wanted = {os.path.normpath(os.path.abspath(os.fspath(directory))), _real(directory)}
    with _locked_update() as lines:
        kept = [line for line in lines if _entry(line) not in wanted]
        removed = len(kept) != len(lines)
        lines[:] = kept
        return removed


@contextlib.contextmanager
def _locked_update() -> Iterator[list[str]]:
    """Read the list under an exclusive lock, let the caller edit it, write it atomically."""
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{TRUST_FILE_NAME}.lock"), "a+b") as lock:
        _lock(lock.fileno())
        lines = _read_lines(path)
        before = list(lines)
        yield lines
        if lines != before:
            write_atomically(path, "".join(f"{line}\n" for line in lines))


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the atomic rename still holds
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
