"""engine/route/reasons.py: the deciding comparison of each skill, with its numbers, read off the
Decision (no scoring repeated), and said the same by `why` and the explorer."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.route.decision import Decision
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import (
    LOGIT,
    PROBABILITY,
    Reason,
    bar_text,
    reason,
    reasons,
    shown_against,
)
from explorer.report import reason_text, why_report

NUMBER = r"-?\d+\.\d+"


def test_below_the_floor_names_score_and_floor(bow_index) -> None:
    decision = decide(
        "merge two pdf files into one", bow_index, Config(min_similarity=0.3, preset="reference")
    )
    row = next(row for row in decision.rows if row.verdict == "min_similarity")
    why = reason(decision, row)
    assert why.text == f"{row.score:.3f} < floor 0.300"
    assert why.missing == pytest.approx(0.3 - row.score)
    assert why.delta_text() == f"+{0.3 - row.score:.3f}"


def test_a_comparison_never_prints_two_equal_numbers(bow_index) -> None:
    """A floor a hair above the score: "0.128 < 0.128" would read as false, so the reason
    takes the decimals it needs for the two numbers to differ."""
    prompt = "merge two pdf files into one"
    scores = decide(prompt, bow_index, Config(min_similarity=0.3, preset="reference")).rows
    below = next(row for row in scores if 0.01 < row.score < 0.3)
    floor = below.score + 0.0002
    decision = decide(prompt, bow_index, Config(min_similarity=floor, preset="reference"))
    why = reason(decision, decision.row(below.id))
    value, bar = (float(n) for n in re.findall(NUMBER, why.text))
    assert value < bar and why.text.startswith(f"{below.score:.4f} < floor")


def test_a_probability_is_never_rounded_onto_its_bar() -> None:
    """p 0.478 printed as "0.48" beside a bar of 0.48 would read as a pass."""
    assert shown_against(0.478, 0.48) == "0.478"
    assert shown_against(0.4801, 0.48) == "0.4801"
    assert shown_against(0.47999999, 0.48) == "0.47999999"
    assert shown_against(0.36, 0.48) == "0.36" and shown_against(0.48, 0.48) == "0.48"


def test_a_bar_reads_as_it_was_written() -> None:
    """A pinned bar of 0.999 printed "1.00" reads as one no probability can meet; a
    fitted bar keeps two decimals."""
    assert bar_text(0.999) == "0.999" and bar_text(0.9995) == "0.9995"
    assert bar_text(0.67) == "0.67" and bar_text(0.7833333) == "0.78"
    assert bar_text(0.44, 3) == "0.440"


def test_a_candidate_trails_only_on_gaps_its_digits_can_show() -> None:
    """A gap of -0.04 printed with one decimal reads "-0.0": it is left out, and with
    none left the row trails on nothing it can say."""
    import numpy as np

    from explorer.engine.route.decision import RelevanceTrace

    trace = RelevanceTrace(
        candidates=(0, 1),
        features=("cosine", "rerank", "bm25_lead"),
        values=np.zeros((2, 3)),
        contributions=np.array([[1.0, 2.0, 0.5], [0.96, 0.8, 0.5]]),
        bias=-6.0,
        probabilities=np.array([0.9, 0.2]),
        threshold=0.48,
        second_threshold=0.68,
        model="test",
    )
    assert trace.behind(1, 0) == "rerank -1.2"
    assert trace.behind(1, 0, count=1) == "rerank -1.2"
    close = np.array([[1.0, 0.5], [0.96, 0.49]])
    tied = dataclasses.replace(trace, features=("cosine", "rerank"), contributions=close)
    assert tied.behind(1, 0) == ""


def test_a_gap_is_never_rounded_to_nothing() -> None:
    """p 0.8295 under a bar of 0.83 misses by "+0.0005 p", not "+0.00 p"."""
    near = Reason("relevance", "p 0.8295 < 0.8300", 0.83 - 0.8295, PROBABILITY, 0.8295, 0.83)
    assert near.delta_text() == "+0.0005 p"
    assert Reason("relevance", "", 1e-7, PROBABILITY).delta_text() == "+0.0000001 p"
    # The bar it needs is printed so the skill's own number does not seem to meet it.
    floor = Reason("min_similarity", "0.0451 < 0.0454", 0.0454 - 0.0451, value=0.0451, bar=0.0454)
    assert floor.gap_text() == "missing +0.0003: needs hybrid ≥ 0.0454"
    assert Reason("relevance", "", 0.36, PROBABILITY).delta_text() == "+0.36 p"
    assert Reason("min_similarity", "", 0.0004).delta_text() == "+0.0004"
    assert Reason("relevance", "", 0.0, PROBABILITY).delta_text() == "+0.00 p"


def test_score_margin_names_the_cut_off_and_how_it_is_made(bow_index) -> None:
    config = Config(min_similarity=0.05, score_margin=0.01, max_skills=5, preset="reference")
    decision = decide("git commit history release notes", bow_index, config)
    row = next(row for row in decision.rows if row.verdict == "score_margin")
    top = decision.rows[0].score
    why = reason(decision, row)
    assert why.text == (f"{row.score:.3f} < cut-off {top - 0.01:.3f} = top {top:.3f} - 0.010")
    assert why.missing == pytest.approx(top - 0.01 - row.score)
    numbers = [float(n) for n in re.findall(NUMBER, why.text)]
    assert numbers[0] < numbers[1] and numbers[1] == pytest.approx(
        numbers[2] - numbers[3], abs=2e-3
    )


def test_gates_after_the_stage_say_what_they_dropped(bow_index) -> None:
    loose = Config(min_similarity=0.0, score_margin=10.0, max_skills=10)
    prompt = "git pdf xlsx docker changelog"
    denied = decide(prompt, bow_index, loose.replace(deny=["pdf"]))
    assert (
        reason(denied, denied.row("pdf")).text
        == "would be injected, but the config's deny list names it"
    )
    capped = decide(prompt, bow_index, loose.replace(max_skills=2))
    dropped = next(row for row in capped.rows if row.verdict == "max_skills")
    assert (
        reason(capped, dropped).text == "would be injected, but max_skills = 2 were already picked"
    )
    # Gap-to-win: what it takes to replace the weakest of the skills picked.
    weakest = min(capped.row(skill).score for skill in capped.injected_ids)
    assert reason(capped, dropped).missing == pytest.approx(weakest - dropped.score)
    assert reason(capped, dropped).gap_text().endswith(f"needs hybrid ≥ {weakest:.3f}")
    assert "deny list" in reason(denied, denied.row("pdf")).gap_text()
    injected = capped.row(capped.injected_ids[0])
    assert reason(capped, injected).gate == "inject"


def test_every_verdict_has_a_sentence(bow_index) -> None:
    for prompt in ("", "merge pdf", "/pdf merge", "unrelated words here"):
        decision = decide(prompt, bow_index, Config(min_similarity=0.2))
        for skill_id, why in reasons(decision).items():
            assert why.gate == decision.row(skill_id).verdict
            assert why.text and why.text != why.gate


def test_logit_gaps_say_their_unit() -> None:
    assert Reason("rerank_min", "x", 0.6, LOGIT).delta_text() == "+0.60 logit"
    assert Reason("inject", "x").delta_text() == ""


def test_why_prints_the_same_sentence(bow_index) -> None:
    decision = decide(
        "merge two pdf files into one", bow_index, Config(min_similarity=0.3, preset="reference")
    )
    text = "\n".join(b for b in why_report(decision, bow_index, top=3) if isinstance(b, str))
    for row in decision.rows[:3]:
        assert f"  {reason_text(decision, row)}" in text
        assert reason(decision, row).text in text


@pytest.fixture(scope="module")
def sample_default(warm_cache_dir: Path) -> Index:
    """sample_skills under the default preset and models: the relevance model decides."""
    from explorer.engine.index.opening import open_engine, open_library
    from tests.conftest import SAMPLE_SKILLS

    return open_library([SAMPLE_SKILLS], Config(), engine=open_engine(Config(), warm_cache_dir))


def _trailing(decision: Decision, skill: str, ahead: str) -> list[str]:
    """The two features on which `skill` trails `ahead` most, worked out from the trace."""
    from explorer.engine.route.relevance import FEATURE_LABELS

    trace, positions = decision.relevance, decision.channels.positions
    assert trace is not None and positions is not None
    mine, theirs = trace.at(positions[skill]), trace.at(positions[ahead])
    gaps = {
        FEATURE_LABELS[name]: float(trace.contributions[mine, i] - trace.contributions[theirs, i])
        for i, name in enumerate(trace.features)
    }
    worst = sorted(gaps, key=gaps.__getitem__)[:2]
    return [f"{label} {gaps[label]:+.1f}" for label in worst if gaps[label] < 0]


def test_a_skill_under_the_bar_says_where_it_trails_the_skill_ahead(sample_default: Index) -> None:
    """Its own largest contributions are what raised it; the reason names what the
    injected skill had more of (for a logistic model, the log-odds between the two)."""
    decision = decide("write release notes from the last 20 commits", sample_default, Config())
    assert decision.injected_ids == ("changelog-generator",)
    said = reason(decision, decision.row("git-commit-writer")).text
    gaps = _trailing(decision, "git-commit-writer", "changelog-generator")
    assert said == f"p 0.27 < 0.59: {', '.join(gaps)} vs changelog-generator"
    assert gaps[0].startswith("bm25 lead")  # the walk in docs/explorer.md says BM25 decides


def test_with_nothing_injected_the_closest_candidate_is_the_one_ahead(
    sample_default: Index,
) -> None:
    decision = decide("帮我写一个正则表达式来匹配邮箱地址", sample_default, Config())
    trace = decision.relevance
    assert decision.injected_ids == () and trace is not None
    best = decision.channels.ids[trace.candidates[int(trace.probabilities.argmax())]]
    assert best == "regex-builder"
    closest = reason(decision, decision.row(best)).text
    assert closest.endswith(
        f": closest: {trace.drivers(trace.at(decision.channels.positions[best]), 2, digits=1)}"
    )
    other = reason(decision, decision.row("translation-localizer")).text
    assert other.endswith(
        f": {', '.join(_trailing(decision, 'translation-localizer', best))} vs regex-builder"
    )
