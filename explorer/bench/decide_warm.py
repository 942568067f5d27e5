"""decide_warm: one decide() on a warm index, against a bare query embedding in the same run.

The cascade should cost little beyond the model: the target is 1.2 x the embedding's
median plus 2 ms.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from explorer.bench import measure
from explorer.engine import Config, Index, decide

DECIDE_FACTOR, DECIDE_SLACK_MS = 1.2, 2.0


def bench_decide_warm(
    index: Index, config: Config, prompts: Sequence[str], embed_prompts: Sequence[str]
) -> dict[str, Any]:
    """decide() against a bare query embedding: the cascade should cost little beyond the model.

    Each timed call gets a fresh prompt (the embedder caches queries); decide and embed
    alternate so drift in machine speed hits both series alike.
    """
    embedder = index.models.embedder
    if embedder is None:
        return measure.error_row(
            "decide_warm", f"no dense model: {index.models.status.dense_error}"
        )
    decide_ms: list[float] = []
    embed_ms: list[float] = []
    stages: dict[str, list[float]] = {}
    for position, (prompt, other) in enumerate(zip(prompts, embed_prompts, strict=True)):
        if position % 2:
            embed_ms.append(measure.timed(partial(embedder.embed_query, other)))
        started = time.perf_counter()
        decision = decide(prompt, index, config)
        decide_ms.append(measure.ms(time.perf_counter() - started))
        if not position % 2:
            embed_ms.append(measure.timed(partial(embedder.embed_query, other)))
        for stage, value in decision.timings_ms.items():
            stages.setdefault(stage, []).append(value)
    ours, baseline = measure.stats(decide_ms), measure.stats(embed_ms)
    target = DECIDE_FACTOR * baseline["median_ms"] + DECIDE_SLACK_MS
    verdict = measure.verdict(ours["median_ms"], target)
    breakdown = {stage: float(statistics.median(values)) for stage, values in stages.items()}
    slowest = max((item for item in breakdown.items() if item[0] != "total"), key=lambda x: x[1])
    return {
        "metric": "decide_warm",
        "size": len(index),
        **ours,
        "baseline": {"name": "embed_query", **baseline},
        "target": f"<= {DECIDE_FACTOR} x embed_query median + {DECIDE_SLACK_MS:g} ms",
        **verdict,
        "breakdown_ms": breakdown,
        "note": (
            f"{len(index)} skills, model {index.models.status.dense}, reranker off; "
            f"embed_query median {baseline['median_ms']:.2f} ms; "
            f"slowest stage {slowest[0]} {slowest[1]:.2f} ms"
        ),
    }


def warm_decide(index: Index, config: Config, prompts: Sequence[str]) -> None:
    for prompt in prompts:
        decide(prompt, index, config)
