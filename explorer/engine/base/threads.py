"""Thread counts chosen on purpose, per kind of process.

numpy's BLAS (OpenBLAS) and onnxruntime each start a thread per core by default. In
one process they then fight over the same cores: on a 2-core machine, capping BLAS to
one thread made `decide()` 2-3x faster, because the only BLAS work here is one
matrix-vector product per prompt (far too small to gain from threads) while the
spinning BLAS workers slowed onnxruntime down.

* BLAS: always one thread. The cap must be in the environment before numpy is first
  imported, so `explorer/__init__.py` calls `cap_blas()`; a value the user exported
  wins.
* onnxruntime intra-op threads, by process kind:
  - ``"query"`` (hook, route, why, eval, lint, the explorer, watch): one thread. A
    prompt is a dozen tokens; a second thread costs more in hand-off than it saves,
    and on a busy machine it is much slower (measured: query embedding 8-15 ms with
    one thread, 20-28 ms with two, under load).
  - ``"build"`` (`index`, benchmarks of the cold build): one per core, since batches
    of descriptions do parallelise.
  ``SKILL_EXPLORER_THREADS=N`` overrides both.
"""

from __future__ import annotations

import os

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
THREADS_VARIABLE = "SKILL_EXPLORER_THREADS"
KINDS = ("query", "build")

_kind = "query"


def cap_blas() -> None:
    """One BLAS thread, unless the user chose otherwise (effective before numpy loads)."""
    for name in BLAS_VARIABLES:
        os.environ.setdefault(name, "1")


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def set_process_kind(kind: str) -> None:
    """Declare what this process mostly does; read when an ONNX session is created."""
    global _kind
    if kind not in KINDS:
        raise ValueError(f"process kind must be one of {KINDS}, not {kind!r}")
    _kind = kind


def onnx_threads() -> int:
    """Intra-op threads for a new onnxruntime session in this process."""
    override = os.environ.get(THREADS_VARIABLE, "").strip()
    if override.isdigit() and int(override) > 0:
        return int(override)
    return cpu_count() if _kind == "build" else 1
