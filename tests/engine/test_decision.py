"""The decision's vocabulary: enums whose values are the schema's strings, and typed records."""

from __future__ import annotations

import json

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.route.decision import (
    SCHEMA,
    Band,
    Gate,
    GateName,
    InjectionMode,
    Row,
    Stage,
    Verdict,
)
from explorer.engine.route.pipeline import decide

# The strings hooks, CI scripts and the explorer read (schema skill-explorer/decision@1).
# Renaming a value is a schema change: bump SCHEMA and docs/cli.md's list with it.
SCHEMA_VALUES = {
    # "relevance" (and its gates and verdicts below): added, additive, the §9.12 stage
    Stage: {"blank", "empty", "lexical", "rerank", "cosine", "relevance"},
    GateName: {
        "keyword_guard",
        "confident_winner",
        "lexical_dominance",
        "recall_floor",
        "reranker",
        "agreement_floor",
        "rerank_min",
        "rerank_margin",
        "min_similarity",
        "score_margin",
        "force",
        "relevance",
        "second_skill",
        "tasks",  # additive: only a several-task prompt under the learned preset has it
        "invoked",
        "deny",
        "session_ledger",  # added (additive: old readers never see it without a ledger)
        "max_skills",
        "body_inject",
        "char_budget",
    },
    Verdict: {
        "inject",
        "blank_prompt",
        "empty",
        "lexical_dominance",
        "rerank_top_k",
        "agreement_floor",
        "rerank_min",
        "rerank_margin",
        "min_similarity",
        "score_margin",
        "relevance",
        "second_skill",
        "invoked",
        "deny",
        "session_ledger",  # added (additive: old readers never see it without a ledger)
        "max_skills",
        "char_budget",
    },
    Band: {"high", "medium", "low"},
    InjectionMode: {"description", "body"},
}


@pytest.mark.parametrize("enum", list(SCHEMA_VALUES), ids=lambda enum: enum.__name__)
def test_enum_values_are_the_schema_strings(enum: type) -> None:
    assert SCHEMA == "skill-explorer/decision@1"
    assert {member.value for member in enum} == SCHEMA_VALUES[enum]


def test_json_carries_plain_strings_from_the_vocabulary(bow_index: Index) -> None:
    decision = decide("merge two pdf files into one", bow_index, Config(max_skills=1))
    data = json.loads(decision.to_json())
    assert data["stage"] == decision.stage and type(data["stage"]) is str
    assert Stage(data["stage"]) is decision.stage
    assert [gate["name"] for gate in data["gates"]] == [gate.name for gate in decision.gates]
    assert {Verdict(row["verdict"]) for row in data["skills"]} == {
        row.verdict for row in decision.rows
    }
    assert data["injected"][0]["band"] in SCHEMA_VALUES[Band]
    assert data["injected"][0]["mode"] in SCHEMA_VALUES[InjectionMode]


def test_every_decision_field_is_typed(bow_index: Index) -> None:
    for prompt in ("merge two pdf files", "", "banana bread"):
        decision = decide(prompt, bow_index, Config())
        assert isinstance(decision.stage, Stage)
        assert all(isinstance(gate.name, GateName) for gate in decision.gates)
        assert all(isinstance(row.verdict, Verdict) for row in decision.rows)
        assert all(isinstance(item.band, Band) for item in decision.injected)


def test_gate_fields_are_named_never_positional() -> None:
    with pytest.raises(TypeError):
        Gate(GateName.DENY, "5.6", True, False)  # type: ignore[misc]
    gate = Gate(name=GateName.DENY, section="5.6", passed=True, skipped=True)
    assert gate.skipped and gate.inputs == {} and gate.note == ""


def test_rows_are_slotted(bow_index: Index) -> None:
    row = decide("merge pdf", bow_index, Config()).rows[0]
    assert isinstance(row, Row) and not hasattr(row, "__dict__")


def test_lazy_rows_put_the_injected_first_and_make_only_what_is_read() -> None:
    """Lazy rows: a denied skill between two injected ones moves below them, as
    the eager build ordered it; reading a screenful makes a screenful of Row objects."""
    from explorer.engine.index.snapshot import build_index
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.inference.models import assemble_models
    from explorer.engine.route.pipeline import decide
    from tests.conftest import SAMPLE_SKILLS
    from tests.engine.answers import eager_rows

    config = Config(
        reranker="off",
        preset="reference",
        min_similarity=0.0,
        score_margin=1.0,
        max_skills=3,
        lexical_min=0.0,
    )
    index = build_index([SAMPLE_SKILLS], config, assemble_models(BowEmbedder()))
    prompt = "merge two pdf files and write release notes from commits"
    second = decide(prompt, index, config).rows.ids[1]
    decision = decide(prompt, index, config.replace(deny=(second,)))
    assert len(decision.injected) == 3
    eager = eager_rows(decision)
    assert decision.rows[:4] == eager[:4]
    assert decision.rows.made == 4
    assert decision.rows.ids[3] == second == eager[3].id
    assert decision.row(second) == eager[3] and decision.rows.made == 4
    assert decision.rows.index_of(second) == 3
    assert decision.rows.column("rank").tolist() == [row.rank for row in eager]
    assert decision.rows == eager and decision.rows.made == len(eager)
