"""One bad SKILL.md never takes the library down (file-level hostility).

Each case builds a real file (symlink loop, FIFO, device, huge file, YAML alias bomb,
10,000-deep nesting) next to two good skills. Anything that could hang runs in a
subprocess with a timeout, so a regression fails the test instead of stalling the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from explorer.engine.discovery.skills import (
    MAX_SKILL_BYTES,
    Problem,
    Skill,
    discover,
    load_skill,
    skill_from_record,
    skill_record,
)
from explorer.engine.inference.cache import CachedSkills, EmbeddingCache

REPO = Path(__file__).resolve().parents[2]
GOOD = {
    "a-good": "---\nname: a-good\ndescription: Use when merging PDF files.\n---\nBody.\n",
    "z-good": "---\nname: z-good\ndescription: Use when writing commit messages.\n---\nBody.\n",
}


def library(root: Path) -> Path:
    for name, text in GOOD.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")
    (root / "bad").mkdir(exist_ok=True)
    return root / "bad" / "SKILL.md"


def alias_bomb(levels: int = 9) -> str:
    lines = ["a: &a [" + ",".join(["lol"] * 9) + "]"]
    previous = "a"
    for index in range(1, levels):
        anchor = f"l{index}"
        lines.append(f"{anchor}: &{anchor} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = anchor
    body = "\n".join(lines)
    return f"---\nname: bomb\ndescription: Use when testing alias bombs.\n{body}\n---\nBody.\n"


def deep_nesting(depth: int = 10_000) -> str:
    nested = "[" * depth + "]" * depth
    return f"---\nname: deep\ndescription: Use when testing deep YAML.\nx: {nested}\n---\nBody.\n"


def discover_in_subprocess(root: Path, timeout: float = 30) -> dict[str, object]:
    """discover() plus a parse-cache round trip, in a child that is killed if it hangs."""
    code = textwrap.dedent(
        f"""
        import json, sys
        from explorer.engine.inference.cache import CachedSkills, EmbeddingCache
        from explorer.engine.discovery.skills import discover
        cache = EmbeddingCache({str(root.parent / "cache")!r})
        memo = CachedSkills(cache)
        first = discover([{str(root)!r}], memo)
        memo.flush()
        memo = CachedSkills(cache)
        second = discover([{str(root)!r}], memo)
        json.dump({{
            "skills": [s.id for s in second.skills],
            "rejected": [[p.path, p.message] for p in second.rejected],
            "warnings": [[w.path, w.message] for s in second.skills for w in s.warnings],
            "same": [s.id for s in first.skills] == [s.id for s in second.skills],
        }}, sys.stdout)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_symlink_to_itself_is_rejected_and_the_rest_is_found(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    os.symlink("SKILL.md", bad)
    discovery = discover([tmp_path / "skills"])
    assert [skill.id for skill in discovery.skills] == ["a-good", "z-good"]
    assert [(p.path, "symlink loop" in p.message) for p in discovery.rejected] == [(str(bad), True)]


def test_dangling_symlink_is_rejected_with_its_path(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    os.symlink("nowhere.md", bad)
    discovery = discover([tmp_path / "skills"])
    assert [skill.id for skill in discovery.skills] == ["a-good", "z-good"]
    assert [p.path for p in discovery.rejected] == [str(bad)]


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    os.mkfifo(bad)
    result = discover_in_subprocess(tmp_path / "skills", timeout=20)
    assert result["skills"] == ["a-good", "z-good"]
    [[path, message]] = result["rejected"]
    assert path == str(bad) and "not a regular file" in message and "FIFO" in message


def test_symlink_to_a_device_is_rejected(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    os.symlink("/dev/zero", bad)
    result = discover_in_subprocess(tmp_path / "skills", timeout=20)
    assert result["skills"] == ["a-good", "z-good"]
    [[path, message]] = result["rejected"]
    assert path == str(bad) and "not a regular file" in message


def test_huge_file_is_rejected_as_too_large_without_reading_it(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    with open(bad, "wb") as handle:
        handle.write(b"---\nname: huge\ndescription: big\n---\n")
        handle.truncate(8 * 1024**3)  # sparse: 8 GB that would exhaust memory if read
    result = load_skill(str(bad))
    assert isinstance(result, Problem)
    assert result.path == str(bad) and "too large" in result.message
    assert f"{MAX_SKILL_BYTES}" in result.message or "MB" in result.message


def test_a_file_at_the_cap_still_loads(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    head = "---\nname: big-ok\ndescription: Use when testing the cap.\n---\n"
    bad.write_text(head + "x" * (MAX_SKILL_BYTES - len(head)), encoding="utf-8")
    assert isinstance(load_skill(str(bad)), Skill)


def test_alias_bomb_neither_hangs_nor_disables_the_library(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    bad.write_text(alias_bomb(), encoding="utf-8")
    result = discover_in_subprocess(tmp_path / "skills", timeout=30)
    assert result["skills"] == ["a-good", "bomb", "z-good"]
    assert result["same"] is True
    assert any(path == str(bad) and "frontmatter" in msg for path, msg in result["warnings"])


def test_deep_nesting_neither_crashes_nor_disables_the_library(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    bad.write_text(deep_nesting(), encoding="utf-8")
    result = discover_in_subprocess(tmp_path / "skills", timeout=30)
    assert result["skills"] == ["a-good", "deep", "z-good"]
    assert any(path == str(bad) and "frontmatter" in msg for path, msg in result["warnings"])


def test_bounded_frontmatter_round_trips_through_the_parse_cache(tmp_path: Path) -> None:
    bad = library(tmp_path / "skills")
    bad.write_text(alias_bomb(), encoding="utf-8")
    skill = load_skill(str(bad))
    assert isinstance(skill, Skill)
    record = skill_record(skill)
    assert len(record) < 200_000
    assert skill_from_record(record) == skill
    cache = EmbeddingCache(tmp_path / "cache")
    memo = CachedSkills(cache)
    memo.remember(skill, None)
    memo.flush()
