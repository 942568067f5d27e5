"""The explorer kept open while an author saves: memory stays flat.

The bench's own child (`explorer.bench.soak`) runs the explorer under Pilot in a new
process on a generated library, with the default dense model: the first lint, then 100
saves, each a new description line of a random skill, with lint and the cases re-run
behind them one at a time. Its RSS after the 100th save is within 10 % of its RSS after
the first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.bench.scale import synthetic_records, write_library
from explorer.bench.soak import LoopWatch, _edited, run_soak, stall_dumps
from explorer.engine.base.config import Config


def test_an_edit_replaces_the_line_of_the_last_one() -> None:
    text = "---\nname: x\ndescription: |-\n  Merges pdf files.\n---\n# x\n"
    once = _edited(text, 1)
    assert "  Saved edit 1: " in once and "Merges pdf files." in once
    twice = _edited(once, 2)
    assert "Saved edit 1" not in twice and "  Saved edit 2: " in twice
    assert twice.count("Saved edit") == 1


async def test_the_loop_watch_sees_a_blocked_event_loop() -> None:
    import asyncio
    import time

    watch = LoopWatch()
    watch.start()
    await asyncio.sleep(0.02)
    time.sleep(0.12)  # a callback that holds the loop
    await asyncio.sleep(0.02)
    watch.stop()
    assert watch.reset() >= 100
    assert watch.cpu_ms < 100  # a sleep holds the loop but uses no CPU


def _holds_the_loop(seconds: float) -> None:
    import time

    time.sleep(seconds)


async def test_a_long_stall_leaves_every_threads_stack(tmp_path: Path) -> None:
    """A stall past DUMP_AFTER_S is written down while it lasts, naming what held the loop;
    short stalls write nothing."""
    import asyncio

    dumps = tmp_path / "stalls.txt"
    watch = LoopWatch()
    watch.keep_stacks(dumps)
    watch.start()
    await asyncio.sleep(0.02)
    _holds_the_loop(0.05)
    await asyncio.sleep(0.1)
    assert stall_dumps(dumps) == 0
    _holds_the_loop(LoopWatch.DUMP_AFTER_S + 0.15)
    await asyncio.sleep(0.02)
    watch.stop()
    assert stall_dumps(dumps) == 1
    assert "_holds_the_loop" in dumps.read_text(encoding="utf-8")


def test_the_stall_row_names_the_file_of_stacks(tmp_path: Path) -> None:
    from explorer.bench.scale import _dumped

    stacks = str(tmp_path / "soak-stalls-lib-26000.txt")
    assert _dumped({"stall_dumps": 0, "stall_file": stacks}) == ""
    note = _dumped({"stall_dumps": 2, "stall_file": stacks})
    assert note.startswith("; 2 stalls over 250 ms") and note.endswith(stacks)


async def test_the_loop_watch_counts_the_loops_own_cpu() -> None:
    """The CPU the loop's thread spent in one stretch: its own work, not the scheduler's."""
    import asyncio
    import time

    watch = LoopWatch()
    watch.start()
    await asyncio.sleep(0.02)
    spent = time.thread_time()
    while time.thread_time() - spent < 0.12:  # a callback that computes
        pass
    await asyncio.sleep(0.02)
    watch.stop()
    assert watch.reset() >= 100
    assert watch.cpu_ms >= 100


@pytest.mark.slow  # ~1-2 minutes: a cold build of 400 descriptions, a lint, 100 saves
def test_explorer_memory_is_flat_over_100_saves(tmp_path: Path) -> None:
    library = write_library(synthetic_records(400, seed=4), tmp_path / "skills", 400)
    config = Config().replace(reranker="off")
    report = run_soak(library, tmp_path / "cache", config, tmp_path, saves=100, gap_s=0.05)
    assert "error" not in report, report.get("error")
    rss = report["rss"]
    assert len(report["saves"]) == 100
    assert rss["save100"] <= 1.10 * rss["save1"], rss
