"""`bench --only ui`: its plumbing on a tiny real-corpus library. Never timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.bench.ui import UI_SIZES, run_ui_bench
from explorer.engine.base.config import Config


@pytest.mark.slow
def test_the_ui_bench_times_keystrokes_f2_and_the_filter_on_real_skills(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus" / "skills.jsonl"
    corpus.parent.mkdir()
    names = ("pdf-merge", "xlsx-clean", "docker-slim", "k8s-debug", "release-notes")
    corpus.write_text(
        "\n".join(
            json.dumps({"name": name, "description": f"Use when the user wants {name} help."})
            for name in names
        )
        + "\n",
        encoding="utf-8",
    )
    rows = run_ui_bench((5,), Config(model="bow"), corpus=str(corpus), work_dir=tmp_path)
    assert set(rows) == {
        "ui_keystroke@5",
        "ui_f2_open@5",
        "ui_filter_keystroke@5",
        "ui_first_paint",
    }
    assert rows["ui_f2_open@5"]["n"] == 5 and rows["ui_f2_open@5"]["target_value"] == 100.0
    assert rows["ui_filter_keystroke@5"]["n"] == len("pdf merge")
    assert "real skills from corpus" in rows["ui_keystroke@5"]["note"]
    assert "load average" in rows["ui_keystroke@5"]["note"]
    assert (tmp_path / "lib-5" / "00004" / "SKILL.md").is_file()
    assert UI_SIZES == (100, 1000, 2300)
