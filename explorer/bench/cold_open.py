"""cold_open: a new process opens a 1,000-skill library, with an empty and with a warm cache.

The parent starts `python -m explorer.bench.cold_open` twice; the child runs
`open_child`, which times its own imports, model load and first index. This module
imports only the standard library at the top, so the child's clock sees every engine
import. Target: <= 1 s with a warm embedding cache.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.bench import measure

if TYPE_CHECKING:
    from explorer.engine import Config

COLD_OPEN_LIMIT_MS = 1000.0


def open_child(job: dict[str, Any]) -> dict[str, Any]:
    """In the child: import the engine, load the models, open a live index; each timed."""
    started = time.perf_counter()
    from explorer.engine import Config, LiveIndex
    from explorer.engine.inference import EmbeddingCache, load_models

    imported = time.perf_counter()
    config = Config(**job["config"])
    cache = EmbeddingCache(job["cache"])
    models = load_models(config, cache)
    loaded = time.perf_counter()
    live = LiveIndex([job["library"]], config, models, cache)
    opened = time.perf_counter()
    return {
        "imports_ms": measure.ms(imported - started),
        "models_ms": measure.ms(loaded - imported),
        "index_ms": measure.ms(opened - loaded),
        "skills": len(live.snapshot),
        "embedded": live.snapshot.embedded,
    }


def bench_cold_open(library: Path, config: Config, work: Path) -> dict[str, dict[str, Any]]:
    """A new process opens the library: once with an empty cache, then with it warm."""
    cache = Path(tempfile.mkdtemp(prefix="open-cache-", dir=work))
    job = json.dumps(
        {"config": dataclasses.asdict(config), "cache": str(cache), "library": str(library)}
    )
    env = measure.child_env(work / "xdg-cache-open", work / "xdg-config-empty")
    reports: list[dict[str, Any]] = []
    for _state in ("empty", "warm"):
        child = [sys.executable, "-m", "explorer.bench.cold_open"]
        run = measure.run_child(child, job, env, work, 900.0)
        if run.returncode != 0:
            return {
                "cold_open": measure.error_row(
                    "cold_open", f"child exit {run.returncode}: {run.stderr.strip()[-300:]}"
                )
            }
        reports.append(measure.last_json_line(run.stdout))
    empty, warm = reports
    warm_total = warm["imports_ms"] + warm["models_ms"] + warm["index_ms"]
    per_skill = empty["index_ms"] / max(empty["skills"], 1)
    return {
        "cold_open_warm": {
            "metric": "cold_open",
            "size": warm["skills"],
            "value": warm_total,
            "unit": "ms",
            "target": f"<= {COLD_OPEN_LIMIT_MS:g} ms, warm embedding cache",
            **measure.verdict(warm_total, COLD_OPEN_LIMIT_MS),
            "note": (
                f"{warm['skills']} skills, {warm['embedded']} embedded; imports "
                f"{warm['imports_ms']:.0f} ms, models {warm['models_ms']:.0f} ms, index "
                f"{warm['index_ms']:.0f} ms"
            ),
        },
        "cold_open_empty": {
            "metric": "cold_open",
            "size": empty["skills"],
            "value": per_skill,
            "unit": "ms/skill",
            "target": "time per skill (no target)",
            "pass": True,
            "note": (
                f"{empty['skills']} skills, {empty['embedded']} embedded; index "
                f"{empty['index_ms']:.0f} ms, models {empty['models_ms']:.0f} ms"
            ),
        },
    }


if __name__ == "__main__":
    print(json.dumps(open_child(json.load(sys.stdin))))
