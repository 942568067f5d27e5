"""The hook across a session's life (§10; reference: src/hook.rs, src/observe.rs,
src/session_start.rs): what is injected each turn, and a ledger that loses nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.engine.host.hook import HookEvent, answer_hook, loaded_skill_id
from explorer.engine.host.telemetry import EventKind, read_events
from explorer.engine.route.session import SessionStore, Source

SAMPLES = Path(__file__).resolve().parents[2] / "sample_skills"
PDF_PROMPT = "merge two report.pdf files into one"
SHEET_PROMPT = "add a pivot table to the quarterly numbers in budget.xlsx"


class Host:
    """Sends one session's events to the hook the way Claude Code does."""

    def __init__(self, tmp_path: Path, cache: Path, session: str = "session-1") -> None:
        self.session = session
        self.state = tmp_path / "state"
        self.cache = str(cache)  # the run's warm cache: these tests are about the ledger
        # The bag-of-words model: each hook call would load MiniLM again (a real hook runs
        # once per process); test_no_network and the history tests run it with MiniLM.
        self.assignments = ["model=bow", "reranker=off"]

    def send(self, event: HookEvent, **fields: object) -> list[str]:
        payload = {"hook_event_name": event.value, "session_id": self.session, **fields}
        answer = answer_hook(
            json.dumps(payload),
            cli_roots=[str(SAMPLES)],
            assignments=self.assignments,
            use_ski_config=False,
            cache_dir=self.cache,
            state_dir=self.state,
        )
        assert not any("Error" in line for line in answer.debug), answer.debug
        self.debug = answer.debug
        if answer.payload is None:
            self.text = ""
            return []
        text = self.text = answer.payload["hookSpecificOutput"]["additionalContext"]
        return [skill for skill in ("pdf", "xlsx") if f"{skill}/SKILL.md" in text]

    def prompt(self, prompt: str) -> list[str]:
        return self.send(HookEvent.PROMPT, prompt=prompt, cwd=str(self.state.parent))


def test_a_scripted_session_injects_each_skill_once_until_compaction(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    host = Host(tmp_path, warm_cache_dir)
    assert host.send(HookEvent.SESSION_START, source="startup") == []
    assert host.prompt(PDF_PROMPT) == ["pdf"]  # turn 1: new
    assert host.prompt(PDF_PROMPT) == []  # turn 2: already recommended, not risen
    # The debug line says why nothing went, not only "injected=[]".
    assert host.debug[-1].endswith("held back by the session ledger: pdf (already_recommended)")
    assert host.prompt(SHEET_PROMPT) == ["xlsx"]  # turn 3: another skill is still new
    read = {"file_path": str(SAMPLES / "xlsx" / "SKILL.md")}
    host.send(HookEvent.TOOL_USED, tool_name="Read", tool_input=read)
    ledger = SessionStore(host.state / "sessions").load(host.session)
    assert ledger.loaded["xlsx"].source is Source.MODEL
    assert host.prompt(SHEET_PROMPT) == []  # the model has it
    host.send(HookEvent.SESSION_START, source="compact")  # the summary lost both skills
    assert host.prompt(PDF_PROMPT) == ["pdf"]
    assert host.prompt(SHEET_PROMPT) == ["xlsx"]


def test_the_trace_names_the_ledger_as_its_own_gate(warm_cache_dir: Path) -> None:
    from explorer.engine.base.config import Config
    from explorer.engine.index.opening import open_engine, open_library
    from explorer.engine.route.pipeline import decide
    from explorer.engine.route.session import Session

    config = Config()
    index = open_library([str(SAMPLES)], config, engine=open_engine(config, warm_cache_dir))
    ledger = Session()
    ledger.mark_loaded("pdf")
    decision = decide(PDF_PROMPT, index, config, ledger=ledger)
    gate = next(gate for gate in decision.gates if gate.name == "session_ledger")
    assert not gate.passed and gate.inputs["held"] == {"pdf": "loaded_by_model"}
    assert decision.rows[0].id == "pdf" and decision.rows[0].verdict == "session_ledger"
    assert "session_ledger" not in [gate.name for gate in decide(PDF_PROMPT, index, config).gates]


def test_recent_turns_feed_the_file_channel(
    tmp_path: Path, warm_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reference: context_prompts.tsv's followups: a file attached a turn ago still counts."""
    monkeypatch.setenv("SKILL_EXPLORER_TELEMETRY", "1")  # to read each turn's ranking back
    followup = "now add a pivot summarising revenue by region"
    with_context = Host(tmp_path, warm_cache_dir, "with-context")
    with_context.prompt("I saved the numbers in quarterly_numbers.xlsx")
    with_context.prompt(followup)
    Host(tmp_path, warm_cache_dir, "alone").prompt(followup)

    def xlsx_score(session: str) -> float:
        events = read_events([tmp_path / "state" / "telemetry.jsonl"]).events
        last = [event for event in events if event.session == session][-1]
        return next(ranked.value for ranked in last.considered if ranked.id == "xlsx")

    assert xlsx_score("with-context") == pytest.approx(xlsx_score("alone") + 0.3)  # §3.4


def test_post_tool_use_reads_the_skill_a_tool_loaded(tmp_path: Path) -> None:
    skill_md = str(SAMPLES / "pdf" / "SKILL.md")
    assert loaded_skill_id({"tool_name": "Read", "tool_input": {"file_path": skill_md}}) == "pdf"
    assert loaded_skill_id({"tool_name": "Skill", "tool_input": {"skill": "docs:pdf"}}) == "pdf"
    # Earlier Claude Code releases named the skill `command`.
    assert loaded_skill_id({"tool_name": "Skill", "tool_input": {"command": "pdf"}}) == "pdf"
    other = {"tool_name": "Read", "tool_input": {"file_path": str(SAMPLES / "README.md")}}
    assert loaded_skill_id(other) is None
    assert loaded_skill_id({"tool_name": "Bash", "tool_input": {"command": "ls"}}) is None


def test_telemetry_records_turns_and_uses_only_when_asked(
    tmp_path: Path, warm_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = Host(tmp_path, warm_cache_dir)
    host.prompt(PDF_PROMPT)
    assert not (host.state / "telemetry.jsonl").exists()
    monkeypatch.setenv("SKILL_EXPLORER_TELEMETRY", "1")
    host.assignments.append("body_inject_min=0.5")  # xlsx's 0.73 gets its body
    host.prompt(SHEET_PROMPT)
    answered = host.text
    host.send(HookEvent.TOOL_USED, tool_name="Skill", tool_input={"skill": "xlsx"})
    events = read_events([host.state / "telemetry.jsonl"]).events
    assert [event.kind for event in events] == [EventKind.RECOMMEND, EventKind.USE]
    assert events[0].injected[0].id == "xlsx" and not events[0].prompt  # text not kept
    # A body given whole is logged as such, so history does not count it ignored.
    assert "Its instructions follow." in answered and events[0].bodies == ("xlsx",)


def _observe_many(state: str, worker: int, count: int) -> None:
    for n in range(count):
        payload = {
            "hook_event_name": "PostToolUse",
            "session_id": "crowded",
            "tool_name": "Skill",
            "tool_input": {"skill": f"skill-{worker}-{n}"},
        }
        answer = answer_hook(json.dumps(payload), use_ski_config=False, state_dir=state)
        assert answer.debug == (f"loaded by the model: skill-{worker}-{n}",), answer.debug


@pytest.mark.slow  # over 7 s here; .ci/run runs it
def test_a_thousand_concurrent_hook_calls_lose_no_ledger_entry(tmp_path: Path) -> None:
    workers, each = 8, 125
    # spawn, not fork: the test process has threads by now (models, watchers, coverage's
    # tracer), and a forked child inherits any lock one of them held, held for ever: a
    # child then hung inside its ledger update, holding the ledger's lock.
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_observe_many, args=(str(tmp_path), w, each)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(300)
        assert process.exitcode == 0
    ledger = SessionStore(tmp_path / "sessions").load("crowded")
    assert len(ledger.loaded) == workers * each


@pytest.mark.slow
def test_the_hook_process_exits_zero_on_every_event_even_with_a_corrupt_ledger(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "skill-explorer" / "sessions")
    store.directory.mkdir(parents=True)
    store.path_for("s").write_text("\x00 not a ledger")
    env = {"XDG_STATE_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for payload in (
        {"hook_event_name": "SessionStart", "session_id": "s", "source": "compact"},
        {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Skill"},
        {"hook_event_name": "Stop", "session_id": "s"},
        {"session_id": "s", "prompt": PDF_PROMPT},
    ):
        result = subprocess.run(
            [sys.executable, "-m", "explorer", "hook", "--skills", str(SAMPLES)],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert result.returncode == 0, result.stderr
    assert any(".corrupt-" in path.name for path in store.directory.iterdir())


def test_a_killed_hooks_temporary_ledger_is_cleaned_at_the_next_hook(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """A hook killed between writing its temporary ledger and the rename leaves a file
    behind; the next hook removes it once its writer is gone (or it is minutes old), and
    never touches a live writer's fresh one."""
    host = Host(tmp_path, warm_cache_dir)
    assert host.prompt(PDF_PROMPT) == ["pdf"]
    sessions = host.state / "sessions"
    ledger = SessionStore(sessions).path_for(host.session)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    orphan = sessions / f".{ledger.name}.{dead_pid}.1700000000000000000.tmp"
    other = sessions / f".other-0123456789ab.json.{dead_pid}.1700000000000000001.tmp"
    old = sessions / f".{ledger.name}.{os.getpid()}.1700000000000000002.tmp"
    writing = sessions / f".{ledger.name}.{os.getpid()}.1700000000000000003.tmp"
    for path in (orphan, other, old, writing):
        path.write_text("{", encoding="utf-8")
    os.utime(old, (1_700_000_000, 1_700_000_000))  # a live pid (reused?), but long gone
    unrelated = sessions / "notes.tmp"
    unrelated.write_text("mine", encoding="utf-8")
    host.prompt(SHEET_PROMPT)  # the next hook of this session reads and writes its ledger
    left = sorted(path.name for path in sessions.iterdir())
    assert orphan.name not in left and other.name not in left and old.name not in left
    assert writing.name in left and unrelated.name in left and ledger.name in left
