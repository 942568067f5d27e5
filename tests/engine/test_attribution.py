"""What each sentence of a description adds to the reranker's logit, and the prompt's
missing terms: what an author can act on in the Skill tab, the Terms tab and `why`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.inference.rerank import (
    OnnxCrossEncoder,
    Reading,
    rerank_document,
    sentence_attribution,
    sentences,
)
from explorer.engine.route.relevance import missing_query_terms
from explorer.report import why_report
from explorer.terminal import render
from explorer.tui.widgets.skill_panel import attribution_text
from tests.engine.test_rerank import VOCAB, _encoder, _index
from tests.support.onnx_builders import build_tiny_cross_encoder

DESCRIPTION = "Merge pdf files. Extract tables from documents! Export csv data."


def test_sentences_split_where_the_author_ended_them() -> None:
    assert sentences(DESCRIPTION) == [
        "Merge pdf files.",
        "Extract tables from documents!",
        "Export csv data.",
    ]
    assert sentences("no full stop") == ["no full stop"]


def test_each_sentence_s_share_is_the_logit_lost_without_it(tmp_path: Path) -> None:
    encoder = _encoder(tmp_path)
    found = sentence_attribution(encoder, "merge pdf files", DESCRIPTION, "body")
    assert found is not None and len(found.sentences) == 3
    whole = encoder.score("merge pdf files", [rerank_document(DESCRIPTION, "body")])[0]
    assert found.logit == pytest.approx(float(whole))
    without_first = rerank_document("Extract tables from documents! Export csv data.", "body")
    first = float(whole - encoder.score("merge pdf files", [without_first])[0])
    assert found.sentences[0].text == "Merge pdf files."
    assert found.sentences[0].delta == pytest.approx(first)
    assert np.argmax([effect.delta for effect in found.sentences]) == 0  # the matching one
    assert found.read_chars is None  # a 512-piece window reads all of it
    assert {effect.reading for effect in found.sentences} == {Reading.WHOLE}
    assert sentence_attribution(None, "merge pdf files", DESCRIPTION, "") is None
    assert sentence_attribution(encoder, "  ", DESCRIPTION, "") is None


def test_a_sentence_past_the_cross_encoder_s_window_is_said_to_be_unread(tmp_path: Path) -> None:
    """A pair is cut to the model's window: words added at a long description's end never
    reach it, and leaving an earlier sentence out lets later text in, so the numbers need
    the window beside them."""
    model, tokenizer = build_tiny_cross_encoder(tmp_path, VOCAB)
    narrow = OnnxCrossEncoder(model, tokenizer, name="tiny-ce", max_length=12)
    found = sentence_attribution(narrow, "merge pdf files", DESCRIPTION, "body")
    assert found is not None
    readings = [effect.reading for effect in found.sentences]
    assert readings == [Reading.WHOLE, Reading.PART, Reading.UNREAD]
    assert found.read_chars == DESCRIPTION.index(" from")  # read up to "Extract tables"
    assert found.sentences[2].delta == 0.0  # leaving out what is not read changes nothing
    assert found.reranked and len(found.notes()) == 1
    assert (
        f"first {found.read_chars:,} of the description's {len(DESCRIPTION):,}" in found.notes()[0]
    )
    # Nothing cut, nothing said: a character the tokenizer drops is not a cut.
    assert narrow.read_chars("pdf", "Merge pdf.\u200b") is None
    shown = attribution_text("pdf", found).plain
    assert "unread  Export csv data." in shown
    assert "Extract tables from documents!  (the window ends inside it)" in shown
    assert "not a candidate" not in shown
    # A skill the decision did not rerank: the logit is what it would get, and says so.
    unranked = dataclasses.replace(found, reranked=False)
    assert "not a candidate for this prompt" in attribution_text("pdf", unranked).plain


def test_sentences_past_the_window_are_neither_scored_nor_listed_one_by_one(
    tmp_path: Path,
) -> None:
    """A 126,000-character description of 6,000 sentences cost 6,000 pairs (34 s) and as
    many lines in `why --skill`: only the sentences the model reads are scored, and three
    past the window are listed, the rest counted."""
    model, tokenizer = build_tiny_cross_encoder(tmp_path, VOCAB)
    narrow = OnnxCrossEncoder(model, tokenizer, name="tiny-ce", max_length=12)
    long = DESCRIPTION + " Export csv data." * 500
    pairs: list[int] = []
    score = narrow.score
    narrow.score = lambda prompt, documents: (
        pairs.append(len(documents)) or score(prompt, documents)
    )  # type: ignore[method-assign]
    found = sentence_attribution(narrow, "merge pdf files", long, "body")
    assert found is not None and len(found.sentences) == 503
    assert pairs == [3]  # the whole, and the two sentences the window reaches
    assert [e.reading for e in found.listed] == [Reading.WHOLE, Reading.PART, *[Reading.UNREAD] * 3]
    assert found.unlisted == 498
    assert attribution_text("pdf", found).plain.endswith("unread  … 498 more sentences past it\n")


def test_why_skill_prints_the_attribution(tmp_path: Path) -> None:
    from explorer.engine.route.pipeline import decide

    config = Config(preset="reference", recall_floor=0.1, min_similarity=0.2)
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    decision = decide("merge pdf files", index, config)
    text = "\n".join(render(block) for block in why_report(decision, index, skill="xlsx"))
    assert "reranker on xlsx: logit" in text
    assert "Spreadsheet formulas, clean csv data and workbook report." in text
    assert decision.row("xlsx").rerank is not None and "not a candidate" not in text
    # As the Skill tab says it: a skill the decision did not rerank shows the logit it
    # would get, and says so.
    aside = decide("docker images", index, config)
    assert aside.row("xlsx").rerank is None
    text = "\n".join(render(block) for block in why_report(aside, index, skill="xlsx"))
    assert "(not a candidate for this prompt: the logit it would get)" in text


def test_missing_terms_are_the_telling_ones_rarest_first(bow_index) -> None:  # type: ignore[no-untyped-def]
    prompt = "what can you help me with: a changelog of docker spreadsheets please"
    position = bow_index.positions["pdf"]
    explain = bow_index.lexical.explain(prompt, position)
    missing = missing_query_terms(explain)
    assert missing and not {"what", "help", "please", "can", "you"} & set(missing)
    idf = {term.term: term.idf for term in explain.terms}
    assert [idf[term] for term in missing] == sorted((idf[t] for t in missing), reverse=True)
