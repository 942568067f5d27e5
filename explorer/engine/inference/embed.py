"""Dense embedders (spec §3.1, §6): the protocol, ONNX sentence encoders, and bag-of-words.

Embeddings are of the description only and L2-normalised, so a cosine is a dot product.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from explorer.engine.base.files import partial_path, remove_orphaned_partials
from explorer.engine.base.text import scrub_surrogates, tokenize
from explorer.engine.base.threads import batch_workers, onnx_threads
from explorer.engine.base.threads import cpu_count as cpu_count  # re-exported for callers
from explorer.engine.inference.native import native_call

if TYPE_CHECKING:
    from onnxruntime import InferenceSession, SessionOptions
    from tokenizers import Encoding


@runtime_checkable
class Embedder(Protocol):
    """What the index and the cascade need from a dense model."""

    name: str  # shown to people
    identity: str  # name + weights checksum: the embedding cache key
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """[len(texts), dim] float32, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """[dim] float32, L2-normalised (with the model's query prefix, if any)."""
        ...


@runtime_checkable
class BulkEmbedder(Embedder, Protocol):
    """An embedder with a way of its own to embed a whole library (`OnnxEmbedder.bulk`)."""

    def bulk(self) -> contextlib.AbstractContextManager[None]: ...


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Unit rows; zero or non-finite rows become zeros (a cosine of 0.0, §3.1)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    finite = np.isfinite(norms) & (norms > 0)
    return np.where(finite, matrix / np.where(finite, norms, 1.0), 0.0).astype(np.float32)


SHARE_TEXTS = 8  # texts a build's thread takes at a time (embed_documents)


# A WordPiece token covers at most 100 characters of a word (longer words are one [UNK])
# plus the separator before it, so the first N tokens of a text lie within its first
# 101 * N characters.
CHARS_PER_TOKEN = 101


def readable_chars(max_tokens: int) -> int:
    """How much of a text a model that reads `max_tokens` tokens can see at most: a prompt
    is cut to this before it is tokenised, so a 10 MB prompt costs what a short one does
    (tokenizers split the whole text before truncating it)."""
    return max_tokens * CHARS_PER_TOKEN


def pad_batch(encodings: Sequence[Encoding]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """input_ids, attention_mask and token_type_ids, right-padded with 0 to the widest row."""
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        length = len(encoding.ids)
        ids[row, :length] = encoding.ids
        types[row, :length] = encoding.type_ids
        mask[row, :length] = 1
    return ids, mask, types


def quiet_onnxruntime() -> ModuleType:
    """onnxruntime, imported with its telemetry off.

    From 1.30 on Linux and macOS, onnxruntime's own telemetry creates a device id and an
    event store under $XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime (and would
    upload events) as soon as it is imported. ORT_DISABLE_TELEMETRY=1 before that import
    turns it off entirely; `disable_telemetry_events` turns off the events of a build that
    ignores the variable. A value the user set is kept. Every onnxruntime import of the
    product goes through here.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime

    disable = getattr(onnxruntime, "disable_telemetry_events", None)
    if disable is not None:
        disable()
    module: ModuleType = onnxruntime
    return module


def onnx_session(
    model_path: str,
    threads: int | None,
    optimized_dir: str | os.PathLike[str] | None,
    *,
    arena: bool = False,
) -> InferenceSession:
    """A CPU session; with `optimized_dir`, the graph is optimised once and reused.

    Optimising the graph at every load costs about 0.2 s and a transient peak of memory;
    a saved, already-optimised copy (keyed by the weights and the onnxruntime version)
    loads in about half the time and peaks ~80 MB lower. Extended, not full, optimisation
    is saved, because the full level may bake in this machine's CPU layout.

    Without onnxruntime's CPU memory arena: the arena keeps the largest footprint any run
    (or any runs at once: a decision's reranker pairs run on every core) ever needed, and
    grows in steps as new input lengths and overlaps come. In the explorer at 26,000 skills
    that was about 25 MB of its growth over 30 saves (RSS 549 -> 597 MB with the arena,
    545 -> 570 MB without). A run's tensors are then allocated and freed by the C
    allocator instead, which costs nothing measurable here: a query's embedding 8.4 against
    8.2 ms, twelve reranker pairs 29.0 against 29.9 ms (medians of 40, interleaved).
    `arena=True` is for a session that embeds one library and is dropped after
    (`OnnxEmbedder.bulk`).
    """
    onnxruntime = quiet_onnxruntime()
    options = onnxruntime.SessionOptions()
    options.enable_cpu_mem_arena = arena
    options.intra_op_num_threads = threads or onnx_threads()
    if options.intra_op_num_threads == 1:
        options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if optimized_dir is None:
        return _new_session(onnxruntime, model_path, options)
    stat = os.stat(model_path)
    key = hashlib.blake2b(
        f"{os.path.abspath(model_path)}|{stat.st_size}|{stat.st_mtime_ns}|"
        f"{onnxruntime.__version__}".encode(),
        digest_size=10,
    ).hexdigest()
    saved = Path(optimized_dir) / f"{Path(model_path).stem}-{key}.ort.onnx"
    remove_orphaned_partials(saved.parent)
    if saved.is_file():
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return _new_session(onnxruntime, str(saved), options)
        except Exception:  # a damaged copy: drop it and optimise afresh
            saved.unlink(missing_ok=True)
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    partial = partial_path(saved)
    try:
        saved.parent.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(partial)
        session = _new_session(onnxruntime, model_path, options)
        os.replace(partial, saved)  # atomic: a reader never sees half a file
        return session
    except Exception:
        # The copy could not be written (a full disk, a read-only cache: onnxruntime raises
        # its own error types for both) or the graph does not load: the model is loaded
        # from where it is, unsaved; a broken model then raises from this second load.
        partial.unlink(missing_ok=True)
        options.optimized_model_filepath = ""
        return _new_session(onnxruntime, model_path, options)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _new_session(onnxruntime: ModuleType, path: str, options: SessionOptions) -> InferenceSession:
    """A CPU session, loaded as a native call (native.py)."""
    with native_call():
        session: InferenceSession = onnxruntime.InferenceSession(
            path, options, providers=["CPUExecutionProvider"]
        )
    return session


class QueryCache:
    """An LRU of query vectors: the explorer re-asks for the same prompt as you type, and
    decides the cases' prompts again after every save and every what-if keystroke. It
    holds a cases file of a few thousand prompts (the wild corpus has 2,060): at 256 such
    a file embedded every prompt again on each run. Kept by a digest of the text (a
    prompt may be 25,000 characters), so at most 4,096 x (16 bytes and the vector): 6 MB
    of 384-dimensional vectors, 8 MB of the multilingual encoder's 512. Locked: the
    explorer's cases run and its what-if screen embed at once."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._items: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, text: str) -> np.ndarray | None:
        key = self._key(text)
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
        return vector

    def put(self, text: str, vector: np.ndarray) -> None:
        key = self._key(text)
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            if len(self._items) > self._size:
                self._items.popitem(last=False)


class OnnxEmbedder:
    """Any sentence-transformers-style ONNX encoder plus its `tokenizer.json`."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        name: str,
        identity: str,
        pooling: str = "mean",
        query_prefix: str = "",
        max_length: int = 256,
        threads: int | None = None,
        optimized_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', not {pooling!r}")
        self.name, self.identity = name, identity
        self.pooling, self.query_prefix = pooling, query_prefix
        self.model_path, self.tokenizer_path = str(model_path), str(tokenizer_path)
        self.tokenizer = Tokenizer.from_file(self.tokenizer_path)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        self.max_chars = readable_chars(max_length)
        self._threads, self._optimized_dir = threads, optimized_dir
        self.session = onnx_session(self.model_path, threads, optimized_dir)
        self._bulk_session: InferenceSession | None = None
        self._bulk_users = 0
        self._bulk_lock = threading.Lock()
        self._inputs = {item.name for item in self.session.get_inputs()}
        outputs = self.session.get_outputs()
        self._output = next(
            (item.name for item in outputs if item.name == "sentence_embedding"), outputs[0].name
        )
        self.dim = int(outputs[0].shape[-1]) if isinstance(outputs[0].shape[-1], int) else 0
        self._queries = QueryCache()
        if not self.dim:
            self.dim = int(self._run([self.tokenizer.encode("probe")], self.session).shape[-1])

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """While it is open, `embed_documents` runs on a session of its own with
        onnxruntime's memory arena; the session is dropped when its last user closes it.

        A library's first build sends thousands of runs through every core at once.
        Without the arena each run's tensors come from the C allocator, where each
        embedding thread keeps a heap of its own that the runs fragment. Measured (when
        descriptions still went in batches) on
        two cores, a new process each time, an empty cache, interleaved:
        * a command (`index`, `route`): building 1,000 of the large corpus's skills
          peaked at 410-485 MB, in bulk 310-323 MB; the bench's 1,000 skills 331-342
          against 289-293 MB. The price is time: `index` of 2,289 skills 20.5-21.6 s
          against 22.1-23.3 s. A session per embedding thread, each with its own arena,
          was as fast as the heaps but peaked at 364 MB (the weights twice more);
        * the explorer and `watch`, which fix glibc's mmap threshold for their long
          lives (`memory.py`), so that every tensor there is a fresh mapping: building
          the same 1,000 skills took 18.1-18.3 s, in bulk 9.4-11.2 s, peaking at 250-257
          against 295-306 MB.
        Dropped afterwards, the arena hands its memory back, where the heaps keep what
        they grew to (RSS after the command's build 306-434 MB against 262-266). A
        query, a save's one description, a reranker's pairs and the hook's build under
        its time budget (`cache.BULK_TEXTS`) stay on the arena-less session
        (`onnx_session`), which is what a long-lived process needs."""
        with self._bulk_lock:
            if self._bulk_users == 0:
                self._bulk_session = onnx_session(
                    self.model_path, self._threads, self._optimized_dir, arena=True
                )
            self._bulk_users += 1
        try:
            yield
        finally:
            with self._bulk_lock:
                self._bulk_users -= 1
                if self._bulk_users == 0:
                    self._bulk_session = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Each text runs through the model alone, unpadded, so its vector is a property of
        the text (docs/models.md, "A vector is a property of its text").

        A dynamically quantised (int8) encoder scales its activations per run: in a batch,
        a text's vector would move with its neighbours and the padding the longest of them
        forces (on the packaged encoder, cosine 0.994 median and 0.977 at worst to the same
        text alone), so a skill's cosine would depend on which skills were embedded beside
        it. The texts are spread over every core (`threads.batch_workers`), longest first
        in small shares handed to whichever thread is free, each run on the one session
        (or the bulk one, `bulk`) with its one intra-op thread."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        session = self._bulk_session or self.session
        with native_call():  # tokenizers gives the GIL up while it encodes a batch
            encodings = self.tokenizer.encode_batch([scrub_surrogates(text) for text in texts])
        longest_first = sorted(
            range(len(encodings)), key=lambda index: len(encodings[index].ids), reverse=True
        )
        result = np.empty((len(texts), self.dim), dtype=np.float32)

        def run(rows: Sequence[int]) -> None:
            for row in rows:
                result[row] = self._run([encodings[row]], session)[0]

        workers = min(batch_workers(), len(encodings))
        if workers > 1:
            # Small shares, longest first, to whichever thread is free: a core slowed by
            # other work takes fewer, and none is left with a long text at the end.
            shares = [
                longest_first[start : start + SHARE_TEXTS]
                for start in range(0, len(longest_first), SHARE_TEXTS)
            ]
            with ThreadPoolExecutor(workers, thread_name_prefix="embed") as pool:
                list(pool.map(run, shares))
        else:
            run(longest_first)
        return l2_normalise(result)

    def embed_query(self, text: str) -> np.ndarray:
        # What the model reads (a cache key too)
        head = scrub_surrogates((self.query_prefix + text)[: self.max_chars])
        cached = self._queries.get(head)
        if cached is None:
            cached = l2_normalise(self._run([self.tokenizer.encode(head)], self.session))[0]
            self._queries.put(head, cached)
        return cached

    def _run(self, encodings: Sequence[Encoding], session: InferenceSession) -> np.ndarray:
        ids, mask, _ = pad_batch(encodings)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with native_call():
            output: np.ndarray = session.run([self._output], feed)[0]
        if output.ndim == 2:  # the export pools for us
            return output.astype(np.float32)
        if self.pooling == "cls":
            return output[:, 0, :].astype(np.float32)
        weights = mask[:, :, None].astype(np.float32)
        summed = (output * weights).sum(axis=1)
        pooled: np.ndarray = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled.astype(np.float32)


BOW_DIM = 256


def fnv1a_32(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


class BowEmbedder:
    """§6 offline lane: hashed bag of tokens, FNV-1a 32 mod 256, L2-normalised.

    Every token of `tokenize` counts, stopwords included, as in the reference
    (src/embed/bow.rs): dropping them changed the injected skills of 483 of 804 benchmark
    prompts (benchmarks/data, three libraries; docs/parity.md).
    """

    name = "bow"
    identity = "bow-fnv1a32-256-v2"  # v2: stopwords kept; v1 vectors must not be reused
    dim = BOW_DIM

    def __init__(self) -> None:
        self._buckets: dict[str, int] = {}

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for token in tokenize(text):
            bucket = self._buckets.get(token)
            if bucket is None:
                bucket = self._buckets[token] = fnv1a_32(token.encode()) % self.dim
            vector[bucket] += 1.0
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalise(np.stack([self._vector(text) for text in texts]))

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = l2_normalise(self._vector(text)[None, :])[0]
        return vector
