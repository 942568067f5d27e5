"""Writing a file so that no reader and no crash ever sees half of it."""

from __future__ import annotations

import contextlib
import os
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
