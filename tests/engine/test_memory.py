"""engine/base/memory.py: a long-running process gives freed memory back (glibc on Linux)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

import pytest

from explorer.engine.base import memory
from tests.conftest import REPO

LINUX = sys.platform.startswith("linux")


@pytest.mark.skipif(not LINUX, reason="glibc's mallopt and malloc_trim")
def test_the_threshold_is_fixed_and_free_pages_go_back() -> None:
    assert memory.hand_back_large_blocks()
    assert memory.hand_back_large_blocks()  # once per process; again is a no-op
    assert memory.give_back()


@pytest.mark.skipif(not LINUX, reason="glibc's mmap threshold")
def test_freed_arrays_stay_out_of_the_heap_once_the_threshold_is_fixed() -> None:
    """Without the fix, freeing a 4 MB block raises glibc's threshold, and the next arrays
    of that size stay resident in the heap after they are freed; with it, they go back."""
    code = """
import numpy as np, sys
from explorer.engine.base.memory import hand_back_large_blocks
if sys.argv[1] == "fixed":
    hand_back_large_blocks()
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS:")).split()[1])
np.ones(1 << 19)  # 4 MB, freed at once: glibc raises its threshold to 4 MB
keep, pins = [], []
for _ in range(400):
    keep.append(np.ones(1 << 15))  # 256 KB
    pins.append(np.ones(256))  # 2 KB from malloc, still alive: fences each block off
before = rss()
del keep
print(before - rss())
"""
    given = {}
    for mode in ("fixed", "default"):
        run = subprocess.run(
            [sys.executable, "-c", code, mode],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        given[mode] = int(run.stdout.strip())
    assert given["fixed"] > 80_000, given  # KB: most of the 100 MB went back
    assert given["fixed"] > given["default"], given


def test_without_glibc_both_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_done", False)
    monkeypatch.setattr(memory, "_glibc", lambda: None)  # macOS, Windows, musl
    assert memory.hand_back_large_blocks() is False
    assert memory.give_back() is False


def test_full_collections_come_back_when_the_last_overlapping_body_ends() -> None:
    """Two workers overlap (the explorer's lint beside another); the first to end must not
    bring full collections back under the other, and an exception restores them too."""
    usual = gc.get_threshold()
    inside, leave = threading.Event(), threading.Event()

    def worker() -> None:
        with memory.full_collections_deferred():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(10)
    with memory.full_collections_deferred():
        assert gc.get_threshold() == (usual[0], usual[1], memory.DEFERRED_FULL)
    assert gc.get_threshold()[2] == memory.DEFERRED_FULL  # the worker's body still runs
    leave.set()
    thread.join(10)
    assert gc.get_threshold() == usual
    with pytest.raises(RuntimeError), memory.full_collections_deferred():
        raise RuntimeError("lint failed")
    assert gc.get_threshold() == usual
