"""Property tests: no frontmatter text and no hook payload makes the engine raise.

Hypothesis writes the inputs: arbitrary text and YAML-ish fragments (anchors, aliases,
tags, flow collections, deep brackets, control characters) for the frontmatter; arbitrary
JSON values and raw strings for the hook's stdin. The hook must always exit 0 and print
either nothing or one valid hook JSON object.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.cli.commands.hook import run_hook
from explorer.engine.discovery.skills import (
    Problem,
    Skill,
    parse_skill,
    skill_from_record,
    skill_record,
)
from tests.support.examples import examples

FRAGMENTS = st.sampled_from(
    [
        "name: x\n", "description: Use when y\n", "&a [1, 2]", "*a", "!!python/object:os.system",
        "!!binary AAAA", "{", "}", "[", "]", "- ", ": ", "'", '"', "\\", "|\n  ", ">-\n  ",
        "\t", "\r", "\r\n", "\x00", "\x1b]0;t\x07", "\x9b", "\ufeff", "---\n", "...\n", "#",
        "? ", "%YAML 1.2\n", "<<: *a\n", "~", "null", "1e999", "0x1F", "é", "😀",
    ]
)  # fmt: skip
FRONTMATTER = st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=40).map("".join)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frontmatter=FRONTMATTER, body=st.text(max_size=50))
def test_any_frontmatter_gives_a_skill_or_a_reason(frontmatter: str, body: str) -> None:
    data = f"---\n{frontmatter}\n---\n{body}".encode("utf-8", "surrogatepass")
    result = parse_skill("/virtual/SKILL.md", data)
    assert isinstance(result, (Skill, Problem))
    if isinstance(result, Problem):
        assert result.path == "/virtual/SKILL.md" and result.message
    else:
        assert skill_from_record(skill_record(result)) == result


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300))
def test_any_bytes_give_a_skill_or_a_reason(data: bytes) -> None:
    assert isinstance(parse_skill("/virtual/SKILL.md", b"---\n" + data), (Skill, Problem))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
PAYLOADS = st.one_of(
    st.text(max_size=200),
    JSON.map(json.dumps),
    st.fixed_dictionaries(
        {"prompt": st.one_of(st.text(max_size=80), JSON)},
        optional={"cwd": st.one_of(st.text(max_size=30), JSON), "session_id": JSON},
    ).map(json.dumps),
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=PAYLOADS)
def test_the_hook_never_raises_and_always_exits_0(warm_cache_dir: Path, payload: str) -> None:
    skills = Path(__file__).resolve().parents[2] / "sample_skills"
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(
        io.StringIO(payload),
        out,
        err,
        cli_roots=(str(skills),),
        assignments=("model=bow",),
        cache_dir=str(warm_cache_dir),  # the run's warm cache: each example, not a cold load
    )
    assert code == 0
    if out.getvalue():
        data = json.loads(out.getvalue())
        assert data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
