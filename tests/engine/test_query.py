"""The prompt is read once per decide(): every channel and the relevance model use the
parsed Query, so none can tokenise the prompt differently from the others."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import explorer.engine.base.text as text_module
import explorer.engine.route.query as query_module
import explorer.engine.route.relevance as relevance_module
from explorer.engine.base.config import Config
from explorer.engine.base.text import keyword_tokens, match_tokens
from explorer.engine.index.opening import open_engine, open_library
from explorer.engine.index.snapshot import Index
from explorer.engine.route.decision import Stage
from explorer.engine.route.pipeline import decide
from explorer.engine.route.query import PROMPT_READ_CHARS, Query, prompt_read
from tests.conftest import LIBRARY

PROMPT = "fill the forms in this pdf report.xlsx, without the linter 海报"


def _counting(calls: Counter[tuple[str, str]], name: str, original: Callable[..., Any]) -> Any:
    def counted(text: str, *args: Any) -> Any:
        calls[(name, text)] += 1
        return original(text, *args)

    return counted


def _count_readings(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """Count every tokenisation of a text, every negation scan and every Query parsed."""
    calls: Counter[tuple[str, str]] = Counter()
    tokenize = _counting(calls, "tokenize", text_module.tokenize)
    monkeypatch.setattr(text_module, "tokenize", tokenize)
    monkeypatch.setattr(query_module, "tokenize", tokenize)
    negated = _counting(calls, "negated", relevance_module.negated_terms)
    monkeypatch.setattr(relevance_module, "negated_terms", negated)
    monkeypatch.setattr(query_module, "negated_terms", negated)
    parse = _counting(calls, "parse", Query.parse)
    monkeypatch.setattr(Query, "parse", parse)
    return calls


def _assert_read_once(calls: Counter[tuple[str, str]], prompt: str) -> None:
    assert calls[("parse", prompt)] == 1
    assert calls[("tokenize", prompt)] == 1
    assert calls[("negated", prompt)] == 1


def test_stage_one_and_the_gates_read_the_prompt_once(
    bow_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_readings(monkeypatch)
    decision = decide(PROMPT, bow_index, Config(), tasks=False)
    assert decision.stage not in (Stage.BLANK, Stage.EMPTY)
    _assert_read_once(calls, PROMPT)


def test_the_relevance_model_reads_the_prompt_as_the_channels_did(
    make_library: Callable[[Mapping[str, str]], Path],
    warm_cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = Config()
    engine = open_engine(config, warm_cache_dir)
    index = open_library([make_library(LIBRARY)], config, engine=engine)
    prompt = "help me with my document, without the linter"
    calls = _count_readings(monkeypatch)
    decision = decide(prompt, index, config, tasks=False)
    assert decision.stage is Stage.RELEVANCE
    _assert_read_once(calls, prompt)


def test_the_query_holds_what_each_channel_read_on_its_own() -> None:
    query = Query.parse(PROMPT, context=["earlier: notes.docx"])
    assert list(query.match_tokens) == match_tokens(PROMPT)
    assert query.keyword_tokens == keyword_tokens(PROMPT)
    assert query.terms == tuple(dict.fromkeys(match_tokens(PROMPT)))
    assert "linter" in query.negated
    assert "海报" in query.script_tokens
    assert dict(query.families) == {"xlsx": "report.xlsx", "docx": "notes.docx"}
    assert not query.blank and Query.parse("  ").blank


def test_a_prompt_past_the_read_bound_is_read_at_its_two_ends(bow_index: Index) -> None:
    """A request before or after a pasted log is read; the megabytes between are not, and
    the decision keeps the whole prompt (routing.md §2.6)."""
    filler = "lorem ipsum dolor " * (PROMPT_READ_CHARS // 18)
    prompt = f"merge these pages\n{filler} xylophone {filler}\nthen fill the forms"
    assert len(prompt) > 2 * PROMPT_READ_CHARS
    read = prompt_read(prompt)
    assert len(read) == PROMPT_READ_CHARS + 1
    assert read.startswith("merge these pages") and read.endswith("fill the forms")
    decision = decide(prompt, bow_index, Config(), context=[prompt])
    assert decision.prompt == prompt
    assert {"merge", "page", "fill", "form"} <= set(decision.query_terms)
    assert "xylophone" not in decision.query_terms
    assert prompt_read(PROMPT) == PROMPT
