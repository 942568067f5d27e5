"""eval: metrics on hand-computed small libraries, failure attribution, and compare."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import Models, assemble_models
from explorer.engine.qa.cases import Case, load_cases
from explorer.engine.qa.evaluate import (
    HOST_VALUE_PENALTY,
    NOT_IN_LIBRARY,
    CaseResult,
    Failure,
    compare,
    evaluate,
    injected_jaccard,
    passes,
    percentiles,
    rates,
)
from explorer.engine.route.decision import Stage, Verdict
from tests.conftest import SAMPLE_SKILLS, write_skill

LIBRARY = {
    "pdf": "Merge and split PDF files and extract tables from PDF pages.",
    "git-commit-writer": "Write git commit messages from the staged diff.",
    "changelog-generator": "Generate release notes and a changelog from git history.",
    # Two skills with one description: a prompt matching it ties them (broken by id, §3.6).
    "alpha-tool": "Convert photos into watercolour paintings.",
    "beta-tool": "Convert photos into watercolour paintings.",
}
# With bow (§6) and max_skills = 1, each outcome below was worked out from the scores.
CASES = (
    Case("merge and split pdf files", ("pdf",), "direct", line=1),  # pass, rank 1
    Case("convert photos into watercolour paintings", ("beta-tool",), "direct", line=2),
    # ^ fails: ties with alpha-tool, which wins on id; beta is rank 2, dropped by max_skills
    Case("make my page look nice", ("changelog-generator",), "indirect", line=3),
    # ^ fails: cosine 0, dropped by min_similarity; rank 4 (ties at 0 are broken by id)
    Case("banana bread recipe", (), "negative", line=4),  # pass: nothing scores
    Case("what year was the pdf format invented", (), "negative", line=5),  # false inject: pdf
    Case("release notes from git history", ("changelog-generator",), "confusable", line=6),
)
CONFIG = Config(preset="reference", model="bow", max_skills=1, rerank_top_k=3)


def build(root: Path, library: Mapping[str, str], models: Models | None = None) -> Index:
    for name, description in library.items():
        write_skill(root, name, description)
    return build_index([root], CONFIG, models or assemble_models(BowEmbedder()))


@pytest.fixture
def index(tmp_path: Path) -> Index:
    return build(tmp_path / "skills", LIBRARY)


def test_passes_and_rates_by_hand() -> None:
    cases = [
        Case("a", ("x",), "direct"),
        Case("b", ("x", "y"), "direct"),
        Case("c", ("z",), "indirect"),
        Case("d", (), "negative"),
        Case("e", (), "negative"),
    ]
    injected = [["x"], ["y", "w"], ["w"], [], ["w"]]
    assert [passes(case, chosen) for case, chosen in zip(cases, injected, strict=True)] == [
        True,
        True,
        False,
        True,
        False,
    ]
    result = rates(cases, injected)
    assert (result.positives, result.hits, result.negatives, result.false_injects) == (3, 2, 2, 1)
    assert result.recall == pytest.approx(2 / 3)
    assert result.false_inject_rate == pytest.approx(0.5)
    assert result.host_value == pytest.approx(2 / 3 - HOST_VALUE_PENALTY * 0.5)
    only_negatives = rates(cases[3:], injected[3:])
    assert only_negatives.recall is None and only_negatives.host_value is None
    only_positives = rates(cases[:1], injected[:1])
    assert only_positives.false_inject_rate is None and only_positives.host_value == 1.0


def test_metrics_of_a_small_library_match_the_hand_computed_values(index: Index) -> None:
    report = evaluate(CASES, index, CONFIG, label="tiny")
    assert [result.passed for result in report.results] == [True, False, False, True, False, True]
    r = report.rates
    assert (r.cases, r.positives, r.hits, r.negatives, r.false_injects) == (6, 4, 2, 2, 1)
    assert r.recall == 0.5 and r.false_inject_rate == 0.5
    assert r.host_value == pytest.approx(0.5 - 0.15 * 0.5)
    # stage-1: expected ranks 1, 2, 4, 1; k = rerank_top_k = 3
    assert [result.expected_rank for result in report.results if result.case.positive] == [
        1,
        2,
        4,
        1,
    ]
    assert report.k == 3 and report.recall_at_k == 0.75 and report.top1 == 0.5
    assert report.extra_injects == 1  # the watercolour case got alpha-tool instead
    assert {kind: (k.cases, k.passed) for kind, k in report.by_kind.items()} == {
        "direct": (2, 1),
        "indirect": (1, 0),
        "confusable": (1, 1),
        "negative": (2, 1),
    }
    assert report.thresholds == {"min_similarity": 0.30, "score_margin": 0.15}  # bow knee, §4
    assert report.skills == 5 and report.warnings == ()


def test_each_failure_names_the_stage_the_gate_and_the_runner_up(index: Index) -> None:
    report = evaluate(CASES, index, CONFIG)
    tie, vague, false_inject = (result.failure for result in report.failures)
    assert tie is not None and vague is not None and false_inject is not None
    assert (tie.reason, tie.stage, tie.gate, tie.expected, tie.expected_rank) == (
        "missed",
        "cosine",
        "max_skills",
        "beta-tool",
        2,
    )
    assert tie.injected == ("alpha-tool",) and tie.expected_score == pytest.approx(1.0)
    assert (vague.gate, vague.expected_rank, vague.injected) == ("min_similarity", 4, ())
    assert vague.runner_up == "git-commit-writer"  # the best-ranked other skill
    assert vague.runner_up_score is not None and vague.runner_up_score > 0
    assert (false_inject.reason, false_inject.gate, false_inject.injected) == (
        "false_inject",
        None,
        ("pdf",),
    )
    # The injected skill is the rival that took the case (with its score over the floor)
    assert false_inject.runner_up == "pdf" and false_inject.min_similarity == 0.30


def test_recall_at_k_follows_rerank_top_k(index: Index) -> None:
    for k, expected in ((1, 0.5), (2, 0.75), (4, 1.0)):
        report = evaluate(CASES, index, CONFIG.replace(rerank_top_k=k))
        assert report.recall_at_k == expected


def test_an_expected_id_missing_from_the_library_is_flagged(index: Index) -> None:
    report = evaluate([Case("merge pdf files", ("pfd",), "direct")], index, CONFIG)
    failure = report.results[0].failure
    assert failure is not None and failure.gate == NOT_IN_LIBRARY and failure.expected == "pfd"
    assert report.warnings == (
        "expected skill 'pfd' (did you mean 'pdf'?) is not in the library; a case that "
        "expects only it cannot pass",
    )
    # Where the cases file names it, when the cases came from one.
    typos = [Case("merge pdf files", ("pfd",), "direct", line=n) for n in (3, 9)]
    assert (
        evaluate(typos, index, CONFIG)
        .warnings[0]
        .startswith("expected skill 'pfd' (lines 3, 9) (did you mean 'pdf'?) is not in the library")
    )
    # A should-not-trigger case about a missing skill passes whatever is injected: said too.
    negative = Case("merge pdf files", (), "should-not-trigger", reject=("pfd",))
    (said,) = evaluate([negative], index, CONFIG).warnings
    assert said.startswith("rejected skill 'pfd' (did you mean 'pdf'?) is not in the library")


def test_timings_and_json(index: Index) -> None:
    report = evaluate(CASES, index, CONFIG)
    times = [result.ms for result in report.results]
    assert all(ms > 0 for ms in times)
    assert report.timings.total_ms == pytest.approx(sum(times))
    assert min(times) <= report.timings.median_ms <= report.timings.p95_ms <= max(times)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["schema"] == "skill-explorer/eval@1"
    assert data["metrics"]["recall"] == 0.5 and data["metrics"]["recall_at_k"] == 0.75
    assert data["cases"][1]["failure"]["gate"] == "max_skills"
    assert data["cases"][1]["line"] == 2 and data["by_kind"]["direct"]["passed"] == 1


def test_injected_jaccard() -> None:
    assert injected_jaccard([], []) == 1.0  # both silent: they agree
    assert injected_jaccard(["a"], []) == 0.0
    assert injected_jaccard(["a"], ["a", "b"]) == 0.5
    assert injected_jaccard(["a", "b"], ["b", "a"]) == 1.0


def test_compare_two_configs(index: Index) -> None:
    before = evaluate(CASES, index, CONFIG, label="max_skills=1")
    after = evaluate(CASES, index, CONFIG.replace(max_skills=2), label="max_skills=2")
    diff = compare(before, after)
    assert (diff.label_a, diff.label_b, diff.matched, diff.changed) == (
        "max_skills=1",
        "max_skills=2",
        6,
        1,
    )
    assert diff.metrics["recall"] == {"a": 0.5, "b": 0.75, "delta": 0.25}
    assert diff.metrics["false_inject_rate"]["delta"] == 0.0
    assert diff.by_kind["direct"] == {"a": 0.5, "b": 1.0, "delta": 0.5}
    assert diff.regressions == ()
    (fix,) = diff.fixes
    assert (fix.prompt, fix.injected_a, fix.injected_b) == (
        "convert photos into watercolour paintings",
        ("alpha-tool",),
        ("alpha-tool", "beta-tool"),
    )
    assert diff.jaccard == pytest.approx((5 + 0.5) / 6)
    reverse = compare(after, before)
    assert len(reverse.regressions) == 1 and reverse.metrics["recall"]["delta"] == -0.25
    assert json.loads(json.dumps(diff.to_dict()))["flipped"][0]["passed_b"] is True


def test_compare_two_libraries_pairs_cases_by_prompt(tmp_path: Path, index: Index) -> None:
    edited = dict(LIBRARY, pdf="Bake sourdough loaves at home.")  # pdf's description, edited
    other = build(tmp_path / "edited", edited)
    before = evaluate(CASES, index, CONFIG)
    after = evaluate(list(reversed(CASES)), other, CONFIG)
    diff = compare(before, after)
    assert diff.matched == 6
    assert {flip.prompt for flip in diff.regressions} == {"merge and split pdf files"}
    assert {flip.prompt for flip in diff.fixes} == {"what year was the pdf format invented"}
    # Only the name token's keyword boost (0.15, §3.2) is left for pdf: under the floor.
    assert diff.changed == 2
    assert diff.jaccard == pytest.approx(4 / 6)


def test_percentiles() -> None:
    assert percentiles([]) == {}
    named = percentiles([0.0, 1.0, 2.0, 3.0, 4.0])
    assert named == {
        "min": 0.0,
        "p10": 0.4,
        "p25": 1.0,
        "p50": 2.0,
        "p75": 3.0,
        "p90": 3.6,
        "max": 4.0,
    }


@pytest.mark.slow  # every sample case through MiniLM, several times: a quality check
def test_sample_library_planted_problems_hold_with_the_default_model(
    minilm_models: Models, warm_cache_dir: Path
) -> None:
    """sample_skills/README.md promises these outcomes with MiniLM; keep them true."""
    config = Config(preset="reference", reranker="off")
    index = build_index([SAMPLE_SKILLS], config, minilm_models, EmbeddingCache(warm_cache_dir))
    cases = load_cases(SAMPLE_SKILLS / "cases.toml").cases

    def results(skill: str, tuned: Config) -> list[bool]:
        chosen = [case for case in cases if skill in case.expect]
        return [result.passed for result in evaluate(chosen, index, tuned).results]

    # Only a lexical match rescues plaintext-accounting: rank 1 on cosine, yet under the knee.
    assert results("plaintext-accounting", config) == [False] * 4
    assert results("plaintext-accounting", config.replace(lexical_min=4.0)) == [True] * 4
    # Too vague to trigger, whatever the lexical path does.
    assert results("productivity-helper", config.replace(lexical_min=4.0)) == [False, False]
    report = evaluate(cases, index, config)
    assert report.recall_at_k is not None and report.recall_at_k >= 0.95  # the gates, not
    assert report.rates.recall is not None and report.rates.recall < 0.8  # retrieval, lose


@pytest.fixture(scope="module")
def sample_default(warm_cache_dir: Path) -> Index:
    """sample_skills under the default preset and models: the relevance model decides."""
    from explorer.engine.index.opening import open_engine, open_library

    return open_library([SAMPLE_SKILLS], Config(), engine=open_engine(Config(), warm_cache_dir))


def test_under_the_relevance_model_a_failure_shows_p_and_the_rival_strongest_by_p(
    sample_default: Index,
) -> None:
    """The number that decided is p: the expected skill's, and the rival's, which is the
    other skill the model found most probable (not the one first by hybrid score)."""
    from explorer.engine.route.pipeline import decide
    from explorer.qa_report import failure_table

    cases = [
        # Missed: p 0.28 < 0.58; changelog-generator is more probable than
        # api-docs-writer, which ranks above it by hybrid score.
        Case(
            "after we deployed the new version to staging the api containers restart over "
            "and over and the rollout never finishes",
            ("kubernetes-debugger",),
            "indirect",
            line=1,
        ),
        # Injects pdf: the rival is pdf, over the bar
        Case("when was the PDF format invented", (), "negative", line=2),
    ]
    report = evaluate(cases, sample_default, Config())
    assert [result.case.line for result in report.failures] == [1, 2]
    for result in report.failures:
        failure = result.failure
        assert failure is not None and failure.runner_up is not None
        decision = decide(result.case.prompt, sample_default, Config())
        trace = decision.relevance
        assert trace is not None
        others = {
            decision.channels.ids[position]: float(p)
            for position, p in zip(trace.candidates, trace.probabilities, strict=True)
        }
        for skill in result.case.expect:
            others.pop(skill, None)
        assert failure.runner_up == max(others, key=lambda skill: others[skill])
        assert failure.runner_up_probability == others[failure.runner_up]
        if result.case.expect:
            assert failure.expected_probability == decision.row("kubernetes-debugger").relevance
            ids = decision.channels.ids
            by_hybrid = (ids[int(i)] for i in decision.channels.hybrid_order)
            rival_by_rank = next(skill for skill in by_hybrid if skill not in result.case.expect)
            assert rival_by_rank != failure.runner_up  # the case the p order is for
    missed, taken = failure_table(report.failures, 0.48).rows
    assert missed[3] == f"p {report.failures[0].failure.expected_probability:.2f}"
    assert missed[6].endswith(f"p {report.failures[0].failure.runner_up_probability:.2f}")
    # The false injection's strongest other skill is the injected one, named beside it.
    assert taken[5] == "injected pdf" and taken[6].startswith("the injected one, p ")


def test_a_rival_a_clause_injected_shows_the_clause_s_p(sample_default: Index) -> None:
    """A two-task prompt: the chart clause's own p injected data-chart-maker (0.92) while the
    whole prompt's p for it is 0.17. The best rival column shows the p that decided, and
    the clause it was for, not the whole prompt's p under the bar."""
    from explorer.engine.route.pipeline import decide
    from explorer.qa_report import failure_table

    prompt = "Tell me a joke about lawyers; then make a chart of sales by month from sales.xlsx"
    report = evaluate([Case(prompt, ("xlsx",), "direct", line=1)], sample_default, Config())
    (result,) = report.failures
    failure = result.failure
    assert failure is not None and failure.runner_up == "data-chart-maker"
    task = decide(prompt, sample_default, Config()).task_for("data-chart-maker")
    assert task is not None and failure.runner_up_clause == task.clause
    assert failure.runner_up_probability == task.p > 0.5
    (row,) = failure_table(report.failures, 0.59).rows
    assert row[6] == f'the injected one, p {task.p:.2f} for "then make a chart of sales by…"'


def test_a_task_s_pick_past_max_skills_says_its_task_not_a_p_gap(sample_default: Index) -> None:
    """A task's pick capped by max_skills read "missing +0.00 p: needs p ≥ 0.17", the whole
    prompt's p of a pick a task had made: picks are kept in order, the whole prompt's
    first, so no p of its own would have kept it."""
    from explorer.engine.route.pipeline import decide
    from explorer.engine.route.reasons import reason

    prompt = "Merge the two report.pdf files into one; then make a chart of sales by month"
    decision = decide(prompt, sample_default, Config(max_skills=1))
    task = decision.task_for("data-chart-maker")
    assert decision.injected_ids == ("pdf",) and task is not None
    said = reason(decision, decision.row("data-chart-maker"))
    assert said.text == (
        f"would be injected for the task 'then make a chart of sales by month' (p {task.p:.2f}), "
        "but max_skills = 1 were already picked"
    )
    assert said.needs == (
        "needs max_skills above 1 (the whole prompt's picks come first, then each task's in "
        "its order)"
    )


def _missed(stage: Stage, gate: Verdict, **numbers: float) -> CaseResult:
    """A case that expected `alpha` and got nothing, with `beta` its rival."""
    failure = Failure(
        reason="missed",
        stage=stage,
        gate=gate,
        expected="alpha",
        expected_rank=1,
        expected_score=0.5,
        expected_cosine=0.5,
        injected=(),
        runner_up="beta",
        runner_up_score=0.4,
        min_similarity=0.44,
        **numbers,  # type: ignore[arg-type]
    )
    case = Case("a prompt", ("alpha",), "direct", line=7)
    return CaseResult(case, (), False, stage, 1, "alpha", (), failure, 1.0)


def test_the_failure_table_never_rounds_p_onto_the_bar() -> None:
    from explorer.qa_report import failure_table

    result = _missed(
        Stage.RELEVANCE, Verdict.RELEVANCE, expected_probability=0.478, runner_up_probability=0.2
    )
    row = failure_table([result], 0.48).rows[0]
    assert (row[3], row[6]) == ("p 0.478", "beta p 0.20")


def test_the_failure_table_names_the_number_that_decided() -> None:
    """Under the cascade the hybrid score decides: its cells say so, as p's do, under a
    header that names neither (a "score" header above "p 0.36" read as a score)."""
    from explorer.qa_report import failure_table

    result = _missed(Stage.COSINE, Verdict.AGREEMENT_FLOOR)
    fitted = failure_table([result])
    assert fitted.headers[3] == "deciding"
    assert (fitted.rows[0][3], fitted.rows[0][6]) == ("hybrid 0.500", "beta hybrid 0.400")


def test_the_rival_is_the_skill_the_lexical_fast_path_injected() -> None:
    """Whatever stage chose it, the skill that took the case is its strongest rival: under
    the fast path BM25 decides, so the first by hybrid score is not the one that won."""
    from explorer.engine.index.opening import open_library

    config = Config(
        model="bow", reranker="off", preset="reference", lexical_min=0.2, lexical_margin=0.0
    )
    index = open_library([str(SAMPLE_SKILLS)], config)
    prompt = "write me a poem about spreadsheets"  # react-component-builder first by hybrid
    report = evaluate([Case(prompt, (), "negative")], index, config)
    (result,) = report.failures
    assert result.stage == "lexical" and result.injected == ("xlsx",)
    assert result.failure is not None and result.failure.runner_up == "xlsx"
