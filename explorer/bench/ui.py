"""UI benchmarks (`bench --only ui`): keystroke -> repainted table, start -> first frame."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from explorer.bench.synthetic import generate_library
from explorer.engine.config import Config
from explorer.tui.app import ExplorerApp
from explorer.tui.history import PromptHistory

TARGET_P95_MS = {100: 50.0, 1000: 120.0}
PROMPT = "merge the quarterly pdf reports into one deck"
TIMEOUT_S = 120.0


async def _keystrokes(root: Path, config: Config, work: Path) -> tuple[list[float], float]:
    app = ExplorerApp(
        [str(root)],
        config,
        cache_dir=str(work / "cache"),
        history=PromptHistory(work / "history.txt"),
    )
    samples: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        deadline = time.monotonic() + TIMEOUT_S
        while app.live is None or app.snapshot is not app.live.snapshot:
            if time.monotonic() > deadline:
                raise TimeoutError("the library did not load")
            await pilot.pause(0.05)
        for count in range(1, len(PROMPT) + 1):
            typed = PROMPT[:count]
            started = time.perf_counter()
            await pilot.press(PROMPT[count - 1] if PROMPT[count - 1] != " " else "space")
            while not (
                app.decision is not None
                and app.decision.prompt == typed
                and app.painted_at > started
            ):
                await pilot.pause(0.001)
            samples.append((app.painted_at - started) * 1000)
    return samples, app.first_paint_ms or 0.0


def _import_ms() -> float:
    """A new process importing the app module: what a user waits for before the window."""
    done = subprocess.run(
        [sys.executable, "-m", "explorer.bench.app_import"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def run_ui_bench(sizes: tuple[int, ...], config: Config) -> dict[str, dict[str, Any]]:
    """Rows in the same shape as the engine bench's, for the same report."""
    config = config.replace(reranker="off")
    rows: dict[str, dict[str, Any]] = {}
    first_paints: list[float] = []
    with tempfile.TemporaryDirectory(prefix="explorer-ui-bench-") as name:
        work = Path(name)
        for size in sizes:
            root = generate_library(work / f"lib-{size}", size)
            samples, first_paint = asyncio.run(_keystrokes(root, config, work / f"run-{size}"))
            first_paints.append(first_paint)
            p95 = float(np.percentile(samples, 95))
            target = TARGET_P95_MS.get(size)
            rows[f"ui_keystroke@{size}"] = {
                "metric": "ui_keystroke",
                "size": size,
                "median_ms": statistics.median(samples),
                "p95_ms": p95,
                "n": len(samples),
                "target": f"p95 <= {target:g} ms" if target else "no target at this size",
                "target_value": target,
                "ratio": p95 / target if target else None,
                "pass": p95 <= target if target else True,
                "note": f"{size} skills, {len(samples)} keystrokes, no reranker, Pilot at 120x40",
            }
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
