"""No answer changes: the decisions of before the scale work, kept in
tests/data/answers-before.jsonl (written by tests/engine/answers.py from the code without
lazy rows and add/remove patching), are what the engine answers now: from a fresh build,
from the persisted store, and from a live index that reached the library through adds
and removes. And lazy rows equal the rows an eager build made, field for field."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.index.store import open_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.models import Models
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.decision import _row_dict
from explorer.engine.route.pipeline import decide
from tests.engine.answers import GOLDEN_CONFIG, LIBRARIES, answer, eager_rows

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "answers-before.jsonl"
CONFIG = GOLDEN_CONFIG
TOLERANCE = 1e-6  # onnxruntime's floats may differ in the last bits between CPUs

pytestmark = pytest.mark.slow


def _golden() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in GOLDEN.read_text(encoding="utf-8").splitlines():
        library, prompt, expected = json.loads(line)
        found.setdefault(library, {})[prompt] = expected
    return found


def _cases(name: str) -> list[tuple[str, dict[str, Any]]]:
    _, _, path = next(entry for entry in LIBRARIES if entry[0] == name)
    return [
        (
            case.prompt,
            {"context": case.context, "cwd": path.parent / case.cwd if case.cwd else None},
        )
        for case in load_cases(path).cases
    ]


def _same(got: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    for key in ("stage", "text", "verdicts", "last_verdict", "count"):
        assert got[key] == expected[key], (where, key)
    assert [item[0::2] for item in got["injected"]] == [
        item[0::2] for item in expected["injected"]
    ], where
    for (gid, grank, *gvalues), (eid, erank, *evalues) in zip(
        got["top"], expected["top"], strict=True
    ):
        assert (gid, grank) == (eid, erank), where
        assert all(
            math.isclose(a, b, abs_tol=TOLERANCE) for a, b in zip(gvalues, evalues, strict=True)
        ), where


def _check(
    index: Index,
    name: str,
    golden: dict[str, dict[str, Any]],
    relocated: tuple[str, str] = ("", ""),
) -> None:
    cases = _cases(name)
    assert len(cases) == len(golden[name]) > 50
    for prompt, context in cases:
        got = answer(index, prompt, CONFIG, relocated, **context)
        _same(got, golden[name][prompt], f"{name}: {prompt}")


@pytest.fixture(scope="module")
def golden() -> dict[str, dict[str, Any]]:
    return _golden()


@pytest.mark.parametrize("name", [entry[0] for entry in LIBRARIES])
def test_fresh_and_stored_indexes_answer_as_before(
    name: str, golden: dict[str, dict[str, Any]], minilm_models: Models, tmp_path: Path
) -> None:
    roots = list(next(entry for entry in LIBRARIES if entry[0] == name)[1])
    _check(build_index(roots, CONFIG, minilm_models), name, golden)
    cache = EmbeddingCache(tmp_path / "cache")
    open_index(roots, CONFIG, minilm_models, cache)
    stored = open_index(roots, CONFIG, minilm_models, cache)
    assert stored.source == "store"
    _check(stored.index, name, golden)


def test_lazy_rows_equal_the_eager_rows_field_for_field(minilm_models: Models) -> None:
    """Every prompt of both libraries: the lazy rows, their columns, ids and row numbers
    are the eager build's, and reading the top 10 makes only 10 Row objects."""
    for name, roots, _ in LIBRARIES:
        index = build_index(list(roots), CONFIG, minilm_models)
        for prompt, context in _cases(name):
            decision = decide(prompt, index, CONFIG, **context)
            top = decision.rows[:10]
            assert decision.rows.made == len(top)
            eager = eager_rows(decision)
            assert top == eager[:10]
            assert decision.rows.ids == tuple(row.id for row in eager)
            for key in ("score", "cosine", "bm25", "jaccard", "rank"):
                assert decision.rows.column(key).tolist() == [getattr(r, key) for r in eager]
            last = eager[-1]
            assert decision.row(last.id) == last
            assert decision.rows.index_of(last.id) == len(eager) - 1
            assert tuple(decision.rows) == eager
            assert decision.rows == eager
            assert decision.to_dict()["skills"] == [_row_dict(row) for row in eager]


def test_a_live_index_that_grew_by_adds_and_removes_answers_as_before(
    golden: dict[str, dict[str, Any]], minilm_models: Models, tmp_path: Path
) -> None:
    """anthropic-wshobson, with the default model: start from a third of the library, add
    the rest in batches, remove some and add them back, all patched (no full rebuild);
    then every held-back prompt answers as before the scale work did."""
    from explorer.engine.index.live import LiveIndex

    name, roots, _ = LIBRARIES[1]
    copies = []
    aside = tmp_path / "aside"
    for root in roots:
        copy = tmp_path / "lib" / root.name
        shutil.copytree(root, copy)
        copies.append(copy)
    files = sorted(path for copy in copies for path in copy.rglob("SKILL.md"))
    moved = [path for number, path in enumerate(files) if number % 3]
    for path in moved:
        target = aside / path.relative_to(tmp_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        path.rename(target)
    live = LiveIndex(copies, CONFIG, minilm_models, EmbeddingCache(tmp_path / "cache"))
    assert len(live.snapshot) < len(files) // 2
    batches = [moved[start::4] for start in range(4)]
    for batch in batches:
        for path in batch:
            (aside / path.relative_to(tmp_path)).rename(path)
        change = live._reindex(full=False, touched=[str(path) for path in batch])
        assert len(change.added) == len(batch)
    removed = files[::7]
    for path in removed:
        (aside / path.relative_to(tmp_path)).parent.mkdir(parents=True, exist_ok=True)
        path.rename(aside / path.relative_to(tmp_path))
    live._reindex(full=False, touched=[str(path) for path in removed])
    for path in removed:
        (aside / path.relative_to(tmp_path)).rename(path)
    live._reindex(full=False, touched=[str(path) for path in removed])
    index = live.snapshot
    assert live.reindex_count == 6 and index.lexical._vocabulary  # patched in memory
    fresh = build_index(copies, CONFIG, minilm_models)
    assert index.ids == fresh.ids
    assert index.vectors is not None and fresh.vectors is not None
    assert np.allclose(index.vectors, fresh.vectors, atol=TOLERANCE)
    _check(index, name, golden, (str(tmp_path / "lib"), str(roots[0].parent)))
