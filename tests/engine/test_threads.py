"""Thread counts (explorer/engine/base/threads.py): BLAS capped, one ORT thread, batches wide."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from explorer.engine.base import threads
from explorer.engine.inference.embed import onnx_session
from explorer.engine.inference.models import packaged_minilm
from tests.conftest import REPO


def _blas_in_child(env_value: str | None) -> str:
    env = {key: value for key, value in os.environ.items() if key not in threads.BLAS_VARIABLES}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    env["PYTHONPATH"] = str(REPO)
    code = "import explorer, os; print(os.environ['OPENBLAS_NUM_THREADS'])"
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return run.stdout.strip()


def test_importing_explorer_caps_blas_to_one_thread_unless_the_user_chose() -> None:
    assert _blas_in_child(None) == "1"
    assert _blas_in_child("3") == "3"


def test_sessions_run_on_one_thread_and_batches_on_every_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(threads.THREADS_VARIABLE, raising=False)
    assert threads.onnx_threads() == 1
    assert threads.batch_workers() == threads.cpu_count()
    monkeypatch.setenv(threads.THREADS_VARIABLE, "3")
    assert threads.batch_workers() == 3
    assert threads.onnx_threads() == 1


def test_a_session_runs_on_one_intra_op_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(threads.THREADS_VARIABLE, raising=False)
    model, _tokenizer = packaged_minilm()
    session = onnx_session(str(model), None, None)
    assert session.get_session_options().intra_op_num_threads == 1


def test_a_session_has_no_memory_arena() -> None:
    """The arena keeps the largest footprint any run needed, and grew the explorer's memory
    save after save (embed.py `onnx_session`)."""
    model, _tokenizer = packaged_minilm()
    assert not onnx_session(str(model), None, None).get_session_options().enable_cpu_mem_arena


# Embeds twice; test_sessions_run_on_one_thread_and_batches_on_every_core holds the thread counts.
@pytest.mark.slow
def test_texts_on_several_threads_give_the_vectors_of_one(
    monkeypatch: pytest.MonkeyPatch, minilm_models: Any
) -> None:
    """A cold build embeds its texts on every core at once, with the same vectors; each
    text runs on a thread of the pool, and a single prompt in the caller's thread."""
    embedder = minilm_models.embedder
    texts = [f"Merge {n} pdf reports into one deck, item {n * n}." for n in range(16)]
    texts += ["A short one.", "Split a long document " + "with many words " * 20]
    monkeypatch.setenv(threads.THREADS_VARIABLE, "1")
    alone = embedder.embed_documents(texts)
    seen: set[str] = set()
    run = embedder._run

    def spy(encodings: Any, session: Any) -> Any:
        seen.add(threading.current_thread().name)
        return run(encodings, session)

    monkeypatch.setattr(embedder, "_run", spy)
    monkeypatch.setenv(threads.THREADS_VARIABLE, "3")
    together = embedder.embed_documents(texts)
    assert np.array_equal(alone, together)
    assert len(seen) == 3 and all(name.startswith("embed") for name in seen)
    seen.clear()
    embedder.embed_query("merge two pdf files, a prompt never embedded before")
    assert seen == {threading.current_thread().name}


def _work_in_child(result: Any) -> None:
    pool = threads.kept_pool("forked")
    result.put(pool.submit(lambda: "ran").result(timeout=10))


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork on this platform")
def test_a_forked_child_gets_pools_of_its_own() -> None:
    """A forked child has the parent's executors but none of their threads: a kept pool
    from the parent would take work that no thread runs."""
    import multiprocessing

    threads.kept_pool("forked").submit(lambda: None).result()  # its thread now idles
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    child = context.Process(target=_work_in_child, args=(result,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert result.get(timeout=5) == "ran"


def test_a_pool_is_made_anew_for_another_number_of_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(threads.THREADS_VARIABLE, "2")
    two = threads.kept_pool("sized")
    assert threads.kept_pool("sized") is two
    monkeypatch.setenv(threads.THREADS_VARIABLE, "3")
    three = threads.kept_pool("sized")
    assert three is not two and three._max_workers == 3
    assert two.submit(lambda: "still runs").result(timeout=10) == "still runs"
