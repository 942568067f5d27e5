"""Lint's near-duplicate pass at scale: blocked, the same pairs as all pairs, and
the same findings with the memo the explorer keeps between saves."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.bench.synthetic import synthetic_descriptions
from explorer.engine.author import lint as lint_module
from explorer.engine.author.lint import NEAR_DUPLICATE_BM25, near_duplicate_pairs
from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Discovery, discover, parse_skill
from explorer.engine.index import rows as rows_module
from explorer.engine.index.lexical import CrossScorer
from explorer.engine.index.snapshot import Index, index_skills
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import write_skill


def _library(tmp_path, size: int) -> Index:  # type: ignore[no-untyped-def]
    ids, descriptions = synthetic_descriptions(size - 60, seed=3)
    rng = random.Random(3)
    for number in range(60):  # planted near-duplicates: a copy with a word or two changed
        source = rng.randrange(len(descriptions))
        words = descriptions[source].split()
        words[rng.randrange(len(words))] = rng.choice(["quickly", "safely", "locally"])
        ids.append(f"copy-{number}")
        descriptions.append(" ".join(words))
    skills = []
    for skill_id, description in zip(ids, descriptions, strict=True):
        text = f'---\nname: {skill_id}\ndescription: "{description}"\n---\n# {skill_id}\n'
        skill = parse_skill(str(tmp_path / skill_id / "SKILL.md"), text.encode())
        assert not isinstance(skill, lint_module.Problem), skill
        skills.append(skill)
    return index_skills(
        Discovery(tuple(skills), ()), [str(tmp_path)], Config(), assemble_models(BowEmbedder())
    )


def _all_pairs(index: Index, threshold: float) -> set[tuple[int, int]]:
    """The O(n^2) reference: full cross-score and cosine matrices."""
    n = len(index)
    cross = np.stack([index.lexical.score(s.description).normalised for s in index.skills])
    assert index.vectors is not None
    vectors = np.asarray(index.vectors)
    cosine = vectors @ vectors.T
    both = np.minimum(cross, cross.T)
    hits = (cosine >= threshold) | (both >= NEAR_DUPLICATE_BM25)
    return {(i, j) for i, j in zip(*np.nonzero(np.triu(hits, 1)), strict=True) if i < j < n}


@pytest.mark.parametrize("size", [600, pytest.param(2300, marks=pytest.mark.slow)])
def test_blocked_near_duplicates_match_all_pairs(tmp_path, monkeypatch, size: int) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(lint_module, "BLOCK_ROWS", 97)  # blocks that do not divide n
    monkeypatch.setattr(rows_module, "BLOCK_ROWS", 128)  # the vectors' own blocks: several
    index = _library(tmp_path, size)
    assert index.vectors is not None and len(index.vectors.blocks) > 1
    threshold = 0.85
    expected = _all_pairs(index, threshold)
    found = {(i, j) for i, j, *_ in near_duplicate_pairs(index, threshold=threshold)}
    assert len(expected) >= 50  # the planted copies, at least
    recall = len(found & expected) / len(expected)
    assert recall >= 0.99, (recall, sorted(expected - found)[:5])
    assert len(found - expected) <= 0.01 * len(expected)


@pytest.mark.slow
def test_capped_findings_still_flag_every_skill_with_a_near_duplicate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The per-skill cap drops messages, never skills: every skill in an all-pairs pair has
    a near-duplicate warning, and none has more than the cap (1 here) + one summary."""
    index = _library(tmp_path, 600)
    expected = _all_pairs(index, 0.85)
    in_pairs = {index.skills[k].path for pair in expected for k in pair}
    findings = _near_duplicate_findings(index, threshold=0.85, shown=1)
    warned = {f.path for f in findings if f.severity == lint_module.WARNING}
    assert len(in_pairs & warned) >= 0.99 * len(in_pairs)
    assert len(warned - in_pairs) <= 0.01 * len(in_pairs)
    per_path: dict[str, int] = {}
    for finding in findings:
        per_path[finding.path] = per_path.get(finding.path, 0) + 1
    assert max(per_path.values()) == 2  # some skill has more than one partner here


@pytest.mark.parametrize("bar", [0.3, 0.5])
def test_cross_scores_are_full_scorings_hits(tmp_path, bar: float) -> None:  # type: ignore[no-untyped-def]
    """Lint's cross-scores are `LexicalIndex.score`'s values, not approximations, though
    the scorer adds the common terms only where a document could still reach the bar:
    the same documents at or over the bar, plus those asked for, with the same scores
    but for rounding."""
    index = _library(tmp_path, 400)
    scorer = CrossScorer(index.lexical)
    rng = np.random.default_rng(1)
    common_seen = 0
    for skill in index.skills[::3]:
        terms = tuple(dict.fromkeys(skill.description_tokens))
        full = index.lexical.score(skill.description)
        assert terms == full.query_terms
        common_seen += sum(index.lexical.df(term) > scorer._common for term in terms)
        also = np.unique(rng.integers(0, len(index), 5))
        docs, scores = scorer.hits(terms, bar, also)
        expected = np.union1d(np.flatnonzero(full.normalised >= bar), also)
        assert np.array_equal(docs, expected)
        assert np.allclose(scores, full.normalised[docs], rtol=1e-12, atol=0)
    assert common_seen > 50  # the path that adds the common terms last was taken


def _near_duplicate_findings(
    index: Index, *, threshold: float, shown: int
) -> list[lint_module.Finding]:
    near = lint_module.NearDuplicates(index, threshold=threshold, shown=shown)
    return [finding for position in range(len(index)) for finding in near.of(position)]


def _lint_key(findings: list[lint_module.Finding]) -> list[tuple[object, ...]]:
    return [(f.rule, f.severity, f.path, f.message, f.line) for f in findings]


# Lints twice over edits; test_the_memo_is_nothing_the_collector_walks keeps the memo in the
# default run.
@pytest.mark.slow
def test_a_lint_with_a_memo_equals_a_lint_from_nothing_after_edits(tmp_path: Path) -> None:
    """The explorer lints after every save with the last run's memo: after edits, renames,
    copies (two skills with one description), removals and additions, its findings are
    those of a lint without one."""
    rng = random.Random(7)
    ids, descriptions = synthetic_descriptions(120, seed=9)
    for skill_id, description in zip(ids, descriptions, strict=True):
        write_skill(tmp_path, skill_id, description)
    for number in range(15):  # near-duplicates from the start
        write_skill(tmp_path, f"copy-{number}", descriptions[number * 7] + " Quickly.")
    models = assemble_models(BowEmbedder())
    config = Config()
    memo = lint_module.LintMemo()

    def check() -> None:
        found = discover([tmp_path])
        index = index_skills(found, [tmp_path], config, models)
        with_memo = lint_module.lint([tmp_path], index=index, config=config, memo=memo)
        alone = lint_module.lint([tmp_path], index=index, config=config)
        assert _lint_key(with_memo) == _lint_key(alone)
        assert any(f.rule == "retrieval/near-duplicate" for f in alone)

    check()
    for step in range(12):
        directories = sorted(path for path in tmp_path.iterdir() if path.is_dir())
        kind = step % 4
        target = rng.choice(directories)
        if kind == 0:  # an edited description
            write_skill(tmp_path, target.name, descriptions[rng.randrange(120)] + " Edited.")
        elif kind == 1:  # a copy of another's description, word for word
            write_skill(tmp_path, target.name, descriptions[rng.randrange(120)])
        elif kind == 2:  # a skill gone
            shutil.rmtree(target)
        else:  # a new one
            write_skill(tmp_path, f"new-{step}", descriptions[rng.randrange(120)] + " New.")
        check()


def test_the_memo_is_nothing_the_collector_walks(tmp_path: Path) -> None:
    """What the memo keeps of each file's findings between two lints is plain tuples:
    after a collection or two the collector no longer tracks them, so a full collection
    on the explorer's event loop does not walk 26,000 skills' findings."""
    import gc

    ids, descriptions = synthetic_descriptions(40, seed=5)
    for skill_id, description in zip(ids, descriptions, strict=True):
        write_skill(tmp_path, skill_id, description + " Use when")
    config, memo = Config(), lint_module.LintMemo()
    index = index_skills(discover([tmp_path]), [tmp_path], config, assemble_models(BowEmbedder()))
    first = lint_module.lint([tmp_path], index=index, config=config, memo=memo)
    assert first
    for _ in range(3):  # tuples of tuples of tuples: the innermost first, then outwards
        gc.collect()
    kept = memo._skills
    assert len(kept) == len(ids) and any(rows for _hash, rows in kept.values())
    assert not any(gc.is_tracked(row) for _hash, rows in kept.values() for row in rows)
    assert not any(gc.is_tracked(entry) for entry in kept.values())
    again = lint_module.lint([tmp_path], index=index, config=config, memo=memo)
    assert _lint_key(again) == _lint_key(first)  # and what comes back out is the same


def test_each_skill_names_its_closest_partners_and_counts_the_rest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = _library(tmp_path, 300)
    partners: dict[int, list[tuple[float, int]]] = {}
    for i, j, dense, forward, backward in near_duplicate_pairs(index, threshold=0.6):
        close = dense if dense is not None else min(forward, backward)
        partners.setdefault(i, []).append((-close, j))
        partners.setdefault(j, []).append((-close, i))
    assert any(len(found) > 2 for found in partners.values())
    findings = _near_duplicate_findings(index, threshold=0.6, shown=2)
    for k, found in partners.items():
        skill = index.skills[k]
        found.sort()
        own = [f for f in findings if f.path == skill.path]
        named = [f.message for f in own if f.severity == lint_module.WARNING]
        assert len(named) == min(2, len(found))
        for message, (_, j) in zip(named, found, strict=False):
            assert index.skills[j].id in message and skill.id in message
        counted = [f.message for f in own if f.severity == lint_module.INFO]
        if len(found) > 2:
            (line,) = counted
            assert f"has {len(found) - 2} more near-duplicate" in line
            examples = line.split("e.g. ")[1].split(", ")
            assert examples == [index.skills[j].id for _, j in found[2:5]]
        else:
            assert counted == []


def _tangled_paths(root: Path) -> None:
    """Skills whose paths order differently by text and by folder ("a-b" < "a.c" < "a/b"),
    near-duplicates of each other, and a file no parser accepts."""
    description = "Merge and split PDF files and extract their tables. Use when PDFs come up."
    for folder in ("a", "a/b", "a-b", "a b", "A", "a/b/c"):
        write_skill(root / Path(folder).parent, Path(folder).name, description)
    (root / "a.c").mkdir()
    (root / "a.c" / "SKILL.md").write_text("no frontmatter\n", encoding="utf-8")


def test_lint_files_gives_each_path_once_with_lints_order(tmp_path: Path) -> None:
    """Each path comes once, in the order of text, with its findings sorted as lint sorts
    every finding: rejected files, the library's own findings and every skill's."""
    _tangled_paths(tmp_path)
    files = list(lint_module.lint_files([tmp_path], context_tokens=200))
    paths = [path for path, _ in files]
    assert paths == sorted(set(paths))
    assert all(finding.path == path for path, found in files for finding in found)
    every = [finding for _, found in files for finding in found]
    assert every == sorted(every, key=lambda f: (f.path, f.line or 0, f.rule, f.message))
    assert {f.rule for f in every} >= {
        "parse/rejected",
        "claude-code/listing-budget",  # at the library's path
        "claude-code/name-only",
        "retrieval/near-duplicate",
    }
    assert _lint_key(lint_module.lint([tmp_path], context_tokens=200)) == _lint_key(every)


def test_a_lint_read_in_part_leaves_the_memo_as_it_was(tmp_path: Path) -> None:
    """The memo takes a run's findings once its last file is read: a run stopped part way
    (the explorer stops the cases for a newer save, never lint, but a caller may) leaves
    the last whole run's, and the next lint with the memo is still exact."""
    _tangled_paths(tmp_path)
    config, memo = Config(), lint_module.LintMemo()
    index = index_skills(discover([tmp_path]), [tmp_path], config, assemble_models(BowEmbedder()))
    alone = _lint_key(lint_module.lint([tmp_path], index=index, config=config))
    files = lint_module.lint_files([tmp_path], index=index, config=config, memo=memo)
    for _ in range(3):  # the library's own findings, then two skills'
        next(files)
    files.close()
    assert memo._skills == {}
    assert _lint_key(lint_module.lint([tmp_path], index=index, config=config, memo=memo)) == alone
    assert len(memo._skills) == len(index)


def test_lint_passes_a_checkpoint_between_short_steps(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A caller's pause (the explorer's: give way to the event loop) is called inside each
    loop of lint over the library, so no loop holds the GIL from start to end: at least
    once per skill in the cross-scorer pass alone, and per skill in the whole lint for each
    of the own-findings, near-duplicate and listing passes. Outside `yielding`, nothing."""
    from explorer.engine.base.turns import yielding

    index = _library(tmp_path, 200)
    calls: list[None] = []
    with yielding(lambda: calls.append(None)):
        lint_module.near_duplicate_arrays(index, threshold=0.85)
    assert len(calls) >= len(index)
    calls.clear()
    with yielding(lambda: calls.append(None)):
        lint_module.lint([str(tmp_path)], index=index)
    assert len(calls) >= 3 * len(index)
    calls.clear()
    lint_module.near_duplicate_arrays(index, threshold=0.85)
    assert calls == []


def test_lints_passes_keep_no_object_per_skill_or_term_to_their_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The near-duplicate pass (a re-lint's: its memo warm) and the listing check hold
    arrays, not a Python object for each query, term or skill kept until they end: the
    explorer lints in a thread beside its others, and objects that outlive a step are
    spread over arenas that the other threads' allocations then keep (docs/benchmarks.md,
    kept open for an afternoon). Counted as the small-object allocator's blocks before
    the call and at each of its pauses (less the one each count adds: the number)."""
    from explorer.engine.base.turns import yielding

    index = _library(tmp_path, 800)
    memo = lint_module.LintMemo()
    lint_module.near_duplicate_arrays(index, threshold=0.85, memo=memo)
    blocks = [sys.getallocatedblocks()]
    with yielding(lambda: blocks.append(sys.getallocatedblocks())):
        lint_module.near_duplicate_arrays(index, threshold=0.85, memo=memo)
    assert len(blocks) >= len(index)
    assert _held(blocks) < 0.1 * len(index)
    blocks = [sys.getallocatedblocks()]
    with yielding(lambda: blocks.append(sys.getallocatedblocks())):
        listing = lint_module.Listing(index.skills, 1_000, str(tmp_path))
    assert len(blocks) == len(index) + 1
    assert _held(blocks) < 0.1 * len(index)
    assert listing.library


def _held(blocks: list[int]) -> int:
    """The most blocks gained since the first count, less the counts' own."""
    return max(count - step for step, count in enumerate(blocks)) - blocks[0]
