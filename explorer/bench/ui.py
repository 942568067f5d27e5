"""UI benchmarks (`bench --only ui`): keystroke -> repainted table, F2 -> the editor's first
frame, a filter keystroke -> the filtered table, and start -> first frame.

The libraries are real skills: the first N of the large corpus (`benchmarks/libraries/
openclaw-large/skills.jsonl`, 2,289 skills) written as SKILL.md files the way the scale
bench writes them (explorer/bench/scale.py); synthetic skills only when the checkout has
no corpus. Every timing is wall time on whatever machine runs it: on a loaded machine,
read the ratios between sizes of one run, and the load average printed beside them.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from explorer.bench import measure
from explorer.bench.scale import corpus_records, find_corpus, write_library
from explorer.bench.soak import until
from explorer.bench.synthetic import generate_library
from explorer.engine import Config
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory
from explorer.tui.screens import ThresholdEditor
from explorer.tui.widgets.skills_table import SkillsTable

UI_SIZES = (100, 1000, 2300)
TARGET_P95_MS = {100: 50.0, 1000: 80.0, 2300: 120.0}  # keystroke -> repaint
F2_OPEN_TARGET_MS = 100.0
FILTER_TARGET_MS = 50.0
PROMPT = "merge the quarterly pdf reports into one deck"
FILTER = "pdf merge"
F2_OPENS = 5
TIMEOUT_S = 300.0


async def _session(root: Path, config: Config, work: Path) -> dict[str, Any]:
    app = ExplorerApp(
        [str(root)],
        config,
        cache_dir=str(work / "cache"),
        history=PromptHistory(work / "history.txt"),
    )
    keystrokes: list[float] = []
    opens: list[float] = []
    filtering: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            lambda: app.live is not None and app.snapshot is app.live.snapshot, "load", TIMEOUT_S
        )
        # keystroke -> the table repainted with that prompt's decision
        for count in range(1, len(PROMPT) + 1):
            typed = PROMPT[:count]
            started = time.perf_counter()

            def painted(typed: str = typed, started: float = started) -> bool:
                return (
                    app.decision is not None
                    and app.decision.prompt == typed
                    and app.state.painted_at > started
                )

            await pilot.press(PROMPT[count - 1] if PROMPT[count - 1] != " " else "space")
            await until(painted, "a keystroke painted", TIMEOUT_S)
            keystrokes.append((app.state.painted_at - started) * 1000)
        await pilot.pause(0.3)  # the panels catch up
        # F2 -> the threshold editor's first frame; esc, and again
        for _ in range(F2_OPENS):
            started = time.perf_counter()

            def opened(started: float = started) -> bool:
                return isinstance(app.screen, ThresholdEditor) and app.screen.painted_at > started

            await pilot.press("f2")
            await until(opened, "F2 painted", TIMEOUT_S)
            screen = app.screen
            assert isinstance(screen, ThresholdEditor)
            opens.append((screen.painted_at - started) * 1000)
            await pilot.press("escape")
            await pilot.pause(0.2)
        # a filter keystroke -> the table filtered and repainted
        await pilot.press("ctrl+f")
        table = app.query_one(SkillsTable)
        for count in range(1, len(FILTER) + 1):
            typed = FILTER[:count]
            started = time.perf_counter()

            def filtered(typed: str = typed, started: float = started) -> bool:
                return table.filter_text == typed and table.filtered_at > started

            await pilot.press(FILTER[count - 1] if FILTER[count - 1] != " " else "space")
            await until(filtered, "the table filtered", TIMEOUT_S)
            filtering.append((table.filtered_at - started) * 1000)
    return {
        "keystrokes": keystrokes,
        "f2_opens": opens,
        "filter": filtering,
        "first_paint": app.state.first_paint_ms or 0.0,
    }


def _import_ms() -> float:
    """A new process importing the app module: what a user waits for before the window."""
    done = subprocess.run(
        [sys.executable, "-m", "explorer.bench.app_import"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def _load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def _library(work: Path, size: int, corpus: Path | None) -> tuple[Path, str]:
    if corpus is not None:
        records = corpus_records(corpus)
        root = write_library(records, work / f"lib-{size}", size)
        kind = "real skills" if size <= len(records) else "real skills, some repeated"
        return root, f"{kind} from {corpus.parent.name}"
    return generate_library(work / f"lib-{size}", size), "synthetic skills (no corpus)"


def _row(
    metric: str, size: int, samples: list[float], target: float | None, note: str
) -> dict[str, Any]:
    p95 = float(np.percentile(samples, 95))
    return {
        "metric": metric,
        "size": size,
        "median_ms": statistics.median(samples),
        "p95_ms": p95,
        "n": len(samples),
        "target": f"p95 <= {target:g} ms" if target else "no target at this size",
        "target_value": target,
        "ratio": p95 / target if target else None,
        "pass": p95 <= target if target else True,
        "note": note,
    }


def run_ui_bench(
    sizes: tuple[int, ...],
    config: Config,
    *,
    corpus: str | None = None,
    work_dir: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Rows in the same shape as the engine bench's, for the same report."""
    config = config.replace(reranker="off")
    source = Path(corpus) if corpus else find_corpus()
    rows: dict[str, dict[str, Any]] = {}
    first_paints: list[float] = []
    with tempfile.TemporaryDirectory(prefix="explorer-ui-bench-") as name:
        work = work_dir or Path(name)
        for size in sizes:
            root, kind = _library(work, size, source)
            with measure.own_state(work / "xdg-state"):
                result = asyncio.run(_session(root, config, work / f"run-{size}"))
            first_paints.append(result["first_paint"])
            where = f"{size} {kind}, no reranker, Pilot at 120x40; {_load()}"
            rows[f"ui_keystroke@{size}"] = _row(
                "ui_keystroke",
                size,
                result["keystrokes"],
                TARGET_P95_MS.get(size),
                f"{len(result['keystrokes'])} keystrokes; {where}",
            )
            rows[f"ui_f2_open@{size}"] = _row(
                "ui_f2_open",
                size,
                result["f2_opens"],
                F2_OPEN_TARGET_MS,
                f"F2 pressed -> the editor's first frame, {F2_OPENS} opens; {where}",
            )
            rows[f"ui_filter_keystroke@{size}"] = _row(
                "ui_filter_keystroke",
                size,
                result["filter"],
                FILTER_TARGET_MS,
                f"typing {FILTER!r} in the filter -> the table repainted; {where}",
            )
    imports = _import_ms()
    rows["ui_first_paint"] = {
        "metric": "ui_first_paint",
        "value": imports + statistics.median(first_paints),
        "unit": "ms",
        "target": "about 0.5 s",
        "target_value": 500.0,
        "ratio": (imports + statistics.median(first_paints)) / 500.0,
        "pass": imports + statistics.median(first_paints) <= 500.0,
        "note": (
            f"importing the app {imports:.0f} ms + app start to first frame "
            f"{statistics.median(first_paints):.0f} ms; the library and models load after it"
        ),
    }
    return rows
