"""soak: the explorer kept open on a library while an author saves one skill after another.

One child process runs the explorer under Textual's Pilot (120x40, headless) on a copy of
the scale bench's library and measures, in this order:

* RSS once the live index is in (`open`);
* the prompt typed key by key while the first lint runs, again and again until it ends:
  keystroke -> repainted table for each key, and the longest stall of the event loop
  (an asyncio task that asks to wake every 5 ms and records how late it woke; the stacks
  of every thread during a stall over 250 ms go to `soak-stalls-<library>.txt`);
* RSS once the first lint has ended (`lint`);
* `SAVES` saves, `SAVE_GAP_S` apart, each a new first line of a random skill's
  description: write -> the table repainted with the decision on the snapshot that holds
  it. The background work (lint, cases) runs as it does for an author who saves faster
  than a lint of 26,000 skills ends: one at a time, the newest snapshot waiting. After
  save 1, 10 and 100 it is left to end and the RSS is read; and the event loop's
  longest stall over all of the saves.

Every file the saves edited is written back as it was at the end.
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from explorer.bench import measure

SAVES = 100
RSS_AFTER = (1, 10, 100)
SAVE_GAP_S = 1.0  # between a save's repaint and the next save
TICK_S = 0.005  # the event-loop watchdog's period
TIMEOUT_S = 900.0
PROMPT = "merge the quarterly pdf reports into one deck"
MAX_KEYS = 600  # keystrokes while the first lint runs, at most
_MARKER = re.compile(r"(description: \|-\n)(  Saved edit \d+[^\n]*\n)?")


def rss_mb() -> float:
    """This process's resident set now (VmRSS), in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return measure.peak_mb()  # pragma: no cover - not Linux


class LoopWatch:
    """How late the event loop wakes a task that sleeps `TICK_S`: the longest time any
    callback (a repaint, a message handler, anything holding the GIL) kept it busy.

    Also the most CPU the event loop's thread used between two wakes (`worst_cpu_ms`): on
    a shared machine a late wake can be the system's scheduler alone, while the loop's own
    CPU in one stretch is its work, whatever the load.

    After `keep_stacks(path)`, a stall appends every thread's stack to that file while it
    lasts (faulthandler's own thread writes it, needing no GIL), so a rare long stall
    names whoever held the loop or the GIL instead of leaving a number. The watchdog is
    re-armed every `REARM_S` for `DUMP_AFTER_S + REARM_S`: every stall it writes has
    lasted `DUMP_AFTER_S` at least, and none that lasts `REARM_S` longer escapes it."""

    DUMP_AFTER_S = 0.25
    REARM_S = 0.05  # re-arming starts a thread; a tick's worth would be 200 a second

    def __init__(self) -> None:
        self.worst_ms = 0.0
        self.worst_cpu_ms = 0.0
        self.cpu_ms = 0.0  # worst_cpu_ms up to the last reset
        self._task: asyncio.Task[None] | None = None
        self._dump: TextIO | None = None

    def keep_stacks(self, path: Path) -> None:
        self._dump = path.open("w", encoding="utf-8")

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> float:
        """The longest stall since the last reset (wall ms); its CPU is then `cpu_ms`."""
        worst, self.worst_ms = self.worst_ms, 0.0
        self.cpu_ms, self.worst_cpu_ms = self.worst_cpu_ms, 0.0
        return worst

    async def _run(self) -> None:
        armed = 0.0
        while True:
            asked, cpu = time.perf_counter(), time.thread_time()
            if self._dump is not None and asked - armed >= self.REARM_S:
                timeout = self.DUMP_AFTER_S + self.REARM_S
                faulthandler.dump_traceback_later(timeout, file=self._dump)
                armed = asked
            await asyncio.sleep(TICK_S)
            late = (time.perf_counter() - asked - TICK_S) * 1000
            self.worst_ms = max(self.worst_ms, late)
            self.worst_cpu_ms = max(self.worst_cpu_ms, (time.thread_time() - cpu) * 1000)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._dump is not None:
            faulthandler.cancel_dump_traceback_later()
            self._dump.close()
            self._dump = None


def stall_dumps(path: Path) -> int:
    """How many stalls over `LoopWatch.DUMP_AFTER_S` the file at `path` holds stacks of."""
    if not path.is_file():
        return 0
    return path.read_text(encoding="utf-8", errors="replace").count("Timeout (")


async def until(condition: Callable[[], bool], what: str, timeout_s: float = TIMEOUT_S) -> None:
    """Poll `condition` with a plain sleep; every bench that drives the explorer waits with
    it. Not Pilot's pause: each one posts a callback to every widget and forces a
    compositor update, and polled every 2 ms that was most of the event loop's work (at
    26,000 skills, about 100 times the explorer's own CPU on the main thread over the
    saves), measured as the explorer's stalls, save times and keystrokes."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the explorer never got there: {what}")
        await asyncio.sleep(0.002)


def _edited(text: str, number: int, run: str = "") -> str:
    """The description with a new first line. `run` names the soak run: a file left edited
    by an interrupted run holds "Saved edit N" already, and the same line written again
    would change nothing (no re-index, no embedding) while it counted as a save."""
    line = f"  Saved edit {number}{run}: merges quarterly pdf reports into one deck.\n"
    return _MARKER.sub(lambda match: match.group(1) + line, text, count=1)


async def _soak(job: dict[str, Any]) -> dict[str, Any]:
    from explorer.engine import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory

    library = Path(job["library"])
    app = ExplorerApp(
        [str(library)],
        Config(**job["config"]),
        cache_dir=job["cache"],
        history=PromptHistory(Path(job["work"]) / "soak-history.txt"),
    )
    dumps = Path(job["work"]) / f"soak-stalls-{library.name}.txt"  # LoopWatch.keep_stacks
    watch = LoopWatch()
    report: dict[str, Any] = {
        "keys": [],
        "keys_in_lint": [],
        "saves": [],
        "snapshot_ms": [],
        "rss": {},
    }
    originals: dict[Path, str] = {}
    # Listed before the explorer opens: 26,000 directories' stat calls on the event loop
    # would be counted as the explorer's stall over the saves.
    directories = sorted(path for path in library.iterdir() if path.is_dir())
    rng = random.Random(len(directories))
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            watch.start()
            started = time.perf_counter()
            await until(lambda: app.live is not None and app.snapshot is app.live.snapshot, "load")
            report["loaded_s"] = time.perf_counter() - started
            report["rss"]["open"] = rss_mb()
            watch.reset()
            watch.keep_stacks(dumps)  # the stalls the rows count, from here on
            # Keystrokes while the first lint runs: the prompt, typed and erased in turn.
            typed = ""
            passes = 0
            erasing = False
            while len(report["keys"]) < MAX_KEYS and (app.background_busy or passes == 0):
                if erasing:
                    key, typed = "backspace", typed[:-1]
                    erasing = len(typed) > 1
                else:
                    key = PROMPT[len(typed)]
                    typed += key
                    if typed == PROMPT:
                        passes, erasing = passes + 1, True
                busy = app.background_busy
                pressed = time.perf_counter()
                await pilot.press("space" if key == " " else key)

                def shown(typed: str = typed, pressed: float = pressed) -> bool:
                    return (
                        app.decision is not None
                        and app.decision.prompt == typed
                        and app.state.painted_at > pressed
                    )

                await until(shown, "a keystroke painted")
                latency = measure.ms(app.state.painted_at - pressed)
                report["keys"].append(latency)
                if busy:
                    report["keys_in_lint"].append(latency)
            report["loop_lint_ms"] = watch.reset()
            await until(lambda: not app.background_busy, "the first lint")
            report["lint_s"] = time.perf_counter() - started - report["loaded_s"]
            cpu_ms = watch.cpu_ms
            report["loop_lint_ms"] = max(report["loop_lint_ms"], watch.reset())
            report["loop_lint_cpu_ms"] = max(cpu_ms, watch.cpu_ms)
            await asyncio.sleep(SAVE_GAP_S)
            report["rss"]["lint"] = rss_mb()
            run = f" of run {time.time_ns():x}"  # every save a text never seen
            for number in range(1, job["saves"] + 1):
                path = rng.choice(directories) / "SKILL.md"
                text = path.read_text(encoding="utf-8")
                originals.setdefault(path, text)
                assert app.snapshot is not None
                version = app.snapshot.version
                written, written_wall = time.perf_counter(), time.time()
                # The author's editor writes the file, not the explorer: a write the file
                # system holds up must not count as the explorer's stall.
                await asyncio.to_thread(path.write_text, _edited(text, number, run), "utf-8")

                def painted(version: int = version, written: float = written) -> bool:
                    return (
                        app.snapshot is not None
                        and app.snapshot.version > version
                        and app.state.painted_on is app.snapshot
                        and app.state.painted_at > written
                    )

                await until(painted, f"save {number} painted")
                report["saves"].append(measure.ms(app.state.painted_at - written))
                # Of that, the part before the live index's thread made the snapshot (the
                # rest is the decision and the paint): where a slow save lost its time.
                report["snapshot_ms"].append(measure.ms(app.snapshot.built_at - written_wall))
                if number in RSS_AFTER or number == job["saves"]:
                    await until(lambda: not app.background_busy, "the saves' lint")
                    await asyncio.sleep(SAVE_GAP_S)
                    report["rss"][f"save{number}"] = rss_mb()
                else:
                    await asyncio.sleep(job.get("gap_s", SAVE_GAP_S))
            report["loop_saves_ms"] = watch.reset()
            report["loop_saves_cpu_ms"] = watch.cpu_ms
            report["peak_mb"] = measure.peak_mb()
            report["skills"] = len(app.snapshot) if app.snapshot is not None else 0
            watch.stop()
            report["stall_dumps"] = stall_dumps(dumps)
            report["stall_file"] = str(dumps)
    finally:
        watch.stop()
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
    return report


def soak_child(job: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(_soak(job))


def run_soak(
    library: Path,
    cache: Path,
    config: Any,
    work: Path,
    *,
    saves: int = SAVES,
    gap_s: float = SAVE_GAP_S,
) -> dict[str, Any]:
    """The child's report, or {"error": ...}."""
    import dataclasses

    job = json.dumps(
        {
            "kind": "soak",
            "config": dataclasses.asdict(config),
            "cache": str(cache),
            "library": str(library),
            "work": str(work),
            "saves": saves,
            "gap_s": gap_s,
        }
    )
    env = measure.child_env(work / "xdg-cache-soak", work / "xdg-config-empty")
    run = measure.run_child(
        [sys.executable, "-m", "explorer.bench.scale"], job, env, work, 3 * TIMEOUT_S
    )
    if run.returncode != 0:
        return {"error": f"child exit {run.returncode}: {run.stderr[-400:]}"}
    report: dict[str, Any] = measure.last_json_line(run.stdout)
    return report
