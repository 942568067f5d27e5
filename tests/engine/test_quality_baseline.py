"""Routing quality must not regress: validation figures against the committed baseline.

The benchmark libraries and their hand-written prompts live in `benchmarks/` (see its
README); `benchmarks/quality_baseline.json` holds the figures `skill-explorer bench --only
quality` prints for the default config: the default preset, the packaged skill encoder and the
packaged reranker (what `reranker = "auto"` loads on a machine without models of its own).
This test routes the validation split again with that config, and fails when a library's
recall falls more than 0.02 below its committed figure (or its false-inject rate rises
more than 0.02 above it). Embedding the 2,289-skill library cold takes minutes, so the
embeddings are kept in `.quality-cache/` (git-ignored) between runs.
"""

from __future__ import annotations

import os

import pytest

from explorer.bench.quality import quality_bench
from explorer.engine.base.config import Config
from explorer.engine.qa.quality import TOLERANCE, read_baseline, regressions
from tests.conftest import REPO

MANIFEST = REPO / "benchmarks" / "libraries.toml"
BASELINE = REPO / "benchmarks" / "quality_baseline.json"

pytestmark = pytest.mark.slow


@pytest.mark.skipif(not MANIFEST.is_file(), reason="no benchmark libraries in this checkout")
def test_validation_quality_holds_the_committed_baseline() -> None:
    baseline = read_baseline(BASELINE)
    cache = os.environ.get("SKILL_EXPLORER_QUALITY_CACHE") or str(REPO / ".quality-cache")
    measured = quality_bench(Config(reranker="packaged"), cache, str(MANIFEST))
    assert measured["preset"] == baseline["preset"] == Config().preset
    problems = regressions(measured, baseline, TOLERANCE)
    assert not problems, "\n".join(problems)


def test_a_drop_beyond_the_tolerance_is_caught() -> None:
    committed = {"recall": 0.9, "false_inject_rate": 0.05}
    baseline = {"libraries": [{"library": "k", "split": "validation", **committed}]}

    def run(recall: float, fir: float) -> list[str]:
        entry = {"library": "k", "split": "validation", "recall": recall, "false_inject_rate": fir}
        return regressions({"libraries": [entry]}, baseline)

    assert run(0.87, 0.0) == [f"k (validation): recall 0.870 < committed 0.900 - {TOLERANCE}"]
    assert run(0.885, 0.07) == []
    assert run(0.95, 0.08) == [
        f"k (validation): false-inject rate 0.080 > committed 0.050 + {TOLERANCE}"
    ]
    assert regressions({"libraries": []}, baseline) == ["k (validation): not measured"]
