"""Native calls and the interpreter's exit (explorer/engine/inference/native.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from explorer.engine.inference.native import NativeCalls

# A daemon thread makes one kind of native call without pause while the interpreter exits:
# it is inside the library almost all the time, so exit finds it there.
AT_EXIT = """
import sys, threading, time
from explorer.engine.base.config import Config
from explorer.engine.inference.embed import onnx_session
from explorer.engine.inference.models import (
    find_reranker, load_embedder, load_reranker, packaged_minilm,
)
from explorer.engine.inference.multilingual import load_multilingual

kind = sys.argv[1]
model, _ = packaged_minilm()
if kind == "tokenise":
    encoder = load_multilingual()._encoder()
    work = lambda: encoder.sp.encode("merge these pdf files " * 500, out_type=int)
elif kind == "embed":
    embedder = load_embedder(Config())
    work = lambda: embedder.embed_documents(["merge these pdf files"])
elif kind == "rerank":
    reranker = load_reranker(find_reranker(Config())[0])
    work = lambda: reranker.score("merge these pdf files", ["Merge PDF files."])  # one pair
else:
    work = lambda: onnx_session(str(model), 1, None)

def forever():
    while True:
        work()

threading.Thread(target=forever, daemon=True).start()
time.sleep(0.4)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("kind", ["tokenise", "embed", "rerank", "load"])
def test_the_process_exits_cleanly_while_a_daemon_thread_is_in_a_native_call(kind: str) -> None:
    """sentencepiece, onnxruntime and tokenizers' batch encoding give the GIL up inside
    their native calls; a thread that comes back from one while the interpreter finalises
    aborts the process (exit 134) unless exit waits for the call (embed and rerank abort
    in tokenizers 0.15's encode_batch without its guard). The live index and the
    multilingual preload are such threads."""
    for _ in range(3):
        child = subprocess.run(
            [sys.executable, "-c", AT_EXIT, kind], capture_output=True, text=True, timeout=60
        )
        assert child.returncode == 0, child.stderr[-500:]
        assert child.stdout == "exiting\n"


def test_closing_waits_for_the_calls_in_flight_and_parks_later_ones() -> None:
    calls = NativeCalls()
    inside, release = threading.Event(), threading.Event()
    events: list[str] = []

    def in_flight() -> None:
        with calls.call():
            inside.set()
            release.wait(5)
            events.append("first ended")

    def later() -> None:
        with calls.call():
            events.append("later ran")

    first = threading.Thread(target=in_flight, daemon=True)
    first.start()
    assert inside.wait(5)
    threading.Timer(0.2, release.set).start()
    started = time.monotonic()
    assert calls.close(timeout=5)
    assert time.monotonic() - started >= 0.15 and events == ["first ended"]
    parked = threading.Thread(target=later, daemon=True)
    parked.start()
    parked.join(0.3)
    assert parked.is_alive() and events == ["first ended"]


def test_closing_gives_up_on_a_call_that_never_ends() -> None:
    calls = NativeCalls()
    inside = threading.Event()

    def stuck() -> None:
        with calls.call():
            inside.set()
            threading.Event().wait(10)

    threading.Thread(target=stuck, daemon=True).start()
    assert inside.wait(5)
    started = time.monotonic()
    assert calls.close(timeout=0.2) is False
    assert time.monotonic() - started < 2
