"""The five-minute demo (docs/explorer.md) and its pictures (docs/demo/make_demo.py) cannot rot.

The slow test runs the script, the real explorer over a copy of sample_skills/ with the
packaged models, and reads each picture back: the skill the demo says is injected heads
the table, and the step's numbers are on screen. The fast tests hold the committed
pictures and docs/explorer.md to the same expectations.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs" / "demo" / "make_demo.py"

# Per picture: the skill in row 1 with INJECT (None: not the table), and text the demo's
# step quotes. Written here rather than read from the script, so a script that drifts from
# the demo's text fails.
EXPECTED: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "01-pdf.svg": ("pdf", (".45+.15+.00+.30", "p 0.98 ≥ 0.59")),
    "02-phrases.svg": ("kubernetes-debugger", (".72+.00+.40+.00", 'ph: "pod keeps crashing"')),
    "03-near-miss.svg": ("pdf", ("p 0.65 ≥ 0.59",)),
    # The ranking diff (F8): pdf's BM25, then against now.
    "04-compare.svg": (None, ("pinned 'when was the PDF format invented'", "+6.19")),
    "05-rerank.svg": ("changelog-generator", ("git-commit-writer: p 0.27 < 0.59", "-1.14")),
    "06-rescue.svg": ("plaintext-accounting", ("12.76", "p 0.97 ≥ 0.59")),
    "07-edit.svg": (
        "xlsx",
        ("BROKE", "plaintext-accounting lost it", "xlsx took", "BROKE 1 recall"),
    ),
}
INJECTED_FIRST = re.compile(r"^\s*1\s+(\S+)\s+INJECT\b", re.MULTILINE)


def load_script() -> ModuleType:
    """docs/demo/make_demo.py as a module (it is a script, not part of the package)."""
    if "make_demo" in sys.modules:
        return sys.modules["make_demo"]
    spec = importlib.util.spec_from_file_location("make_demo", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_demo"] = module  # its dataclass looks its module up while defined
    spec.loader.exec_module(module)
    return module


def check_picture(script: ModuleType, path: Path) -> None:
    assert path.is_file(), f"{path.name} was not written"
    shown = script.svg_text(path.read_text(encoding="utf-8"))
    injected, texts = EXPECTED[path.name]
    if injected is not None:
        first = INJECTED_FIRST.search(shown)
        assert first is not None and first.group(1) == injected, (
            f"{path.name}: row 1 should be {injected} with INJECT; the picture shows:\n{shown}"
        )
    missing = [text for text in texts if not script.shows(shown, text)]
    assert not missing, f"{path.name}: {missing} not on screen; the picture shows:\n{shown}"


def test_the_steps_are_the_pictures_the_test_expects() -> None:
    script = load_script()
    assert [step.file for step in script.STEPS] == list(EXPECTED)


def test_the_committed_pictures_show_what_the_readme_says() -> None:
    script = load_script()
    for name in EXPECTED:
        check_picture(script, SCRIPT.parent / name)


def test_the_explorer_page_shows_every_picture_under_the_demo() -> None:
    page = (ROOT / "docs" / "explorer.md").read_text(encoding="utf-8")
    demo = page.split("## A five-minute demo on `sample_skills/`", 1)[1].split("\n## ", 1)[0]
    for step in load_script().STEPS:
        assert f"(demo/{step.file})" in demo, f"the demo in docs/explorer.md lacks {step.file}"
        assert step.caption in demo, f"the demo's caption for {step.file} differs"


def test_svg_text_reads_rows_as_drawn() -> None:
    """Runs of one style become one line, and a gap between runs becomes a space."""
    svg = (
        '<text x="0" y="20" textLength="24.4">1&#160;&#160;</text>'
        '<text x="48.8" y="20" textLength="36.6">pdf</text>'
        '<text x="0" y="44" textLength="12.2">2</text>'
    )
    assert load_script().svg_text(svg) == "1   pdf\n2"


@pytest.mark.slow  # the explorer with MiniLM through seven pictures: 30-90 s
def test_the_script_walks_the_demo(tmp_path: Path) -> None:
    library_file = ROOT / "sample_skills" / "xlsx" / "SKILL.md"
    before = library_file.read_bytes()
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    script = load_script()
    assert sorted(path.name for path in out.iterdir()) == sorted(EXPECTED)
    for name in EXPECTED:
        check_picture(script, out / name)
    assert library_file.read_bytes() == before, "the edit step must change a copy only"
