"""`init` (the hook into settings.json, merged and backed up) and `doctor`."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.engine.host.setup import (
    hook_command,
    merge_hook,
    parse_hook_command,
    wired_commands,
)
from tests.conftest import SAMPLE_SKILLS


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_init_creates_the_settings_file(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "init")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (entry,) = settings["hooks"]["UserPromptSubmit"]
    assert entry["hooks"][0]["type"] == "command"
    assert entry["hooks"][0]["command"].endswith(" hook")
    # §10: the model's own loads and session starts keep the session ledger
    (tool,) = settings["hooks"]["PostToolUse"]
    assert tool["matcher"] == "Read|Skill"
    assert tool["hooks"][0]["command"].endswith(" hook --event PostToolUse")
    (start,) = settings["hooks"]["SessionStart"]
    assert "matcher" not in start  # every source: startup, resume, clear, compact
    assert start["hooks"][0]["command"].endswith(" hook --event SessionStart")
    assert code == 0 and "UserPromptSubmit, PostToolUse, SessionStart" in out
    assert not list((project / ".claude").glob("*.bak*"))


def test_init_says_when_no_personal_skills_root_exists(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wired to the default roots with neither ~/.claude/skills nor ~/.claude/plugins, the
    hook injects nothing outside a project with its own skills: init says so."""
    home = project.parent / "home"
    monkeypatch.setenv("HOME", str(home))
    code, out, _ = run(capsys, "init")
    assert code == 0 and "note: neither " in out and "the hook injects nothing" in out
    (home / ".claude" / "skills").mkdir(parents=True)
    (project.parent / "other").mkdir()
    monkeypatch.chdir(project.parent / "other")
    code, out, _ = run(capsys, "init")
    assert code == 0 and "added the hook" in out and "note: neither" not in out


def test_init_merges_keeps_everything_and_backs_up(project: Path, capsys) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
            "PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "x"}]}],
        },
        "model": "opus",
    }
    path.write_text(json.dumps(original, indent=4))
    before = path.read_text()
    assert run(capsys, "init", "--skills", str(SAMPLE_SKILLS))[0] == 0
    merged = json.loads(path.read_text())
    assert list(merged) == ["permissions", "hooks", "model"]  # key order kept
    assert merged["permissions"] == original["permissions"]
    theirs, ours_tool = merged["hooks"]["PostToolUse"]
    assert theirs == original["hooks"]["PostToolUse"][0]
    assert ours_tool["matcher"] == "Read|Skill"
    first, ours = merged["hooks"]["UserPromptSubmit"]
    assert first == original["hooks"]["UserPromptSubmit"][0]
    assert f"--skills {shlex.quote(str(SAMPLE_SKILLS))}" in ours["hooks"][0]["command"]
    assert (path.parent / "settings.json.bak").read_text() == before
    # a second run changes nothing and makes no second backup
    code, out, _ = run(capsys, "init")
    assert code == 0 and "already wired" in out
    assert json.loads(path.read_text()) == merged
    assert not (path.parent / "settings.json.bak.1").exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"hooks": []}', '"hooks" must be an object'),
        ('{"hooks": {"UserPromptSubmit": {}}}', "must be a list"),
    ],
)
def test_init_never_rewrites_a_file_it_cannot_merge(
    project: Path, capsys, text: str, reason: str
) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    code, _, err = run(capsys, "init")
    assert code == 2 and reason in err and str(path) in err
    assert err.rstrip().endswith("; nothing was written")
    assert path.read_text() == text
    assert not list(path.parent.glob("*.bak*"))


def test_init_user_and_dry_run(project: Path, capsys) -> None:
    home = Path(os.environ["HOME"])
    code, out, _ = run(capsys, "init", "--user", "--dry-run")
    assert code == 0 and json.loads(out)["hooks"]["UserPromptSubmit"]
    assert not (home / ".claude" / "settings.json").exists()
    assert run(capsys, "init", "--user")[0] == 0
    assert wired_commands(home / ".claude" / "settings.json")
    assert wired_commands(project / ".claude" / "settings.json") is None


def test_a_dry_run_over_another_wired_command_says_it_stays(project: Path, capsys) -> None:
    """init --dry-run --skills DIR over a hook wired with other roots printed the unchanged
    settings without a word; the real run says the old command stays."""
    (project / "a").mkdir()
    (project / "b").mkdir()
    assert run(capsys, "init", "--skills", "a")[0] == 0
    code, out, err = run(capsys, "init", "--dry-run", "--skills", "b")
    assert code == 0 and json.loads(out)["hooks"]["UserPromptSubmit"]
    assert f"hook stays: {hook_command([str(project / 'a')])};" in err
    assert f"`--replace` rewrites it to: {hook_command([str(project / 'b')])}" in err
    code, out, err = run(capsys, "init", "--dry-run", "--skills", "b", "--replace")
    assert code == 0 and f"hook --skills {project / 'b'}" in out and not err


def test_the_hook_counts_as_wired_whatever_the_path_looks_like() -> None:
    for command in (
        "'/opt/my tools/skill-explorer' hook --skills x",
        "/usr/bin/python3 -m explorer hook",
    ):
        entry = [{"hooks": [{"command": command}]}]
        events = ("UserPromptSubmit", "PostToolUse", "SessionStart")
        settings = {"hooks": dict.fromkeys(events, entry)}
        assert merge_hook(settings, "new").added is False
        # An older setup (the prompt only) gets just the two session events.
        older = {"hooks": {"UserPromptSubmit": entry}}
        assert merge_hook(older, "new").events == ("PostToolUse", "SessionStart")
    other = {"hooks": {"UserPromptSubmit": [{"hooks": [{"command": "skill-explorer why x"}]}]}}
    assert merge_hook(other, "new").added is True


@pytest.mark.parametrize(
    ("command", "ours", "roots"),
    [
        ("SKILL_EXPLORER_DEBUG=1 skill-explorer hook --skills a --skills=b", True, ("a", "b")),
        ("cd /work && /venv/bin/python3 -m explorer hook", True, ()),
        ("cd /p; skill-explorer hook", True, ()),
        ("a&&skill-explorer hook", True, ()),
        ("(skill-explorer hook --skills x)", True, ("x",)),
        ("env X=1 skill-explorer hook", True, ()),
        ("timeout 5 skill-explorer hook", True, ()),
        ("nice -n 5 skill-explorer hook", True, ()),
        ("uvx skill-explorer hook", True, ()),
        ("uv run skill-explorer hook --skills a", True, ("a",)),
        ("pipx run skill-explorer hook", True, ()),
        ("python -u -m explorer hook", True, ()),
        ("bash -c 'skill-explorer hook --skills x'", True, ("x",)),
        ('"$CLAUDE_PROJECT_DIR"/.venv/bin/skill-explorer hook', True, ()),
        ("echo skill-explorer hook is disabled", False, ()),
        ("skill-explorer why hook", False, ()),
        ("python -m explorer why hook", False, ()),
        ("'skill-explorer hook", False, ()),  # unbalanced: the shell would not run it
    ],
)
def test_a_command_runs_the_hook_only_when_the_shell_would_run_it(
    command: str, ours: bool, roots: tuple[str, ...]
) -> None:
    wired = parse_hook_command(command)
    assert (wired is not None) is ours
    assert wired is None or wired.roots == roots


def test_init_refuses_skills_roots_that_do_not_exist(project: Path, capsys) -> None:
    """A typo wired a hook that found no skills, silently, on every prompt."""
    code, _, err = run(capsys, "init", "--skills", str(project / ".claude" / "skils"))
    assert code == 2 and "skils: no such directory" in err and "nothing was written" in err
    assert not (project / ".claude" / "settings.json").exists()


def test_init_replace_rewrites_only_its_own_entries(project: Path, capsys) -> None:
    """A moved installation, or other roots: a plain init says what it would change;
    --replace rewrites the three entries and keeps every other hook."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    stale = "/old/venv/bin/skill-explorer hook --skills /gone"
    theirs = {"type": "command", "command": "echo hi"}
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "UserPromptSubmit": [
                        {"hooks": [theirs, {"type": "command", "command": stale}]}
                    ],
                    "PostToolUse": [{"hooks": [{"type": "command", "command": stale}]}],
                    "SessionStart": [{"hooks": [{"type": "command", "command": stale}]}],
                }
            }
        )
    )
    before = path.read_text()
    code, out, _ = run(capsys, "init", "--skills", str(SAMPLE_SKILLS))
    assert code == 0 and "nothing changed" in out and f"the prompt's hook runs: {stale}" in out
    assert "init --replace" in out and path.read_text() == before
    assert run(capsys, "init", "--replace", "--skills", str(SAMPLE_SKILLS))[0] == 0
    hooks = json.loads(path.read_text())["hooks"]
    (kept, ours) = hooks["UserPromptSubmit"]
    assert kept == {"hooks": [theirs]}
    assert ours["hooks"][0]["command"] == hook_command([str(SAMPLE_SKILLS)])
    assert all(stale not in json.dumps(hooks[event]) for event in hooks)
    assert (path.parent / "settings.json.bak").read_text() == before
    # Replacing what is there already writes nothing, and keeps no second backup.
    code, out, _ = run(capsys, "init", "--replace", "--skills", str(SAMPLE_SKILLS))
    assert code == 0 and "nothing changed" in out and "hook runs" not in out
    assert not (path.parent / "settings.json.bak.1").exists()


def test_the_written_command_runs_the_hook(project: Path, capsys) -> None:
    assert run(capsys, "init", "--skills", str(SAMPLE_SKILLS))[0] == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = json.dumps({"prompt": "merge these report.pdf files", "cwd": str(project)})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [*shlex.split(command), "--set", "model=bow"],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    assert "pdf" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_written_session_commands_keep_the_ledger(
    project: Path, capsys, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The written commands' arguments, run in-process (the test above starts the written
    command line as a process)."""
    assert run(capsys, "init", "--skills", str(SAMPLE_SKILLS))[0] == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    read = {"file_path": str(SAMPLE_SKILLS / "pdf" / "SKILL.md")}
    for event, payload in (
        ("SessionStart", {"session_id": "s1", "source": "startup"}),
        ("PostToolUse", {"session_id": "s1", "tool_name": "Read", "tool_input": read}),
    ):
        argv = shlex.split(settings["hooks"][event][0]["hooks"][0]["command"])
        # `…/skill-explorer hook …` or `python -m explorer hook …`: the program's arguments
        arguments = argv[argv.index("hook") :]
        # no hook_event_name in the payload: --event names it
        monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
        code, out, _ = run(capsys, *arguments, "--set", "model=bow")
        assert code == 0 and out == ""
    (ledger,) = (state / "skill-explorer" / "sessions").glob("s1-*.json")
    assert json.loads(ledger.read_text())["loaded"]["pdf"]["source"] == "model"


def test_doctor_reports_what_the_router_uses(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--set", "model=bow")
    assert code == 0
    for area in ("config:", "roots:", "skills:", "cache:", "model:", "reranker:", "hook:"):
        assert area in out
    assert f"{SAMPLE_SKILLS} from command line" in out
    assert "dense model bow" in out
    assert "skill-explorer init" in out  # the hook is not wired in this project


def test_doctor_warns_of_a_skill_other_hosts_cannot_read(project: Path, capsys) -> None:
    """meeting-notes-summarizer's frontmatter is not YAML: this router routes it by the
    line reader, Claude Code may not load it. lint calls it an error; doctor must not
    file it with the harmless reading differences."""
    args = ("doctor", "--skills", str(SAMPLE_SKILLS), "--set", "model=bow", "--json")
    code, out, _ = run(capsys, *args)
    warnings = [c["message"] for c in json.loads(out) if c["status"] == "warning"]
    assert (
        code == 0
        and (
            "frontmatter YAML cannot read: 1 skill, routed here by the line reader; Claude Code "
            "and other hosts may not load it (lint shows which)"
        )
        in warnings
    )


def test_doctor_quotes_the_floor_decide_runs_with(project: Path, capsys) -> None:
    """Under the calibrated preset the floor follows the library's size, not the model's
    own knee: doctor says the number `why` and the hook use."""
    for preset in ("calibrated", "reference"):
        # The floor does not depend on the reranker: off, so four runs load one model each.
        common = ("--skills", str(SAMPLE_SKILLS), "--set", f"preset={preset}")
        common += ("--set", "reranker=off")
        _, out, _ = run(capsys, "why", "merge pdf", "--json", *common)
        floor = json.loads(out)["tuning"]["min_similarity"]
        _, out, _ = run(capsys, "doctor", *common)
        assert f"floor {floor:.3f}" in out, (preset, floor, out)


def test_doctor_names_the_relevance_model_that_decides(project: Path, capsys) -> None:
    """Under the default preset the relevance model decides, at its threshold for the
    library's size, which `why --json` reports too; without the reranker it cannot, and
    doctor warns that the calibrated gates decide instead."""
    common = ("--skills", str(SAMPLE_SKILLS))
    _, out, _ = run(capsys, "why", "merge pdf", "--json", *common)
    relevance = json.loads(out)["relevance"]
    _, out, _ = run(capsys, "doctor", *common)
    assert f"decides: relevance model {relevance['model']}, inject at p ≥ " in out
    assert f"p ≥ {relevance['threshold']:g}, a second skill at p ≥ " in out
    _, out, _ = run(capsys, "doctor", *common, "--set", "reranker=off", "--json")
    warnings = [c["message"] for c in json.loads(out) if c["status"] == "warning"]
    assert any(m.startswith("the relevance model does not decide: ") for m in warnings)


def test_doctor_says_what_is_wrong(project: Path, capsys, monkeypatch) -> None:
    ski = Path(os.environ["XDG_CONFIG_HOME"]) / "ski" / "config.toml"
    ski.parent.mkdir(parents=True)
    ski.write_text("max_skills = [")
    code, out, _ = run(capsys, "doctor", "--set", "model=nope", "--json")
    checks = json.loads(out)
    assert code == 1
    errors = [check["message"] for check in checks if check["status"] == "error"]
    assert any("no skills root" in message for message in errors)
    warnings = " ".join(check["message"] for check in checks if check["status"] == "warning")
    assert str(ski) in warnings
    # A model the config names that does not exist is the reference's fallback, words only,
    # and the relevance model off: an error here, with the nearest name.
    assert any(message.startswith("model = 'nope' names no model:") for message in errors)
    code, out, _ = run(capsys, "doctor", "--set", "model=minlm", "--json")
    errors = [check["message"] for check in json.loads(out) if check["status"] == "error"]
    assert any("'minlm' names no model (did you mean 'minilm'?)" in message for message in errors)
    # So is a reranker the config names that is not there: no stage 2, no relevance model.
    code, out, _ = run(capsys, "doctor", "--set", "reranker=pakaged", "--json")
    errors = [check["message"] for check in json.loads(out) if check["status"] == "error"]
    assert code == 1 and any(
        message.startswith("reranker pakaged is not an ONNX file")
        and "(did you mean 'packaged'?); reranker takes auto, packaged, off or a path" in message
        for message in errors
    )


def test_doctor_checks_the_wired_command_can_run_and_finds_skills(project: Path, capsys) -> None:
    """A deleted installation's path, or a --skills typo, injected nothing while doctor
    said "hook wired … nothing wrong"; two different commands inject twice."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    command = "/old/venv/bin/skill-explorer hook --skills nowhere"
    path.write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": command}]}]}})
    )
    code, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--json")
    hook = [c for c in json.loads(out) if c["area"] == "hook"]
    errors = " ".join(c["message"] for c in hook if c["status"] == "error")
    assert code == 1
    assert "program /old/venv/bin/skill-explorer is not there" in errors
    assert "--skills nowhere: no such directory" in errors
    assert "init --replace" in errors
    user = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": hook_command()}]}]}})
    )
    _, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--json")
    warnings = [c["message"] for c in json.loads(out) if c["status"] == "warning"]
    assert any("2 different hook commands are wired" in m for m in warnings), warnings


def test_doctor_without_skills_checks_the_roots_the_wired_hook_reads(project: Path, capsys) -> None:
    """After `init --skills DIR`, doctor (which init points to) said "no skills root"
    and exited 1: it looked at the default roots, not at the hook's --skills."""
    skills = project / "my skills"
    skills.mkdir()
    (skills / "pdf").mkdir()
    (skills / "pdf" / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Merge and split PDF files. Use when the user asks to "
        "merge, split or extract pages from a PDF.\n---\nbody\n"
    )
    assert run(capsys, "init", "--skills", str(skills))[0] == 0
    code, out, _ = run(capsys, "doctor", "--json")
    checks = json.loads(out)
    roots = [c["message"] for c in checks if c["area"] == "roots"]
    assert code == 0, [c for c in checks if c["status"] == "error"]
    assert roots == [f"{skills} from the hook wired in {project / '.claude' / 'settings.json'}"]
    assert any(c["message"] == "1 skill found" for c in checks), checks


def test_init_over_an_older_setup_points_at_its_stale_prompt_hook(project: Path, capsys) -> None:
    """Only the prompt's hook wired, by a command of a moved installation: init adds the
    two session events and says the prompt's still runs the old command."""
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    stale = "/old/venv/bin/skill-explorer hook"
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": stale}]}]}}))
    code, out, _ = run(capsys, "init")
    assert code == 0 and "added the hook for PostToolUse, SessionStart" in out
    assert f"the prompt's hook runs: {stale}" in out and "init --replace" in out


def test_doctor_reads_a_wired_command_as_claude_code_runs_it(project: Path, capsys) -> None:
    """In the project's directory with $CLAUDE_PROJECT_DIR set (the form Claude Code's
    docs show): no false 'not there'; a variable doctor cannot see is 'not checked'."""
    program = project / ".venv" / "bin" / "skill-explorer"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (project / "skills").mkdir()
    commands = [
        '"$CLAUDE_PROJECT_DIR"/.venv/bin/skill-explorer hook --skills "$CLAUDE_PROJECT_DIR/skills"',
        ".venv/bin/skill-explorer hook --skills skills",  # relative to the project
        "$NOT_SET_ANYWHERE/skill-explorer hook",
    ]
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    groups = [{"hooks": [{"command": command}]} for command in commands]
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": groups}}))
    _, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--json")
    hook = [c for c in json.loads(out) if c["area"] == "hook"]
    assert not [c for c in hook if c["status"] == "error"], hook
    (unchecked,) = [c["message"] for c in hook if "not checked" in c["message"]]
    assert unchecked.endswith("doctor cannot see: $NOT_SET_ANYWHERE/skill-explorer")


def test_doctor_asks_for_the_session_events_an_older_setup_lacks(project: Path, capsys) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    command = "skill-explorer hook"
    path.write_text(
        json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": command}]}]}})
    )
    _, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--set", "model=bow")
    assert "PostToolUse, SessionStart not wired" in out
    assert run(capsys, "init")[0] == 0
    _, out, _ = run(capsys, "doctor", "--skills", str(SAMPLE_SKILLS), "--set", "model=bow")
    assert "not wired" not in out.replace("hook not wired", "")


def test_doctor_diagnoses_an_invalid_config_instead_of_stopping(project: Path, capsys) -> None:
    """A config the other commands refuse is what doctor is run for: it says which file
    and key, as an error, and goes on to check the rest without that file or value."""
    bad = project / "skill-explorer.toml"
    bad.write_text("max_skills = 0\n")
    common = ("--skills", str(SAMPLE_SKILLS), "--set", "model=bow")
    code, out, err = run(capsys, "doctor", *common, "--set", "bm25_b=nan", "--set", "nope=1")
    assert code == 1, err
    for area in ("config:", "roots:", "skills:", "model:", "hook:"):
        assert area in out
    marked = [line.strip() for line in out.splitlines() if line.strip().startswith("✗")]
    assert f"✗ {bad}: max_skills = 0 is out of range: 1 to 100" in marked[0], marked
    assert any("--set: bm25_b = nan is not a finite number" in line for line in marked)
    assert any("--set: unknown key 'nope'" in line for line in marked)
    # Each said once, as the error it is: not again as a warning, nor on stderr.
    assert out.count("bm25_b = nan is not a finite number") == 1
    assert out.count("unknown key 'nope'") == 1 and "nope" not in err
    assert "dense model bow" in out  # the valid --set still applies
    assert run(capsys, "route", "x", *common)[0] == 2  # a usage error for the others
    missing = project / "no-reranker"
    out = run(capsys, "doctor", *common, "--set", f"reranker={missing}")[1]
    assert out.count(f"reranker {missing} is not an ONNX file") == 1  # under reranker: only


def test_init_writes_through_a_symlinked_settings_file(project: Path, capsys) -> None:
    shared = project.parent / "shared-settings.json"
    shared.write_text('{"theme": "dark"}\n', encoding="utf-8")
    link = project / ".claude" / "settings.json"
    link.parent.mkdir()
    os.symlink(shared, link)
    assert run(capsys, "init")[0] == 0
    assert link.is_symlink() and wired_commands(shared)
    assert json.loads(shared.read_text("utf-8"))["theme"] == "dark"
