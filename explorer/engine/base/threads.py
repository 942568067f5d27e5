"""Thread counts chosen on purpose.

numpy's BLAS (OpenBLAS) and onnxruntime each start a thread per core by default. In
one process they then fight over the same cores: on a 2-core machine, capping BLAS to
one thread made `decide()` 2-3x faster, because the only BLAS work here is one
matrix-vector product per prompt (far too small to gain from threads) while the
spinning BLAS workers slowed onnxruntime down.

* BLAS: always one thread. The cap must be in the environment before numpy is first
  imported, so `explorer/__init__.py` calls `cap_blas()`; a value the user exported
  wins.
* onnxruntime sessions: one intra-op thread, in every process. A prompt is a dozen
  tokens; a second thread costs more in hand-off than it saves, and on a busy machine it
  is much slower (measured: query embedding 8-15 ms with one thread, 20-28 ms with two,
  under load).
* Descriptions (a cold build, in whichever command builds: `index`, `route`, `hook`,
  `eval`, the explorer...): `batch_workers()` threads each run texts, one at a time, on
  that same one-thread session at once (onnxruntime's `run` is thread-safe and releases
  the GIL), one per core. Texts share nothing, so this scales better than splitting
  each text's operators over threads, and a single prompt still runs on one.
* A decision's reranker pairs (`rerank.OnnxCrossEncoder.score`): spread over as many
  threads the same way, each pair still run alone.
* The tuner's decisions (`author.tune`): one decision per case at once on each core.
  Each mostly waits on one new pair of the cross-encoder, the edited description's, so
  one after another they kept one core busy.

``SKILL_EXPLORER_THREADS=N`` sets how many cores builds, a decision's reranker pairs and
the tuner use (N = 1: one at a time).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
THREADS_VARIABLE = "SKILL_EXPLORER_THREADS"


def cap_blas() -> None:
    """One BLAS thread, unless the user chose otherwise (effective before numpy loads)."""
    for name in BLAS_VARIABLES:
        os.environ.setdefault(name, "1")


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def onnx_threads() -> int:
    """Intra-op threads for a new onnxruntime session: one (builds go wide instead)."""
    return 1


def batch_workers() -> int:
    """Threads that embed descriptions at once: one per core, or the override."""
    override = os.environ.get(THREADS_VARIABLE, "").strip()
    if override.isdigit() and int(override) > 0:
        return int(override)
    return cpu_count()


_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_POOLS_LOCK = threading.Lock()


def kept_pool(name: str) -> ThreadPoolExecutor:
    """`batch_workers()` threads kept for one kind of work (`name`, their names' prefix),
    so a call that spreads a few items does not start threads each time: a keystroke's
    decision scores a dozen pairs. Made anew when the number of workers changes; the old
    one is dropped, not shut, so a caller still holding it finishes (its idle threads end
    with it)."""
    workers = batch_workers()
    with _POOLS_LOCK:
        kept = _POOLS.get(name)
        if kept is None or kept[0] != workers:
            kept = _POOLS[name] = (workers, ThreadPoolExecutor(workers, thread_name_prefix=name))
        return kept[1]


def _forget_pools() -> None:
    """In a forked child: the parent's executors have none of their threads there, and the
    lock may have been held by a thread that does not exist."""
    global _POOLS_LOCK
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which never forks
    os.register_at_fork(after_in_child=_forget_pools)
