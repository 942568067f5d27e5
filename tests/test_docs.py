"""The specification lives in the repository: every § the code cites is a heading of
docs/routing.md, so a reader who follows a citation finds the section it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CITATION = re.compile(r"§(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,4} §(\d+(?:\.\d+)*) \S", re.MULTILINE)


def cited_sections() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        for section in CITATION.findall(path.read_text(encoding="utf-8")):
            cited.setdefault(section, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_every_cited_section_is_a_heading_of_the_routing_document() -> None:
    headings = set(HEADING.findall((ROOT / "docs" / "routing.md").read_text(encoding="utf-8")))
    cited = cited_sections()
    assert len(cited) > 20, "the code cites the routing document throughout"
    missing = {
        section: sorted(files) for section, files in cited.items() if section not in headings
    }
    assert not missing, f"§ cited in code with no heading in docs/routing.md: {missing}"


# The README is the front door; everything longer lives under docs/.
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 300
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![&\w])#\d{2,}\b", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for line in text.splitlines():
        match = re.match(r"^#{1,6}\s+(.*)$", line)
        if match is None:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_keeps_the_commands_ci_runs() -> None:
    """.ci/run installs and tests as the README says: both commands stay in it."""
    readme = README.read_text(encoding="utf-8")
    assert 'pip install -e ".[dev]"' in readme
    assert "\npython -m pytest\n" in readme


def test_slug_follows_github() -> None:
    assert slug("Use it as your router (Claude Code hook)") == (
        "use-it-as-your-router-claude-code-hook"
    )
    assert slug("The reference's own test corpora") == "the-references-own-test-corpora"
    assert slug("§9.10 `auto` and the rerankers") == "910-auto-and-the-rerankers"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda path: path.name)
def test_every_relative_link_resolves(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_no_issue_numbers_in_documents_or_code() -> None:
    """State the reason itself: an issue number means nothing to a reader of the tree."""
    paths = [
        README,
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "explorer").rglob("*.py"),
        *(ROOT / "explorer").rglob("*.md"),
        *(ROOT / "explorer").rglob("*.tcss"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / ".ci").iterdir(),
        *(ROOT / "benchmarks").glob("*.py"),
        ROOT / "benchmarks" / "data" / "README.md",
    ]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        if path.is_file()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line) and path != Path(__file__)
    ]
    assert not found, "\n".join(found)


def test_the_readme_quotes_the_generated_quality_table() -> None:
    """The README's routing figures are rows of docs/quality.md, which the training tool
    generates: regenerating it without updating the README fails here."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How well it routes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(rows) >= 3, "the README's table of routing figures"
    quality = (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
    assert [row for row in rows if row not in quality] == []


def test_the_configuration_table_has_every_key() -> None:
    """docs/configuration.md is "every key with its default" (the README says so)."""
    from explorer.engine.base.config import FIELD_NAMES

    table = [
        line.split("|")[1]
        for line in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `")
    ]
    documented = {key for cell in table for key in re.findall(r"`(\w+)`", cell)}
    assert set(FIELD_NAMES) - documented == set()
