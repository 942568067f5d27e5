"""hook_cold: process start to JSON out for `skill-explorer hook`, against a bare ONNX process.

Every run is a new process with a warm embedding cache (what each prompt costs a user
of the hook); the baseline is `explorer.bench.bare_onnx` loading the models the hook's
configuration loads (the dense model and, by default, the cross-encoder) and running
each once. Target: 1.2 x its median.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from explorer.bench import measure
from explorer.bench.synthetic import synthetic_prompts
from explorer.engine import Config
from explorer.engine.inference import (
    MultilingualUnavailable,
    find_reranker,
    load_multilingual,
    packaged_encoder,
    write_table,
)

HOOK_REPEATS = 7
HOOK_FACTOR = 1.2


def hook_problem(run: measure.ChildRun) -> str | None:
    """Why a hook run does not count (a crash, a non-zero exit, output that is not the JSON)."""
    tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
    if run.returncode != 0:
        return f"exit {run.returncode}: {tail or 'no stderr'}"
    out = run.stdout.strip()
    if not out:
        return None
    try:
        payload = json.loads(out)
    except json.JSONDecodeError:
        return f"stdout is not JSON: {out[:120]!r}"
    if not isinstance(payload, dict) or "hookSpecificOutput" not in payload:
        return f"stdout lacks hookSpecificOutput: {out[:120]!r}"
    return None


def _multilingual_table(work: Path) -> Path | None:
    """When the hook's default (learned) preset embeds each prompt with the multilingual
    encoder too, loading it is part of the floor: its vocabulary table, written as the
    engine writes it beside its cache (multilingual_table.py), for the floor to read."""
    try:
        encoder = load_multilingual()
    except MultilingualUnavailable:
        return None
    table = work / "xdg-cache-baseline" / "multilingual.table"
    if not table.is_file():
        table.parent.mkdir(parents=True, exist_ok=True)
        write_table(Path(encoder.model_path), table)
    return table


def bench_hook_cold(
    libraries: dict[int, tuple[Path, Path]],
    work: Path,
    *,
    repeats: int = HOOK_REPEATS,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Process start to JSON out, against a bare process that loads the hook's models and
    runs each once.

    `libraries` maps a size to (skills dir, XDG_CACHE_HOME). Runs are interleaved
    (baseline, then each library) so a busy moment hits every series alike.
    """
    config_home = work / "xdg-config-empty"
    config_home.mkdir(parents=True, exist_ok=True)
    prompts = synthetic_prompts(repeats * (len(libraries) + 1) + 2, seed + 2)
    try:
        model, tokenizer = packaged_encoder()  # the default (learned) preset's dense model
    except Exception as error:  # ModelError: no packaged model, no baseline
        return {
            f"hook_cold@{size}": measure.error_row(
                "hook_cold", f"no baseline model: {error}", size=size
            )
            for size in libraries
        }
    # The hook runs under an empty configuration: the default's models are the floor.
    reranker, _note = find_reranker(Config())
    models = [str(model), str(tokenizer), *(str(path) for path in reranker or ())]
    table = _multilingual_table(work)
    baseline_args = [
        sys.executable,
        "-m",
        "explorer.bench.bare_onnx",
        *(["--multilingual", str(table)] if table else []),
        *models,
    ]
    floor_name = "explorer.bench.bare_onnx: onnxruntime+tokenizers, " + (
        "the dense model and the cross-encoder, 1 inference each" if reranker else "1 inference"
    )
    if table:
        floor_name += ", and the multilingual encoder's (§9.14)"
    hook_args = {
        size: [sys.executable, "-m", "explorer", "hook", "--skills", str(directory)]
        for size, (directory, _cache) in libraries.items()
    }
    envs = {
        size: measure.child_env(cache, config_home) for size, (_dir, cache) in libraries.items()
    }
    base_env = measure.child_env(work / "xdg-cache-baseline", config_home)

    def payload(prompt: str) -> str:
        return json.dumps({"prompt": prompt, "session_id": "b", "cwd": "/"})

    problems: dict[int, str] = {}
    for size in libraries:  # pre-warm: fills the embedding cache and the page cache
        run = measure.run_child(hook_args[size], payload(prompts[-1]), envs[size], work, 600.0)
        problem = hook_problem(run)
        if problem:
            problems[size] = problem
    measure.run_child(
        baseline_args, payload(prompts[-2]), base_env, work, measure.SUBPROCESS_TIMEOUT
    )

    baseline_ms: list[float] = []
    hook_ms: dict[int, list[float]] = {size: [] for size in libraries}
    outputs: dict[int, int] = dict.fromkeys(libraries, 0)
    baseline_problem = None
    prompt_iter = iter(prompts)
    for _rep in range(repeats):
        run = measure.run_child(baseline_args, payload(next(prompt_iter)), base_env, work, 600.0)
        if run.returncode != 0:
            baseline_problem = f"baseline exit {run.returncode}: {run.stderr.strip()[-300:]}"
            break
        baseline_ms.append(run.ms)
        for size in libraries:
            if size in problems:
                continue
            run = measure.run_child(
                hook_args[size], payload(next(prompt_iter)), envs[size], work, 600.0
            )
            problem = hook_problem(run)
            if problem:
                problems[size] = problem
                continue
            hook_ms[size].append(run.ms)
            outputs[size] += bool(run.stdout.strip())

    results: dict[str, dict[str, Any]] = {}
    base = measure.stats(baseline_ms) if baseline_ms else None
    for size in libraries:
        key = f"hook_cold@{size}"
        target_text = f"<= {HOOK_FACTOR} x bare onnx process median"
        if baseline_problem or base is None:
            results[key] = measure.error_row(
                "hook_cold", baseline_problem or "no baseline", size=size
            )
            continue
        baseline = {"name": floor_name, **base}
        if size in problems or not hook_ms[size]:
            message = f"hook failed: {problems.get(size, 'no successful run')}"
            results[key] = measure.error_row(
                "hook_cold", message, size=size, baseline=baseline, target=target_text
            )
            results[key]["note"] = f"{message}; baseline median {base['median_ms']:.0f} ms"
            continue
        ours = measure.stats(hook_ms[size])
        results[key] = {
            "metric": "hook_cold",
            "size": size,
            **ours,
            "baseline": baseline,
            "target": target_text,
            **measure.verdict(ours["median_ms"], HOOK_FACTOR * base["median_ms"]),
            "note": (
                f"{size} skills, warm embedding cache; baseline median {base['median_ms']:.0f} ms; "
                f"a skill injected in {outputs[size]} of {len(hook_ms[size])} runs (the others "
                "printed nothing: nothing to inject)"
            ),
        }
    return results
