"""What each sentence of a description adds to the reranker's logit, and the prompt's
missing terms: what an author can act on in the Skill tab, the Terms tab and `why`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.inference.rerank import rerank_document, sentence_attribution, sentences
from explorer.engine.route.relevance import missing_query_terms
from explorer.report import why_report
from explorer.terminal import render
from tests.engine.test_rerank import _encoder, _index

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
    assert found.sentences[0] == ("Merge pdf files.", pytest.approx(first))
    assert np.argmax([delta for _, delta in found.sentences]) == 0  # the matching one helps most
    assert sentence_attribution(None, "merge pdf files", DESCRIPTION, "") is None
    assert sentence_attribution(encoder, "  ", DESCRIPTION, "") is None


def test_why_skill_prints_the_attribution(tmp_path: Path) -> None:
    from explorer.engine.route.pipeline import decide

    config = Config(preset="reference", recall_floor=0.1, min_similarity=0.2)
    index = _index(tmp_path, _encoder(tmp_path / "m"), config)
    decision = decide("merge pdf files", index, config)
    text = "\n".join(render(block) for block in why_report(decision, index, skill="xlsx"))
    assert "reranker on xlsx: logit" in text
    assert "Spreadsheet formulas, clean csv data and workbook report." in text


def test_missing_terms_are_the_telling_ones_rarest_first(bow_index) -> None:  # type: ignore[no-untyped-def]
    prompt = "what can you help me with: a changelog of docker spreadsheets please"
    position = bow_index.positions["pdf"]
    explain = bow_index.lexical.explain(prompt, position)
    missing = missing_query_terms(explain)
    assert missing and not {"what", "help", "please", "can", "you"} & set(missing)
    idf = {term.term: term.idf for term in explain.terms}
    assert [idf[term] for term in missing] == sorted((idf[t] for t in missing), reverse=True)
