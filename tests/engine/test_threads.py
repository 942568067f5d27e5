"""Thread counts per process kind (explorer/engine/base/threads.py): BLAS capped, ORT chosen."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_onnx_threads_follow_the_process_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(threads.THREADS_VARIABLE, raising=False)
    monkeypatch.setattr(threads, "_kind", "query")
    assert threads.onnx_threads() == 1
    threads.set_process_kind("build")
    assert threads.onnx_threads() == threads.cpu_count()
    monkeypatch.setenv(threads.THREADS_VARIABLE, "3")
    assert threads.onnx_threads() == 3
    with pytest.raises(ValueError, match="process kind"):
        threads.set_process_kind("fast")


def test_a_query_process_session_runs_on_one_intra_op_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(threads.THREADS_VARIABLE, raising=False)
    monkeypatch.setattr(threads, "_kind", "query")
    model, _tokenizer = packaged_minilm()
    session = onnx_session(str(model), None, None)
    assert session.get_session_options().intra_op_num_threads == 1
