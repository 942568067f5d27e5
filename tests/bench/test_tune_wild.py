"""The tune-over-the-wild-corpus report (explorer/bench/tune_wild.py): what counts as a
raise, and the table written between its markers in docs/tune.md, the rest kept."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from explorer.bench.tune_wild import BEGIN, COMMAND, END, Row, table, write_report

COUNTS = {"skills": 3, "readable": 3, "missing": 2, "held_missing": 2}


def _row(folder: str, after: int, fi_after: int = 0, steals: int = 0) -> Row:
    return Row(folder, folder, 4, 1, after, 0, fi_after, 0, steals, 1.0, False, "edit", 3, 1.0)


def test_a_raise_needs_no_new_false_injection_and_no_steal() -> None:
    assert _row("a", 2).raised
    assert not _row("a", 1).raised
    assert not _row("a", 2, fi_after=1).raised
    assert not _row("a", 2, steals=1).raised


def test_the_table_goes_between_its_markers(tmp_path: Path) -> None:
    lines = table([_row("a", 2), _row("b", 1)], COUNTS)
    text = "\n".join(lines)
    assert lines[0] == BEGIN and lines[-1] == END and COMMAND in BEGIN
    assert "raises held-out recall for 1 of 2" in text
    assert "| `a` | 1/4 → 2/4 ✔ |" in text and "| `b` | 1/4 → 1/4 |" in text
    doc = tmp_path / "tune.md"
    doc.write_text(f"# Title\n\nbefore\n\n{BEGIN}\nold\n{END}\n\nafter\n", encoding="utf-8")
    write_report(doc, lines)
    written = doc.read_text(encoding="utf-8")
    assert "old" not in written and written.startswith("# Title\n\nbefore\n\n")
    assert written.endswith(f"{END}\n\nafter\n") and text in written
    write_report(doc, lines)  # again: the same file
    assert doc.read_text(encoding="utf-8") == written


def test_the_table_says_where_the_missed_prompts_stood_when_every_row_kept_it() -> None:
    kept = [
        dataclasses.replace(_row("a", 2), missed_first=2, missed_outranked=1, missed_absent=0),
        dataclasses.replace(_row("b", 1), missed_first=0, missed_outranked=1, missed_absent=2),
    ]
    text = "\n".join(table(kept, COUNTS))
    assert (
        "of the 6 held-out should-trigger prompts the default misses, 2 have the skill first "
        "among the relevance model's candidates but under its bar, 2 have another candidate "
        "more probable, and 2 do not have it among the candidates." in text
    )
    # A rows file written before these were kept: no such line rather than a wrong one.
    assert "held-out should-trigger prompts the default misses" not in "\n".join(
        table([kept[0], _row("b", 1)], COUNTS)
    )


def test_a_missed_prompt_stands_first_outranked_or_absent() -> None:
    from types import SimpleNamespace
    from typing import Any

    import numpy as np

    from explorer.bench.tune_wild import _standing

    def decision(candidates: tuple[int, ...], probabilities: list[float]) -> Any:
        trace = SimpleNamespace(
            at=lambda position: candidates.index(position) if position in candidates else None,
            probabilities=np.array(probabilities),
        )
        return SimpleNamespace(relevance=trace)

    assert _standing(decision((7, 3), [0.6, 0.2]), 7) == "first"
    assert _standing(decision((7, 3), [0.2, 0.6]), 7) == "outranked"
    assert _standing(decision((3,), [0.6]), 7) == "absent"
    assert _standing(SimpleNamespace(relevance=None), 7) == "absent"  # type: ignore[arg-type]


def test_a_skill_with_nothing_recommended_says_what_keeps_the_first_from_it() -> None:
    from explorer.bench.tune_wild import _row as row_of
    from explorer.engine.author import Candidate, Effect, Flip, Part, TuneResult
    from explorer.engine.author.tune import Shift, Split, Tally
    from explorer.engine.qa import Case

    case = Case(prompt="p", expect=("s",), kind="direct")
    fix = Flip(case, Part.TUNING, Effect.FIX, 0.0, 0.0, None, None, (), (), ("x", "x"), None)
    candidate = Candidate(
        "d", ("add x",), (), Tally(1, 1), Tally(0, 1), (fix,), 1, 0,
        Shift(0.0, 0.0, None, None, ()), "",
    )  # fmt: skip
    none = Tally(0, 0)
    result = TuneResult(
        skill_id="s", path="s/SKILL.md", original="d", original_text="",
        split=Split((), (case,), ()), tuning=none, held_out=none, others=none,
        candidates=(candidate,), recommended=None, evaluated=1, seconds=0.0,
    )  # fmt: skip
    row = row_of("s", result, 0, 0, ["first"])
    assert row.edit == "none recommended (#1: no gain on the held-out cases)"
    assert (row.missed_first, row.missed_outranked, row.missed_absent) == (1, 0, 0)
    empty = row_of("s", dataclasses.replace(result, candidates=()), 0, 0, [])
    assert empty.edit == "no candidate"


def test_a_rows_file_resumes_without_running_again(tmp_path: Path) -> None:
    """Every skill already in the --rows file: the run loads no model and gives the same
    table (an interrupted run goes on where it stopped)."""
    import json

    from explorer.bench.tune_wild import run
    from explorer.engine.base.config import Config

    wild = tmp_path / "wild"
    wild.mkdir()
    (wild / "SOURCES.tsv").write_text("id\tname\na\tA\nb\tB\nc\tC\n", encoding="utf-8")
    rows_file = tmp_path / "rows.jsonl"
    records = [
        {"folder": "a", "stage": "held_missing", "row": dataclasses.asdict(_row("a", 2))},
        {"folder": "b", "stage": "missing", "row": None},
        {"folder": "c", "stage": "skills", "row": None},
    ]
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    rows, counts = run(wild, Config(), lambda line: None, (), rows_file)
    assert rows == [_row("a", 2)]
    assert counts == {"skills": 3, "readable": 2, "missing": 2, "held_missing": 1, "total": 3}
    assert "Partial" not in "\n".join(table(rows, counts))
    # Two of the three run so far: without running the third, the table says it is partial.
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in records[:2]), encoding="utf-8")
    rows, counts = run(wild, Config(), lambda line: None, (), rows_file, run_missing=False)
    assert counts["skills"] == 2 and counts["total"] == 3
    assert "**Partial: 2 of the corpus's 3 skills have been run**" in "\n".join(table(rows, counts))


def test_docs_tune_md_holds_the_generators_markers(tmp_path: Path) -> None:
    """docs/tune.md's corpus table is the generator's to write: the command in its opening
    marker is the one that writes it, and a regeneration replaces only what lies between
    the markers (a marker edited by hand would make the generator append a second table)."""
    doc = Path(__file__).resolve().parents[2] / "docs" / "tune.md"
    text = doc.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.index(BEGIN) < text.index(END)
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    assert f"`{COMMAND}`" in head, "the prose names the command that writes the table"
    copy = tmp_path / "tune.md"
    copy.write_text(text, encoding="utf-8")
    lines = table([_row("a", 2)], COUNTS)
    write_report(copy, lines)
    assert copy.read_text(encoding="utf-8") == head + "\n".join(lines) + tail


def test_a_sample_is_the_same_draw_every_time_and_says_so(tmp_path: Path) -> None:
    """--sample N: N of the corpus's skills, the same ones for the same N and corpus, and
    a table that says it is a sample of how many."""
    from explorer.bench.tune_wild import SAMPLE_SEED, sample_folders

    wild = tmp_path / "wild"
    wild.mkdir()
    names = [f"s{number:02d}" for number in range(40)]
    listing = "".join(f"{name}\t{name.upper()}\n" for name in reversed(names))
    (wild / "SOURCES.tsv").write_text("id\tname\n" + listing, encoding="utf-8")
    drawn = sample_folders(wild, 10)
    assert drawn == sample_folders(wild, 10) == sorted(drawn)
    assert len(set(drawn)) == 10 and set(drawn) <= set(names)
    assert drawn != names[:10] and drawn != names[-10:]
    assert sorted(sample_folders(wild, 99)) == names
    text = "\n".join(table([_row("a", 2)], {**COUNTS, "total": 10}, corpus=40))
    assert (
        f"**A random sample: 10 of the corpus's 40 skills** (`--sample 10`, seed {SAMPLE_SEED})"
        in text
    )
    assert "A random sample" not in "\n".join(table([_row("a", 2)], COUNTS))


WORKER_SCRIPT = """
import os, sys, time
from pathlib import Path
from explorer.bench.tune_wild import run_jobs

def work(wild, shard, rows):
    Path(sys.argv[2], str(os.getpid())).touch()
    time.sleep(120)

if __name__ == "__main__":
    run_jobs(Path(sys.argv[1]), 2, work=work)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
def test_stopping_a_run_stops_its_workers(tmp_path: Path, stop: str) -> None:
    """A signal to the parent alone (`kill PID`, `kill -9 PID`): its workers end with it.
    An orphaned one would go on appending to the rows file that a new run is reading."""
    import os
    import signal
    import subprocess
    import sys
    import time

    wild, started = tmp_path / "wild", tmp_path / "started"
    wild.mkdir()
    started.mkdir()
    (wild / "SOURCES.tsv").write_text("id\tname\na\tA\nb\tB\n", encoding="utf-8")
    script = tmp_path / "run.py"
    script.write_text(WORKER_SCRIPT, encoding="utf-8")
    parent = subprocess.Popen([sys.executable, str(script), str(wild), str(started)])
    try:
        deadline = time.monotonic() + 60
        while len(list(started.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = [int(path.name) for path in started.iterdir()]
        assert len(workers) == 2, "the workers did not start"
        parent.send_signal(getattr(signal, stop))
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        alive = workers
        while alive and time.monotonic() < deadline:
            alive = [pid for pid in workers if _alive(pid)]
            time.sleep(0.1)
        assert not alive, f"workers {alive} outlived the run"
    finally:
        parent.kill()
        for path in started.iterdir():
            if _alive(int(path.name)):
                os.kill(int(path.name), signal.SIGKILL)


def _alive(pid: int) -> bool:
    """A process that has exited, even one not reaped yet (a zombie), is not alive."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow  # the packaged models, two small libraries
def test_speed_times_the_skills_with_about_twenty_cases_alone_and_beside_a_large_library(
    tmp_path: Path,
) -> None:
    import json

    from explorer.bench.tune_wild import SPEED_CASES, speed
    from tests.conftest import write_skill

    wild = tmp_path / "wild"
    write_skill(wild / "skills", "invoices", "Create and send invoices to clients.")
    write_skill(wild / "skills", "timesheets", "Log hours worked on each project.")
    (wild / "SOURCES.tsv").write_text(
        "id\tname\ninvoices\tinvoices\ntimesheets\ttimesheets\n", encoding="utf-8"
    )
    (wild / "evals").mkdir()
    prompts = [(f"bill the client for job {n}", True) for n in range(8)]
    prompts += [(f"how many hours on project {n}", False) for n in range(SPEED_CASES.start - 8)]
    evals = [{"query": prompt, "should_trigger": fits} for prompt, fits in prompts]
    (wild / "evals" / "invoices.json").write_text(json.dumps(evals), encoding="utf-8")
    (wild / "evals" / "timesheets.json").write_text(json.dumps(evals[:3]), encoding="utf-8")
    large = tmp_path / "large.jsonl"
    large.write_text(
        "".join(
            json.dumps({"name": f"tool-{n}", "description": f"Tool number {n}."}) + "\n"
            for n in range(5)
        ),
        encoding="utf-8",
    )
    lines = speed(wild, large, lambda line: None)
    rows = [line for line in lines if line.startswith("| the wild") or line.startswith("| with")]
    assert len(rows) == 2, lines
    assert rows[0].startswith("| the wild corpus (2 skills) | 1 |")  # timesheets has 3 cases
    assert rows[1].startswith("| with openclaw-large (7 skills) | 1 |")
    assert all(row.endswith(("| pass |", "| fail |")) for row in rows)


def test_only_takes_folders_so_a_name_that_is_another_folder_runs_once(tmp_path: Path) -> None:
    """`tui-design` is one skill's folder and another's name: run with the first's
    folder, the second is not run too (two shards ran it twice that way)."""
    import json

    from explorer.bench.tune_wild import folders_of, run
    from explorer.engine.base.config import Config

    wild = tmp_path / "wild"
    wild.mkdir()
    (wild / "SOURCES.tsv").write_text(
        "id\tname\ntui-design\ttui-design\ntui-design-x\ttui-design\n", encoding="utf-8"
    )
    assert folders_of(wild, ["tui-design-x"]) == ["tui-design-x"]
    assert folders_of(wild, ["tui-design"]) == ["tui-design", "tui-design-x"]  # both, by name
    rows_file = tmp_path / "rows.jsonl"
    records = [
        {"folder": f, "stage": "skills", "row": None} for f in ("tui-design", "tui-design-x")
    ]
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    _, counts = run(wild, Config(), lambda line: None, ["tui-design"], rows_file)
    assert counts["total"] == counts["skills"] == 1
