"""Parity of the hybrid score's channels with the reference router (spec §3.4-§3.5).

Behaviour read from the reference's source (skill-inject 0.9.0), cited per case; it is
AGPL, so nothing here is copied from it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.config import Config
from explorer.engine.embed import BowEmbedder
from explorer.engine.models import assemble_models
from explorer.engine.pipeline import file_families
from explorer.engine.snapshot import build_index
from tests.conftest import write_skill
from tests.parity.helpers import route


@pytest.mark.parametrize(
    ("prompt", "families"),
    [
        ("merge report.pdf", ["pdf"]),
        ("a.key.pdf please", ["pdf"]),  # the last dot segment decides
        ("data.csv.gz is huge", []),  # a gzip file, not a spreadsheet
        ("look at budget.xlsx, then stop.", ["xlsx"]),  # ',' splits; '.' is trimmed
        ("is it sales.XLSX?", ["xlsx"]),  # trailing '?' trimmed, extension lower-cased
        ("open (deck.pptx) and 'memo.docx'", ["pptx", "docx"]),  # quotes and brackets split
        ("see `notes.pages`", ["docx"]),  # backticks split
        ("the .pdf format", []),  # nothing before the dot: not a file
        ("a pdf about pdfs", []),
        ("keynote talk.key", ["pptx"]),
        ("budget.ods and memo.rtf", ["xlsx", "docx"]),
        ("report.pdf] in brackets", []),  # ']' is not a separator: the extension is "pdf]"
        ("v1.2/report.pdf", ["pdf"]),  # a path: the last dot decides
    ],
)
def test_file_extensions_follow_the_reference(prompt: str, families: list[str]) -> None:
    """reference: src/context.rs file_tokens: split at whitespace and `"'()`,`, trim
    trailing `.:;!?`, take what follows the last dot (lower-cased) when something precedes
    it; ext_skill maps pdf / xlsx xls xlsm csv tsv ods numbers / docx doc rtf odt pages /
    pptx ppt odp key."""
    assert file_families(prompt) == families


def test_a_file_named_in_a_recent_turn_counts(tmp_path: Path) -> None:
    """reference: src/hook.rs scans the recent turns and the prompt together for files."""
    assert file_families("clean it up", context=["attached sales.xlsx"]) == ["xlsx"]
    root = tmp_path / "skills"
    write_skill(root, "xlsx", "Spreadsheet formulas and workbook data.")
    write_skill(root, "pdf", "Merge pdf files.")
    index = build_index([root], Config(), assemble_models(BowEmbedder()))
    decision = route("clean it up", index, context=["attached sales.xlsx"])
    assert decision.row("xlsx").file == pytest.approx(0.3)
    assert decision.row("pdf").file == 0.0
