"""The training data lives in the checkout (training/data/), outside the runtime package.

The router never reads it and the wheel must not carry it (.ci/wheel_smoke.py checks the
installed package); these tests keep the files, the trainers' defaults and the documents
that cite them pointing at the same place.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from explorer.training.pools import PAIRS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "explorer"
OLD_PLACE = "explorer/training/data"


def test_the_mined_pairs_are_where_the_trainer_and_the_readme_say() -> None:
    pairs = ROOT / PAIRS
    assert pairs.parent == ROOT / "training" / "data"
    with gzip.open(pairs, "rt", encoding="utf-8") as handle:
        group = json.loads(handle.readline())
    # The fields training/data/README.md documents.
    assert {"library", "skill", "query", "rule", "split", "positive", "negatives"} <= set(group)
    assert str(PAIRS) in (pairs.parent / "README.md").read_text(encoding="utf-8")


def test_the_runtime_package_holds_no_training_data() -> None:
    assert not (PACKAGE / "training" / "data").exists()
    assert not [path for path in PACKAGE.rglob("*.jsonl*") if path.is_file()]


def test_no_document_or_trainer_points_at_the_old_place() -> None:
    cited = [ROOT / "README.md", ROOT / "NOTICE", *PACKAGE.rglob("*.md"), *PACKAGE.rglob("*.py")]
    stale = [str(path.relative_to(ROOT)) for path in cited if OLD_PLACE in path.read_text("utf-8")]
    assert stale == []
