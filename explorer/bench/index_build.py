"""index_build: the per-skill cost of a cold build, against embedding the same texts directly.

The embedding dominates a build; the target is 1.25 x the embedder's own embedding of the
same texts (each skill's dense text, routing.md §9.13), plus, when the build
keeps multilingual vectors (§9.14), the multilingual encoder's embedding of its texts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from explorer.bench import measure
from explorer.bench.synthetic import synthetic_descriptions
from explorer.engine import Config
from explorer.engine.base import dense_body_chars
from explorer.engine.discovery import Discovery, Skill, discover
from explorer.engine.index import (
    builds_multilingual,
    dense_text,
    index_skills,
    multilingual_text,
)
from explorer.engine.inference import EmbeddingCache, Models

BUILD_CHUNKS = 4
BUILD_FACTOR = 1.25


def bench_index_build(
    root: Path,
    config: Config,
    models: Models,
    cache: EmbeddingCache,
    *,
    chunks: int = BUILD_CHUNKS,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-skill embedding cost of a cold build against embedding the same texts directly.

    The library is cut into `chunks` parts; for each, a cold `index_skills` (every text new
    to `cache`) and the floor (the embedder's own `embed_documents` of the same texts)
    run back to back, in alternating order, so load from other processes hits both alike.
    Afterwards `cache` holds every description, so later builds of this library are warm.
    """
    embedder = models.embedder
    if embedder is None:
        return measure.error_row("index_build", f"no dense model: {models.status.dense_error}")
    started = time.perf_counter()
    found = discover([root])
    parse_ms = measure.ms(time.perf_counter() - started)
    skills = found.skills
    n = len(skills)
    if not n:
        return measure.error_row("index_build", f"no skills under {root}")
    warm_up = synthetic_descriptions(32, seed + 5)[1]
    embedder.embed_documents(warm_up)  # warm the session up
    multilingual = models.multilingual if builds_multilingual(config, models) else None
    if multilingual is not None:
        multilingual.embed_documents(warm_up)  # loads it
    body_chars = dense_body_chars(config)
    build_ms = floor_ms = lexical_ms = 0.0
    embedded = 0
    step = -(-n // max(1, chunks))
    for number, start in enumerate(range(0, n, step)):
        part = skills[start : start + step]
        texts = [dense_text(skill, body_chars) for skill in part]
        multilingual_texts = [multilingual_text(skill) for skill in part]

        def build(part: tuple[Skill, ...] = part) -> tuple[float, float, int]:
            index = index_skills(Discovery(part, ()), [root], config, models, cache)
            return index.timings_ms["embed"], index.timings_ms["lexical"], index.embedded

        def floor(texts: list[str] = texts, other: list[str] = multilingual_texts) -> float:
            dense_ms = measure.timed(lambda: embedder.embed_documents(texts))
            if multilingual is None:
                return dense_ms
            return dense_ms + measure.timed(lambda: multilingual.embed_documents(other))

        if number % 2 == 0:
            embed_ms, lex_ms, count = build()
            floor_ms += floor()
        else:
            floor_ms += floor()
            embed_ms, lex_ms, count = build()
        build_ms += embed_ms
        lexical_ms += lex_ms
        embedded += count
    build_per, floor_per = build_ms / n, floor_ms / n
    return {
        "metric": "index_build",
        "size": n,
        "value": build_per,
        "unit": "ms/skill",
        "baseline": {
            "name": "embed_documents of the same texts"
            + (", and the multilingual encoder's" if multilingual is not None else ""),
            "value": floor_per,
        },
        "target": f"<= {BUILD_FACTOR} x direct embedding per skill",
        **measure.verdict(build_per, BUILD_FACTOR * floor_per),
        "note": (
            f"{embedded}/{n} embedded (empty cache), {chunks} interleaved chunks; floor "
            f"{floor_per:.2f} ms/skill; "
            f"parse {parse_ms:.0f} ms, lexical {lexical_ms:.0f} ms for {n} skills"
        ),
    }
