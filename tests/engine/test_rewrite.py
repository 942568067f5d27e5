"""Writing a description back into SKILL.md (explorer/engine/author/rewrite.py): only the value's
lines change, both readers (YAML and the reference's line reader) read the new value, and
a file that would come out broken is never written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from explorer.engine.author.rewrite import SaveError, edit_description, read_skill_text, save
from explorer.engine.discovery.line_reader import read_frontmatter
from explorer.engine.discovery.skills import Skill, parse_skill

BODY = "# Title\n\nSteps:   keep  these  spaces\n- one\n\n\n---\ntrailing rule above\n"
FILE = (
    "---\n"
    "# a comment the author wrote\n"
    "name: pdf\n"
    "description: >-\n"
    "    Works with PDF files: pulls out text and tables,\n"
    "    merges several PDFs into one.\n"
    "\n"
    "keywords: [pdf, acrobat]\n"
    "metadata:\n"
    "  owner: 'docs team'   # kept as written\n"
    "---\n" + BODY
)
TRICKY = [
    "Plain words only, nothing special",
    "Has a colon: here and a # hash",
    "It's got an apostrophe: and a colon",
    "Both ' and \" quotes: and a \\ backslash",
    "yes",
    "- starts like a list item",
    "[looks like a list]",
    "{looks: like a map}",
    "@at and `backtick` start",
    "1.5",
    "null",
    "word " * 60 + "--- in the middle --- " + "more " * 40,
    "Ünïcödé — dashes… and emoji 🚀: fine",
    "two\nlines typed\n\nwith a blank one",
]
STYLES = [
    "description: >-\n  old text\n",
    "description: |\n  old\n  text\n",
    "description: old text\n",
    "description: 'old: text'\n",
    'description: "old text"\n',
    "description: old\n  continued on a second line\n",
]


def test_a_folded_block_stays_folded_with_its_indentation_and_the_rest_is_byte_for_byte() -> None:
    edit = edit_description("/lib/pdf/SKILL.md", FILE, "Merges and splits PDF files.")
    assert edit.ok, edit.problem
    assert edit.text == FILE.replace(
        "    Works with PDF files: pulls out text and tables,\n    merges several PDFs into one.\n",
        "    Merges and splits PDF files.\n",
    )
    assert edit.skill is not None and edit.skill.description == "Merges and splits PDF files."
    assert edit.skill.keywords == ("pdf", "acrobat")
    assert edit.skill.warnings == ()


@pytest.mark.parametrize("description", TRICKY)
@pytest.mark.parametrize("style", STYLES)
def test_any_description_in_any_style_reads_alike_to_both_readers(
    description: str, style: str
) -> None:
    original = f"---\nname: x\n{style}keywords: [a]\n---\n{BODY}"
    edit = edit_description("/lib/x/SKILL.md", original, description)
    assert edit.ok, edit.problem
    assert edit.text is not None
    wanted = " ".join(description.split())
    reading = read_frontmatter(edit.text)
    assert reading is not None and reading.end is not None
    assert " ".join(reading.description.split()) == wanted
    loaded = yaml.safe_load("\n".join(edit.text.split("\n")[1 : reading.end]))
    assert " ".join(loaded["description"].split()) == wanted
    assert loaded["name"] == "x" and loaded["keywords"] == ["a"]
    assert edit.text.startswith("---\nname: x\ndescription:")
    assert edit.text.endswith(f"keywords: [a]\n---\n{BODY}")
    parsed = parse_skill("/lib/x/SKILL.md", edit.text.encode())
    assert isinstance(parsed, Skill) and parsed.warnings == ()


def test_the_files_own_quotes_are_kept_when_they_can_be() -> None:
    original = "---\nname: x\ndescription: 'old'\n---\nbody\n"
    edit = edit_description("/x/SKILL.md", original, "Plain new text")
    assert edit.text == "---\nname: x\ndescription: 'Plain new text'\n---\nbody\n"
    plain = edit_description("/x/SKILL.md", "---\nname: x\ndescription: old\n---\n", "new: text")
    assert plain.text == "---\nname: x\ndescription: 'new: text'\n---\n"


def test_line_endings_and_a_byte_order_mark_are_kept() -> None:
    original = "\ufeff---\r\nname: x\r\ndescription: old\r\n---\r\nbody\r\n\r\nmore\r\n"
    edit = edit_description("/x/SKILL.md", original, "new text")
    assert edit.text == (
        "\ufeff---\r\nname: x\r\ndescription: new text\r\n---\r\nbody\r\n\r\nmore\r\n"
    )


def test_an_empty_description_is_refused() -> None:
    edit = edit_description("/x/SKILL.md", FILE, "  \n ")
    assert not edit.ok and edit.text is None
    assert "empty" in (edit.problem or "")


def test_a_placeholder_description_is_refused_with_the_parsers_reason() -> None:
    edit = edit_description("/x/SKILL.md", FILE, "Replace with a description")
    assert edit.text is None and "placeholder" in (edit.problem or "")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("keywords: [a, b", "line 5: did not find expected ',' or ']'"),
        ("when: 2020-13-45", "(a value it cannot convert: month must be in 1..12)"),
        ("at: !!timestamp noon", "(a value it cannot convert)"),  # not PyYAML's insides
    ],
)
def test_frontmatter_that_was_already_bad_yaml_is_never_rewritten(
    tmp_path: Path, bad: str, reason: str
) -> None:
    broken = f"---\nname: x\ndescription: old\n{bad}\n---\nbody\n"
    path = tmp_path / "SKILL.md"
    path.write_text(broken, encoding="utf-8")
    edit = edit_description(str(path), broken, "new text")
    assert edit.text is None and edit.file_broken
    assert "not valid YAML" in (edit.problem or "") and reason in (edit.problem or "")
    with pytest.raises(SaveError, match="not written"):
        save(edit)
    assert path.read_text(encoding="utf-8") == broken


def test_no_description_line_at_column_0_is_said() -> None:
    edit = edit_description("/x/SKILL.md", "---\nname: x\nother:\n  description: in\n---\n", "n")
    assert edit.text is None and "description" in (edit.problem or "")


def test_save_writes_the_edit_and_refuses_a_file_changed_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "pdf" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(FILE, encoding="utf-8")
    edit = edit_description(str(path), read_skill_text(str(path)), "Merges PDF files.")
    save(edit)
    assert path.read_text(encoding="utf-8") == edit.text
    assert path.read_bytes().endswith(BODY.encode())
    stale = edit_description(str(path), FILE, "Something else.")  # began from the old text
    with pytest.raises(SaveError, match="changed on disk"):
        save(stale)
    assert path.read_text(encoding="utf-8") == edit.text
