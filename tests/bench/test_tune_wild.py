"""The tune-over-the-wild-corpus report (explorer/bench/tune_wild.py): what counts as a
raise, and the table written between its markers in docs/tune.md, the rest kept."""

from __future__ import annotations

from pathlib import Path

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


def test_a_rows_file_resumes_without_running_again(tmp_path: Path) -> None:
    """Every skill already in the --rows file: the run loads no model and gives the same
    table (an interrupted run goes on where it stopped)."""
    import dataclasses
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
