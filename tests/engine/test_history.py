"""Telemetry and its read-back: the log is opt-in and private by default, reads the
reference's events too (src/telemetry.rs), and history classifies and replays real turns."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from explorer.engine.host.history import replay, usage_report
from explorer.engine.host.telemetry import (
    EventKind,
    Ranked,
    TelemetryLog,
    prompt_digest,
    read_events,
    switched_on,
)


def test_telemetry_is_off_unless_a_flag_or_variable_says_on() -> None:
    assert not switched_on(False, "X", {})
    assert switched_on(True, "X", {})
    assert switched_on(False, "X", {"X": "yes"})
    assert not switched_on(False, "X", {"X": "0"})


def test_prompt_text_is_kept_only_with_the_second_opt_in(tmp_path: Path) -> None:
    private = TelemetryLog(tmp_path / "a.jsonl")
    private.recommend("s", "merge my secret.pdf files", "cosine", [Ranked("pdf", 0.9)], [])
    line = (tmp_path / "a.jsonl").read_text()
    assert "secret" not in line
    assert json.loads(line)["prompt_sha"] == prompt_digest("merge my secret.pdf files")
    kept = TelemetryLog(tmp_path / "b.jsonl", keep_prompts=True)
    kept.recommend("s", "merge my secret.pdf files", "cosine", [Ranked("pdf", 0.9)], [])
    assert "secret.pdf" in (tmp_path / "b.jsonl").read_text()
    # A pasted log is kept as the router read it (routing.md §2.6): the replay decides the
    # same, and the line is not megabytes long; the digest is the whole prompt's.
    from explorer.engine.route.query import PROMPT_READ_CHARS, prompt_read

    long = "merge these pdfs\n" + "log line " * PROMPT_READ_CHARS
    kept.recommend("s", long, "cosine", [Ranked("pdf", 0.9)], [])
    last = json.loads((tmp_path / "b.jsonl").read_text().splitlines()[-1])
    assert last["prompt"] == prompt_read(long) and last["prompt_sha"] == prompt_digest(long)


def test_concurrent_writers_interleave_whole_lines(tmp_path: Path) -> None:
    log = TelemetryLog(tmp_path / "t.jsonl", keep_prompts=True)
    prompt = "x" * 2000

    def write(worker: int) -> None:
        for n in range(50):
            log.use(f"session-{worker}", f"skill-{n}", "read", prompt)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result = read_events([tmp_path / "t.jsonl"])
    assert len(result.events) == 400 and not result.skipped


def test_the_reference_log_reads_and_bad_lines_are_listed(tmp_path: Path) -> None:
    reference = tmp_path / "ski.jsonl"
    reference.write_text(
        '{"ts":1,"kind":"recommend","session":"s","prompt":"fix my pod","stage":"rerank",'
        '"considered":[{"id":"k8s","score":1.5}],"candidates":[],"injected":[],'
        '"abstained":"below_gate"}\n'
        "not json\n"
        '{"ts":2,"kind":"use","session":"s","skill":"k8s","via":"skill"}\n'
    )
    result = read_events([reference])
    assert [event.kind for event in result.events] == [EventKind.RECOMMEND, EventKind.USE]
    assert result.events[0].abstained == "below_gate"
    assert len(result.skipped) == 1 and ":2:" in result.skipped[0]


def _recorded_session(path: Path) -> None:
    """A real log written by TelemetryLog: three prompts and what the model loaded."""
    log = TelemetryLog(path, keep_prompts=True)
    log.recommend("s1", "merge two pdfs", "cosine", [Ranked("pdf", 0.9)], [Ranked("pdf", 0.9)])
    log.use("s1", "pdf", "read", "merge two pdfs")
    log.recommend("s1", "make a chart", "cosine", [Ranked("xlsx", 0.5)], [Ranked("xlsx", 0.6)])
    log.recommend("s1", "debug my pod", "cosine", [Ranked("xlsx", 0.3), Ranked("k8s", 0.2)], [])
    log.use("s1", "k8s", "skill", "debug my pod")
    log.use("s2", "docx", "skill")  # a session with no prompt logged


def test_usage_report_classifies_every_turn(tmp_path: Path) -> None:
    _recorded_session(tmp_path / "t.jsonl")
    report = usage_report(read_events([tmp_path / "t.jsonl"]).events)
    assert (report.turns, report.turns_with_injection, report.uses_without_prompt) == (3, 2, 1)
    assert report.skills["pdf"].loaded_after_injection == 1
    assert report.skills["xlsx"].ignored == 1
    assert report.skills["k8s"].near_miss == 1  # ranked 2nd, not injected, loaded anyway
    assert report.totals().injected == 2


def test_a_skill_whose_body_was_given_is_not_counted_ignored(tmp_path: Path) -> None:
    """The hook gives a lone confident pick its SKILL.md body: the model then has nothing to
    read, and not loading it says nothing about whether it was used."""
    log = TelemetryLog(tmp_path / "t.jsonl")
    whole = [Ranked("pdf", 0.95)]
    log.recommend("s1", "fill the form", "relevance", whole, whole, bodies=["pdf"])
    log.recommend("s2", "merge pdfs", "relevance", whole, whole)
    events = read_events([tmp_path / "t.jsonl"]).events
    assert events[0].bodies == ("pdf",) and events[1].bodies == ()
    pdf = usage_report(events).skills["pdf"]
    assert (pdf.injected, pdf.body_given, pdf.ignored, pdf.loaded_after_injection) == (2, 1, 1, 0)


def test_replay_lists_the_prompts_an_edit_changes(tmp_path: Path) -> None:
    _recorded_session(tmp_path / "t.jsonl")
    events = read_events([tmp_path / "t.jsonl"]).events
    unchanged = replay(
        events, lambda p: {"merge two pdfs": ["pdf"], "make a chart": ["xlsx"]}.get(p, [])
    )
    assert unchanged.replayed == 3 and unchanged.changes == ()
    # An edit to k8s's description makes it win its prompt: the change the model wanted.
    edited = replay(
        events, lambda p: {"merge two pdfs": ["pdf"], "debug my pod": ["k8s"]}.get(p, [])
    )
    verdicts = {change.prompt: change.verdict for change in edited.changes}
    assert verdicts == {"debug my pod": "better", "make a chart": "changed"}


def test_session_replay_keeps_a_ledger_and_a_compaction_rearms_it(tmp_path: Path) -> None:
    from explorer.engine.host.history import replay_sessions

    log = TelemetryLog(tmp_path / "t.jsonl", keep_prompts=True)
    log.recommend("s", "merge two pdfs", "cosine", [Ranked("pdf", 0.9)], [Ranked("pdf", 0.7)])
    log.recommend("s", "merge two pdfs", "cosine", [Ranked("pdf", 0.9)], [])  # held back
    log.compact("s")
    log.recommend("s", "merge two pdfs", "cosine", [Ranked("pdf", 0.9)], [Ranked("pdf", 0.7)])
    events = read_events([tmp_path / "t.jsonl"]).events
    seen: list[tuple[str, ...]] = []

    def decide_turn(prompt, context, ledger):  # type: ignore[no-untyped-def]
        seen.append(context)
        return [] if "pdf" in ledger.loaded else [("pdf", 0.7)]

    result = replay_sessions(events, decide_turn)
    assert result.replayed == 3 and result.changes == ()
    assert seen == [(), ("merge two pdfs",), ()]  # the window is re-armed too
    assert usage_report(events).turns == 3  # a compaction is not a turn
