"""`skill-explorer history` over a log the real hook wrote (telemetry on, prompts kept):
the usage report, and the replay of every logged prompt against an edited library."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.engine.host.hook import HookEvent, answer_hook
from tests.conftest import SAMPLE_SKILLS

POD = "my pod keeps crashing with CrashLoopBackOff, why?"
PDF = "merge two report.pdf files into one"
TRICKY = "merge two report.pdf files \x1b]0;owned\x07 into one"
# Recorded and replayed with the bag-of-words model: each hook call of the recording would
# load MiniLM again. tests/engine/test_no_network.py runs the hook with MiniLM.
BOW = ("model=bow", "reranker=off")


def record_session(library: Path, state: Path, cache: Path) -> Path:
    """Drive the hook through one session with telemetry on; return the log it wrote."""

    def send(event: HookEvent, session: str = "s1", **fields: object) -> None:
        payload = {"hook_event_name": event.value, "session_id": session, **fields}
        answer_hook(
            json.dumps(payload),
            cli_roots=[str(library)],
            assignments=["telemetry=true", "telemetry_prompts=true", *BOW],
            use_ski_config=False,
            cache_dir=str(cache),
            state_dir=state,
        )

    send(HookEvent.SESSION_START, source="startup")
    send(HookEvent.PROMPT, prompt=POD)
    send(HookEvent.TOOL_USED, tool_name="Skill", tool_input={"skill": "kubernetes-debugger"})
    send(HookEvent.PROMPT, prompt=POD)  # held back by the ledger: not a change on replay
    send(HookEvent.PROMPT, prompt=PDF)
    send(HookEvent.PROMPT, "s2", prompt=TRICKY)  # another session: pdf is new there
    log = state / "telemetry.jsonl"
    assert log.is_file()
    return log


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory, warm_cache_dir: Path
) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("history")
    library = root / "skills"
    shutil.copytree(SAMPLE_SKILLS, library)
    cache = warm_cache_dir
    return library, record_session(library, root / "state", cache), cache


def history(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    settings = [word for assignment in BOW for word in ("--set", assignment)]
    code = main(["history", *argv, "--no-ski-config", *settings])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_usage_report_counts_what_the_model_loaded(recorded, capsys) -> None:
    library, log, cache = recorded
    args = [str(log), "--skills", str(library), "--cache-dir", str(cache)]
    code, out, _ = history(capsys, *args, "--json")
    assert code == 0
    data = json.loads(out)
    usage = data["usage"]
    assert usage["turns"] == 4
    k8s = usage["skills"]["kubernetes-debugger"]
    assert (k8s["injected"], k8s["loaded_after_injection"]) == (1, 1)
    assert usage["skills"]["pdf"]["ignored"] == 2  # in two sessions, never loaded
    # The unedited library decides every prompt as logged, the ledger-held repeat included.
    assert data["replay"]["replayed"] == 4 and data["replay"]["changes"] == []


def test_an_edited_description_lists_the_prompts_it_changes(recorded, capsys, tmp_path) -> None:
    library, log, cache = recorded
    edited = tmp_path / "skills"
    shutil.copytree(library, edited)
    skill = edited / "kubernetes-debugger" / "SKILL.md"
    skill.write_text(
        "---\nname: kubernetes-debugger\ndescription: Plans vegetable gardens and crop "
        "rotation for allotments. Use when the user asks what to sow in spring.\n---\n\n# Garden\n"
    )
    args = [str(log), "--skills", str(edited), "--cache-dir", str(cache)]
    code, out, _ = history(capsys, *args, "--json")
    assert code == 0
    changes = json.loads(out)["replay"]["changes"]
    assert [(c["prompt"], c["before"], c["after"], c["verdict"]) for c in changes] == [
        (POD, ["kubernetes-debugger"], [], "worse")  # the model had loaded it
    ]
    code, out, _ = history(capsys, *args)
    assert code == 0
    assert "1 would inject differently: 0 better, 1 worse, 0 changed" in out
    assert POD in out and "kubernetes-debugger" in out


def test_untrusted_prompt_text_is_made_visible_and_json_stays_exact(recorded, capsys) -> None:
    library, log, cache = recorded
    args = [str(log), "--skills", str(library), "--cache-dir", str(cache)]
    # Denying the skill the tricky prompt injected turns that injection into a change
    # (whatever the preset: a floor would not stop its lexical fast path).
    deny = ["--set", 'deny=["pdf"]']
    code, out, _ = history(capsys, *args, *deny)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "␛]0;owned␇" in out
    code, out, _ = history(capsys, *args, *deny, "--json")
    prompts = {change["prompt"] for change in json.loads(out)["replay"]["changes"]}
    assert TRICKY in prompts


def test_missing_logs_say_how_to_turn_telemetry_on(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    code, _, err = history(capsys, "--no-replay")
    assert code == 1 and "telemetry = true" in err
    code, _, err = history(capsys, str(tmp_path / "nope.jsonl"))
    assert code == 2 and "nope.jsonl: no such file" in err
