"""bm25_26k: our BM25 scoring plus the top-10 explanation at 26,000 skills, against bm25s.

rank_bm25 is timed too, for context only (it scores in a Python loop). Both optional
packages come with the `bench` extra; without bm25s the row is not judged (neither pass nor fail).
"""

from __future__ import annotations

import statistics
import time
from functools import partial
from typing import Any

import numpy as np

from explorer.bench import measure
from explorer.bench.synthetic import synthetic_descriptions, synthetic_prompts
from explorer.engine.base import match_tokens
from explorer.engine.index import LexicalIndex

BM25_SIZE = 26_000
BM25_PROMPTS = 200
RANK_BM25_PROMPTS = 20  # rank_bm25 scores in a Python loop: context only, so few prompts
TOP_K = 10
BM25_FACTOR = 2.0


def bench_bm25(
    count: int = BM25_SIZE, prompts: int = BM25_PROMPTS, seed: int = 0
) -> dict[str, Any]:
    """Our vectorised BM25 + explain of the top 10, against bm25s and rank_bm25 at 26k skills.

    Both sides are timed from the raw prompt (tokenising included) on the same token lists.
    """
    ids, descriptions = synthetic_descriptions(count, seed)
    documents = [match_tokens(text) for text in descriptions]
    started = time.perf_counter()
    lexical = LexicalIndex(documents, ids)
    build_ms = measure.ms(time.perf_counter() - started)
    queries = synthetic_prompts(prompts + 10, seed + 1, library_size=count)
    warmup, queries = queries[:10], queries[10:]

    def ours(prompt: str) -> np.ndarray:
        raw = lexical.score(prompt).raw
        top = np.argpartition(-raw, TOP_K)[:TOP_K]
        top = top[np.argsort(-raw[top], kind="stable")]
        lexical.explain_many(prompt, [int(position) for position in top])
        return top

    score_ms = [measure.timed(partial(lexical.score, prompt)) for prompt in queries[:50]]

    notes: list[str] = []
    retriever: Any = None
    bm25s_build_ms = None
    try:
        import bm25s

        started = time.perf_counter()
        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        retriever.index(documents, show_progress=False)
        bm25s_build_ms = measure.ms(time.perf_counter() - started)
    except Exception as error:  # ImportError, or an API change in an optional package
        notes.append(f"bm25s unavailable ({type(error).__name__}: {error})")
        retriever = None

    def theirs(prompt: str) -> np.ndarray:
        tokens = list(dict.fromkeys(match_tokens(prompt)))
        found, _scores = retriever.retrieve([tokens], k=TOP_K, show_progress=False)
        return np.asarray(found[0])  # bm25s is untyped; its ids are an ndarray already

    for prompt in warmup:
        ours(prompt)
        if retriever is not None:
            theirs(prompt)
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    agreement: list[float] = []
    for position, prompt in enumerate(queries):
        order = (0, 1) if position % 2 == 0 else (1, 0)
        mine = other = None
        for which in order:
            if which == 0:
                started = time.perf_counter()
                mine = ours(prompt)
                ours_ms.append(measure.ms(time.perf_counter() - started))
            elif retriever is not None:
                started = time.perf_counter()
                other = theirs(prompt)
                theirs_ms.append(measure.ms(time.perf_counter() - started))
        if mine is not None and other is not None:
            agreement.append(len(set(mine.tolist()) & set(other.tolist())) / TOP_K)

    rank_stats = None
    try:
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(documents, k1=1.2, b=0.75)
        rank_ms = []
        for prompt in queries[:RANK_BM25_PROMPTS]:
            started = time.perf_counter()
            scores = okapi.get_scores(list(dict.fromkeys(match_tokens(prompt))))
            np.argpartition(-scores, TOP_K)[:TOP_K]
            rank_ms.append(measure.ms(time.perf_counter() - started))
        rank_stats = measure.stats(rank_ms)
    except Exception as error:  # optional package
        notes.append(f"rank_bm25 unavailable ({type(error).__name__}: {error})")

    mine_stats = measure.stats(ours_ms)
    result: dict[str, Any] = {
        "metric": "bm25_26k",
        "size": count,
        **mine_stats,
        "score_only_median_ms": float(statistics.median(score_ms)),
        "build_ms": build_ms,
        "target": f"<= {BM25_FACTOR:g} x bm25s top-{TOP_K} median",
    }
    if rank_stats is not None:
        result["rank_bm25"] = {"name": "BM25Okapi.get_scores", **rank_stats}
    if theirs_ms:
        baseline = measure.stats(theirs_ms)
        result["baseline"] = {"name": "bm25s retrieve k=10", **baseline, "build_ms": bm25s_build_ms}
        result.update(measure.verdict(mine_stats["median_ms"], BM25_FACTOR * baseline["median_ms"]))
        notes.insert(
            0,
            f"ours = score + argpartition + explain x{TOP_K}; score alone "
            f"{result['score_only_median_ms']:.2f} ms; bm25s {baseline['median_ms']:.2f} ms; "
            f"top-10 agreement {100 * statistics.mean(agreement):.0f}%",
        )
    else:
        result.update({"target_value": None, "ratio": None, "pass": None})
        notes.insert(0, "no bm25s baseline: not judged (pip install -e '.[bench]')")
    if rank_stats is not None:
        notes.append(f"rank_bm25 {rank_stats['median_ms']:.1f} ms")
    result["note"] = "; ".join(notes)
    return result
