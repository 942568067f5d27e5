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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

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
