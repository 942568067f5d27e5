"""Parity of the token-level channels with the reference router (spec §2, §3.2, §6).

Each case is a behaviour read from the reference's source (skill-inject 0.9.0), cited by
file. The reference is AGPL: behaviour is restated here, nothing is copied.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from explorer.engine.author.lint import lint
from explorer.engine.inference.embed import BowEmbedder, fnv1a_32
from tests.parity.helpers import bow_library, route, row

FRONT = "---\nname: {name}\ndescription: {description}\n{extra}---\nBody.\n"


def skill(name: str, description: str, extra: str = "") -> str:
    return FRONT.format(name=name, description=description, extra=extra)


@pytest.mark.parametrize(
    ("keyword", "prompt"),
    [
        ("kubernetes", "my kubernetes pods keep crashing"),
        ("docs", "regenerate the docs for this module"),
        ("notes", "summarise my meeting notes"),
        ("actions", "why do my github actions fail"),
        ("workflows", "our workflows are slow"),
        ("chart", "make some charts from this"),  # reference: src/rank.rs test, plural prompt
        ("dependencies", "add a dependency"),  # reference: src/rank.rs test, plural keyword
    ],
)
def test_keywords_are_singularised_like_the_prompt(
    tmp_path: Path, keyword: str, prompt: str
) -> None:
    """reference: src/rank.rs keyword_score applies norm_token (src/text.rs) to each keyword
    as well as to the prompt tokens, so plural keywords and plural prompt words match."""
    index = bow_library(
        tmp_path,
        {"tool": skill("tool", "Helps with unrelated chores.", f"keywords: [{keyword}]\n")},
    )
    assert row(route(prompt, index), "tool").keyword == pytest.approx(0.15)


def test_name_tokens_are_singularised_too(tmp_path: Path) -> None:
    """reference: src/skill.rs adds the name's tokens to the keywords; src/rank.rs then
    normalises them like any keyword, so `meeting-notes` matches the prompt word `note`."""
    index = bow_library(tmp_path, {"meeting-notes": skill("meeting-notes", "Summaries.")})
    assert row(route("a note", index), "meeting-notes").keyword == pytest.approx(0.15)


def test_keywords_that_normalise_alike_each_count(tmp_path: Path) -> None:
    """reference: src/rank.rs counts every keyword entry that matches (no de-duplication
    after normalisation), so `chart` and `charts` both hit on "charts": 2 x 0.15."""
    index = bow_library(
        tmp_path,
        {"plots": skill("plots", "Draws things.", "keywords: [chart, charts]\n")},
    )
    assert row(route("draw charts", index), "plots").keyword == pytest.approx(0.30)


def test_a_keyword_equal_to_a_name_token_is_kept_once(tmp_path: Path) -> None:
    """reference: src/skill.rs appends a name token only when it is not already a keyword."""
    index = bow_library(tmp_path, {"pdf": skill("pdf", "Reads documents.", "keywords: [pdf]\n")})
    assert row(route("a pdf", index), "pdf").keyword == pytest.approx(0.15)


def test_multi_word_keywords_never_match(tmp_path: Path) -> None:
    """reference: src/rank.rs compares a whole keyword with single prompt tokens."""
    index = bow_library(
        tmp_path,
        {"sheets": skill("sheets", "Spreadsheets.", "keywords: [google sheets]\n")},
    )
    assert row(route("open google sheets", index), "sheets").keyword == pytest.approx(0.15)
    # 0.15 is the name token `sheets`; the two-word keyword added nothing


def test_bag_of_words_keeps_stopwords() -> None:
    """reference: src/embed/bow.rs hashes every token of `tokenize` (src/text.rs), stopwords
    included: FNV-1a 32 of the token, mod 256, counts, then L2-normalised."""
    text = "use the pdf for this"
    expected = np.zeros(256, dtype=np.float64)
    for token in ("use", "the", "pdf", "for", "this"):
        expected[fnv1a_32(token.encode()) % 256] += 1.0
    expected /= np.linalg.norm(expected)
    got = BowEmbedder().embed_query(text)
    assert np.allclose(got, expected, atol=1e-6)
    assert BowEmbedder().embed_documents([text])[0] == pytest.approx(got)


def test_bag_of_words_cache_identity_changed() -> None:
    """Vectors cached by the old stopword-free lane must not be reused."""
    assert BowEmbedder().identity != "bow-fnv1a32-256"


def test_lint_no_longer_calls_plural_keywords_dead(tmp_path: Path) -> None:
    """With keywords normalised (reference: src/rank.rs), `workflows` and `docs` match;
    only entries that are not one token stay dead."""
    root = tmp_path / "skills"
    good = (
        "Use when a GitHub Actions workflow fails, to read the logs and fix the YAML so "
        "the build goes green again."
    )
    (root / "ci-tools").mkdir(parents=True)
    (root / "ci-tools" / "SKILL.md").write_text(
        skill("ci-tools", good, "keywords: [workflows, docs, 'github ci', next.js]\n")
    )
    findings = [f for f in lint([root]) if f.rule.startswith("retrieval/dead")]
    messages = " ".join(f.message for f in findings)
    assert "'workflows'" not in messages and "'docs'" not in messages
    assert "'github ci'" in messages and "'next.js'" in messages
    assert not [f for f in findings if f.rule == "retrieval/dead-name-token"]  # tools -> tool
