"""Decisions as comparable data, for the "no answer changes" test.

`python -m tests.engine.answers OUT` writes the golden file from whatever code is on
PYTHONPATH; it was written from the code without lazy rows and add/remove patching, with
GOLDEN_CONFIG.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.models import Models
from explorer.engine.inference.rerank import sigmoid
from explorer.engine.qa.cases import load_cases
from explorer.engine.route.decision import Decision, Row
from explorer.engine.route.pipeline import decide

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_skills"
BENCH = REPO / "benchmarks"
# (name, roots, cases file): sample_skills with its cases, and one benchmark library with
# its held-back prompts (anthropic-apache + wshobson-agents, 193 skills).
LIBRARIES = (
    ("sample", (SAMPLE,), SAMPLE / "cases.toml"),
    (
        "anthropic-wshobson",
        (BENCH / "libraries" / "anthropic-apache", BENCH / "libraries" / "wshobson-agents"),
        BENCH / "data" / "anthropic-wshobson.val.tsv",
    ),
)
TOP = 10

# The config the golden answers were written with: the default preset of that day (floor
# 0.70 + 0.01 ln(N/200), fast path 4/2 behind cosine 0.2, no keyword guard), pinned as
# values over the reference so that a later change of the default leaves them valid.
GOLDEN_CONFIG = Config(
    reranker="off",
    preset="reference",
    min_similarity=0.70,
    score_margin=0.12,
    floor_log_slope=0.01,
    lexical_min=4.0,
    lexical_margin=2.0,
    lexical_min_cosine=0.2,
)


def answer(
    index: Index, prompt: str, config: Config, relocated: tuple[str, str] = ("", ""), **context: Any
) -> dict[str, Any]:
    """What must not change: the stage, the injection, the text, the verdict of every
    skill, and the top rows' scores (compared to a tolerance: onnxruntime's floats).
    `relocated` (copy, original): the library is a copy; its paths in the text are mapped."""
    decision = decide(prompt, index, config, **context)
    text = decision.text.replace(*relocated) if relocated[0] else decision.text
    text = text.replace(str(REPO), "<repo>")  # the same hash from any checkout
    rows = decision.rows
    return {
        "stage": str(decision.stage),
        "injected": [
            [item.id, round(item.confidence, 6), str(item.mode)] for item in decision.injected
        ],
        "text": hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest(),
        "verdicts": sorted(
            [row.id, str(row.verdict)] for row in rows if str(row.verdict) != str(rows[-1].verdict)
        ),
        "last_verdict": str(rows[-1].verdict) if len(rows) else None,
        "top": [
            [row.id, row.rank, row.score, row.cosine, row.bm25, row.keyword] for row in rows[:TOP]
        ],
        "count": len(rows),
    }


def eager_rows(decision: Decision) -> tuple[Row, ...]:
    """The rows as `Decision.rows` built them before it became lazy (every one, sorted)."""
    c = decision.channels
    position = {skill_id: order for order, skill_id in enumerate(decision.injected_ids)}
    hybrid_rank = np.empty(len(c.ids), dtype=np.int64)
    hybrid_rank[c.hybrid_order] = np.arange(1, len(c.ids) + 1)
    ordered = sorted(
        (int(index) for index in c.hybrid_order),
        key=lambda index: (position.get(c.ids[index], len(position)), hybrid_rank[index]),
    )
    rows = []
    for index in ordered:
        logit = decision.rows_rerank().get(index)
        rows.append(
            Row(
                id=c.ids[index],
                rank=int(hybrid_rank[index]),
                cosine=float(c.cosine[index]),
                keyword=float(c.keyword[index]),
                phrase=float(c.phrase[index]),
                file=float(c.file[index]),
                project=float(c.project[index]),
                score=float(c.score[index]),
                bm25=float(c.bm25[index]),
                bm25_norm=float(c.bm25_norm[index]),
                bm25_rank=int(c.bm25_rank[index]) or None,
                rerank=logit,
                rerank_prob=None if logit is None else sigmoid(logit),
                pool=decision._pool.get(index),
                matched_terms=int(c.matched_terms[index]),
                query_terms=c.query_terms,
                jaccard=float(c.jaccard[index]),
                verdict=decision.verdict(index),
                path=c.paths[index],
                bm25_fused=float(c.bm25_fused[index]),
                matches=decision.matches.get(index, ()),
            )
        )
    return tuple(rows)


def answers(models: Models, config: Config) -> dict[str, dict[str, Any]]:
    from explorer.engine.index.snapshot import build_index

    out: dict[str, dict[str, Any]] = {}
    for name, roots, cases_path in LIBRARIES:
        index = build_index(list(roots), config, models)
        cases = load_cases(cases_path).cases
        out[name] = {
            case.prompt: answer(
                index,
                case.prompt,
                config,
                context=case.context,
                cwd=cases_path.parent / case.cwd if case.cwd else None,
            )
            for case in cases
        }
    return out


if __name__ == "__main__":
    from explorer.engine.inference.cache import EmbeddingCache
    from explorer.engine.inference.models import load_models

    config = GOLDEN_CONFIG
    models = load_models(config, EmbeddingCache(sys.argv[2] if len(sys.argv) > 2 else None))
    found = answers(models, config)
    lines = [
        json.dumps([library, prompt, found[library][prompt]], sort_keys=True, ensure_ascii=False)
        for library in sorted(found)
        for prompt in sorted(found[library])
    ]
    Path(sys.argv[1]).write_text("\n".join(lines) + "\n", encoding="utf-8")
