"""The specification lives in the repository: every § the code cites is a heading of
docs/routing.md, so a reader who follows a citation finds the section it names."""

from __future__ import annotations

import re
from pathlib import Path

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
