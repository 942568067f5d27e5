"""The ranking diff (explorer/engine/author/compare.py): moves, per-channel deltas and verdict
changes between two decisions, over the real model and a copy of sample_skills."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from explorer.engine.author.compare import Move, ranking_diff
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.models import Models
from explorer.engine.route.decision import Verdict
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS, write_skill

CONFIG = Config(preset="reference", reranker="off")


@pytest.fixture(scope="module")
def index(
    tmp_path_factory: pytest.TempPathFactory, minilm_models: Models, warm_cache_dir: Path
) -> Index:
    root = tmp_path_factory.mktemp("compare") / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    return build_index([root], CONFIG, minilm_models, EmbeddingCache(warm_cache_dir))


def test_two_prompts_diff_place_by_place_and_channel_by_channel(index: Index) -> None:
    base = decide("merge two pdf files into one", index, CONFIG)
    current = decide("put this table from budget.xlsx into a word report", index, CONFIG)
    diff = ranking_diff(base, current)
    assert len(diff.entries) == len(index)  # no depth: every skill, in the current order
    assert [entry.skill_id for entry in diff.entries] == [row.id for row in current.rows]
    base_place = {row.id: place for place, row in enumerate(base.rows, start=1)}
    for place, (entry, row) in enumerate(zip(diff.entries, current.rows, strict=True), start=1):
        old = base.row(row.id)
        assert entry.rank == place and entry.base_rank == base_place[row.id]
        assert entry.places == base_place[row.id] - place
        expected = Move.UP if entry.places > 0 else Move.DOWN if entry.places < 0 else Move.SAME
        assert entry.move is expected
        assert entry.hybrid.delta == pytest.approx(row.score - old.score)
        assert entry.cosine.delta == pytest.approx(row.cosine - old.cosine)
        assert entry.bm25.delta == pytest.approx(row.bm25 - old.bm25)
        boosts = row.keyword + row.phrase + row.file + row.project
        old_boosts = old.keyword + old.phrase + old.file + old.project
        assert entry.boosts.delta == pytest.approx(boosts - old_boosts)
        assert entry.rerank.delta is None  # no reranker loaded: no logit on either side
        assert (entry.base_verdict, entry.verdict) == (old.verdict, row.verdict)
    pdf = next(entry for entry in diff.entries if entry.skill_id == "pdf")
    assert pdf.base_verdict is Verdict.INJECT and pdf.verdict_changed
    assert pdf.move is Move.DOWN and pdf.move_text == f"↓{-pdf.places}"
    assert diff.base_injected == base.injected_ids and diff.injected == current.injected_ids
    assert not diff.same_injection


def test_with_a_depth_skills_that_enter_or_leave_the_top_are_new_or_gone(index: Index) -> None:
    base = decide("merge two pdf files into one", index, CONFIG)
    current = decide("my kubernetes pod keeps crashing", index, CONFIG)
    diff = ranking_diff(base, current, depth=5)
    assert base.rows.made <= 10 and current.rows.made <= 10  # rows stay lazy
    top_base = {row.id for row in base.rows[:5]}
    top_now = {row.id for row in current.rows[:5]}
    assert {e.skill_id for e in diff.entries if e.move is Move.NEW} == top_now - top_base
    assert {e.skill_id for e in diff.entries if e.move is Move.GONE} == top_base - top_now
    assert [e.skill_id for e in diff.entries[:5]] == [row.id for row in current.rows[:5]]
    gone = [e for e in diff.entries if e.move is Move.GONE]
    assert gone and all(e.rank is not None and e.rank > 5 for e in gone)
    assert all(
        e.move_text in ("new", "gone") for e in diff.entries if e.move in (Move.NEW, Move.GONE)
    )


def test_the_previous_snapshot_against_the_current_one(
    tmp_path: Path, minilm_models: Models
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    write_skill(root, "xlsx", "Spreadsheet formulas, pivot summaries and CSV cleanup.")
    write_skill(root, "docker", "Shrink Docker images and speed up container builds.")
    prompt = "merge the pdf invoices and total them in a spreadsheet"
    before = build_index([root], CONFIG, minilm_models)
    write_skill(root, "xlsx", "Totals and sums over invoices in spreadsheets; merges PDF totals.")
    shutil.rmtree(root / "docker")
    write_skill(root, "invoices", "Reads invoices and totals them.")
    after = build_index([root], CONFIG, minilm_models)
    diff = ranking_diff(decide(prompt, before, CONFIG), decide(prompt, after, CONFIG))
    moves = {entry.skill_id: entry for entry in diff.entries}
    assert moves["invoices"].move is Move.NEW and moves["invoices"].base_rank is None
    assert moves["invoices"].cosine.delta is None and moves["invoices"].cosine.current
    assert moves["docker"].move is Move.GONE and moves["docker"].rank is None
    assert diff.entries[-1].skill_id == "docker"  # gone ones after the current ranking
    assert moves["xlsx"].cosine.delta is not None and moves["xlsx"].cosine.delta > 0.05
    assert moves["pdf"].cosine.delta == pytest.approx(0.0, abs=1e-6)  # its text did not change


def test_the_compare_header_counts_no_more_places_than_the_library_has(index: Index) -> None:
    """The explorer diffs the top 25: in a smaller library its header said "top 25"."""
    from explorer.tui.compare import header_text

    base = decide("merge two pdf files into one", index, CONFIG)
    current = decide("my kubernetes pod keeps crashing", index, CONFIG)
    wide = ranking_diff(base, current, depth=len(index) + 20)
    assert f"top {len(index)}: " in header_text(wide, "pinned").plain
    assert "top 5: " in header_text(ranking_diff(base, current, depth=5), "pinned").plain
    # Moves counted by kind: the top now and those that left it are more rows than places.
    top3 = ranking_diff(base, current, depth=3)
    kinds = Counter(entry.move for entry in top3.entries)
    assert len(top3.entries) > 3 and kinds[Move.GONE] > 0
    moved = kinds[Move.UP] + kinds[Move.DOWN]
    counts = f"top 3: {moved} moved, {kinds[Move.NEW]} new, {kinds[Move.GONE]} left; "
    assert counts in header_text(top3, "pinned").plain


def test_under_the_relevance_model_the_diff_carries_p(warm_cache_dir: Path) -> None:
    """A skill whose p moved from 0.08 to 0.35 showed · in every column: under the default
    preset p decides, and no other column says it moved."""
    from explorer.engine.index.opening import open_engine, open_library
    from explorer.tui import compare

    config = Config()
    index = open_library([str(SAMPLE_SKILLS)], config, engine=open_engine(config, warm_cache_dir))
    base, now = "merge two pdf files", "merge two pdf files and put the totals in a spreadsheet"
    diff = ranking_diff(decide(base, index, config), decide(now, index, config))
    moved = [entry for entry in diff.entries if entry.p.delta]
    assert moved, "no p moved"
    for entry in moved:
        assert entry.p.base == decide(base, index, config).row(entry.skill_id).relevance
    columns = compare._columns(diff, wide=True, room=200)
    assert "Δp" in columns and list(columns).index("Δp") == list(columns).index("Δhybrid") + 1
    # The reference preset has no p: no column of blanks.
    reference = Config(preset="reference", reranker="off", model="bow")
    plain = open_library([str(SAMPLE_SKILLS)], reference)
    diff = ranking_diff(decide(base, plain, reference), decide(now, plain, reference))
    assert "Δp" not in compare._columns(diff, wide=True, room=200)
