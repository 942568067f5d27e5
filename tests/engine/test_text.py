"""Spec §2 (text) and §1.4 (trigger phrases), example by example."""

from __future__ import annotations

import pytest

from explorer.engine.base.text import (
    STOPWORDS,
    content_tokens,
    jaccard,
    keyword_tokens,
    match_tokens,
    norm_token,
    quoted_spans,
    tokenize,
    trigger_phrases,
)

# §2.1 tokenize -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Set-up a NEW uv_project!", ["set", "up", "new", "uv", "project"]),  # the §2.1 example
        ("camelCaseWord", ["camelcaseword"]),  # camelCase is not split
        ("parseJSON2Yaml", ["parsejson2yaml"]),
        ("café au lait", ["caf", "au", "lait"]),  # non-ASCII ends a token
        ("naïve", ["na", "ve"]),
        ("日本語 text", ["text"]),
        ("a b c de", ["de"]),  # tokens shorter than 2 dropped
        ("x-y-zz", ["zz"]),
        ("path/to/file.pdf", ["path", "to", "file", "pdf"]),
        ("snake_case and kebab-case", ["snake", "case", "and", "kebab", "case"]),
        ("v2 42 x9", ["v2", "42", "x9"]),
        ("", []),
        ("   \t\n ", []),
        ("!!!???", []),
        ("UPPER lower MiXeD", ["upper", "lower", "mixed"]),
    ],
)
def test_tokenize(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


# §2.2 stopwords ------------------------------------------------------------------------

SPEC_STOPWORDS = (
    "the an of to for and or in on at is it be as by with from into me my we our you your "
    "this that these those use used when user users say says want wants ask asks do does "
    "not if so up out via are was will can a i"
).split()


def test_stopwords_are_exactly_the_53_of_the_spec() -> None:
    assert len(STOPWORDS) == 53
    assert len(SPEC_STOPWORDS) == 53
    assert set(SPEC_STOPWORDS) == STOPWORDS


@pytest.mark.parametrize("word", ["the", "a", "i", "via", "users", "asks", "will", "can"])
def test_stopword_members(word: str) -> None:
    assert word in STOPWORDS


@pytest.mark.parametrize("word", ["pdf", "file", "create", "skill", "slack", "test", "run"])
def test_domain_words_are_not_stopwords(word: str) -> None:
    assert word not in STOPWORDS


# §2.3 content_tokens -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Set-up a NEW uv_project!", ["set", "new", "uv", "project"]),
        ("the pdf and the pdf again", ["pdf", "pdf", "again"]),  # repeats kept
        ("zeta alpha zeta beta", ["zeta", "alpha", "zeta", "beta"]),  # order kept
        ("use this when you want to do it", []),  # all stopwords
        ("", []),
    ],
)
def test_content_tokens(text: str, expected: list[str]) -> None:
    assert content_tokens(text) == expected


# §2.4 norm_token -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        # rule 1: length <= 3 or not ending in s -> unchanged
        ("bus", "bus"),
        ("gas", "gas"),
        ("ids", "ids"),
        ("as", "as"),
        ("s", "s"),
        ("", ""),
        ("running", "running"),
        ("pdf", "pdf"),
        ("data", "data"),
        # rule 2: ss / us / is endings unchanged
        ("class", "class"),
        ("access", "access"),
        ("status", "status"),
        ("corpus", "corpus"),
        ("analysis", "analysis"),
        ("basis", "basis"),
        # rule 3: length > 4 and ending ies -> y
        ("flies", "fly"),
        ("queries", "query"),
        ("libraries", "library"),
        ("series", "sery"),  # quirk kept for parity
        ("pies", "pie"),  # length 4: not the ies rule, so the final s is dropped
        ("ties", "tie"),
        # rule 4: sses / ches / shes / xes / zes -> drop 2
        ("classes", "class"),
        ("matches", "match"),
        ("wishes", "wish"),
        ("boxes", "box"),
        ("quizzes", "quizz"),
        ("fixes", "fix"),
        # rule 5: else drop the final s
        ("pods", "pod"),
        ("uses", "use"),  # quirk kept for parity
        ("files", "file"),
        ("images", "image"),
        ("notes", "note"),
        ("skills", "skill"),
    ],
)
def test_norm_token(token: str, expected: str) -> None:
    assert norm_token(token) == expected


def test_norm_token_rules_apply_in_order() -> None:
    # "classes" ends in "es" and "sses": the ss/us/is check comes first but does not match,
    # the ies rule does not match, and the sses rule drops 2; a second pass is stable (ss).
    assert norm_token("classes") == "class"
    assert norm_token(norm_token("classes")) == "class"
    # "ies" at length > 4 wins over the plain drop-s rule
    assert norm_token("babies") == "baby"
    # "us" beats everything after it, even when "ies"-like letters precede it
    assert norm_token("iesus") == "iesus"


# §2.5 match_tokens and keyword_tokens ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Convert the PDF files into images", ["convert", "pdf", "file", "image"]),
        ("Run queries on the libraries", ["run", "query", "library"]),
        ("classes classes", ["class", "class"]),
        # 'uses' is not a stopword ('use' and 'used' are), so it survives, as 'use'
        ("it uses series", ["use", "sery"]),
        ("", []),
    ],
)
def test_match_tokens(text: str, expected: list[str]) -> None:
    assert match_tokens(text) == expected


def test_keyword_tokens_keeps_stopwords_and_normalises() -> None:
    assert keyword_tokens("Use the PDF files, please") == {"use", "the", "pdf", "file", "please"}
    assert keyword_tokens("I want a gif") == {"want", "gif"}  # 1-char tokens still dropped
    assert keyword_tokens("") == set()


# §9.4 jaccard --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ([], [], 0.0),  # two empty sets give 0.0, not 1.0
        (["a"], [], 0.0),
        ([], ["a"], 0.0),
        (["a", "b"], ["a", "b"], 1.0),
        (["a", "b"], ["b", "c"], 1 / 3),
        (["a", "a", "b"], ["a"], 1 / 2),  # sets, not bags
        (["x"], ["y"], 0.0),
    ],
)
def test_jaccard(left: list[str], right: list[str], expected: float) -> None:
    assert jaccard(left, right) == pytest.approx(expected)
    assert jaccard(right, left) == pytest.approx(expected)


def test_jaccard_accepts_iterators() -> None:
    assert jaccard(iter(["a", "b"]), (t for t in ["b"])) == 0.5


# §1.4 quoted spans and trigger phrases ---------------------------------------------------


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ('Use when the user says "make a gif"', ["make gif"]),
        ("Use for 'post to slack'", ["post slack"]),
        ("Triggers: \u201cbuild the docs site\u201d", ["build docs site"]),
        ("Triggers: \u2018deploy the app\u2019", ["deploy app"]),
        # apostrophes never open a span
        ("Don't use this. It's for pdfs", []),
        ("don't and it's and users' files", []),
        ("Don't forget 'run all tests' please", ["run all tests"]),
        ("It's handy: \"merge pdf files\" and can't fail", ["merge pdf files"]),
        # 2-10 content tokens only
        ('Say "gif" or "the gif"', []),  # one content token each
        ('"one two"', ["one two"]),
        ('"a1 a2 a3 a4 a5 a6 a7 a8 a9 b1"', ["a1 a2 a3 a4 a5 a6 a7 a8 a9 b1"]),  # 10
        ('"a1 a2 a3 a4 a5 a6 a7 a8 a9 b1 b2"', []),  # 11
        # stored as content tokens joined by spaces, lower-cased, stopwords gone
        ('"Create a NEW Slack-GIF for me"', ["create new slack gif"]),
        # unclosed quotes give nothing
        ('an "unclosed span here', []),
        ("", []),
        # several phrases, in order, de-duplicated
        ('"make gif" then "post slack" then "make gif"', ["make gif", "post slack"]),
    ],
)
def test_trigger_phrases(description: str, expected: list[str]) -> None:
    assert trigger_phrases(description) == expected


def test_apostrophe_inside_a_quoted_span_does_not_close_it() -> None:
    assert quoted_spans("'don't stop me now'") == ["don't stop me now"]
    # 'me' is a stopword and the 't' after the apostrophe is a 1-char token
    assert trigger_phrases("'don't stop me now'") == ["don stop now"]


def test_quoted_spans_straight_and_curly() -> None:
    text = (
        'Use when \u201cmake a gif\u201d or \u2018post to slack\u2019 or "run tests" '
        "don't it's 'deploy the app'"
    )
    assert quoted_spans(text) == ["make a gif", "post to slack", "run tests", "deploy the app"]


def test_straight_quote_after_alphanumeric_does_not_open() -> None:
    assert quoted_spans("x'abc def'") == []
    assert quoted_spans('x"abc def"') == []
    assert quoted_spans('("abc def")') == ["abc def"]


def test_straight_quote_closes_only_before_non_alphanumeric() -> None:
    # the quote in "it's" is skipped as a closer; the span runs to the next real closer
    assert quoted_spans("'it's a thing' ok") == ["it's a thing"]
