"""A flip's cause: the skill that took or lost the case, its gate and its number before →
after, read from two decisions of the same prompt (engine/qa/flips.py)."""

from __future__ import annotations

import pytest

from explorer.engine.base.config import Config
from explorer.engine.qa.cases import Case
from explorer.engine.qa.evaluate import evaluate
from explorer.engine.qa.flips import LOST, TOOK, flip_cause, flip_causes
from explorer.engine.route.pipeline import decide
from explorer.engine.route.reasons import SCORE

LOOSE = Config(min_similarity=0.05, preset="reference", max_skills=1)
STRICT = LOOSE.replace(min_similarity=0.9)
PROMPT = "merge two pdf files and fill forms"


def test_a_skill_that_lost_a_prompt_names_its_gate_and_numbers(bow_index) -> None:  # type: ignore[no-untyped-def]
    before, after = decide(PROMPT, bow_index, LOOSE), decide(PROMPT, bow_index, STRICT)
    assert before.injected_ids == ("pdf",) and after.injected_ids == ()
    (lost,) = flip_cause(before, after).shifts
    score = before.row("pdf").score
    assert (lost.skill, lost.role, lost.gate, lost.unit) == ("pdf", LOST, "min_similarity", SCORE)
    assert lost.before == lost.after == pytest.approx(score) and lost.bar == pytest.approx(0.9)
    assert lost.text() == (
        f"pdf lost it: min_similarity, hybrid {score:.3f} → {score:.3f} (bar 0.900)"
    )
    (took,) = flip_cause(after, before).shifts  # the other way round: it took it
    assert took.role == TOOK and took.gate == "min_similarity"


def test_only_flipped_cases_are_decided_again(bow_index) -> None:  # type: ignore[no-untyped-def]
    cases = [
        Case(PROMPT, ("pdf",), kind="direct"),
        Case("shrink my docker image", ("docker-helper",), kind="direct"),
    ]
    loose, strict = evaluate(cases, bow_index, LOOSE), evaluate(cases, bow_index, STRICT)
    causes = flip_causes(loose, strict, (bow_index, LOOSE), (bow_index, STRICT))
    pairs = zip(loose.results, strict.results, strict=True)
    assert set(causes) == {a.case.prompt for a, b in pairs if a.passed != b.passed}
    assert PROMPT in causes and causes[PROMPT].shifts[0].skill == "pdf"
    assert flip_causes(loose, loose, (bow_index, LOOSE), (bow_index, LOOSE)) == {}


def test_a_skill_added_for_one_task_names_that_task(bow_index) -> None:  # type: ignore[no-untyped-def]
    """Injected for one clause of a several-task prompt, a skill took the case at that
    clause's p: the cause says so, not only the whole prompt's p under its bar."""
    from explorer.engine.route.decision import TaskTrace

    before, after = decide(PROMPT, bow_index, STRICT), decide(PROMPT, bow_index, LOOSE)
    clause = "merge two pdf files and fill the forms of the tax office, all of them"
    after.tasks = (TaskTrace(clause, "pdf", 0.68, "", True, None),)
    (took,) = flip_cause(before, after).shifts
    assert took.role == TOOK
    assert took.text().endswith(
        "; now INJECT for the task 'merge two pdf files and fill the forms…' at p 0.68"
    )
    after.tasks = (TaskTrace(clause, "pdf", 0.68, "", False, None),)  # picked before it
    assert "for the task" not in flip_cause(before, after).text()
