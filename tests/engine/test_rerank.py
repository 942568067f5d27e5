"""Stage 2 (§5.4) through onnxruntime for real, with tiny cross-encoders built in the test."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import Models, assemble_models, find_reranker, load_models
from explorer.engine.inference.rerank import (
    AGREEMENT_SLACK,
    OnnxCrossEncoder,
    RememberedLogits,
    agreement_gate,
    sigmoid,
)
from explorer.engine.route.decision import GateName, Stage, Verdict
from explorer.engine.route.pipeline import decide
from tests.conftest import write_skill
from tests.support.onnx_builders import build_tiny_cross_encoder, build_wordlevel_tokenizer

VOCAB = (
    "merge split pdf files documents tables extract forms spreadsheet formulas csv clean "
    "workbook data invoices totals steps for convert export report"
).split()


def _encoder(directory: Path, **kwargs: object) -> OnnxCrossEncoder:
    model, tokenizer = build_tiny_cross_encoder(directory, VOCAB, **kwargs)  # type: ignore[arg-type]
    return OnnxCrossEncoder(model, tokenizer, name="tiny-ce")


def test_logits_rank_the_matching_document_first(tmp_path: Path) -> None:
    encoder = _encoder(tmp_path)
    logits = encoder.score("merge pdf files", ["merge pdf files", "spreadsheet formulas", "pdf"])
    assert logits.shape == (3,)
    assert logits[0] > logits[2] > logits[1]


def test_batching_does_not_change_logits(tmp_path: Path) -> None:
    encoder = _encoder(tmp_path)
    docs = ["merge pdf", "clean csv data", "extract tables from pdf files", "totals"]
    batched = encoder.score("pdf tables", docs)
    single = np.array([encoder.score("pdf tables", [doc])[0] for doc in docs])
    assert np.allclose(batched, single)


def test_a_packaged_logit_is_a_property_of_its_pair() -> None:
    """The int8 model scales activations per run: neighbours, their number and the padding
    a longer neighbour forces must not move a pair's logit (they moved it by up to 0.8)."""
    from explorer.engine.inference.models import PACKAGED_RERANKER_DIR

    directory = PACKAGED_RERANKER_DIR
    encoder = OnnxCrossEncoder(
        directory / "model.onnx", directory / "tokenizer.json", name="packaged", max_length=64
    )
    prompt = "write an announcement for the team about the outage"
    target = "Write internal communications: status reports, incident notes, announcements."
    others = [
        "Create posters and visual art in PNG and PDF.",
        "Build MCP servers that let a model call external services through tools, "
        "resources and prompts, in Python or TypeScript, with tests and packaging.",
        "Slack GIFs.",
    ]
    alone = encoder.score(prompt, [target])[0]
    for neighbours in ([], others[:1], others, others * 4, others[1:2] * 11):
        logits = encoder.score(prompt, [*neighbours, target])
        assert logits[-1] == alone, (len(neighbours), logits[-1], alone)


def _byte_level_tokenizer(path: Path) -> Path:
    """A RoBERTa-style tokenizer (byte-level BPE, `<s> A </s></s> B </s>`), trained here:
    the other family of cross-encoders a user may plug in."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>", "<pad>"])
    text = "merge the pdf files, split the deck; export the quarterly report as csv data. "
    tokenizer.train_from_iterator([text * 20, " ".join(VOCAB) * 5], trainer)
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 1), ("<s>", 0))
    tokenizer.save(str(path))
    return path


def _lookahead_tokenizer(path: Path) -> Path:
    """A tokenizer whose normaliser reads ahead: every "merge" is "pdf" when "csv" follows
    anywhere later, so a text's cut opening splits otherwise than the text."""
    from tokenizers import Regex, Tokenizer, normalizers

    tokenizer = Tokenizer.from_file(str(build_wordlevel_tokenizer(VOCAB, path)))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Lowercase(), normalizers.Replace(Regex(r"merge(?=[\s\S]*csv)"), "pdf")]
    )
    tokenizer.save(str(path))
    return path


def _untemplated_tokenizer(path: Path) -> Path:
    """A tokenizer with no template: `encode` gives the second text type id 1 on its own."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(build_wordlevel_tokenizer(VOCAB, path)))
    data = json.loads(tokenizer.to_str())
    data["post_processor"] = None
    path.write_text(json.dumps(data))
    return path


TOKENIZER_FAMILIES = {
    "byte-level": _byte_level_tokenizer,
    "lookahead": _lookahead_tokenizer,
    "untemplated": _untemplated_tokenizer,
}


@pytest.mark.parametrize("family", ["packaged", *TOKENIZER_FAMILIES])
def test_pairs_from_each_texts_pieces_are_the_tokenizers_own(tmp_path: Path, family: str) -> None:
    """Each text is split once and its pieces kept; the pairs joined from them are the
    ones the tokenizer, loaded apart, makes of the two texts, to the last id and type id,
    for short and long sides, scripts without spaces, and sides whose kept openings are
    ordered otherwise than the whole texts (the query longer in whole, shorter in its
    kept opening)."""
    from tokenizers import Tokenizer

    from explorer.engine.inference.models import WILD_RERANKER_DIR

    if family == "packaged":
        model, tokenizer = WILD_RERANKER_DIR / "model.onnx", WILD_RERANKER_DIR / "tokenizer.json"
    else:
        model, _ = build_tiny_cross_encoder(tmp_path, VOCAB)
        tokenizer = TOKENIZER_FAMILIES[family](tmp_path / "tokenizer-under-test.json")
    long_query = "merge " * 40  # 40 pieces; at 16, its kept opening 17
    two_piece_words = "pdfs " * 15  # 30 pieces; at 16, its kept opening 18
    prompts = [
        "merge pdf files",
        long_query,
        "블로그 글 하나 썼는데 너무 딱딱하고 형식적으로 느껴져. 좀 더 자연스럽게 다듬어줄 수 있어?",
        "把胶片模拟外观交付到真实修图工作流里 " * 6,
        "export the report; " * 30,
        "merge " * 30 + "csv",
    ]
    documents = [
        "Merge, split and export PDF files.",
        two_piece_words,
        "Clean csv data and workbook formulas. " * 40,
        "한국어 글에서 AI 문체를 제거하고, 새로 쓸 때는 쓴다. " * 12,
        "",
        "merge " * 30 + "csv",
    ]
    for max_length in (64, 16):
        encoder = OnnxCrossEncoder(model, tokenizer, name=family, max_length=max_length)
        reference = Tokenizer.from_file(str(tokenizer))
        reference.no_padding()
        reference.enable_truncation(max_length=max_length, strategy="longest_first")
        for prompt in prompts:
            pairs = encoder._encode_pairs(prompt, documents)
            for document, pair in zip(documents, pairs, strict=True):
                whole = reference.encode(prompt, document)
                assert (pair.ids, pair.type_ids, pair.attention_mask) == (
                    whole.ids,
                    whole.type_ids,
                    whole.attention_mask,
                ), (max_length, prompt[:20], document[:20])
        assert encoder.tokenizer.truncation["max_length"] == max_length
    kept = encoder._kept.get("merge " * 30 + "csv")  # at 16, 31 pieces are more than it reads
    if family in ("lookahead", "untemplated"):  # its opening splits otherwise; no joining
        assert kept is None
    else:
        assert kept is not None and max_length < len(kept.encoding.ids) < kept.length


def test_a_failed_split_leaves_the_pairs_truncated(tmp_path: Path) -> None:
    """Single texts are split with the truncation off; whatever happens there, it is on
    again for the next pair."""
    encoder = _encoder(tmp_path)
    real = encoder.tokenizer

    class Failing:
        def __getattr__(self, name: str) -> object:
            return getattr(real, name)

        def encode_batch(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("split failed")

    encoder.tokenizer = Failing()  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="split failed"):
        encoder.score("merge pdf", ["pdf files"])
    encoder.tokenizer = real
    assert real.truncation is not None
    assert len(encoder.score("merge pdf", [" ".join(["data"] * 2000)])) == 1


def test_kept_pieces_are_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Past `PIECES_KEPT` texts the least recently used go; a text used again stays."""
    from explorer.engine.inference import rerank

    monkeypatch.setattr(rerank, "PIECES_KEPT", 3)
    encoder = _encoder(tmp_path)
    first = encoder.score("merge pdf", ["pdf files", "csv data"])
    encoder.score("merge pdf", ["totals"])
    assert list(encoder._kept) == ["csv data", "merge pdf", "totals"]
    assert encoder.score("merge pdf", ["pdf files"])[0] == first[0]
    assert list(encoder._kept) == ["totals", "merge pdf", "pdf files"]


def test_pairs_on_several_threads_get_the_logits_of_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision's pairs run on a pool of `batch_workers` threads, each pair still alone:
    the logits of one thread, whatever the shares; a single pair runs in the caller's
    thread."""
    import threading

    from explorer.engine.base import threads
    from explorer.engine.inference.models import PACKAGED_RERANKER_DIR

    encoder = OnnxCrossEncoder(
        PACKAGED_RERANKER_DIR / "model.onnx",
        PACKAGED_RERANKER_DIR / "tokenizer.json",
        name="packaged",
        max_length=64,
    )
    prompt = "merge the quarterly pdf reports into one deck"
    documents = [f"Merge {n} pdf reports, split decks and export slides {n * n}." for n in range(7)]
    monkeypatch.setenv(threads.THREADS_VARIABLE, "1")
    one = encoder.score(prompt, documents)
    seen: set[str] = set()
    run = encoder._run

    def spy(encodings: Sequence[object]) -> np.ndarray:
        seen.add(threading.current_thread().name)
        return run(encodings)  # type: ignore[arg-type]

    monkeypatch.setattr(encoder, "_run", spy)
    for workers in ("2", "3"):
        monkeypatch.setenv(threads.THREADS_VARIABLE, workers)
        seen.clear()
        assert np.array_equal(encoder.score(prompt, documents), one)
        # Pool threads (how many of them took a share is the scheduler's to say).
        assert seen and all(name.startswith("rerank") for name in seen)
    seen.clear()
    assert encoder.score(prompt, documents[:1])[0] == one[0]
    assert seen == {threading.current_thread().name}


def test_models_without_token_type_ids_work(tmp_path: Path) -> None:
    with_types = _encoder(tmp_path / "a")
    without = _encoder(tmp_path / "b", with_token_type_ids=False)
    docs = ["merge pdf files", "csv data"]
    assert np.allclose(with_types.score("merge pdf", docs), without.score("merge pdf", docs))


def test_pairs_are_truncated_to_max_length(tmp_path: Path) -> None:
    model, tokenizer = build_tiny_cross_encoder(tmp_path, VOCAB)
    encoder = OnnxCrossEncoder(model, tokenizer, name="t", max_length=16)
    long_doc = " ".join(["data"] * 2000) + " merge pdf"
    assert np.isfinite(encoder.score("merge pdf", [long_doc])).all()
    assert len(encoder.tokenizer.encode("merge pdf", long_doc).ids) == 16


def test_agreement_gate_follows_5_4() -> None:
    scores = np.array([0.70, 0.62, 0.50, 0.66])
    logits = {0: 1.0, 1: 3.5, 2: 9.0, 3: -3.0}
    gate = agreement_gate(
        [0, 1, 2, 3], scores, logits, min_similarity=0.64, rerank_min=-2.5, rerank_margin=2.0
    )
    assert gate.floor == pytest.approx(0.64 - AGREEMENT_SLACK)
    assert gate.eligible == (0, 1, 3)  # 0.50 is under the floor, however high its logit
    assert gate.best == 3.5
    assert gate.passed == (0, 1) or gate.passed == (1,)
    assert gate.passed == (1,)  # 1.0 < 3.5 - 2.0; -3.0 < rerank_min


def _rerank_library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge split and extract tables from pdf files and documents.")
    write_skill(root, "invoices", "Extract totals from pdf invoices and export csv data.")
    write_skill(root, "xlsx", "Spreadsheet formulas, clean csv data and workbook report.")
    return root


def _index(tmp_path: Path, encoder: OnnxCrossEncoder, config: Config):
    models = assemble_models(BowEmbedder(), encoder, reranker_note="test")
    return build_index([_rerank_library(tmp_path)], config, models)


def test_rerank_stage_decides_with_real_logits(tmp_path: Path) -> None:
    config = Config(preset="reference", recall_floor=0.1, min_similarity=0.2)
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    decision = decide("merge pdf files and extract tables", index, config)
    assert decision.stage is Stage.RERANK
    assert decision.injected_ids[0] == "pdf"
    row = decision.row("pdf")
    assert row.rerank is not None and row.rerank_prob == pytest.approx(sigmoid(row.rerank))
    assert decision.injected[0].confidence == pytest.approx(sigmoid(row.rerank))
    names = [gate.name for gate in decision.gates]
    assert names.index("recall_floor") < names.index("reranker") < names.index("agreement_floor")
    assert names.index("agreement_floor") < names.index("rerank_min") < names.index("rerank_margin")


def test_a_reranker_that_favours_one_document_moves_the_decision(tmp_path: Path) -> None:
    config = Config(preset="reference", recall_floor=0.1, min_similarity=0.2, max_skills=1)
    neutral = _index(tmp_path / "n", _encoder(tmp_path / "n" / "m"), config)
    favouring = _index(
        tmp_path / "f", _encoder(tmp_path / "f" / "m", token_bias={"invoices": 12.0}), config
    )
    prompt = "merge pdf files and extract tables"
    assert decide(prompt, neutral, config).injected_ids == ("pdf",)
    decision = decide(prompt, favouring, config)
    assert decision.injected_ids == ("invoices",)
    assert decision.row("pdf").verdict in ("rerank_margin", "max_skills")
    # The agreement floor still guards: with a floor above every hybrid score, no pick.
    strict = config.replace(min_similarity=5.0)
    blocked = decide(prompt, favouring, strict)
    assert blocked.stage is Stage.RERANK and blocked.injected_ids == ()
    assert blocked.gate(GateName.AGREEMENT_FLOOR).passed is False
    assert blocked.row("invoices").verdict is Verdict.AGREEMENT_FLOOR


def test_rerank_min_drops_weak_logits(tmp_path: Path) -> None:
    config = Config(preset="reference", recall_floor=0.1, min_similarity=0.2, rerank_min=50.0)
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    decision = decide("merge pdf files", index, config)
    assert decision.injected_ids == ()
    assert {row.verdict for row in decision.rows if row.rerank is not None} <= {
        "rerank_min",
        "agreement_floor",
    }


def test_union_candidates_add_bm25_only_skills(tmp_path: Path) -> None:
    config = Config(
        recall_floor=0.1, min_similarity=0.2, rerank_top_k=1, candidate_strategy="union"
    )
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    prompt = "report.xlsx with totals from invoices"  # the file channel lifts xlsx
    decision = decide(prompt, index, config)
    pools = {row.id: row.pool for row in decision.rows}
    assert pools == {"xlsx": "dense", "invoices": "bm25", "pdf": None}
    assert decision.row("invoices").rerank is not None
    dense_only = decide(prompt, index, config.replace(candidate_strategy="dense"))
    assert [row.id for row in dense_only.rows if row.rerank is not None] == ["xlsx"]


def test_no_reranker_behaves_like_the_reference_and_says_where_it_looked(
    tmp_path: Path, bow_index, monkeypatch: pytest.MonkeyPatch
) -> None:
    import explorer.engine.inference.models as models_module

    monkeypatch.setattr(models_module, "PACKAGED_RERANKER_DIR", tmp_path / "no-packaged-model")
    pair, note = find_reranker(Config(preset="reference", ski_models_dir=str(tmp_path)))
    assert pair is None and str(tmp_path) in note
    decision = decide("merge pdf files", bow_index, Config(preset="reference"))
    gate = decision.gate(GateName.RERANKER)
    assert gate.skipped and gate.inputs["available"] is False
    assert decision.stage is Stage.COSINE


def test_reranker_found_in_the_reference_cache_layout(tmp_path: Path) -> None:
    snapshot = tmp_path / "models--jinaai--jina-reranker-v1-turbo-en" / "snapshots" / "abc123"
    build_tiny_cross_encoder(snapshot, VOCAB)
    models = load_models(Config(preset="reference", model="bow", ski_models_dir=str(tmp_path)))
    assert models.reranker is not None
    assert models.status.reranker == "jina-reranker-v1-turbo-en"


def test_reranker_from_a_config_path_and_a_bad_one(tmp_path: Path) -> None:
    build_tiny_cross_encoder(tmp_path / "ce", VOCAB)
    assert (
        load_models(Config(preset="reference", model="bow", reranker=str(tmp_path / "ce"))).reranker
        is not None
    )
    missing = load_models(
        Config(preset="reference", model="bow", reranker=str(tmp_path / "nowhere"))
    )
    assert missing.reranker is None and "nowhere" in missing.status.reranker_note


def test_a_huge_prompt_is_cut_to_what_the_model_reads_before_tokenising() -> None:
    """Tokenizers split a whole text before truncating it: a 100 KB prompt took 3.3 s and
    1.9 GB through stage 2, once per candidate. The cut keeps every token the model reads."""
    from tokenizers import Tokenizer

    from explorer.engine.inference.embed import readable_chars
    from explorer.engine.inference.models import PACKAGED_RERANKER_DIR

    tokenizer = Tokenizer.from_file(str(PACKAGED_RERANKER_DIR / "tokenizer.json"))
    words = ["merge", "x" * 150, "pdf", "quarterly", "a" * 99, "naïve", "数据", "!!"]
    text = " ".join(words[i % len(words)] for i in range(3_000))  # ~100 KB
    whole = tokenizer.encode(text, add_special_tokens=False).ids  # the slow part: once
    for max_tokens in (16, 64, 256):
        head = text[: readable_chars(max_tokens)]
        assert len(head) < len(text)
        assert (
            tokenizer.encode(head, add_special_tokens=False).ids[:max_tokens] == whole[:max_tokens]
        )
    encoder = OnnxCrossEncoder(
        PACKAGED_RERANKER_DIR / "model.onnx",
        PACKAGED_RERANKER_DIR / "tokenizer.json",
        name="packaged",
        max_length=64,
    )
    doc = "Merge and split PDF files."
    assert encoder.score(text, [doc])[0] == encoder.score(text[: encoder.max_chars], [doc])[0]


class _CountingReranker:
    """A logit from the pair's text alone, and a count of the pairs actually scored."""

    name = "counting"
    model_path = "-"

    def __init__(self) -> None:
        self.scored: list[tuple[str, str]] = []

    def score(self, query: str, documents: Sequence[str]) -> np.ndarray:
        self.scored += [(query, doc) for doc in documents]
        return np.array([float(len(query) * 100 + len(doc)) for doc in documents])


def test_a_remembered_reranker_scores_each_pair_once_with_its_own_logits() -> None:
    reranker = _CountingReranker()
    remembered = RememberedLogits(reranker)
    first = remembered.score("merge pdfs", ["pdf tools", "sheets", "pdf tools"])
    again = remembered.score("merge pdfs", ["sheets", "slides", "pdf tools"])
    other = remembered.score("make slides", ["sheets"])
    direct = _CountingReranker()
    for query, docs, got in (
        ("merge pdfs", ["pdf tools", "sheets", "pdf tools"], first),
        ("merge pdfs", ["sheets", "slides", "pdf tools"], again),
        ("make slides", ["sheets"], other),
    ):
        assert got.tolist() == direct.score(query, docs).tolist()
    assert reranker.scored == [
        ("merge pdfs", "pdf tools"),
        ("merge pdfs", "sheets"),
        ("merge pdfs", "slides"),
        ("make slides", "sheets"),
    ]


def test_a_remembered_reranker_with_a_limit_starts_afresh_past_it() -> None:
    """A what-if session brings a new document a keystroke: past `limit` pairs the
    documents first scored are forgotten down to half of it, the memo never grows
    without end, and its logits stay the model's."""
    reranker = _CountingReranker()
    remembered = RememberedLogits(reranker, limit=3)
    remembered.score("merge pdfs", ["pdf tools", "sheets"])
    remembered.score("merge pdfs", ["pdf tools", "slides"])  # 3 pairs: kept
    assert len(reranker.scored) == 3
    got = remembered.score("merge pdfs", ["docs", "sheets"])  # 4 > 3: the oldest go
    assert reranker.scored[3:] == [("merge pdfs", "docs")]
    assert got.tolist() == _CountingReranker().score("merge pdfs", ["docs", "sheets"]).tolist()
    remembered.score("merge pdfs", ["docs"])
    assert len(reranker.scored) == 4  # remembered since
    remembered.score("merge pdfs", ["pdf tools"])
    assert len(reranker.scored) == 5  # the first document scored, forgotten


def test_a_logit_memo_keeps_one_remembering_reranker_per_cross_encoder(
    minilm_models: Models,
) -> None:
    """The explorer's cases runs and what-if keystrokes route copies of the library with
    one memo: the same cross-encoder keeps its remembered pairs from run to run; another
    (a config that changes it) starts afresh; no cross-encoder, nothing to remember."""
    import dataclasses

    from explorer.engine.inference import LogitMemo

    first, other = _CountingReranker(), _CountingReranker()
    memo = LogitMemo()
    with_first = dataclasses.replace(minilm_models, reranker=first)
    one, two = memo.models(with_first), memo.models(with_first)
    assert isinstance(one.reranker, RememberedLogits) and one.reranker is two.reranker
    assert one.embedder is minilm_models.embedder
    one.reranker.score("merge pdfs", ["pdf tools"])
    two.reranker.score("merge pdfs", ["pdf tools"])
    assert first.scored == [("merge pdfs", "pdf tools")]
    three = memo.models(dataclasses.replace(minilm_models, reranker=other))
    assert isinstance(three.reranker, RememberedLogits) and three.reranker is not one.reranker
    assert memo.models(three) is three  # remembering already
    bare = dataclasses.replace(minilm_models, reranker=None)
    assert memo.models(bare) is bare
