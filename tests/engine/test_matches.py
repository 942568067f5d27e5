"""What matched, named (engine/route/matches.py): each boost's prompt term, typed, in the row and
the JSON, adding up exactly to the channel it fed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.route.decision import Decision
from explorer.engine.route.matches import Match, MatchKind
from explorer.engine.route.pipeline import decide
from tests.conftest import write_skill

REFERENCE = Config(preset="reference")


@pytest.fixture
def index(tmp_path: Path) -> Index:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Extract text from PDF files and merge PDF documents.")
    write_skill(
        root,
        "kubernetes-debugger",
        'Debug pods. Use when the user says "pod keeps crashing" or "kubectl logs".',
        keywords="[k8s]",
    )
    write_skill(root, "before-you-build", "A checklist to run through ahead of a new build.")
    return build_index([root], Config(), assemble_models(BowEmbedder()))


def _matches(decision: Decision, skill_id: str) -> tuple[Match, ...]:
    return decision.row(skill_id).matches


def _adds_up(decision: Decision) -> None:
    """Each channel is exactly the sum of its named matches: nothing unnamed, nothing extra."""
    for row in decision.rows:
        for kind, value in (
            (MatchKind.KEYWORD, row.keyword),
            (MatchKind.PHRASE, row.phrase),
            (MatchKind.FILE, row.file),
            (MatchKind.PROJECT, row.project),
        ):
            named = sum(match.boost for match in row.matches if match.kind is kind)
            assert named == pytest.approx(value), (row.id, kind, row.matches)


def test_keyword_phrase_and_file_hits_are_named(index: Index) -> None:
    decision = decide("my pod keeps crashing, kubectl logs on k8s", index, REFERENCE)
    labels = [match.label() for match in _matches(decision, "kubernetes-debugger")]
    assert labels == ['kw: "k8s" (keyword)', 'ph: "kubectl log"', 'ph: "pod keep crashing"']
    decision = decide("merge two report.pdf files", index, REFERENCE)
    assert [m.label() for m in _matches(decision, "pdf")] == [
        'kw: "pdf" (name)',
        "file: report.pdf → pdf",
    ]
    _adds_up(decision)


def test_a_stopword_in_a_name_is_named_and_the_guard_says_it_earned_nothing(
    index: Index,
) -> None:
    prompt = "can you help me"
    plain = decide(prompt, index, REFERENCE)
    [hit] = _matches(plain, "before-you-build")
    assert hit.label() == 'kw: "you" (name)' and hit.boost == pytest.approx(0.15)
    guarded = decide(prompt, index, REFERENCE.replace(keyword_generic_guard=True))
    [hit] = _matches(guarded, "before-you-build")
    assert hit.boost == 0.0 and "generic" in hit.note
    assert guarded.row("before-you-build").keyword == 0.0
    _adds_up(plain)
    _adds_up(guarded)


def test_the_json_carries_the_matches_and_no_score_moves(index: Index) -> None:
    prompt = "merge report.pdf, my pod keeps crashing"
    decision = decide(prompt, index, REFERENCE)
    rows = {row["id"]: row for row in json.loads(decision.to_json())["skills"]}
    assert rows["pdf"]["matches"][1] == {
        "kind": "file",
        "term": "report.pdf",
        "source": "pdf",
        "boost": pytest.approx(0.3),
        "note": "",
    }
    assert rows["before-you-build"]["matches"] == []
    for row in decision.rows:
        assert row.score == pytest.approx(
            row.cosine + row.keyword + row.phrase + row.file + row.project + row.bm25_fused
        )
