"""Memory a long-running process hands back: the explorer and `watch` stay open for hours.

glibc's malloc serves a request of 128 KB or more with its own mapping, returned to the
system when freed, but it raises that threshold to the size of any such block freed (up
to 32 MB). After the first re-index freed a few of its arrays (a score per skill, a copy
of the vector matrix), arrays of that size came from the heap instead, where a freed
block stays resident until the heap's top is free too, and each worker thread has a heap
of its own. The explorer's RSS then grew with every save until it levelled: 283 -> 313 MB
over 30 saves at 2,289 skills, where a `malloc_trim` gave back 30 MB each time. Fixing
the threshold at its default keeps large arrays in mappings of their own, and the RSS
flat (284 MB from save 10 to save 30, measured the same way).

Work that makes many small objects and drops them (the first build of a library: 26,000
parse records decoded, vectors read, tokens; a lint) leaves freed memory in the heaps,
which glibc returns only from a heap's top. `give_back` asks it to return every free page
(`malloc_trim`): after the live index's first build at 26,000 skills, 679 -> 491 MB.

A lint of 26,000 skills holds about 170,000 findings while it runs, each an object the
cyclic collector tracks. A full collection, which runs on whichever thread allocates when
enough objects have outlived two younger ones, walked them all: 11 during 20 saves, a
median of 84 ms and up to 145 ms each, with the GIL held, 9 of them started by lint.
`full_collections_deferred` holds the full ones off while such work runs (the young
generations, where cycles are made and freed, are still collected); once it ends its
objects are freed by their counts and the next full collection walks what is left.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter numbers (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's default, which it would otherwise raise

_done = False
_libc: ctypes.CDLL | None = None


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            return None
    return _libc


def hand_back_large_blocks() -> bool:
    """Fix glibc's mmap threshold (once per process). False where there is no glibc."""
    global _done
    if _done:
        return True
    libc = _glibc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # not Linux, or a libc without mallopt (musl)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    return _done


def give_back() -> bool:
    """Return the heaps' free pages to the system (glibc's `malloc_trim`); False where
    there is no such call. Milliseconds; for after a large piece of transient work."""
    trim = getattr(_glibc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True


DEFERRED_FULL = 1_000_000  # younger collections before a full one: never, within a lint
_deferring = 0
_restore_to = 0
_deferring_lock = threading.Lock()


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """No full collection while the body runs, in any thread (the collector's thresholds
    are the process's); the threshold comes back when the last of overlapping bodies
    ends, whatever they raise."""
    global _deferring, _restore_to
    with _deferring_lock:
        if _deferring == 0:
            young, middle, _restore_to = gc.get_threshold()
            gc.set_threshold(young, middle, DEFERRED_FULL)
        _deferring += 1
    try:
        yield
    finally:
        with _deferring_lock:
            _deferring -= 1
            if _deferring == 0:
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _restore_to)
