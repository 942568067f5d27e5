"""Builds the hostile library at test time, in a temporary directory.

Every case is a real file (or FIFO, symlink, device link, directory) next to good skills.
`REJECTED` files must be reported with their path and a reason; `WARNED` files route with
a warning naming them; `FINE` files are unusual but valid and route without complaint.
"""

from __future__ import annotations

import os
from pathlib import Path

GOOD = {
    "pdf": "Use when merging, splitting or extracting text and tables from PDF files.",
    "xlsx": "Use when building spreadsheets with formulas or cleaning CSV exports.",
    "docker-helper": "Use when shrinking Docker images or writing multi-stage Dockerfiles.",
    "git-commit-writer": "Use when writing git commit messages from a staged diff.",
    "changelog-generator": "Use when generating release notes from git commit history.",
}
PROMPTS = [
    "merge these two pdf files",
    "write a commit message for my staged changes",
    "my docker image is huge, make it smaller",
    "generate release notes for v2",
    "clean up this csv export",
    "what is the weather today",
]


def skill(name: str, description: str, body: str = "Steps.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def alias_bomb() -> str:
    """Nine anchors of nine aliases each: 9**9 values once expanded."""
    lines = ["l0: &l0 [" + ",".join(["lol"] * 9) + "]"]
    for index in range(1, 9):
        aliases = ",".join([f"*l{index - 1}"] * 9)
        lines.append(f"l{index}: &l{index} [{aliases}]")
    head = "---\nname: alias-bomb\ndescription: Use when testing alias bombs.\n"
    return head + "\n".join(lines) + "\n---\nB\n"


def build_good(root: Path) -> None:
    for name, description in GOOD.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "SKILL.md").write_text(skill(name, description), encoding="utf-8")


def _write(root: Path, directory: str, data: bytes) -> Path:
    (root / directory).mkdir(parents=True, exist_ok=True)
    path = root / directory / "SKILL.md"
    path.write_bytes(data)
    return path


def build_hostile(root: Path) -> dict[str, dict[str, str]]:
    """The good skills plus every bad case; returns {kind: {path: reason}}."""
    build_good(root)
    rejected: dict[str, str] = {}
    warned: dict[str, str] = {}
    fine: dict[str, str] = {}

    def reject(directory: str, data: bytes, reason: str) -> None:
        rejected[str(_write(root, directory, data))] = reason

    def warn(directory: str, data: bytes, reason: str) -> None:
        warned[str(_write(root, directory, data))] = reason

    def fine_file(directory: str, data: bytes) -> None:
        fine[str(_write(root, directory, data))] = ""

    def link(directory: str, target: str, reason: str) -> None:
        (root / directory).mkdir()
        os.symlink(target, root / directory / "SKILL.md")
        rejected[str(root / directory / "SKILL.md")] = reason

    # crashes and hangs (items 1-5)
    link("loop", "SKILL.md", "symlink loop")
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / "SKILL.md")
    rejected[str(root / "fifo" / "SKILL.md")] = "not a regular file"
    link("zero", "/dev/zero", "not a regular file")
    reject("huge", b"---\nname: huge\ndescription: big\n---\n", "too large")
    with open(root / "huge" / "SKILL.md", "r+b") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: 64 MB on paper, nothing on disk
    warn("alias-bomb", alias_bomb().encode(), "frontmatter too large")
    deep = "[" * 10_000 + "]" * 10_000
    warn("deep", skill("deep-yaml", f"Use when testing depth.\nx: {deep}").encode(), "nested")
    # what the audit found handled well
    reject("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary")
    reject("nul", b"---\nname: nul\x00\ndescription: y\n---\n", "binary")
    latin = skill("bad-utf8", "Use when reading latin-1 caf\xe9.").encode("latin-1")
    warn("bad-utf8", latin, "not valid UTF-8")
    fine_file("bom", b"\xef\xbb\xbf" + skill("bom-skill", "Use when a BOM starts it.").encode())
    crlf = skill("crlf-skill", "Use when lines end in CRLF.").replace("\n", "\r\n")
    fine_file("crlf", crlf.encode())
    long_line = skill("long-line", "Use when " + "very " * 1_100_000)
    reject("five-mb-line", long_line.encode(), "too large")
    fine_file("long-name", skill("n" * 100_000, "Use when the name is enormous.").encode())
    tagged = skill("python-tag", "Use when YAML has tags.\nobj: !!python/object:os.system {}")
    warn("python-tag", tagged.encode(), "python/object")
    reject("empty", b"", "no frontmatter")
    reject("no-frontmatter", b"# Just a readme\n", "no frontmatter")
    # the reference reads an unclosed frontmatter to the end of the file: it routes, warned
    warn("unclosed", b"---\nname: unclosed\ndescription: y\nbody\n", "never closed")
    (root / "dir-named" / "SKILL.md").mkdir(parents=True)
    rejected[str(root / "dir-named" / "SKILL.md")] = "directory"
    link("dangling", "missing.md", "no such file")
    reject("no-name", b"---\ndescription: y\n---\n", "name")
    reject("placeholder", skill("placeholder", "Replace with it").encode(), "placeholder")
    reject("zz-dup", skill("pdf", "Use when duplicating the pdf skill.").encode(), "duplicate")
    return {"rejected": rejected, "warned": warned, "fine": fine}
