"""Spec §5.2 (BM25), §9.2 (library-wide statistics), §9.3 (indexed text), §9.4 (jaccard)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from explorer.engine.base.text import jaccard, match_tokens
from explorer.engine.discovery.skills import Skill, parse_skill
from explorer.engine.index.lexical import Explain, LexicalIndex, indexed_text_tokens
from tests.support.examples import examples

K1, B = 1.2, 0.75


def make_skill(name: str, description: str, extra: str = "", body: str = "") -> Skill:
    data = f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}".encode()
    skill = parse_skill(f"/lib/{name}/SKILL.md", data)
    assert isinstance(skill, Skill), skill
    return skill


def build(skills: list[Skill], include_name_keywords: bool = False) -> LexicalIndex:
    return LexicalIndex(
        [indexed_text_tokens(skill, include_name_keywords) for skill in skills],
        [skill.id for skill in skills],
    )


def sequential_sum(values: list[float]) -> float:
    """Left-to-right float addition (Python 3.12's sum() compensates; this never does)."""
    total = 0.0
    for value in values:
        total += value
    return total


def lucene_idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def bm25_term(tf: int, dl: int, avgdl: float, idf: float) -> float:
    return idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))


# A hand-computed three-document library ---------------------------------------------------
#   gif-maker   "Create GIF animations for Slack"               -> create gif animation slack (4)
#   pdf-tools   "Convert PDF files to images"                   -> convert pdf file image (4)
#   slack-post  "Post messages to Slack channels and Slack threads"
#                                          -> post message slack channel slack thread (6)
# N = 3, avgdl = 14/3, query "slack gif": df(slack) = 2, df(gif) = 1.

THREE = [
    ("gif-maker", "Create GIF animations for Slack"),
    ("pdf-tools", "Convert PDF files to images"),
    ("slack-post", "Post messages to Slack channels and Slack threads"),
]


@pytest.fixture
def three() -> tuple[list[Skill], LexicalIndex]:
    skills = [make_skill(name, description) for name, description in THREE]
    return skills, build(skills)


def test_three_doc_statistics(three: tuple[list[Skill], LexicalIndex]) -> None:
    _, index = three
    assert index.n == 3
    assert index.dl.tolist() == [4, 4, 6]
    assert index.avgdl == pytest.approx(14 / 3)
    assert index.df("slack") == 2 and index.df("gif") == 1 and index.df("absent") == 0
    # hand values of ln(1 + (N - df + 0.5) / (df + 0.5))
    assert index.idf("slack") == pytest.approx(math.log(1.6), rel=1e-12)
    assert index.idf("slack") == pytest.approx(0.47000362924573563, rel=1e-12)
    assert index.idf("gif") == pytest.approx(math.log(8 / 3), rel=1e-12)
    assert index.idf("absent") == pytest.approx(math.log(8.0), rel=1e-12)


def test_three_doc_scores_by_hand(three: tuple[list[Skill], LexicalIndex]) -> None:
    _, index = three
    scores = index.score("Slack GIF")
    assert scores.query_terms == ("slack", "gif")
    # gif-maker: tf 1 each, dl 4; weight = 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / (14/3)))
    assert scores.raw[0] == pytest.approx(1.5408845783975804, rel=1e-12)
    assert scores.raw[1] == 0.0
    # slack-post: slack tf 2, dl 6
    assert scores.raw[2] == pytest.approx(0.5981864372218454, rel=1e-12)
    # same figures from the formula written out independently
    avgdl = 14 / 3
    idf_slack, idf_gif = lucene_idf(3, 2), lucene_idf(3, 1)
    expected_0 = bm25_term(1, 4, avgdl, idf_slack) + bm25_term(1, 4, avgdl, idf_gif)
    assert scores.raw[0] == pytest.approx(expected_0, rel=1e-12)
    assert scores.raw[2] == pytest.approx(bm25_term(2, 6, avgdl, idf_slack), rel=1e-12)
    # normalised = raw / Σ idf of all query terms
    assert scores.idf_sum == pytest.approx(idf_slack + idf_gif, rel=1e-12)
    assert scores.normalised[0] == pytest.approx(1.0620689655172415, rel=1e-12)
    assert scores.normalised.tolist() == (scores.raw / scores.idf_sum).tolist()
    assert scores.matched_terms.tolist() == [2, 0, 1]


def test_query_terms_are_deduplicated_match_tokens(three: tuple[list[Skill], LexicalIndex]) -> None:
    _, index = three
    assert index.query_terms("the Slack slack SLACKS and gifs for me") == ("slack", "gif")
    once = index.score("slack gif")
    many = index.score("slack slack slacks gif gifs the and")
    assert once.raw.tolist() == many.raw.tolist()
    assert once.idf_sum == many.idf_sum


def test_unmatched_query_terms_lower_the_normalised_score_only(
    three: tuple[list[Skill], LexicalIndex],
) -> None:
    _, index = three
    base = index.score("slack gif")
    more = index.score("slack gif zebra")
    assert base.raw.tolist() == more.raw.tolist()
    assert more.idf_sum == pytest.approx(base.idf_sum + math.log(8.0))
    assert more.normalised[0] < base.normalised[0]


def test_empty_and_stopword_prompts(three: tuple[list[Skill], LexicalIndex]) -> None:
    _, index = three
    for prompt in ("", "the and of for", "!!!"):
        scores = index.score(prompt)
        assert scores.query_terms == ()
        assert scores.raw.tolist() == [0.0, 0.0, 0.0]
        assert scores.normalised.tolist() == [0.0, 0.0, 0.0]
        assert scores.jaccard.tolist() == [0.0, 0.0, 0.0]
        assert scores.idf_sum == 0.0
        explain = index.explain(prompt, 0)
        assert explain.terms == () and explain.score == 0.0 and explain.normalised == 0.0


def test_parameters_k1_and_b_are_used() -> None:
    docs = [["alpha", "beta"], ["alpha", "alpha", "gamma", "delta"]]
    default = LexicalIndex(docs, ["a", "b"])
    other = LexicalIndex(docs, ["a", "b"], k1=2.0, b=0.0)
    assert (default.k1, default.b) == (1.2, 0.75)
    # b = 0: no length normalisation; tf 2 with k1 = 2: 2 * 3 / (2 + 2)
    idf = lucene_idf(2, 2)
    assert other.score("alpha").raw[1] == pytest.approx(idf * 6 / 4)
    assert other.score("alpha").raw[0] == pytest.approx(idf * 3 / 3)
    assert default.score("alpha").raw[1] != other.score("alpha").raw[1]


def test_avgdl_is_at_least_one() -> None:
    index = LexicalIndex([[], [], ["solo"]], ["a", "b", "c"])
    assert index.avgdl == 1.0  # mean is 1/3
    assert index.score("solo").raw[2] == pytest.approx(
        bm25_term(1, 1, 1.0, lucene_idf(3, 1)), rel=1e-12
    )
    empty = LexicalIndex([], [])
    assert empty.n == 0 and empty.avgdl == 1.0
    assert empty.score("anything").raw.shape == (0,)


# explain ---------------------------------------------------------------------------------

EXPLAIN_PROMPTS = [
    "slack gif",
    "Post a GIF to the Slack channel please",
    "convert pdf files to images and post them to slack threads",
    "nothing matches here",
    "",
]


def check_explain(index: LexicalIndex, prompt: str, i: int) -> Explain:
    scores = index.score(prompt)
    explain = index.explain(prompt, i)
    assert explain.skill_id == index.ids[i]
    assert tuple(row.term for row in explain.terms) == scores.query_terms
    dl = int(index.dl[i])
    for row in explain.terms:
        assert row.n == index.n
        assert row.df == index.df(row.term)
        assert row.idf == index.idf(row.term)
        assert row.dl == dl
        assert row.avgdl == index.avgdl
        assert (row.k1, row.b) == (index.k1, index.b)
        assert row.matched is (row.tf > 0)
        if row.matched:
            assert row.contribution > 0
            expected = bm25_term(row.tf, dl, index.avgdl, row.idf)
            assert row.contribution == pytest.approx(expected, rel=1e-12)
        else:
            assert row.contribution == 0.0
    contributions = [row.contribution for row in explain.terms]
    assert sequential_sum(contributions) == scores.raw[i]  # exactly, not approximately
    assert explain.score == scores.raw[i]
    assert explain.normalised == scores.normalised[i]
    assert explain.matched == tuple(row.term for row in explain.terms if row.matched)
    assert explain.missing == tuple(row.term for row in explain.terms if not row.matched)
    assert len(explain.matched) == scores.matched_terms[i]
    return explain


@pytest.mark.parametrize("prompt", EXPLAIN_PROMPTS)
def test_explain_every_skill_sums_exactly_to_the_score(
    three: tuple[list[Skill], LexicalIndex], prompt: str
) -> None:
    _, index = three
    for i in range(index.n):  # ranked or not, matched or not
        check_explain(index, prompt, i)


def test_explain_rows_for_a_skill_that_matches_nothing(
    three: tuple[list[Skill], LexicalIndex],
) -> None:
    _, index = three
    explain = check_explain(index, "slack gif", 1)  # pdf-tools
    assert [(row.term, row.tf, row.df, row.matched) for row in explain.terms] == [
        ("slack", 0, 2, False),
        ("gif", 0, 1, False),
    ]
    assert explain.score == 0.0
    assert explain.matched == () and explain.missing == ("slack", "gif")


def test_explain_rows_by_hand(three: tuple[list[Skill], LexicalIndex]) -> None:
    _, index = three
    explain = check_explain(index, "slack gif", 2)  # slack-post
    slack, gif = explain.terms
    assert (slack.term, slack.tf, slack.df, slack.n, slack.dl) == ("slack", 2, 2, 3, 6)
    assert slack.avgdl == pytest.approx(14 / 3)
    assert slack.contribution == pytest.approx(0.5981864372218454, rel=1e-12)
    assert (gif.term, gif.tf, gif.df, gif.contribution) == ("gif", 0, 1, 0.0)
    assert type(slack.tf) is int and type(gif.tf) is int  # the Terms tab shows "2", not "2.0"


def test_matched_terms_and_jaccard_per_doc(three: tuple[list[Skill], LexicalIndex]) -> None:
    skills, index = three
    prompt = "post the slack gif in channels"
    scores = index.score(prompt)
    query = set(match_tokens(prompt))
    for i, skill in enumerate(skills):
        doc = set(match_tokens(skill.description))
        assert scores.matched_terms[i] == len(query & doc)
        assert scores.jaccard[i] == pytest.approx(jaccard(query, doc), rel=1e-12)
    # slack-post: {post, slack, channel} of {post, slack, gif, channel} | 5 doc terms -> 3/6
    assert scores.jaccard[2] == pytest.approx(3 / 6)
    assert scores.matched_terms.dtype == np.int32


# §9.2 statistics over the whole library ----------------------------------------------------


def test_idf_is_over_the_whole_library(three: tuple[list[Skill], LexicalIndex]) -> None:
    skills, index = three
    bigger = build([*skills, make_skill("weather", "Forecast rain and sunshine")])
    # an unrelated document changes N, hence every idf, and avgdl
    assert bigger.n == 4
    assert bigger.idf("slack") == pytest.approx(lucene_idf(4, 2))
    assert bigger.idf("slack") != index.idf("slack")
    assert bigger.avgdl == pytest.approx(17 / 4)  # weather adds forecast rain sunshine
    before = index.score("slack gif").raw
    after = bigger.score("slack gif").raw
    assert after[0] != before[0]
    assert after[3] == 0.0
    check_explain(bigger, "slack gif", 3)


def test_scores_do_not_depend_on_document_order(three: tuple[list[Skill], LexicalIndex]) -> None:
    skills, index = three
    reversed_index = build(skills[::-1])
    forward = index.score("slack gif channel").raw
    backward = reversed_index.score("slack gif channel").raw
    assert forward.tolist() == pytest.approx(backward[::-1].tolist(), rel=1e-12)


# §9.3 indexed text ------------------------------------------------------------------------


def test_indexed_text_is_the_description_by_default() -> None:
    skill = make_skill(
        "slack-gif-creator",
        "Make animated images for chat",
        extra="keywords: [Giphy, Memes]\n",
        body="# Slack GIF\nThe body mentions slack and gif many times: slack gif slack gif\n",
    )
    assert indexed_text_tokens(skill, False) == ["make", "animated", "image", "chat"]


def test_indexed_text_with_name_and_keywords() -> None:
    skill = make_skill(
        "slack-gif-creator",
        "Make animated images for chat",
        extra="keywords: [Giphy, Animated Memes]\n",
        body="secret body words",
    )
    tokens = indexed_text_tokens(skill, True)
    assert tokens[:4] == ["make", "animated", "image", "chat"]
    assert tokens[4:7] == ["slack", "gif", "creator"]  # the name, identifier-split
    assert {"giphy", "meme"} <= set(tokens[7:])  # keywords, as match tokens
    assert not {"secret", "body", "word"} & set(tokens)  # never the body


def test_name_keywords_change_the_index_only_when_enabled() -> None:
    skills = [
        make_skill("slack-gif-creator", "Make animated images for chat"),
        make_skill("pdf-tools", "Convert documents"),
    ]
    plain, rich = build(skills, False), build(skills, True)
    assert plain.score("slack gif").raw.tolist() == [0.0, 0.0]
    assert rich.score("slack gif").raw[0] > 0.0
    assert rich.dl[0] > plain.dl[0]
    check_explain(rich, "slack gif pdf", 0)
    check_explain(rich, "slack gif pdf", 1)


# property: explain always sums exactly to the vectorised score ----------------------------

VOCABULARY = [
    "slack", "gif", "pdf", "file", "files", "image", "images", "convert", "post", "channel",
    "query", "queries", "class", "classes", "series", "box", "boxes", "the", "and", "for",
    "data", "table", "chart", "deploy", "build", "test", "tests", "run", "merge", "split",
]  # fmt: skip


def random_text(rng: random.Random, max_words: int) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(0, max_words)))


def assert_explain_matches_score(descriptions: list[str], prompts: list[str]) -> None:
    skills = [make_skill(f"s{i}", desc or "x") for i, desc in enumerate(descriptions)]
    index = build(skills)
    for prompt in prompts:
        for i in range(index.n):
            check_explain(index, prompt, i)


@pytest.mark.parametrize("seed", range(25))
def test_explain_sums_exactly_on_seeded_random_corpora(seed: int) -> None:
    rng = random.Random(seed)
    descriptions = [random_text(rng, 40) for _ in range(rng.randint(1, 8))]
    prompts = [random_text(rng, 12) for _ in range(4)]
    assert_explain_matches_score(descriptions, prompts)


def test_explain_sums_exactly_hypothesis() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    words = st.lists(st.sampled_from(VOCABULARY), max_size=30).map(" ".join)

    @hypothesis.settings(max_examples=examples(150), deadline=None)
    @hypothesis.given(
        descriptions=st.lists(words, min_size=1, max_size=7),
        prompts=st.lists(words, min_size=1, max_size=3),
    )
    def property_holds(descriptions: list[str], prompts: list[str]) -> None:
        assert_explain_matches_score(descriptions, prompts)

    property_holds()


def test_a_remap_refuses_a_changed_position_that_a_kept_document_takes(
    three: tuple[list[Skill], LexicalIndex],
) -> None:
    """Its postings and the kept document's would both be summed into that position."""
    _, index = three
    keep_all = np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match="must not also take a kept document"):
        index.remapped(keep_all, 3, {1: ["pdf"]}, index.ids)
    dropped = keep_all.copy()
    dropped[1] = -1
    patched = index.remapped(dropped, 3, {1: ["pdf"]}, index.ids)
    assert patched.score("pdf").raw[1] > 0 == patched.score("pdf").raw[0]
