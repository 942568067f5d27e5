"""peak_rss_1000: the memory high-water mark of a process that indexes 1,000 skills and routes.

The parent starts `python -m explorer.bench.peak_rss` twice (empty, then warm cache);
the child runs `measure_child`, which reports its own peak after each phase.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.bench import measure
from explorer.bench.synthetic import synthetic_prompts

if TYPE_CHECKING:
    from explorer.engine import Config

RSS_SIZE = 1000
RSS_DECIDES = 20
RSS_LIMIT_MB = 300.0


def measure_child(job: dict[str, Any]) -> dict[str, Any]:
    """In the child: load models, build the index, route the prompts; the peak after each."""
    from explorer.engine import Config, decide
    from explorer.engine.index import build_index
    from explorer.engine.inference import EmbeddingCache, load_models

    phases = {"imports": measure.peak_mb()}
    config = Config(**job["config"])
    cache = EmbeddingCache(job["cache"])
    models = load_models(config, cache)
    phases["models"] = measure.peak_mb()
    index = build_index([job["library"]], config, models, cache)
    phases["build"] = measure.peak_mb()
    for prompt in job["prompts"]:
        decide(prompt, index, config)
    phases["decides"] = measure.peak_mb()
    return {
        "peak_mb": measure.peak_mb(),
        "phases": phases,
        "skills": len(index),
        "embedded": index.embedded,
        "dense": models.status.dense,
        "reranker": models.status.reranker,
    }


def bench_peak_rss(library: Path, config: Config, work: Path, *, seed: int = 0) -> dict[str, Any]:
    """Peak RSS of a child that loads the models, builds the index and routes 20 prompts.

    Run twice: with an empty embedding cache (the first `index`, every description
    embedded: the worst case and the headline) and again with that cache filled (what
    every later hook process does). Each child reports its own high-water mark after
    each phase; RUSAGE_CHILDREN would mix in earlier children.
    """
    cache = Path(tempfile.mkdtemp(prefix="rss-cache-", dir=work))
    job = {
        "config": dataclasses.asdict(config),
        "cache": str(cache),
        "library": str(library),
        "prompts": synthetic_prompts(RSS_DECIDES, seed + 3),
    }
    env = measure.child_env(work / "xdg-cache-rss", work / "xdg-config-empty")
    reports: list[dict[str, Any]] = []
    for _run in ("cold", "warm"):
        child = [sys.executable, "-m", "explorer.bench.peak_rss"]
        run = measure.run_child(child, json.dumps(job), env, work, 600.0)
        if run.returncode != 0:
            tail = run.stderr.strip()[-300:]
            return measure.error_row("peak_rss_1000", f"child exit {run.returncode}: {tail}")
        try:
            reports.append(measure.last_json_line(run.stdout))
        except (json.JSONDecodeError, IndexError):
            return measure.error_row(
                "peak_rss_1000", f"child printed no report: {run.stdout[-200:]!r}"
            )
    cold, warm = reports
    phases = ", ".join(f"{name} {value:.0f}" for name, value in cold["phases"].items())
    return {
        "metric": "peak_rss_1000",
        "size": cold["skills"],
        "value": cold["peak_mb"],
        "unit": "MB",
        "warm_value": warm["peak_mb"],
        "phases_mb": {"cold": cold["phases"], "warm": warm["phases"]},
        "target": f"<= {RSS_LIMIT_MB:g} MB",
        **measure.verdict(cold["peak_mb"], RSS_LIMIT_MB),
        "note": (
            f"{cold['skills']} skills, {cold['embedded']} embedded, {RSS_DECIDES} decides; "
            f"high-water after {phases} MB; with a warm cache {warm['peak_mb']:.0f} MB "
            f"({warm['embedded']} embedded); dense {cold['dense']}, reranker {cold['reranker']}"
        ),
    }


if __name__ == "__main__":
    print(json.dumps(measure_child(json.load(sys.stdin))))
