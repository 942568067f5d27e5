"""The UserPromptSubmit hook (§7): fail open, exit 0, stdout only a hook JSON or nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from explorer.cli.commands.hook import run_hook
from tests.conftest import SAMPLE_SKILLS


@pytest.fixture(autouse=True)
def warm_cache(warm_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook's default cache is the run's warm one: these tests are about its answers."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(warm_cache_dir.parent))


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


def test_a_bad_config_value_is_skipped_with_a_line_and_the_hook_routes_on() -> None:
    """As a config file the hook cannot use: a typo in its settings line never silences
    the router; stderr names it."""
    payload = json.dumps({"prompt": "merge pdf files"})
    bad = ("model=bow", "max_skills=many")
    code, out, err = _run(payload, str(SAMPLE_SKILLS), assignments=bad)
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["additionalContext"]
    said = "--set: max_skills = 'many' is not valid; expected an integer; this --set is ignored"
    assert err == f"skill-explorer hook: {said}\n"


def test_roots_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SKILL_EXPLORER_ROOTS", f"{tmp_path}:{SAMPLE_SKILLS}")
    code, out, _ = _run(json.dumps({"prompt": "merge report.pdf files"}))
    assert code == 0
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    # the pdf skill of the root named in the variable, and no other library
    assert "pdf (confidence" in context and str(SAMPLE_SKILLS / "pdf" / "SKILL.md") in context


def test_the_project_s_skills_and_config_are_read_at_claude_s_project_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The event's cwd follows the agent's cd into a subdirectory; the project's
    ./.claude/skills and trusted skill-explorer.toml are at $CLAUDE_PROJECT_DIR, its root."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(SAMPLE_SKILLS / "pdf", project / ".claude" / "skills" / "pdf")
    (project / "sub").mkdir()
    prompt = "merge two report.pdf files into one"
    payload = json.dumps({"prompt": prompt, "cwd": str(project / "sub")})
    reference = ("model=bow", "preset=reference")  # one skill: the bag of words takes it
    assert _run(payload, assignments=reference) == (0, "", "")  # sub has no ./.claude/skills
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    code, out, _ = _run(payload, assignments=reference)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert code == 0 and str(project / ".claude" / "skills" / "pdf" / "SKILL.md") in context
    from explorer.engine.host import add_trusted

    (project / "skill-explorer.toml").write_text('deny = ["pdf"]\n', encoding="utf-8")
    add_trusted(project)
    assert _run(payload, assignments=reference) == (0, "", "")  # the root's config: denied


def test_no_roots_means_no_output() -> None:
    assert _run(json.dumps({"prompt": "merge pdf files"})) == (0, "", "")


# The engine's side: an answer as data, nothing written anywhere.


def test_answer_hook_returns_the_payload_and_prints_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from explorer.engine.host.hook import answer_hook, hook_output

    prompt = "merge these report.pdf files and extract the tables"
    answer = answer_hook(
        json.dumps({"prompt": prompt}), cli_roots=[str(SAMPLE_SKILLS)], assignments=["model=bow"]
    )
    assert answer.payload is not None
    context = answer.payload["hookSpecificOutput"]["additionalContext"]
    assert answer.payload == hook_output(context)
    assert "pdf (confidence" in context
    assert answer.warnings == () and any(line.startswith("stage=") for line in answer.debug)
    assert capsys.readouterr() == ("", "")


def test_answer_hook_is_silent_but_explains_itself_in_debug_lines() -> None:
    from explorer.engine.host.hook import answer_hook

    answer = answer_hook("{nope", cli_roots=[str(SAMPLE_SKILLS)])
    assert answer.payload is None and answer.warnings == ()
    assert answer.stderr_lines(debug=False) == ()
    assert "JSONDecodeError" in answer.stderr_lines(debug=True)[0]


def test_the_debug_lines_name_a_missing_root_and_count_rejected_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hook --skills` with a typo said only `stage=empty injected=[]`; the root is named
    however it was typed (relative here)."""
    monkeypatch.chdir(tmp_path)
    from explorer.engine.host.hook import answer_hook

    broken = tmp_path / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("no frontmatter here\n")
    answer = answer_hook(
        json.dumps({"prompt": "merge two report.pdf files"}),
        cli_roots=["nope", str(tmp_path / "skills")],
        assignments=("model=bow", "reranker=off"),
        use_ski_config=False,
        cache_dir=str(tmp_path / "cache"),
        state_dir=tmp_path / "state",
    )
    debug = answer.stderr_lines(debug=True)
    assert "nope: skills root does not exist" in " ".join(debug)
    assert "1 SKILL.md file rejected; `skill-explorer lint` names them" in debug


def test_verbose_names_what_went_wrong_as_the_debug_variable_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`hook -v` names on stderr what SKILL_EXPLORER_DEBUG=1 names: a root that does not
    exist; without either, nothing."""
    from explorer.cli import main

    missing = tmp_path / "nope"
    argv = ["hook", "--skills", str(missing), "--no-ski-config", "--set", "model=bow"]
    for verbose in (False, True):
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"prompt": "merge pdf files"})))
        assert main(argv + ["-v"] * verbose) == 0
        out, err = capsys.readouterr()
        assert out == ""
        assert (f"skipped {missing}: skills root does not exist" in err) is verbose, err
