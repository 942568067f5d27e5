"""The packaged reranker, measured: held-back quality with and without it, stage-2 speed,
hook cold start, and the calibration of its agreement gate.

    python -m explorer.bench.reranker --benchmarks benchmarks [--json FILE]

Quality runs the same labelled prompts through `decide()` twice over the same index, once
with the packaged cross-encoder and once without any (everything else equal), on libraries
its training never saw (anthropic-apache + wshobson-agents, k-dense-scientific-skills) and,
marked as such, on the two it was trained on. Speed is timed inside one process, each stage-2
call next to the same prompt's query embedding, so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.engine import Config, Index, decide
from explorer.engine.index import build_index
from explorer.engine.inference import (
    EmbeddingCache,
    Models,
    assemble_models,
    load_models,
    rerank_document,
)
from explorer.engine.qa import Case, load_cases, passes

STAGE2_TARGET_MS = 25.0  # stage 2 on 12 candidates, median
COLD_START_FACTOR = 1.3  # hook cold start with the reranker <= 1.3 x without


@dataclass(frozen=True)
class Library:
    name: str
    roots: tuple[Path, ...]
    train: Path
    validation: Path
    held_back: bool  # True: the reranker's training never saw these skills


def benchmark_libraries(benchmarks: Path) -> list[Library]:
    """The labelled libraries of `benchmarks/` (libraries/ + data/), held-back ones first."""
    libs, data = benchmarks / "libraries", benchmarks / "data"
    specs = (
        ("anthropic-wshobson", ("anthropic-apache", "wshobson-agents"), True),
        ("k-dense-scientific-skills", ("k-dense-scientific-skills",), True),
        ("alirezarezvani-claude-skills", ("alirezarezvani-claude-skills",), False),
        ("openclaw-large", ("openclaw-large",), False),
    )
    found = []
    for name, roots, held_back in specs:
        paths = tuple(libs / root for root in roots)
        train, validation = data / f"{name}.train.tsv", data / f"{name}.val.tsv"
        if all(path.exists() for path in (*paths, train, validation)):
            found.append(Library(name, paths, train, validation, held_back))
    return found


@dataclass(frozen=True)
class Figures:
    """One library, one split, one arm (with or without the reranker)."""

    cases: int
    positives: int
    negatives: int
    recall: float | None
    false_inject_rate: float | None
    top1: float | None  # positives whose first injected skill is an expected one
    reranked: int  # cases decided by stage 2

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def figures(cases: Sequence[Case], index: Index, config: Config) -> Figures:
    positives = negatives = hits = false = top = reranked = 0
    for case in cases:
        decision = decide(case.prompt, index, config)
        injected = list(decision.injected_ids)
        reranked += decision.stage == "rerank"
        if case.positive:
            positives += 1
            hits += passes(case, injected)
            top += bool(injected) and injected[0] in case.expect
        else:
            negatives += 1
            false += bool(injected)
    return Figures(
        len(cases),
        positives,
        negatives,
        hits / positives if positives else None,
        false / negatives if negatives else None,
        top / positives if positives else None,
        reranked,
    )


def open_library(
    library: Library, config: Config, models: Models, cache: EmbeddingCache | None
) -> tuple[Index, Index]:
    """The library indexed once; the same index with the reranker, and without any."""
    from explorer.engine.qa import LibrarySpec, library_roots

    # A description-only library is a skills.jsonl: written out as SKILL.md dirs meanwhile.
    paths = [
        str(root / "skills.jsonl") if (root / "skills.jsonl").is_file() else str(root)
        for root in library.roots
    ]
    with library_roots(LibrarySpec(library.name, tuple(paths))) as roots:
        with_reranker = build_index(roots, config, models, cache)
    bare = assemble_models(
        models.embedder, None, reranker_note="off (benchmark arm without reranker)"
    )
    return with_reranker, dataclasses.replace(with_reranker, models=bare)


def quality(
    libraries: Iterable[Library],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    splits: Sequence[str] = ("validation",),
) -> list[dict[str, Any]]:
    rows = []
    for library in libraries:
        on, off = open_library(library, config, models, cache)
        for split in splits:
            path = library.validation if split == "validation" else library.train
            cases = load_cases(path).cases
            rows.append(
                {
                    "library": library.name,
                    "held_back": library.held_back,
                    "skills": len(on),
                    "split": split,
                    "without": figures(cases, off, config).to_dict(),
                    "with": figures(cases, on, config).to_dict(),
                }
            )
    return rows


def sweep_gate(
    libraries: Iterable[Library],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    grid_min: Sequence[float],
    grid_margin: Sequence[float],
) -> dict[str, Any]:
    """Pick rerank_min/rerank_margin on the TRAIN splits only: the most recall whose
    false-inject rate is no higher than the cascade's without a reranker (ties: stricter)."""
    from explorer.engine.qa import memoised

    prepared = []
    for library in libraries:
        on, off = open_library(library, config, models, cache)
        cases = load_cases(library.train).cases
        prepared.append((library.name, memoised(on), cases, figures(cases, off, config)))
    baseline_hits = sum((f.recall or 0) * f.positives for *_, f in prepared)
    baseline_false = sum((f.false_inject_rate or 0) * f.negatives for *_, f in prepared)
    positives = sum(f.positives for *_, f in prepared)
    negatives = sum(f.negatives for *_, f in prepared)
    points = []
    for low in grid_min:
        for margin in grid_margin:
            tuned = config.replace(rerank_min=low, rerank_margin=margin)
            hits = false = 0.0
            for _name, index, cases, _base in prepared:
                result = figures(cases, index, tuned)
                hits += (result.recall or 0) * result.positives
                false += (result.false_inject_rate or 0) * result.negatives
            points.append(
                {
                    "rerank_min": low,
                    "rerank_margin": margin,
                    "recall": hits / positives,
                    "false_inject_rate": false / negatives,
                }
            )
    allowed = [p for p in points if p["false_inject_rate"] <= baseline_false / negatives + 1e-9]
    pool = allowed or points
    best = max(
        pool,
        key=lambda p: (p["recall"], -p["false_inject_rate"], p["rerank_min"], -p["rerank_margin"]),
    )
    return {
        "baseline": {
            "recall": baseline_hits / positives,
            "false_inject_rate": baseline_false / negatives,
        },
        "chosen": best,
        "within_baseline_false_injects": bool(allowed),
        "points": points,
        "train_cases": {name: len(cases) for name, _i, cases, _b in prepared},
    }


def stage2_call(models: Models, index: Index, decision: Any, text: str, top: list[int]) -> None:
    """Stage 2's model on one pool, as the cascade calls it."""
    reranker = models.reranker
    assert reranker is not None
    documents = [
        rerank_document(index.skills[i].description, index.skills[i].body_head) for i in top
    ]
    reranker.score(text, documents)


def stage2_timings(
    index: Index, config: Config, models: Models, prompts: Sequence[str], *, k: int = 12
) -> dict[str, Any]:
    """Median ms of stage 2 on k candidates, each call timed beside the same prompt's query
    embedding (a busy machine slows both alike, so the ratio is the steadier figure)."""
    assert models.reranker is not None and models.embedder is not None
    quiet = config.replace(reranker="off")
    rerank_ms: list[float] = []
    embed_ms: list[float] = []
    for prompt in prompts:
        started = time.perf_counter()
        models.embedder.embed_query(prompt)
        embedded = time.perf_counter()
        decision = decide(prompt, index, quiet)
        top = [int(i) for i in decision.channels.hybrid_order[:k]]
        scoring = time.perf_counter()
        stage2_call(models, index, decision, prompt, top)
        ended = time.perf_counter()
        embed_ms.append((embedded - started) * 1000)
        rerank_ms.append((ended - scoring) * 1000)
    rerank, embed = statistics.median(rerank_ms), statistics.median(embed_ms)
    return {
        "reranker": models.status.reranker,
        "prompts": len(rerank_ms),
        "candidates": k,
        "stage2_median_ms": rerank,
        "stage2_p90_ms": sorted(rerank_ms)[int(0.9 * (len(rerank_ms) - 1))],
        "query_embedding_median_ms": embed,
        "ratio_to_embedding": rerank / embed if embed else None,
        "target_ms": STAGE2_TARGET_MS,
        "meets_target": rerank <= STAGE2_TARGET_MS,
    }


def stage2_speed(
    library: Library,
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    *,
    k: int = 12,
    repeats: int = 2,
) -> dict[str, Any]:
    """stage2_timings over a library's validation prompts, each never embedded before."""
    on, _off = open_library(library, config, models, cache)
    prompts = [case.prompt for case in load_cases(library.validation).cases]
    texts = [
        prompt if repeat == 0 else f"{prompt} ({repeat})"
        for repeat in range(repeats)
        for prompt in prompts
    ]
    return {"library": library.name, **stage2_timings(on, config, models, texts, k=k)}


def reranker_bench(config: Config, cache_dir: str | None = None) -> dict[str, Any]:
    """`skill-explorer bench --only reranker`: stage-2 speed of the reranker the config
    loads, on the first benchmark library (or the sample skills), 12 candidates a call."""
    from explorer.engine import open_engine, open_library
    from explorer.engine.qa import DEFAULT_MANIFEST, library_roots, read_manifest

    engine = open_engine(config, cache_dir)
    models = engine.models
    if models.reranker is None:
        return {"error": f"no reranker: {models.status.reranker_note}"}
    if DEFAULT_MANIFEST.is_file():
        spec = read_manifest(DEFAULT_MANIFEST)[0]
        prompts = [case.prompt for case in load_cases(str(spec.validation)).cases]
        name = spec.name
        with library_roots(spec) as roots:
            index = open_library(roots, config, engine=engine)
    else:
        root = Path(__file__).resolve().parents[2] / "sample_skills"
        index = open_library([str(root)], config, engine=engine)
        prompts = [case.prompt for case in load_cases(str(root / "cases.toml")).cases]
        name = "sample_skills"
    texts = [f"{prompt} ({repeat})" for repeat in range(2) for prompt in prompts]
    return {"library": name, **stage2_timings(index, config, models, texts)}


def hook_cold_start(library: Library, work: Path, repeats: int = 7) -> dict[str, Any]:
    """`skill-explorer hook` from process start to exit, reranker off vs packaged, interleaved."""
    root = Path(__file__).resolve().parents[2]
    prompts = [case.prompt for case in load_cases(library.validation).cases if case.positive]
    arms: dict[str, list[float]] = {"off": [], "packaged": []}
    envs = {}
    for arm in arms:
        config_home = work / f"config-{arm}"
        (config_home / "skill-explorer").mkdir(parents=True, exist_ok=True)
        (config_home / "skill-explorer" / "config.toml").write_text(
            f'reranker = "{arm}"\n', encoding="utf-8"
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), env.get("PYTHONPATH"))))
        env["XDG_CONFIG_HOME"] = str(config_home)
        env["XDG_CACHE_HOME"] = str(work / "cache")  # one warm embedding cache for both
        envs[arm] = env
    args = [sys.executable, "-m", "explorer", "hook"]
    for path in library.roots:
        args += ["--skills", str(path.resolve())]
    outputs = dict.fromkeys(arms, 0)
    for number in range(repeats + 1):
        for arm in arms:
            prompt = prompts[number % len(prompts)]
            # A session of its own per run: the session ledger would otherwise hold back
            # what the other arm injected for the same prompt.
            session = f"bench-{arm}-{number}"
            payload = json.dumps({"prompt": prompt, "session_id": session, "cwd": "/"})
            started = time.perf_counter()
            run = subprocess.run(
                args,
                input=payload,
                env=envs[arm],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=600,
            )
            elapsed = (time.perf_counter() - started) * 1000
            if number == 0:
                continue  # warm-up: fills the embedding cache and the page cache
            arms[arm].append(elapsed)
            outputs[arm] += bool(run.stdout.strip())
    off, on = statistics.median(arms["off"]), statistics.median(arms["packaged"])
    return {
        "library": library.name,
        "runs": repeats,
        "without_median_ms": off,
        "with_median_ms": on,
        "ratio": on / off,
        "target_ratio": COLD_START_FACTOR,
        "meets_target": on / off <= COLD_START_FACTOR,
        "printed_json": outputs,
    }


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}%"

    lines = [
        "| library (split) | skills | cases (+/−) | recall without → with | "
        "false injects without → with | top-1 without → with |",
        "|---|---:|---:|---|---|---|",
    ]
    for row in rows:
        a, b = row["without"], row["with"]
        seen = "held back" if row["held_back"] else "trained on"
        lines.append(
            f"| {row['library']} ({row['split']}, {seen}) | {row['skills']} | "
            f"{a['cases']} ({a['positives']}/{a['negatives']}) | "
            f"{pct(a['recall'])} → **{pct(b['recall'])}** | "
            f"{pct(a['false_inject_rate'])} → **{pct(b['false_inject_rate'])}** | "
            f"{pct(a['top1'])} → **{pct(b['top1'])}** |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m explorer.bench.reranker", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--benchmarks", type=Path, default=Path("benchmarks"))
    parser.add_argument(
        "--only", action="append", choices=("quality", "calibrate", "speed", "cold"), default=None
    )
    parser.add_argument("--splits", default="validation", help="comma-separated: train,validation")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for both arms, e.g. preset=fused",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="embedding cache to reuse between runs (default: a fresh one)",
    )
    args = parser.parse_args(argv)
    from explorer.engine.base import parse_assignment

    config = Config(reranker="packaged")
    for item in args.set:
        key, value = parse_assignment(item)
        config = config.replace(**{key: value})
    with tempfile.TemporaryDirectory(prefix="bench-reranker-") as scratch:
        cache = EmbeddingCache(args.cache_dir or Path(scratch) / "cache")
        models = load_models(config, cache)
        if models.reranker is None:
            print(f"no reranker: {models.status.reranker_note}", file=sys.stderr)
            return 1
        libraries = benchmark_libraries(args.benchmarks)
        if not libraries:
            print(f"no labelled libraries under {args.benchmarks}", file=sys.stderr)
            return 1
        only = set(args.only or ("quality", "speed", "cold"))
        result: dict[str, Any] = {
            "reranker": models.status.reranker,
            "gate": dataclasses.asdict(models.status.rerank_calibration),
            "config": {
                k: v
                for k, v in dataclasses.asdict(config).items()
                if k in ("preset", "rerank_min", "rerank_margin", "rerank_top_k")
            },
        }
        if "calibrate" in only:
            # Train splits of the held-back libraries only: their validation splits stay
            # unseen, and the libraries the model trained on would flatter its logits.
            result["calibration"] = sweep_gate(
                [library for library in libraries if library.held_back],
                config,
                models,
                cache,
                grid_min=(-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0),
                grid_margin=(0.5, 1.0, 2.0, 3.0, 5.0),
            )
            chosen = result["calibration"]["chosen"]
            print(
                f"gate on train splits: {json.dumps(result['calibration']['baseline'])} "
                f"without; chosen {json.dumps(chosen)}"
            )
        if "quality" in only:
            rows = quality(libraries, config, models, cache, args.splits.split(","))
            result["quality"] = rows
            print(markdown_table(rows))
        if "speed" in only:
            result["speed"] = stage2_speed(libraries[0], config, models, cache)
            print(json.dumps(result["speed"]))
        if "cold" in only:
            result["cold_start"] = hook_cold_start(libraries[0], Path(scratch))
            print(json.dumps(result["cold_start"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
