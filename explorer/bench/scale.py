"""scale: the scale table of docs/benchmarks.md, on real descriptions at 2,289 and 26,000 skills.

Libraries come from a JSONL corpus (one `{"name", "description"}` a line): the repo's
copy under `benchmarks/libraries/` when present, or `--corpus FILE`; without one, the
synthetic generator stands in. A corpus is written out as SKILL.md files once, then
replicated up to the larger size with distinct names and descriptions
(`<name>-r<k>`, "... Variant k for the <name> toolkit."). Bodies are generated (about
2 KB each) so that "bodies are never all held in memory" is tested with real weight.

Every row is measured against a baseline taken in the same run:

* hook, one process, warm cache: against a bare `python` + onnxruntime process that
  loads the same models (the dense model and the cross-encoder) and runs each once (the
  floor), interleaved run by run;
* cold index build: against the model embedding the same texts directly (sizes up to
  `BUILD_LIMIT` unless asked for: 26,000 takes many minutes);
* save -> snapshot: 20 saves 1 s apart into a live index watching the library; p95,
  how many were seen, and the CPU the process used while idle between saves;
* open until the first prompt is answered, and peak RSS, in a new process (the engine
  side of the explorer: live index + models + one decision; the UI is extra);
* BM25 + explain of the top 10 against bm25s (synthetic descriptions, as `bm25_26k`).

Nothing here caches answers to the benchmark's prompts: every timed hook call gets a
prompt it has not seen.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from explorer.bench import measure

SCALE_SIZES = (2289, 26000)
BUILD_LIMIT = 5000
SAVES = 20
SAVE_GAP_S = 1.0
HOOK_LIMITS = {2300: 1.2, 26000: 1.5}  # x the floor; nearest size decides
SAVE_LIMIT_MS = {2300: 150.0, 26000: 400.0}
OPEN_LIMIT_MS = {2300: 2000.0, 26000: 5000.0}
RSS_LIMIT_MB = {2300: 300.0, 26000: 700.0}
BUILD_FACTOR = 1.2
KEYSTROKE_LIMIT_MS = {2300: 80.0, 26000: 150.0}
LINT_LIMIT_S = {2300: 10.0, 26000: 90.0}
LINT_LIMIT_MB = 2048.0
# The explorer kept open for an afternoon (bench/soak.py): the targets.
SOAK_GROWTH = 1.10  # RSS after the last save / after the first
SOAK_TREND = 1.25  # median save of the last 20 / of the first 20: flat
UI_SAVE_LIMIT_MS = {2300: 400.0, 26000: 400.0}  # write -> repaint, p95
LINT_KEY_P95_MS = {2300: 80.0, 26000: 150.0}  # keystroke -> repaint while the first lint runs
LINT_KEY_MAX_MS = 500.0
LOOP_STALL_MS = 50.0  # the longest the event loop is kept from a keystroke
EXPLORER_RSS_MB = 700.0  # after open, after the first lint, after the last save (at 26,000)
COLD_INDEX_LIMIT_S = {2300: 10.0}  # `index` on an empty cache, idle machine
UI_TIMEOUT_S = 600.0
UI_PROMPT = "merge the quarterly pdf reports into one deck"


def _limit(table: dict[int, float], size: int) -> float:
    return table[min(table, key=lambda key: abs(key - size))]


def find_corpus(start: Path | None = None) -> Path | None:
    """The largest JSONL corpus under the checkout's `benchmarks/libraries/`, if any."""
    base = (start or measure.package_parent()) / "benchmarks" / "libraries"
    if not base.is_dir():
        return None
    found = sorted(base.rglob("*.jsonl"), key=lambda path: path.stat().st_size, reverse=True)
    return found[0] if found else None


def corpus_records(path: Path) -> list[tuple[str, str]]:
    """(name, description) per line; a repeated name gets a -2, -3 … suffix."""
    records: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        name, description = str(item["name"]), str(item["description"])
        count = seen.get(name, 0)
        seen[name] = count + 1
        records.append((f"{name}-{count + 1}" if count else name, description))
    return records


def synthetic_records(count: int, seed: int = 0) -> list[tuple[str, str]]:
    from explorer.bench.synthetic import synthetic_descriptions

    ids, descriptions = synthetic_descriptions(count, seed)
    return list(zip(ids, descriptions, strict=True))


def _body(name: str, description: str, rng: random.Random) -> str:
    words = description.split() or [name]
    lines = [f"# {name}", "", description, "", "## When to use", ""]
    for _ in range(12):
        rng.shuffle(words)
        lines.append("- " + " ".join(words[:20]))
    lines += ["", "## Steps", ""]
    lines += [
        f"{step + 1}. Run `{name} step-{step}` and check the output carefully before "
        "continuing with the next step of the workflow."
        for step in range(20)
    ]
    return "\n".join(lines) + "\n"


def write_library(records: Sequence[tuple[str, str]], destination: Path, count: int) -> Path:
    """`count` skills from `records`, replicated with distinct names and descriptions."""
    rng = random.Random(0)
    destination.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        base_name, base_description = records[number % len(records)]
        copy = number // len(records)
        name = base_name if copy == 0 else f"{base_name}-r{copy}"
        description = (
            base_description
            if copy == 0
            else f"{base_description} Variant {copy} for the {name} toolkit."
        )
        directory = destination / f"{number:05d}"
        directory.mkdir(exist_ok=True)
        block = "\n".join(f"  {line}" for line in description.splitlines() or [""])
        (directory / "SKILL.md").write_text(
            f"---\nname: {json.dumps(name, ensure_ascii=False)}\ndescription: |-\n{block}\n"
            f"---\n{_body(name, description, rng)}",
            encoding="utf-8",
        )
    return destination


# -- in a child process: open the engine as the explorer does, until the first answer -----


def open_child(job: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    from explorer.engine import Config, LiveIndex, decide
    from explorer.engine.inference import EmbeddingCache, load_models

    config = Config(**job["config"])
    cache = EmbeddingCache(job["cache"])
    models = load_models(config, cache)
    live = LiveIndex([job["library"]], config, models, cache)
    decision = decide(job["prompt"], live.snapshot, config)
    answered = time.perf_counter()
    for prompt in job["prompts"]:
        decide(prompt, live.snapshot, config)
    return {
        "open_ms": measure.ms(answered - started),
        "peak_mb": measure.peak_mb(),
        "skills": len(live.snapshot),
        "embedded": live.snapshot.embedded,
        "stage": decision.stage,
    }


async def _drive_ui(job: dict[str, Any]) -> dict[str, Any]:
    """The explorer at 120x40 under Textual's Pilot: load, then type a prompt key by key;
    keystroke -> repainted table for each key (the decision for exactly that text on
    screen), and the process's peak RSS with the UI, the live index and the models."""
    from explorer.bench.soak import until
    from explorer.engine import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory

    started = time.perf_counter()
    app = ExplorerApp(
        [job["library"]],
        Config(**job["config"]),
        cache_dir=job["cache"],
        history=PromptHistory(Path(job["work"]) / "history.txt"),
    )
    samples: list[float] = []
    loaded_ms = 0.0
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            lambda: app.live is not None and app.snapshot is app.live.snapshot,
            "load",
            UI_TIMEOUT_S,
        )
        loaded_ms = measure.ms(time.perf_counter() - started)
        prompt = job["prompt"]
        for count in range(1, len(prompt) + 1):
            typed = prompt[:count]
            key = prompt[count - 1]
            pressed = time.perf_counter()
            await pilot.press(key if key != " " else "space")

            def painted(typed: str = typed, pressed: float = pressed) -> bool:
                return (
                    app.decision is not None
                    and app.decision.prompt == typed
                    and app.state.painted_at > pressed
                )

            await until(painted, "a keystroke painted", 60)
            samples.append(measure.ms(app.state.painted_at - pressed))
    return {"samples": samples, "loaded_ms": loaded_ms, "peak_mb": measure.peak_mb()}


def ui_child(job: dict[str, Any]) -> dict[str, Any]:
    import asyncio

    return asyncio.run(_drive_ui(job))


# -- the rows -----------------------------------------------------------------------------


def bench_save(library: Path, config: Any, models: Any, cache: Any, size: int) -> dict[str, Any]:
    """20 saves 1 s apart into a started live index: latency, seen, CPU between saves."""
    from explorer.engine import LiveIndex

    live = LiveIndex([library], config, models, cache).start()
    try:
        live.wait_for(lambda _: live.rescans >= 2, 120.0)  # the catch-up walk
        directories = sorted(path for path in library.iterdir() if path.is_dir())
        rng = random.Random(size)
        latencies: list[float] = []
        seen = 0
        idle_cpu = idle_wall = 0.0
        for number in range(SAVES):
            path = rng.choice(directories) / "SKILL.md"
            text = path.read_text(encoding="utf-8")
            marker = f"Saved {number} at scale."
            edited = text.replace("description: |-\n", f"description: |-\n  {marker}\n", 1)
            version = live.snapshot.version

            def saved(
                snap: Any, version: int = version, path: str = str(path), marker: str = marker
            ) -> bool:
                return snap.version > version and any(
                    skill.path == path and marker in skill.description
                    for skill in _changed(snap, path)
                )

            started = time.perf_counter()
            path.write_text(edited, encoding="utf-8")
            ok = live.wait_for(saved, 10.0)
            if ok:
                seen += 1
                latencies.append(measure.ms(time.perf_counter() - started))
            cpu, wall = time.process_time(), time.perf_counter()
            time.sleep(SAVE_GAP_S)
            idle_cpu += time.process_time() - cpu
            idle_wall += time.perf_counter() - wall
    finally:
        live.stop()
    limit = _limit(SAVE_LIMIT_MS, size)
    if not latencies:
        return measure.error_row("scale_save", "no save was seen", size=size)
    stats = measure.stats(latencies)
    idle_share = idle_cpu / idle_wall if idle_wall else 0.0
    passed = stats["p95_ms"] <= limit and seen == SAVES and idle_share < 0.05
    return {
        "metric": "scale_save",
        "size": size,
        **stats,
        "target": f"p95 <= {limit:g} ms, {SAVES} of {SAVES} seen, CPU idle between saves",
        "target_value": limit,
        "ratio": stats["p95_ms"] / limit,
        "pass": passed,
        "seen": seen,
        "idle_cpu_share": idle_share,
        "note": (
            f"{seen}/{SAVES} saves seen; backend {live.backend}; CPU between saves "
            f"{100 * idle_share:.1f} % of one core; overflows {live.overflows}"
        ),
    }


def _changed(snap: Any, path: str) -> list[Any]:
    position = next((i for i, p in enumerate(snap.paths) if p == path), None)
    return [] if position is None else [snap.skills[position]]


def bench_open(library: Path, cache: Path, config: Any, work: Path, size: int) -> dict[str, Any]:
    import dataclasses

    from explorer.bench.synthetic import synthetic_prompts

    prompts = synthetic_prompts(21, 11, size)
    job = json.dumps(
        {
            "config": dataclasses.asdict(config),
            "cache": str(cache),
            "library": str(library),
            "prompt": prompts[0],
            "prompts": prompts[1:],
        }
    )
    env = measure.child_env(work / "xdg-cache-open", work / "xdg-config-empty")
    run = measure.run_child([sys.executable, "-m", "explorer.bench.scale"], job, env, work, 1800)
    if run.returncode != 0:
        return measure.error_row("scale_open", f"child exit {run.returncode}: {run.stderr[-300:]}")
    report = measure.last_json_line(run.stdout)
    open_limit, rss_limit = _limit(OPEN_LIMIT_MS, size), _limit(RSS_LIMIT_MB, size)
    return {
        "open": {
            "metric": "scale_open",
            "size": size,
            "value": report["open_ms"],
            "unit": "ms",
            "target": f"<= {open_limit:g} ms (engine side of the explorer, warm cache)",
            **measure.verdict(report["open_ms"], open_limit),
            "note": f"{report['skills']} skills, {report['embedded']} embedded at open",
        },
        "rss": {
            "metric": "scale_rss",
            "size": size,
            "value": report["peak_mb"],
            "unit": "MB",
            "target": f"<= {rss_limit:g} MB (live index + models + 21 decisions; UI extra)",
            **measure.verdict(report["peak_mb"], rss_limit),
            "note": "peak RSS (VmHWM) of the child process",
        },
    }


def bench_ui(library: Path, cache: Path, config: Any, work: Path, size: int) -> dict[str, Any]:
    """The explorer itself in a new process: keystroke -> repaint p95 and its peak RSS."""
    import dataclasses

    job = json.dumps(
        {
            "kind": "ui",
            "config": dataclasses.asdict(config),
            "cache": str(cache),
            "library": str(library),
            "work": str(work),
            "prompt": UI_PROMPT,
        }
    )
    env = measure.child_env(work / "xdg-cache-ui", work / "xdg-config-empty")
    run = measure.run_child(
        [sys.executable, "-m", "explorer.bench.scale"], job, env, work, UI_TIMEOUT_S + 120
    )
    if run.returncode != 0:
        error = f"child exit {run.returncode}: {run.stderr[-300:]}"
        return {
            "keys": measure.error_row("scale_keystroke", error, size=size),
            "rss": measure.error_row("scale_ui_rss", error, size=size),
        }
    report = measure.last_json_line(run.stdout)
    samples = report["samples"]
    stats = measure.stats(samples)
    limit, rss_limit = _limit(KEYSTROKE_LIMIT_MS, size), _limit(RSS_LIMIT_MB, size)
    return {
        "keys": {
            "metric": "scale_keystroke",
            "size": size,
            **stats,
            "target": f"p95 <= {limit:g} ms",
            "target_value": limit,
            "ratio": stats["p95_ms"] / limit,
            "pass": stats["p95_ms"] <= limit,
            "note": (
                f"{len(samples)} keystrokes, Textual Pilot at 120x40 (not tmux), no reranker; "
                f"library loaded in {report['loaded_ms'] / 1000:.1f} s"
            ),
        },
        "rss": {
            "metric": "scale_ui_rss",
            "size": size,
            "value": report["peak_mb"],
            "unit": "MB",
            "target": f"<= {rss_limit:g} MB (the explorer: UI, live index, models)",
            **measure.verdict(report["peak_mb"], rss_limit),
            "note": "peak RSS (VmHWM) of the explorer's process, after typing the prompt",
        },
    }


def lint_child(job: dict[str, Any]) -> dict[str, Any]:
    """`skill-explorer lint --json` in this process (all rules): wall time, peak RSS."""
    import contextlib
    import io

    from explorer.cli import main

    started = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["lint", job["library"], "--cache-dir", job["cache"], "--json"])
    seconds = time.perf_counter() - started
    findings = len(json.loads(out.getvalue())["findings"]) if code in (0, 1) else -1
    return {"code": code, "seconds": seconds, "peak_mb": measure.peak_mb(), "findings": findings}


def bench_lint(library: Path, cache: Path, work: Path, size: int) -> dict[str, Any]:
    """`skill-explorer lint` (all rules) in a new process on a warm cache: time, peak RSS."""
    job = json.dumps({"kind": "lint", "library": str(library), "cache": str(cache)})
    env = measure.child_env(work / "xdg-cache-lint", work / "xdg-config-empty")
    run = measure.run_child([sys.executable, "-m", "explorer.bench.scale"], job, env, work, 1800)
    if run.returncode != 0:
        return measure.error_row("scale_lint", f"child exit {run.returncode}: {run.stderr[-300:]}")
    report = measure.last_json_line(run.stdout)
    if report["code"] not in (0, 1):
        return measure.error_row("scale_lint", f"lint exit {report['code']}", size=size)
    limit = _limit(LINT_LIMIT_S, size)
    seconds, peak_mb = report["seconds"], report["peak_mb"]
    return {
        "metric": "scale_lint",
        "size": size,
        "value": seconds * 1000,
        "unit": "ms",
        "target": f"<= {limit:g} s and <= {LINT_LIMIT_MB / 1024:g} GB",
        "target_value": limit * 1000,
        "ratio": max(seconds / limit, peak_mb / LINT_LIMIT_MB),
        "pass": seconds <= limit and peak_mb <= LINT_LIMIT_MB,
        "peak_mb": peak_mb,
        "note": f"all rules, warm cache; peak RSS {peak_mb:.0f} MB; {report['findings']} findings",
    }


def bench_soak(
    library: Path, cache: Path, config: Any, work: Path, size: int, saves: int
) -> dict[str, dict[str, Any]]:
    """The explorer kept open while an author saves (`bench/soak.py`): memory after 1, 10
    and the last save, save -> repaint, keystrokes during the first lint, loop stalls."""
    from explorer.bench.soak import run_soak

    report = run_soak(library, cache, config, work, saves=saves)
    names = ("save_rss", "ui_save", "lint_keys", "loop_stall", "explorer_rss")
    if "error" in report:
        return {
            name: measure.error_row(f"scale_{name}", report["error"], size=size) for name in names
        }
    rss = report["rss"]
    last = f"save{saves}"
    growth = rss[last] / rss["save1"]
    saves_ms = report["saves"]
    window = max(1, min(20, len(saves_ms) // 5))
    import statistics

    trend = statistics.median(saves_ms[-window:]) / statistics.median(saves_ms[:window])
    save_limit = _limit(UI_SAVE_LIMIT_MS, size)
    save_stats = measure.stats(saves_ms)
    keys = report["keys_in_lint"] or report["keys"]
    key_stats = measure.stats(keys)
    key_limit = _limit(LINT_KEY_P95_MS, size)
    key_max = max(keys)
    stall = max(report["loop_lint_ms"], report["loop_saves_ms"])
    worst_rss = max(rss["open"], rss["lint"], rss[last])
    rss_note = ", ".join(f"{name} {value:.0f}" for name, value in rss.items())
    return {
        "save_rss": {
            "metric": "scale_save_rss",
            "size": size,
            "value": growth,
            "unit": "x",
            "target": f"RSS after save {saves} <= {SOAK_GROWTH:g} x after save 1",
            **measure.verdict(growth, SOAK_GROWTH),
            "rss_mb": rss,
            "note": f"explorer RSS (MB): {rss_note}; {saves} saves, each waited until idle",
        },
        "ui_save": {
            "metric": "scale_ui_save",
            "size": size,
            **save_stats,
            "trend": trend,
            "target": f"p95 <= {save_limit:g} ms, last/first median <= {SOAK_TREND:g}",
            "target_value": save_limit,
            "ratio": max(save_stats["p95_ms"] / save_limit, trend / SOAK_TREND),
            "pass": save_stats["p95_ms"] <= save_limit and trend <= SOAK_TREND,
            "note": (
                f"write -> repainted table in the explorer, {len(saves_ms)} saves; median of "
                f"the last {window} / first {window}: {trend:.2f}; {_slowest(report)}"
            ),
        },
        "lint_keys": {
            "metric": "scale_lint_keys",
            "size": size,
            **key_stats,
            "max_ms": key_max,
            "target": f"p95 <= {key_limit:g} ms, none over {LINT_KEY_MAX_MS:g} ms",
            "target_value": key_limit,
            "ratio": max(key_stats["p95_ms"] / key_limit, key_max / LINT_KEY_MAX_MS),
            "pass": key_stats["p95_ms"] <= key_limit and key_max <= LINT_KEY_MAX_MS,
            "note": (
                f"keystroke -> repaint while the first lint ran ({len(report['keys_in_lint'])} "
                f"of {len(report['keys'])} keys); lint ended {report['lint_s']:.1f} s after load"
            ),
        },
        "loop_stall": {
            "metric": "scale_loop_stall",
            "size": size,
            "value": stall,
            "unit": "ms",
            "target": f"<= {LOOP_STALL_MS:g} ms",
            **measure.verdict(stall, LOOP_STALL_MS),
            "cpu_ms": {
                "lint": report.get("loop_lint_cpu_ms"),
                "saves": report.get("loop_saves_cpu_ms"),
            },
            "note": (
                f"the event loop's longest stall: {report['loop_lint_ms']:.0f} ms during the "
                f"first lint, {report['loop_saves_ms']:.0f} ms over the saves; the most CPU "
                f"its thread used in one stretch: {report.get('loop_lint_cpu_ms', 0):.0f} / "
                f"{report.get('loop_saves_cpu_ms', 0):.0f} ms{_dumped(report)}"
            ),
        },
        "explorer_rss": {
            "metric": "scale_explorer_rss",
            "size": size,
            "value": worst_rss,
            "unit": "MB",
            "target": f"<= {EXPLORER_RSS_MB:g} MB after open, first lint and save {saves}",
            **measure.verdict(worst_rss, EXPLORER_RSS_MB),
            "note": f"RSS (MB): {rss_note}; peak {report['peak_mb']:.0f}",
        },
    }


def _dumped(report: dict[str, Any]) -> str:
    """Where to read the stacks of the soak's long stalls, if it had any."""
    from explorer.bench.soak import LoopWatch

    count = report.get("stall_dumps", 0)
    if not count:
        return ""
    over = LoopWatch.DUMP_AFTER_S * 1000
    return f"; {count} stalls over {over:.0f} ms, every thread's stack in {report['stall_file']}"


def _slowest(report: dict[str, Any]) -> str:
    """Where the slowest save of the soak lost its time: before its snapshot existed (the
    live index's thread) or after (the decision and the paint)."""
    saves, made = report["saves"], report.get("snapshot_ms") or []
    if not saves or len(made) != len(saves):
        return "no split of the slowest save"
    worst = max(range(len(saves)), key=saves.__getitem__)
    return (
        f"slowest, save {worst + 1}: {saves[worst]:.0f} ms, its snapshot made after "
        f"{made[worst]:.0f} ms"
    )


def bench_cold_index(
    library: Path, work: Path, size: int, floor_ms: float | None
) -> dict[str, Any]:
    """`skill-explorer index` on an empty cache, in a new process: the whole cold build."""
    import shutil

    cache = work / f"cold-index-{size}"
    shutil.rmtree(cache, ignore_errors=True)
    env = measure.child_env(work / "xdg-cache-cold", work / "xdg-config-empty")
    args = [sys.executable, "-m", "explorer", "index", str(library), "--cache-dir", str(cache)]
    run = measure.run_child(args, "", env, work, 3600)
    shutil.rmtree(cache, ignore_errors=True)
    if run.returncode != 0:
        return measure.error_row("scale_cold_index", f"exit {run.returncode}: {run.stderr[-300:]}")
    from explorer.engine.base import batch_workers

    row: dict[str, Any] = {
        "metric": "scale_cold_index",
        "size": size,
        "value": run.ms,
        "unit": "ms",
        "cores": batch_workers(),
        "note": f"`index` on an empty cache, {batch_workers()} cores",
    }
    if floor_ms is not None:
        row["floor_ratio"] = run.ms / floor_ms
        row["note"] += f"; {run.ms / floor_ms:.2f} x the embedding floor of its descriptions"
    limit = COLD_INDEX_LIMIT_S[2300] if size <= 2300 else None
    if limit is None:
        row.update(target="none set above 2,300 skills", ratio=None)
        row["pass"] = True
    else:
        row["target"] = f"<= {limit:g} s (idle machine)"
        row.update(measure.verdict(run.ms, limit * 1000))  # in the row's unit, ms
    return row


def scale_meta(config: Any, started: float) -> dict[str, Any]:
    import platform

    from explorer.engine.base import cpu_count, dense_model

    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": cpu_count(),
        "onnxruntime": measure.package_version("onnxruntime"),
        "bm25s": measure.package_version("bm25s"),
        "model": dense_model(config),
        "load_average": list(load),
        "elapsed_s": time.perf_counter() - started,
    }


def run_scale_bench(
    config: Any,
    sizes: Sequence[int] = SCALE_SIZES,
    *,
    corpus: str | None = None,
    work_dir: Path | None = None,
    cache_dir: str | None = None,
    hook_repeats: int = 15,
    build_all: bool = False,
    soak_saves: int = 100,
) -> dict[str, dict[str, Any]]:
    """The scale rows, keyed `scale_<row>@<size>`: each size's library written, built and
    warmed; then the hook at every size in one series; then the rest, size by size."""
    import tempfile

    from explorer.bench.bm25_26k import bench_bm25
    from explorer.bench.hook_cold import bench_hook_cold
    from explorer.bench.index_build import bench_index_build
    from explorer.engine.index import open_index
    from explorer.engine.inference import EmbeddingCache, load_models

    work = Path(work_dir or tempfile.mkdtemp(prefix="explorer-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    source = Path(corpus) if corpus else find_corpus()
    records = corpus_records(source) if source else synthetic_records(max(sizes))
    origin = f"corpus {source}" if source else "synthetic descriptions"
    quiet = config.replace(reranker="off")
    rows: dict[str, dict[str, Any]] = {}
    libraries: dict[int, tuple[Path, Path]] = {}  # size -> (skills dir, XDG_CACHE_HOME)
    cache_paths: dict[int, Path] = {}
    warm_ms: dict[int, float] = {}
    for size in sorted(sizes):
        library = work / f"lib-{size}"
        if not library.is_dir():
            write_library(records, library, size)
        xdg = work / f"xdg-cache-{size}"
        cache_path = Path(cache_dir) if cache_dir else xdg / "skill-explorer"
        cache = EmbeddingCache(cache_path)
        models = load_models(quiet, cache)
        if size <= BUILD_LIMIT or build_all:
            fresh = work / f"build-cache-{size}"
            shutil.rmtree(fresh, ignore_errors=True)
            build_cache = EmbeddingCache(fresh)
            row = bench_index_build(library, quiet, models, build_cache)
            build_cache.close()
            shutil.rmtree(fresh, ignore_errors=True)
            if "value" in row:
                floor = row["baseline"]["value"]
                row.update(measure.verdict(row["value"], BUILD_FACTOR * floor))
                row["target"] = f"<= {BUILD_FACTOR} x the embedding floor per skill"
            row["metric"] = "scale_build"
            rows[f"scale_build@{size}"] = row
            floor = row.get("baseline", {}).get("value")
            rows[f"scale_cold_index@{size}"] = bench_cold_index(
                library, work, size, floor * size if floor else None
            )
        else:
            rows[f"scale_build@{size}"] = {
                "metric": "scale_build",
                "size": size,
                "pass": False,
                "error": "not run",
                "note": f"cold build above {BUILD_LIMIT} skills runs only with --scale-build-all",
            }
        started = time.perf_counter()
        open_index([str(library)], quiet, models, cache)  # the warm cache and the store
        warm_ms[size] = measure.ms(time.perf_counter() - started)
        cache.close()
        if xdg / "skill-explorer" != cache_path and not (xdg / "skill-explorer").exists():
            xdg.mkdir(parents=True, exist_ok=True)  # the hook's cache is XDG_CACHE_HOME's
            (xdg / "skill-explorer").symlink_to(cache_path.resolve(), target_is_directory=True)
        libraries[size] = (library, xdg)
        cache_paths[size] = cache_path
    # One series for every size, interleaved with one floor: two floors measured apart in
    # one run differed by up to 15 %, more than the margin a ratio is judged by.
    hook = bench_hook_cold(libraries, work, repeats=hook_repeats)
    for size, (library, _xdg) in libraries.items():
        row = hook[f"hook_cold@{size}"]
        if "baseline" in row and "median_ms" in row:
            factor = _limit(HOOK_LIMITS, size)
            row.update(measure.verdict(row["median_ms"], factor * row["baseline"]["median_ms"]))
            row["target"] = f"<= {factor} x the floor (bare python + onnxruntime, same models)"
        row["metric"] = "scale_hook"
        row["note"] = f"{row.get('note', '')}; {origin}; warm-up index {warm_ms[size]:.0f} ms"
        rows[f"scale_hook@{size}"] = row
        cache_path = cache_paths[size]
        cache = EmbeddingCache(cache_path)
        models = load_models(quiet, cache)
        rows[f"scale_save@{size}"] = bench_save(library, quiet, models, cache, size)
        opened = bench_open(library, cache_path, quiet, work, size)
        if "open" in opened:
            rows[f"scale_open@{size}"] = opened["open"]
            rows[f"scale_rss@{size}"] = opened["rss"]
        else:
            rows[f"scale_open@{size}"] = opened
        soak = bench_soak(library, cache_path, quiet, work, size, soak_saves)
        for name, row in soak.items():
            rows[f"scale_{name}@{size}"] = row
        ui = bench_ui(library, cache_path, quiet, work, size)
        rows[f"scale_keystroke@{size}"] = ui["keys"]
        rows[f"scale_ui_rss@{size}"] = ui["rss"]
        rows[f"scale_lint@{size}"] = bench_lint(library, cache_path, work, size)
        bm25 = bench_bm25(size, 100)
        bm25["metric"] = "scale_bm25"
        rows[f"scale_bm25@{size}"] = bm25
        cache.close()
    for row in rows.values():
        row.setdefault("note", "")
    return rows


if __name__ == "__main__":  # the open/RSS child, or the explorer's (`ui`)
    job = json.load(sys.stdin)
    from explorer.bench.soak import soak_child

    child = {"ui": ui_child, "lint": lint_child, "soak": soak_child}.get(
        job.get("kind", ""), open_child
    )
    print(json.dumps(child(job)))
    sys.stdout.flush()
    os._exit(0)
