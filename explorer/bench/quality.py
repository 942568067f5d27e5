"""`bench --only quality`: routing quality of the config in force over the benchmark
libraries (validation split), beside the committed baseline.

Speed regressions show in the other bench rows; this row makes a quality regression as
visible. The figures are the ones `benchmarks/quality_baseline.json` pins and the slow
test `tests/engine/test_quality_baseline.py` checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from explorer.engine import Config

BASELINE_NAME = "quality_baseline.json"


def quality_bench(
    config: Config, cache_dir: str | None = None, manifest: str | None = None
) -> dict[str, Any]:
    """`bench --only quality`: the config in force over the benchmark libraries' validation
    split; the figures the committed baseline (benchmarks/quality_baseline.json) pins."""
    from explorer.engine.qa import (
        DEFAULT_MANIFEST,
        by_library,
        open_libraries,
        quality_dict,
        read_baseline,
        read_manifest,
        regressions,
    )

    path = Path(manifest or DEFAULT_MANIFEST)
    specs = read_manifest(path)
    with open_libraries(specs, config, cache_dir) as libraries:
        results = by_library(libraries, config, ("validation",))
    data = quality_dict(results, config)
    baseline = path.parent / BASELINE_NAME
    if baseline.is_file():
        committed = read_baseline(baseline)
        data["baseline"] = {
            "path": str(baseline),
            "preset": committed.get("preset"),
            "regressions": regressions(data, committed),
        }
    return data
