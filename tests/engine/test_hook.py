"""The UserPromptSubmit hook (§7): fail open, exit 0, stdout only a hook JSON or nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from explorer.engine.hook import run_hook
from tests.conftest import SAMPLE_SKILLS


def _run(payload: str, *roots: str, assignments: tuple[str, ...] = ("model=bow",)):
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(io.StringIO(payload), out, err, cli_roots=roots, assignments=assignments)
    return code, out.getvalue(), err.getvalue()


def test_a_matching_prompt_injects_context() -> None:
    payload = json.dumps(
        {
            "prompt": "merge these report.pdf files and extract the tables",
            "session_id": "s",
            "cwd": "/",
        }
    )
    code, out, err = _run(payload, str(SAMPLE_SKILLS))
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "pdf" in data["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "not json",
        "[1, 2]",
        '{"prompt": 3}',
        '{"prompt": "   "}',
        '{"prompt": "<task-notification>done</task-notification>"}',
        '{"prompt": "<system-reminder>x</system-reminder>"}',
    ],
)
def test_bad_or_control_payloads_produce_nothing(payload: str) -> None:
    assert _run(payload, str(SAMPLE_SKILLS)) == (0, "", "")


def test_errors_reach_stderr_only_in_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run("not json", str(SAMPLE_SKILLS)) == (0, "", "")
    monkeypatch.setenv("SKILL_EXPLORER_DEBUG", "1")
    code, out, err = _run("not json", str(SAMPLE_SKILLS))
    assert code == 0 and out == "" and "JSONDecodeError" in err


def test_a_bad_config_value_fails_open(monkeypatch: pytest.MonkeyPatch) -> None:
    payload = json.dumps({"prompt": "merge pdf files"})
    assert _run(payload, str(SAMPLE_SKILLS), assignments=("max_skills=many",)) == (0, "", "")


def test_roots_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SKILL_EXPLORER_ROOTS", f"{tmp_path}:{SAMPLE_SKILLS}")
    code, out, _ = _run(json.dumps({"prompt": "merge report.pdf files"}))
    assert code == 0 and "pdf" in out


def test_no_roots_means_no_output() -> None:
    assert _run(json.dumps({"prompt": "merge pdf files"})) == (0, "", "")
