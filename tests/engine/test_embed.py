"""Dense embedders through onnxruntime for real: the packaged MiniLM and tiny exports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base import threads
from explorer.engine.base.config import Config
from explorer.engine.inference import models as models_module
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder, OnnxEmbedder, fnv1a_32, l2_normalise
from explorer.engine.inference.models import ModelError, load_embedder, load_models
from tests.support.onnx_builders import build_tiny_embedder

VOCAB = ["merge", "pdf", "files", "split", "docker", "image", "banana", "bread", "query"]


def test_packaged_minilm_separates_similar_from_unrelated(minilm_models) -> None:
    embedder = minilm_models.embedder
    assert embedder.name == "minilm" and embedder.dim == 384
    anchor = embedder.embed_query("combine two PDF files into one document")
    similar, unrelated = embedder.embed_documents(
        ["Merge several PDF documents into a single PDF.", "A recipe for banana bread."]
    )
    assert np.isclose(np.linalg.norm(similar), 1.0, atol=1e-5)
    assert float(anchor @ similar) > float(anchor @ unrelated) + 0.3


def test_minilm_identity_names_the_weights(minilm_models) -> None:
    assert minilm_models.embedder.identity.startswith("minilm:8199be6f699a395f")


@pytest.mark.parametrize(
    ("pin", "model"),
    [("MINILM_MODEL_SHA256", "minilm"), ("PACKAGED_ENCODER_SHA256", "skill-encoder")],
)
def test_checksum_mismatch_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, pin: str, model: str
) -> None:
    monkeypatch.setattr(models_module, pin, "0" * 64)
    with pytest.raises(ModelError, match=r"sha256 .* expected 0000"):
        load_embedder(Config(model=model))
    loaded = load_models(Config(model=model, reranker="off"))
    assert loaded.embedder is None
    assert "sha256" in (loaded.status.dense_error or "")


def test_each_preset_runs_its_own_dense_model() -> None:
    assert load_embedder(Config()).name == "skill-encoder"
    assert load_embedder(Config(preset="calibrated")).name == "minilm"
    assert load_embedder(Config(preset="reference")).name == "minilm"
    assert load_embedder(Config(preset="calibrated", model="skill-encoder")).name == (
        "skill-encoder"
    )


def test_unknown_and_missing_models_say_where_they_looked(tmp_path: Path) -> None:
    assert load_embedder(Config(model="nope")).name == "bow"  # as the reference does
    assert any("unknown model 'nope'" in w for w in load_models(Config(model="nope")).warnings)
    # A reranker named by path that is not there is a warning every command prints (the
    # decision changes mode without it); "auto" finding none is not.
    missing = tmp_path / "no-reranker"
    warned = load_models(Config(model="bow", reranker=str(missing))).warnings
    assert f"reranker {missing} is not an ONNX file with a tokenizer.json beside it" in warned
    nothing_found = Config(  # the reference preset's auto takes no packaged model
        model="bow", reranker="auto", preset="reference", ski_models_dir=str(tmp_path)
    )
    quiet = load_models(nothing_found)
    assert quiet.reranker is None and not any("reranker" in w for w in quiet.warnings)
    with pytest.raises(ModelError, match=str(tmp_path)):
        load_embedder(Config(model="bge-small-en-v1.5", ski_models_dir=str(tmp_path)))


def _tiny(tmp_path: Path, **kwargs: object) -> OnnxEmbedder:
    model, tokenizer = build_tiny_embedder(tmp_path, VOCAB)
    return OnnxEmbedder(model, tokenizer, name="tiny", identity="tiny:1", **kwargs)  # type: ignore[arg-type]


def test_mean_and_cls_pooling_differ_and_normalise(tmp_path: Path) -> None:
    mean = _tiny(tmp_path, pooling="mean")
    cls = _tiny(tmp_path, pooling="cls")
    a = mean.embed_documents(["merge pdf files"])[0]
    b = cls.embed_documents(["merge pdf files"])[0]
    assert np.isclose(np.linalg.norm(a), 1.0, atol=1e-5)
    assert np.isclose(np.linalg.norm(b), 1.0, atol=1e-5)
    assert not np.allclose(a, b)
    # CLS pooling reads position 0 only, the [CLS] token: every text gets the same vector.
    assert np.allclose(b, cls.embed_documents(["banana bread"])[0])


def test_several_texts_keep_their_order_and_their_vectors_alone(tmp_path: Path) -> None:
    """Any ONNX encoder a user plugs in: a text's vector is the one it has alone, whatever
    is embedded beside it, in input order, on one core or several."""
    embedder = _tiny(tmp_path)
    texts = ["banana", "merge pdf files split", "docker image", "query", "bread banana pdf"]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_documents([text])[0] for text in texts])
    assert np.array_equal(together, alone)


def test_a_vector_is_a_property_of_its_text(
    warm_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The skill encoder is quantised to int8 with activation scales computed per run:
    embedded in a batch, a text's vector moved with its neighbours and their padding
    (embed.py, `OnnxEmbedder.embed_documents`). It must be the same bit for bit beside a
    long text, beside many, alone, and on one thread or two."""
    embedder = load_embedder(Config(), EmbeddingCache(warm_cache_dir))
    assert embedder.name == "skill-encoder"
    text = "Merge PDF files and split a long report into chapters."
    neighbours = [
        "A library of fonts " + "with many weights and styles for posters " * 12,
        "Docker images.",
        *(f"Deploy service {n} to the staging cluster and watch its logs." for n in range(9)),
    ]
    alone = embedder.embed_documents([text])[0]
    monkeypatch.setenv(threads.THREADS_VARIABLE, "1")
    assert np.array_equal(embedder.embed_documents([neighbours[0], text])[1], alone)
    monkeypatch.setenv(threads.THREADS_VARIABLE, "2")
    assert np.array_equal(embedder.embed_documents([*neighbours, text])[-1], alone)
    assert np.array_equal(embedder.embed_documents([text, neighbours[1]])[0], alone)


def test_query_prefix_changes_the_query_only(tmp_path: Path) -> None:
    plain = _tiny(tmp_path)
    prefixed = _tiny(tmp_path, query_prefix="query ")
    assert np.allclose(plain.embed_query("pdf"), plain.embed_documents(["pdf"])[0], atol=1e-6)
    assert not np.allclose(prefixed.embed_query("pdf"), prefixed.embed_documents(["pdf"])[0])


def test_custom_model_path_from_config(tmp_path: Path) -> None:
    model, _ = build_tiny_embedder(tmp_path, VOCAB)
    embedder = load_embedder(Config(model_path=str(model)))
    assert embedder.name == "model" and embedder.dim == 16


def test_bow_embedder_matches_spec() -> None:
    bow = BowEmbedder()
    vector = bow.embed_query("merge merge pdf")
    expected = np.zeros(256, dtype=np.float32)
    expected[fnv1a_32(b"merge") % 256] += 2
    expected[fnv1a_32(b"pdf") % 256] += 1
    assert np.allclose(vector, expected / np.linalg.norm(expected))
    assert fnv1a_32(b"") == 0x811C9DC5 and fnv1a_32(b"a") == 0xE40C292C


def test_zero_and_non_finite_rows_normalise_to_zero() -> None:
    rows = l2_normalise(np.array([[0.0, 0.0], [np.inf, 1.0], [3.0, 4.0]]))
    assert rows.tolist()[:2] == [[0.0, 0.0], [0.0, 0.0]]
    assert np.allclose(rows[2], [0.6, 0.8])


def test_optimised_graph_is_saved_reused_and_repaired(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_embedder(tmp_path / "m", VOCAB)
    saved_dir = tmp_path / "onnx"

    def load() -> OnnxEmbedder:
        return OnnxEmbedder(model, tokenizer, name="t", identity="t", optimized_dir=saved_dir)

    first = load().embed_documents(["merge pdf files"])
    (saved,) = saved_dir.glob("*.ort.onnx")
    stamp = saved.stat().st_mtime_ns
    assert np.allclose(load().embed_documents(["merge pdf files"]), first)
    assert saved.stat().st_mtime_ns == stamp  # reused, not rewritten
    saved.write_bytes(b"damaged")
    assert np.allclose(load().embed_documents(["merge pdf files"]), first)
    assert saved.stat().st_size > len(b"damaged")  # optimised afresh


def test_partial_graphs_of_dead_processes_are_cleaned(tmp_path: Path) -> None:
    """A process killed while saving leaves `<name>.ort.onnx.<pid>.tmp` (90 MB for MiniLM)."""
    import os
    import subprocess
    import sys

    model, tokenizer = build_tiny_embedder(tmp_path / "m", VOCAB)
    saved_dir = tmp_path / "onnx"
    saved_dir.mkdir()
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = saved_dir / f"model-0123456789abcdef0123.ort.onnx.{int(child.stdout)}.tmp"
    alive = saved_dir / f"model-0123456789abcdef0123.ort.onnx.{os.getppid()}.tmp"
    unrelated = saved_dir / "notes.tmp"
    for path in (dead, alive, unrelated):
        path.write_bytes(b"partial")
    OnnxEmbedder(model, tokenizer, name="t", identity="t", optimized_dir=saved_dir)
    assert not dead.exists()
    assert alive.exists() and unrelated.exists()  # another process may still be writing it
    assert len(list(saved_dir.glob("*.ort.onnx"))) == 1


def test_a_bulk_session_has_the_arena_makes_the_same_vectors_and_is_dropped(
    tmp_path: Path,
) -> None:
    """A library's build runs on a session of its own with onnxruntime's memory arena
    (embed.py, `OnnxEmbedder.bulk`); queries stay on the arena-less one, the vectors do
    not change, and the bulk session lives exactly as long as its last user."""
    embedder = _tiny(tmp_path)
    texts = ["banana", "merge pdf files split", "docker image", "query", "bread banana pdf"]
    plain = embedder.embed_documents(texts)
    assert embedder.session.get_session_options().enable_cpu_mem_arena is False
    with embedder.bulk():
        bulk = embedder._bulk_session
        assert bulk is not None and bulk.get_session_options().enable_cpu_mem_arena is True
        with embedder.bulk():  # a second user shares it
            assert embedder._bulk_session is bulk
        assert embedder._bulk_session is bulk  # still in use by the first
        assert np.array_equal(embedder.embed_documents(texts), plain)
    assert embedder._bulk_session is None
    assert np.array_equal(embedder.embed_documents(texts), plain)


def test_the_query_cache_holds_a_cases_file_of_thousands_of_prompts() -> None:
    """The explorer decides a cases file's prompts again after every save and what-if
    keystroke: 256 vectors held fewer than the wild corpus's 2,060 cases, and each run
    embedded every prompt again. The least recently used goes first."""
    import numpy as np

    from explorer.engine.inference.embed import QueryCache

    cache = QueryCache()
    for number in range(3000):
        cache.put(f"prompt {number}", np.full(4, number, dtype=np.float32))
    assert all(cache.get(f"prompt {number}") is not None for number in range(3000))
    small = QueryCache(size=2)
    for text in ("a", "b"):
        small.put(text, np.zeros(1))
    small.get("a")
    small.put("c", np.zeros(1))
    assert small.get("b") is None and small.get("a") is not None
