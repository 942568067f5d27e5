"""Calls into the models' native libraries, and the interpreter's exit (architecture.md,
"Threads").

onnxruntime's `run`, sentencepiece's calls and tokenizers' batch encoding give the GIL up
while they compute. When a daemon thread (the explorer's live index, the multilingual
preload, a worker left running by a closing app) comes back from one after the interpreter
has begun to finalise, CPython ends that thread by unwinding its stack, and the unwinding
meets native frames that forbid it: the process aborts ("terminate called without an
active exception", or with tokenizers 0.15 "FATAL: exception not rethrown"; exit 134),
after its work and its output are done. Every such call is therefore made inside
`native_call()`, and at exit the interpreter waits for the calls in flight and parks any
later one on a Python condition, where a daemon thread can be stopped safely.

Calls run side by side as before (the reranker's pairs use every core); the guard costs a
condition's lock twice a call, about a microsecond.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# How long exit waits for the calls in flight: one call is one batch or one text, well
# under a second; a thread stuck in one must not hang the exit.
EXIT_WAIT_S = 5.0


class NativeCalls:
    """Counts the native calls in flight; once closed, admits no more."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._closed = False

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._condition:
            while self._closed:  # exit has begun: wait here until the process ends
                self._condition.wait()
            self._running += 1
        try:
            yield
        finally:
            with self._condition:
                self._running -= 1
                self._condition.notify_all()

    def close(self, timeout: float = EXIT_WAIT_S) -> bool:
        """Admit no more calls and wait for those in flight; whether they all ended."""
        with self._condition:
            self._closed = True
            return self._condition.wait_for(lambda: self._running == 0, timeout)


_CALLS = NativeCalls()
atexit.register(_CALLS.close)
native_call = _CALLS.call
