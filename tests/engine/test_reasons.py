"""engine/route/reasons.py: the deciding comparison of each skill, with its numbers, read off the
Decision (no scoring repeated), and said the same by `why` and the explorer."""

from __future__ import annotations

import re

import pytest

from explorer.engine.base.config import Config
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import LOGIT, Reason, reason, reasons
from explorer.report import reason_line, why_report

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
    assert "deny list" in reason(denied, denied.row("pdf")).text
    capped = decide(prompt, bow_index, loose.replace(max_skills=2))
    dropped = next(row for row in capped.rows if row.verdict == "max_skills")
    assert reason(capped, dropped).text == "passed, but max_skills = 2 were already picked"
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
        assert reason_line(decision, row) in text
        assert reason(decision, row).text in text
