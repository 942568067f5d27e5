"""Parity of SKILL.md reading with the reference router (spec §1.3-§1.4).

Routing follows the reference's lenient line reader (reference: src/skill.rs
parse_frontmatter, scalar_value, list_value, body_head); where strict YAML reads the file
differently, the skill still routes as in the reference and lint reports the difference
(`parse/reading-differs`), so the author sees both. Behaviour restated, never copied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.author.lint import lint
from explorer.engine.discovery.skills import Problem, Skill, discover, parse_skill
from tests.parity.helpers import write_raw

GOOD = (
    "Merges and splits PDF files. Use when the user asks to combine, cut or reorder the "
    "pages of a PDF document."
)


def parse(text: str) -> Skill:
    result = parse_skill("/virtual/pdf/SKILL.md", text.encode("utf-8"))
    assert isinstance(result, Skill), result
    return result


def rejected(text: str) -> Problem:
    result = parse_skill("/virtual/pdf/SKILL.md", text.encode("utf-8"))
    assert isinstance(result, Problem), result
    return result


def reading_findings(tmp_path: Path, text: str) -> list[str]:
    root = tmp_path / "skills"
    write_raw(root, "pdf", text)
    return [f.message for f in lint([root]) if f.rule == "parse/reading-differs"]


def test_an_indented_closing_fence_closes_the_frontmatter(tmp_path: Path) -> None:
    """reference: src/skill.rs ends the frontmatter at the first line equal to `---` once
    trimmed, and body_head skips up to that same line."""
    text = f"---\nname: pdf\ndescription: {GOOD}\n  ---\n# PDF\nMerge first.\n"
    skill = parse(text)
    assert skill.description == GOOD
    assert skill.body_head == "PDF Merge first."
    assert any("closing '---'" in m for m in reading_findings(tmp_path, text))


def test_a_missing_closing_fence_still_routes(tmp_path: Path) -> None:
    """reference: src/skill.rs reads keys until the end of the file when no fence closes
    the frontmatter; the skill is accepted, and its body head is empty."""
    text = f"---\nname: pdf\ndescription: {GOOD}\nkeywords: [merge]\n"
    skill = parse(text)
    assert (skill.id, skill.description, skill.body_head) == ("pdf", GOOD, "")
    assert skill.keywords == ("merge", "pdf")
    assert any("never closed" in m for m in reading_findings(tmp_path, text))


def test_an_indented_opening_fence_opens_it(tmp_path: Path) -> None:
    """reference: src/skill.rs compares line 1 with `---` after trimming it."""
    text = f"  ---  \nname: pdf\ndescription: {GOOD}\n---\nBody.\n"
    assert parse(text).description == GOOD
    assert any("opening '---'" in m for m in reading_findings(tmp_path, text))


def test_literal_blocks_are_folded_to_spaces() -> None:
    """reference: src/skill.rs folds every multi-line form (| and > alike) with spaces."""
    skill = parse("---\nname: pdf\ndescription: |\n  Line one.\n\n  Line two.\n---\n")
    assert skill.description == "Line one. Line two."


def test_a_plain_scalar_continues_on_indented_lines_and_stops_at_a_blank_one() -> None:
    """reference: src/skill.rs scalar_value: indented lines continue a plain value; a blank
    line ends it."""
    text = "---\nname: pdf\ndescription: Edit Word documents\n  with changes.\n\n  more\n---\n"
    skill = parse(text)
    assert skill.description == "Edit Word documents with changes."


@pytest.mark.parametrize(
    ("value", "routed", "yaml_says"),
    [
        ("yes", "yes", "the boolean true"),
        ("Merge PDFs # not a comment here", "Merge PDFs # not a comment here", "'Merge PDFs'"),
        ("2024", "2024", None),  # a number reads the same either way: no finding
    ],
)
def test_values_yaml_reads_differently_route_as_the_reference_reads_them(
    tmp_path: Path, value: str, routed: str, yaml_says: str | None
) -> None:
    """reference: src/skill.rs keeps the line's text: `yes` is the text "yes" (YAML: a
    boolean) and a `#` is part of the value (YAML: a comment)."""
    text = f"---\nname: pdf\ndescription: {value}\n---\nBody.\n"
    assert parse(text).description == routed
    findings = reading_findings(tmp_path, text)
    if yaml_says is None:
        assert findings == []
    else:
        (finding,) = findings
        assert f"as {yaml_says}" in finding and repr(routed) in finding


def test_a_reading_difference_quotes_the_stretch_where_they_part(tmp_path: Path) -> None:
    """A valid YAML escape: YAML reads a quote, the reference a backslash and a quote. The
    finding shows the author's backslash once (repr doubled it) and only where the two
    readings part, not a 400-character description twice."""
    head = "Write marketing copy for landing pages and emails. Use when the user says "
    text = f'---\nname: pdf\ndescription: "{head}\\"write copy for\\" or a headline."\n---\n'
    (finding,) = reading_findings(tmp_path, text)
    assert "as '… when the user says \"write copy for\" or a headline.'" in finding
    assert "router as '… when the user says \\\"write copy for\\\" or a headline.'" in finding
    assert head[:20] not in finding


def test_only_outer_quotes_are_removed() -> None:
    """reference: src/skill.rs unquote drops one matching pair of outer quotes."""
    skill = parse("---\nname: pdf\ndescription: \"Say 'merge two pdf files' to use it.\"\n---\n")
    assert skill.description == "Say 'merge two pdf files' to use it."
    assert skill.trigger_phrases == ("merge two pdf files",)


def test_keys_count_only_at_column_zero() -> None:
    """reference: src/skill.rs matches `description:` at the start of a line, so a nested
    one under another key is not the skill's."""
    problem = rejected("---\nname: pdf\nmetadata:\n  description: nested\n---\n")
    assert "'description'" in problem.message


def test_a_key_without_a_space_after_the_colon_is_read() -> None:
    """reference: src/skill.rs strips the `name:` prefix and trims what follows."""
    assert parse(f"---\nname:pdf\ndescription: {GOOD}\n---\n").id == "pdf"


def test_keywords_keep_repeats_and_a_later_keywords_line_replaces_aliases(
    tmp_path: Path,
) -> None:
    """reference: src/skill.rs assigns `keywords:` (replacing what came before) and extends
    with `aliases:`; entries are ASCII-lower-cased and not de-duplicated; name tokens join
    only when missing."""
    text = (
        f"---\nname: pdf\ndescription: {GOOD}\naliases: [Acrobat]\nkeywords: [Merge, merge]\n---\n"
    )
    skill = parse(text)
    assert skill.keywords == ("merge", "merge", "pdf")
    assert any("replaces earlier aliases" in m for m in reading_findings(tmp_path, text))


def test_indented_dash_lists_and_inline_lists_without_brackets() -> None:
    """reference: src/skill.rs list_value reads `- item` lines, or splits the key's own
    line on commas (brackets optional)."""
    dashed = parse(f'---\nname: pdf\ndescription: {GOOD}\nkeywords:\n  - "Split"\n  - Ocr\n---\n')
    assert dashed.keywords == ("split", "ocr", "pdf")
    bare = parse(f"---\nname: pdf\ndescription: {GOOD}\nkeywords: Split, OCR\n---\n")
    assert bare.keywords == ("split", "ocr", "pdf")


def test_body_head_skips_lines_empty_after_decoration() -> None:
    """reference: src/skill.rs body_head strips `#-*>` and spaces first, then skips the
    line if nothing is left, so rules (`---`, `***`) and bare `>` do not use up a line."""
    body = "\n".join(
        ["# Title", "---", "***", ">", "- ", "one", "two", "three", "4", "5", "6", "7", "8"]
    )
    skill = parse(f"---\nname: pdf\ndescription: {GOOD}\n---\n{body}\n")
    assert skill.body_head == "Title one two three 4 5 6 7"


def test_body_head_is_cut_at_600_characters() -> None:
    """reference: src/skill.rs cuts the joined head at 600 characters."""
    skill = parse(f"---\nname: pdf\ndescription: {GOOD}\n---\n{'é' * 700}\n")
    assert skill.body_head == "é" * 600


def test_the_template_placeholder_is_rejected() -> None:
    """reference: src/skill.rs rejects a description starting "replace with", any case."""
    assert "placeholder" in rejected("---\nname: x\ndescription:   Replace WITH it\n---\n").message


def test_the_first_path_in_component_order_wins_a_duplicate_id(tmp_path: Path) -> None:
    """reference: src/skill.rs sorts the found paths as paths (component by component),
    then keeps the first skill of each id: `a/b/SKILL.md` precedes `a-b/SKILL.md`."""
    root = tmp_path / "skills"
    write_raw(root, "a-b", f"---\nname: dup\ndescription: from a-b. {GOOD}\n---\n")
    write_raw(root / "a", "b", f"---\nname: dup\ndescription: from a/b. {GOOD}\n---\n")
    found = discover([root])
    (skill,) = found.skills
    assert skill.description.startswith("from a/b.")
    assert any("duplicate skill id 'dup'" in problem.message for problem in found.rejected)
