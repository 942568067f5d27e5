"""Filesystem hints for the live index that survive 26,000 skill directories.

watchdog's recursive inotify watch puts a watch on every directory under a root,
including `.git`, `node_modules` and everything else the skill walk skips. At scale that
exhausts `fs.inotify.max_user_watches`, and when the kernel queue overflows it removes
and re-adds every watch, whose IN_IGNORED events overflow the queue again: measured at
26,000 skills, it looped on "inotify queue overflowed" at 100 % of a CPU and never saw
the next save.

This watcher (Linux inotify through ctypes) instead:

* watches exactly the directories the skill walk lists (`Scan` reports them), never
  the ones it skips, one non-recursive watch each, adding and removing only the
  difference when the walk changes;
* turns IN_Q_OVERFLOW into one request for a full re-scan, which the live index does by
  `stat` (unchanged files are not read), and never re-adds watches in bulk;
* when the OS refuses a watch (ENOSPC: the `max_user_watches` limit) or inotify itself
  (EMFILE: `max_user_instances`), says so in `notes`, with the `sysctl` that raises the
  limit, and falls back to polling: the live index re-scans by stat every `poll_s`.

Elsewhere (macOS, Windows), watchdog's native recursive backends have no per-directory
cost, and the live index uses them: watchers.py puts the backends behind one interface.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
import threading
from collections.abc import Callable, Iterable

SKILL_FILE = "SKILL.md"
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
# Not IN_MODIFY: a file is read when its writer closes it (or renames it into place), so
# a save is never caught truncated to zero bytes half-way through. IN_ATTRIB: a chmod
# (a SKILL.md or its directory made unreadable, or readable again) changes what is read.
WATCH_MASK = (
    IN_CLOSE_WRITE
    | IN_ATTRIB
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
# A SKILL.md reached through a symlink, or with other hard links, can be written under a
# name in a directory nobody watches: such files get a watch of their own (on the inode,
# which inotify_add_watch reaches through the link), which hears every write and chmod.
FILE_MASK = IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")
LIMIT_FILE = "/proc/sys/fs/inotify/max_user_watches"

# A hint: a SKILL.md path that changed, or None for "walk everything again".
Hint = Callable[[str | None], None]


def inotify_available() -> bool:
    return sys.platform.startswith("linux") and _libc() is not None


_LIBC: ctypes.CDLL | bool | None = False


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is False:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.inotify_init1.argtypes = [ctypes.c_int]
            libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
            _LIBC = libc
        except (OSError, AttributeError):
            _LIBC = None
    return _LIBC if isinstance(_LIBC, ctypes.CDLL) else None  # a CDLL or None by now


def watch_limit() -> int | None:
    try:
        with open(LIMIT_FILE) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def limit_note(watched: int, wanted: int) -> str:
    limit = watch_limit()
    suggestion = max(524288, 2 * wanted)
    return (
        f"inotify watch limit reached ({watched} of {wanted} directories watched; "
        f"fs.inotify.max_user_watches = {limit if limit is not None else '?'}): polling the "
        f"rest by stat. Raise it with: sudo sysctl fs.inotify.max_user_watches={suggestion}"
    )


class InotifyWatcher:
    """One inotify instance, one watch per listed directory, hints out through `hint`."""

    def __init__(self, hint: Hint, *, max_watches: int | None = None) -> None:
        self._hint = hint
        self._max_watches = max_watches  # tests: simulate a small OS limit
        self._lock = threading.Lock()
        self._by_path: dict[str, int] = {}
        self._by_wd: dict[int, str] = {}
        # Watches on linked SKILL.md files: path -> wd, and wd -> every path of that inode.
        self._file_wd: dict[str, int] = {}
        self._files_by_wd: dict[int, set[str]] = {}
        self.notes: list[str] = []
        self.overflows = 0
        self.limited = False  # some directory could not be watched: poll
        self._thread: threading.Thread | None = None
        self._stop_r, self._stop_w = os.pipe()
        libc = _libc()
        if libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self._libc = libc
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            os.close(self._stop_r)
            os.close(self._stop_w)
            raise OSError(code, f"inotify_init1 failed: {os.strerror(code)}")
        self._fd = fd

    @property
    def watched(self) -> int:
        return len(self._by_path)

    def watched_paths(self) -> set[str]:
        with self._lock:
            return set(self._by_path)

    def watched_files(self) -> set[str]:
        with self._lock:
            return set(self._file_wd)

    def sync_files(self, files: Iterable[str]) -> None:
        """Watch exactly these SKILL.md files themselves (the linked ones: `FILE_MASK`)."""
        wanted = set(files)
        with self._lock:
            for path in [path for path in self._file_wd if path not in wanted]:
                self._drop_file(path)
            for path in wanted:
                # Re-added every time: the same wd when the link still leads to the same
                # inode, a new one when the target was replaced (a rename-into-place save).
                if self._max_watches is not None and len(self._by_path) >= self._max_watches:
                    break
                wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), FILE_MASK)
                if wd < 0:
                    continue  # dangling or unreadable: the walk reports it
                old = self._file_wd.get(path)
                if old is not None and old != wd:
                    self._drop_file(path)
                self._file_wd[path] = wd
                self._files_by_wd.setdefault(wd, set()).add(path)

    def _drop_file(self, path: str) -> None:
        wd = self._file_wd.pop(path)
        paths = self._files_by_wd.get(wd, set())
        paths.discard(path)
        if not paths:
            self._files_by_wd.pop(wd, None)
            self._libc.inotify_rm_watch(self._fd, wd)

    def sync(self, directories: Iterable[str]) -> bool:
        """Watch exactly `directories`. Returns whether a watch was added."""
        wanted = list(dict.fromkeys(directories))
        wanted_set = set(wanted)
        added = False
        limited = False
        with self._lock:
            for path in [path for path in self._by_path if path not in wanted_set]:
                wd = self._by_path.pop(path)
                self._by_wd.pop(wd, None)
                self._libc.inotify_rm_watch(self._fd, wd)
            for path in wanted:
                if path in self._by_path:
                    continue
                if self._max_watches is not None and len(self._by_path) >= self._max_watches:
                    limited = True
                    break
                wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), WATCH_MASK)
                if wd < 0:
                    code = ctypes.get_errno()
                    if code == errno.ENOSPC:
                        limited = True
                        break
                    continue  # gone already, or unreadable: the next walk decides
                self._by_path[path] = wd
                self._by_wd[wd] = path
                added = True
            if limited and not self.limited:
                self.notes.append(limit_note(len(self._by_path), len(wanted)))
            self.limited = limited
        return added

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="inotify", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for fd in (self._fd, self._stop_r, self._stop_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._by_path.clear()
            self._by_wd.clear()
            self._file_wd.clear()
            self._files_by_wd.clear()

    def _loop(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._fd, self._stop_r], [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return
            self.handle(data)

    def handle(self, data: bytes) -> None:
        """Turn a buffer of inotify events into hints (public so tests can feed it)."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name_bytes = data[offset + _EVENT.size : offset + _EVENT.size + length]
            offset += _EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                self.overflows += 1
                self._hint(None)  # events were lost: the disk, not the events, is the truth
                continue
            with self._lock:
                directory = self._by_wd.get(wd)
                linked = sorted(self._files_by_wd.get(wd, ()))
                if mask & IN_IGNORED and directory is not None:
                    self._by_wd.pop(wd, None)
                    if self._by_path.get(directory) == wd:
                        del self._by_path[directory]
                if mask & IN_IGNORED and linked:
                    for path in linked:
                        if self._file_wd.get(path) == wd:
                            del self._file_wd[path]
                    self._files_by_wd.pop(wd, None)
            if linked and not mask & IN_IGNORED:
                if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                    self._hint(None)  # the target was replaced: walk, and watch the new one
                else:
                    for path in linked:  # written or chmodded under any of its names
                        self._hint(path)
                continue
            if directory is None or mask & IN_IGNORED:
                continue
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                self._hint(None)
                continue
            name = os.fsdecode(name_bytes.rstrip(b"\0"))
            if mask & IN_ISDIR:
                if mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB):
                    self._hint(None)  # a directory came, went or changed mode: walk again
                continue
            path = os.path.join(directory, name)
            if mask & IN_ATTRIB and name != SKILL_FILE:
                continue  # a chmod or touch of some other file
            if name == SKILL_FILE:
                if mask & (IN_CREATE | IN_MOVED_TO) and _linked(path):
                    self._hint(None)  # a symlink or a hard link: walk, and watch its inode
                elif mask & IN_CREATE:
                    continue  # created empty: its IN_CLOSE_WRITE follows with the content
                else:
                    self._hint(path)
            elif mask & (IN_CREATE | IN_MOVED_TO) and os.path.islink(path):
                self._hint(None)  # a symlink appeared: it may lead to skills
            elif mask & (IN_DELETE | IN_MOVED_FROM) and path in self._by_path:
                self._hint(None)  # a symlinked directory we walked through went away


def _linked(path: str) -> bool:
    """A symlink, or a file with other hard links (which arrives whole: no close follows)."""
    try:
        return os.path.islink(path) or os.stat(path).st_nlink > 1
    except OSError:
        return False


def overflow_event() -> bytes:
    """The bytes of one IN_Q_OVERFLOW event, as the kernel writes it (wd = -1)."""
    return _EVENT.pack(-1, IN_Q_OVERFLOW, 0, 0)
