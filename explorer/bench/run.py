"""The whole bench: which metrics to run, on which synthetic libraries, in which order.

Every figure is measured against a baseline taken in the same run on the same machine
(a bare query embedding, bm25s, a bare ONNX process, a direct embedding loop), so a
verdict survives a slow or busy machine.
"""

from __future__ import annotations

import platform
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from explorer.bench import measure
from explorer.bench.bm25_26k import BM25_PROMPTS, BM25_SIZE, bench_bm25
from explorer.bench.cold_open import bench_cold_open
from explorer.bench.decide_warm import bench_decide_warm, warm_decide
from explorer.bench.hook_cold import HOOK_REPEATS, bench_hook_cold
from explorer.bench.index_build import bench_index_build
from explorer.bench.live_save import bench_live_save
from explorer.bench.peak_rss import RSS_SIZE, bench_peak_rss
from explorer.bench.synthetic import generate_library, synthetic_prompts, vocabulary_size
from explorer.bench.whatif import bench_whatif, bench_whatif_cases
from explorer.engine import Config, Index
from explorer.engine.base import dense_model
from explorer.engine.index import build_index
from explorer.engine.inference import EmbeddingCache, Models, cpu_count, load_models

METRICS: tuple[str, ...] = (
    "decide_warm",
    "bm25_26k",
    "hook_cold",
    "peak_rss_1000",
    "index_build",
    "live_save",
    "cold_open",
    "whatif",
)
DEFAULT_SIZES: tuple[int, ...] = (100, 1000)
WARM_LIMIT = 1000  # decide_warm, hook_cold and index_build run on requested sizes up to this


def run_bench(
    skills_dir: str | None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    config: Config | None = None,
    *,
    repeats: int = 50,
    include: set[str] | None = None,
    work_dir: Path | None = None,
    seed: int = 0,
    hook_repeats: int = HOOK_REPEATS,
    bm25_prompts: int = BM25_PROMPTS,
) -> dict[str, Any]:
    """Run the chosen metrics; returns {"meta": ..., "metrics": {row key: row}}, JSON-able.

    Row keys carry the library size (`decide_warm@1000`) where a metric runs per size.
    """
    config = config or Config()
    chosen = set(METRICS) if include is None else set(include)
    unknown = chosen - set(METRICS)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; choose from {', '.join(METRICS)}")
    small = sorted({int(size) for size in sizes if 0 < int(size) <= WARM_LIMIT})
    began = time.perf_counter()
    sections: dict[str, float] = {}
    metrics: dict[str, dict[str, Any]] = {}
    quiet = config.replace(reranker="off")  # decide_warm and index_build: no reranker

    with ExitStack() as stack:
        if work_dir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="explorer-bench-")))
        else:
            work = Path(work_dir)
            work.mkdir(parents=True, exist_ok=True)

        libraries: dict[int, Path] = {}
        caches: dict[int, Path] = {}

        def library(size: int) -> Path:
            if size not in libraries:
                libraries[size] = generate_library(work / f"lib-{size}", size, seed)
                caches[size] = work / f"xdg-cache-{size}"
            return libraries[size]

        def library_cache(size: int) -> Path:
            """Where the hook, given XDG_CACHE_HOME = caches[size], keeps its vectors."""
            library(size)
            return caches[size] / "skill-explorer"

        models: Models | None = None
        indexes: dict[int, Index] = {}
        build_size = max(small) if small else None
        wants_decide = "decide_warm" in chosen and bool(small or skills_dir)
        if wants_decide or ("index_build" in chosen and small):
            models = load_models(quiet)

        if "index_build" in chosen and build_size is not None and models is not None:
            clock = time.perf_counter()
            shutil.rmtree(library_cache(build_size), ignore_errors=True)  # a reused work_dir
            cache = EmbeddingCache(library_cache(build_size))  # empty: the build is cold
            metrics[f"index_build@{build_size}"] = bench_index_build(
                library(build_size), quiet, models, cache, seed=seed
            )
            cache.close()
            sections["index_build"] = time.perf_counter() - clock
        elif "index_build" in chosen:
            metrics["index_build"] = measure.error_row(
                "index_build", f"no size <= {WARM_LIMIT} requested"
            )

        if wants_decide and models is not None:
            clock = time.perf_counter()
            for size in small:
                # the hook's cache: warm for the size index_build filled, cold otherwise
                cache = EmbeddingCache(library_cache(size))
                indexes[size] = build_index([library(size)], quiet, models, cache)
                cache.close()
            sections["build"] = time.perf_counter() - clock

        if wants_decide and models is not None:
            clock = time.perf_counter()
            targets: list[tuple[str, Index]] = [
                (f"decide_warm@{size}", indexes[size]) for size in small
            ]
            if skills_dir:
                user_cache = EmbeddingCache(work / "xdg-cache-user" / "skill-explorer")
                user_index = build_index([skills_dir], quiet, models, user_cache)
                user_cache.close()
                targets.append(("decide_warm@skills_dir", user_index))
            # every timed call in the whole section gets a prompt never embedded before
            per = 2 * repeats + 5
            prompts = synthetic_prompts(per * len(targets), seed + 4, max(small or [0]))
            for number, (key, index) in enumerate(targets):
                batch = prompts[number * per : (number + 1) * per]
                warm_decide(index, quiet, batch[:5])
                row = bench_decide_warm(index, quiet, batch[5 : 5 + repeats], batch[5 + repeats :])
                if key.endswith("skills_dir"):
                    row["note"] = f"{skills_dir}: {row['note']}"
                metrics[key] = row
            sections["decide_warm"] = time.perf_counter() - clock

        if "bm25_26k" in chosen:
            clock = time.perf_counter()
            metrics["bm25_26k"] = bench_bm25(BM25_SIZE, bm25_prompts, seed)
            sections["bm25_26k"] = time.perf_counter() - clock

        if "hook_cold" in chosen:
            clock = time.perf_counter()
            hook_libraries = {size: (library(size), caches[size]) for size in small}
            if hook_libraries:
                metrics.update(
                    bench_hook_cold(hook_libraries, work, repeats=hook_repeats, seed=seed)
                )
            else:
                metrics["hook_cold"] = measure.error_row(
                    "hook_cold", f"no size <= {WARM_LIMIT} requested"
                )
            sections["hook_cold"] = time.perf_counter() - clock

        if "peak_rss_1000" in chosen:
            clock = time.perf_counter()
            metrics["peak_rss_1000"] = bench_peak_rss(library(RSS_SIZE), config, work, seed=seed)
            sections["peak_rss_1000"] = time.perf_counter() - clock

        if "live_save" in chosen and small:
            clock = time.perf_counter()
            models = models or load_models(quiet)
            for size in small:
                cache = EmbeddingCache(library_cache(size))
                build_index([library(size)], quiet, models, cache)  # warm, as in real use
                metrics[f"live_save@{size}"] = bench_live_save(library(size), quiet, models, cache)
                cache.close()
            sections["live_save"] = time.perf_counter() - clock

        if "whatif" in chosen and small:
            clock = time.perf_counter()
            models = models or load_models(quiet)
            for size in small:
                if size not in indexes:
                    cache = EmbeddingCache(library_cache(size))
                    indexes[size] = build_index([library(size)], quiet, models, cache)
                    cache.close()
                metrics[f"whatif@{size}"] = bench_whatif(indexes[size], quiet)
                metrics[f"whatif_cases@{size}"] = bench_whatif_cases(indexes[size], quiet)
            sections["whatif"] = time.perf_counter() - clock

        if "cold_open" in chosen:
            clock = time.perf_counter()
            metrics.update(bench_cold_open(library(RSS_SIZE), quiet, work))
            sections["cold_open"] = time.perf_counter() - clock

    meta = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": cpu_count(),
        "onnxruntime": measure.package_version("onnxruntime"),
        "bm25s": measure.package_version("bm25s"),
        "rank_bm25": measure.package_version("rank_bm25"),
        "model": models.status.dense if models else dense_model(config),
        "sizes": list(sizes),
        "repeats": repeats,
        "seed": seed,
        "vocabulary": vocabulary_size(seed),
        "skills_dir": skills_dir,
        "sections_s": sections,
        "elapsed_s": time.perf_counter() - began,
    }
    return {"meta": meta, "metrics": metrics}
