"""Writing a file so that no reader and no crash ever sees half of it."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write a temporary file beside `path`, flush it to disk, then rename it over `path`.

    A reader sees the old file or the new one, never half of either, and a process killed
    mid-write leaves the old file as it was. An existing file keeps its permissions; a new
    one gets 0644, what an editor would create (not mkstemp's 0600). A symlink is written
    through: its target gets the new text and the link stays (dotfile managers link
    configs into place; a rename over the link would replace it with a copy).
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = os.stat(target).st_mode & 0o7777
        except OSError:
            mode = 0o644
        with contextlib.suppress(OSError):
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (of any user): a file named for a dead one is orphaned."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False  # no such process (or a number no process can have)
    except PermissionError:
        return True  # it exists, owned by another user
    return True


_PARTIAL_RE = re.compile(r"^.+\.(\d+)\.tmp$")


def partial_path(path: Path) -> Path:
    """Where a process writes a copy of `path` before renaming it into place: named for
    its pid, so that `remove_orphaned_partials` can tell a dead writer's leftovers."""
    return path.with_name(f"{path.name}.{os.getpid()}.tmp")


def remove_orphaned_partials(directory: Path) -> list[Path]:
    """Delete `<name>.<pid>.tmp` files whose writer is dead (killed mid-save): the partial
    copies of derived model files (an optimised graph, the multilingual table).

    A live pid keeps its file: that process may still be writing it. Returns what went.
    """
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _PARTIAL_RE.match(name)
        if match and not pid_alive(int(match.group(1))):
            path = directory / name
            try:
                path.unlink()
            except OSError:
                continue
            removed.append(path)
    return removed
