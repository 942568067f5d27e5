"""The hand-written training prompts, routed: each one's real rerank pool and its labels.

The packaged cross-encoder (`explorer.training.reranker`) learns from these beside the mined
groups of `PAIRS`: every prompt of the two training libraries' `*.train.tsv` and of
`benchmarks/data/<library>.extra-train.tsv` goes through `decide()` (the packaged MiniLM,
the default preset, no reranker), and its pool is the hybrid top 12 without any skill that
copies or names a held-back one (`explorer.training.mining.held_back`). A fixed quarter of
the extra prompts (by a hash of the text) is held out as split `val`, reported only. No
`*.val.tsv` is read: the validation splits are for reporting.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.inference.rerank import rerank_document
from explorer.training.mining import TRAIN_LIBRARIES

# The mined (query, positive, hard negatives) groups, relative to the checkout's root
# (training/data/README.md).
PAIRS = Path("training/data/pairs.jsonl.gz")
POOL = 12  # rerank_top_k
# Hand-written training prompts beside the benchmark's (benchmarks/data/README.md, "Extra
# training prompts"); one in EXTRA_HOLDOUT of them is held out.
EXTRA_SUFFIX = ".extra-train.tsv"
EXTRA_HOLDOUT = 4

log = logging.getLogger("pools")


@dataclass
class Pool:
    """One prompt's rerank pool: the candidates, which of them are wanted, and what stage 2
    reads of each (`rerank_document`)."""

    source: str  # tsv | extra
    split: str  # train | val
    library: str
    prompt: str
    positive: bool
    ids: list[str]
    labels: np.ndarray
    documents: list[str] = field(default_factory=list)


def extra_split(prompt: str) -> str:
    """`val` for a fixed quarter of the extra prompts (by a hash of the text), else `train`."""
    digest = hashlib.sha256(prompt.encode("utf-8")).digest()
    return "val" if digest[0] % EXTRA_HOLDOUT == 0 else "train"


def labelled_pools(
    manifest: Path, *, use_train_split: bool = True, use_extra: bool = True
) -> list[Pool]:
    """Every hand-written prompt of the two training libraries, with its routed pool."""
    from explorer.engine.qa.cases import load_cases
    from explorer.engine.qa.libraries import open_libraries, read_manifest
    from explorer.engine.route.pipeline import decide
    from explorer.training.mining import held_back

    specs = [spec for spec in read_manifest(manifest) if spec.name in TRAIN_LIBRARIES]
    if tuple(sorted(spec.name for spec in specs)) != tuple(sorted(TRAIN_LIBRARIES)):
        raise SystemExit(f"{manifest}: expected the libraries {', '.join(TRAIN_LIBRARIES)}")
    exclude = held_back(manifest.parent / "libraries")
    config = Config(reranker="off")
    pools: list[Pool] = []
    started = time.perf_counter()
    with open_libraries(specs, config) as libraries:
        for cases, index in libraries:
            name = cases.spec.name
            dropped = {
                i for i, skill in enumerate(index.skills) if exclude.reason(skill) is not None
            }
            log.info(
                "%s: %d skills, %d dropped as held-back copies: %s",
                name,
                len(index),
                len(dropped),
                ", ".join(sorted(index.ids[i] for i in dropped)),
            )
            labelled: list[tuple[str, str, Any]] = []
            if use_train_split:
                labelled += [("tsv", "train", case) for case in cases.train]
            if use_extra:
                extra_path = manifest.parent / "data" / f"{name}{EXTRA_SUFFIX}"
                labelled += [
                    ("extra", extra_split(case.prompt), case)
                    for case in load_cases(extra_path).cases
                ]
            for source, split, case in labelled:
                decision = decide(case.prompt, index, config)
                order = decision.channels.hybrid_order[: POOL * 2 + len(dropped)]
                chosen = [int(i) for i in order if int(i) not in dropped][:POOL]
                ids = [index.ids[i] for i in chosen]
                skills = index.skills
                pools.append(
                    Pool(
                        source,
                        split,
                        name,
                        case.prompt,
                        case.positive,
                        ids,
                        np.array([i in case.expect for i in ids], dtype=np.float64),
                        [
                            rerank_document(skills[i].description, skills[i].body_head)
                            for i in chosen
                        ],
                    )
                )
            log.info(
                "%s: %d labelled cases, %.0f s so far",
                name,
                len(labelled),
                time.perf_counter() - started,
            )
    return pools
