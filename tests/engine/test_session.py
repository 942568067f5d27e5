"""The session ledger: dedup rules as the reference has them (src/session.rs), and a store that
loses nothing under concurrency and survives a corrupt file."""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from explorer.engine.route.session import (
    PROMPT_KEEP_CHARS,
    SESSION_MAX_AGE_S,
    LedgerEntry,
    LedgerUnavailable,
    Session,
    SessionStore,
    SessionVerdict,
    Source,
)

HIGH = 0.80


def test_an_unseen_skill_is_new_at_any_confidence() -> None:
    assert Session().verdict("pdf", 0.40, HIGH) is SessionVerdict.NEW


def test_a_skill_the_model_loaded_is_never_sent_again() -> None:
    session = Session()
    session.mark_loaded("pdf")
    assert session.verdict("pdf", 0.99, HIGH) is SessionVerdict.LOADED


def test_a_recommendation_is_repeated_only_when_it_rises_into_the_high_band() -> None:
    session = Session()
    session.mark_recommended("pdf", 0.60)
    assert session.verdict("pdf", 0.70, HIGH) is SessionVerdict.ALREADY
    assert session.verdict("pdf", 0.85, HIGH) is SessionVerdict.RISEN
    session.mark_recommended("pdf", 0.85)
    assert session.verdict("pdf", 0.95, HIGH) is SessionVerdict.ALREADY  # after a high showing


def test_a_model_load_is_never_downgraded_and_keeps_the_confidence_shown() -> None:
    session = Session()
    session.mark_recommended("pdf", 0.6)
    session.mark_loaded("pdf")
    session.mark_recommended("pdf", 0.9)
    assert session.loaded["pdf"] == LedgerEntry(Source.MODEL, 0.6)


def test_recent_prompts_keep_the_last_distinct_turns() -> None:
    session = Session()
    for prompt in ["one", "two", "two", "  ", "three", "four"]:
        session.push_prompt(prompt, depth=3)
    assert session.recent_prompts == ["two", "three", "four"]
    session.push_prompt("five", depth=0)  # the feature off writes nothing
    assert session.recent_prompts == ["two", "three", "four"]


def test_a_recent_prompt_is_kept_cut_not_whole() -> None:
    """Four 1 MB prompts made a 3 MB ledger that no one ever deleted."""
    session = Session()
    session.push_prompt("merge report.pdf " + "x" * 1_000_000, depth=3)
    (kept,) = session.recent_prompts
    assert len(kept) == PROMPT_KEEP_CHARS and kept.startswith("merge report.pdf ")


def test_the_ledgers_of_conversations_long_idle_go(tmp_path: Path) -> None:
    """With their locks and corrupt copies; a ledger written lately stays, and so does its
    lock, however old (a lock keeps the time it was made)."""
    store = SessionStore(tmp_path)
    for session_id in ("old", "new"):
        store.update(session_id, lambda s: s.push_prompt("merge report.pdf", 3))
    old = store.path_for("old")
    corrupt = old.with_name(old.name + ".corrupt-1")
    corrupt.write_text("{not json")
    stale = os.path.getmtime(old) - SESSION_MAX_AGE_S - 60
    for path in (
        old,
        old.with_suffix(".lock"),
        corrupt,
        store.path_for("new").with_suffix(".lock"),
    ):
        os.utime(path, (stale, stale))
    removed = SessionStore(tmp_path).tidy()
    assert sorted(path.name for path in removed) == sorted(
        [old.name, old.with_suffix(".lock").name, corrupt.name]
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [store.path_for("new").name, store.path_for("new").with_suffix(".lock").name]
    )


def test_an_idle_conversation_resumed_or_in_use_keeps_its_ledger(tmp_path: Path) -> None:
    """tidy runs under a session's lock: it deleted the very ledger and lock that the
    process resuming a 30-day-old conversation held; and a lock another process holds
    means the session is in use, whatever the files' times."""
    store = SessionStore(tmp_path)
    for session_id in ("resumed", "busy"):
        store.update(session_id, lambda s: s.mark_recommended("pdf", 0.9))
        stale = os.path.getmtime(store.path_for(session_id)) - SESSION_MAX_AGE_S - 60
        for path in (store.path_for(session_id), store.path_for(session_id).with_suffix(".lock")):
            os.utime(path, (stale, stale))
    busy = os.open(store.path_for("busy").with_suffix(".lock"), os.O_RDWR)
    fcntl.flock(busy, fcntl.LOCK_EX)
    try:
        session = SessionStore(tmp_path).update("resumed", lambda s: s.mark_loaded("xlsx"))
    finally:
        os.close(busy)
    assert set(session.loaded) == {"pdf", "xlsx"}
    for session_id in ("resumed", "busy"):
        assert store.path_for(session_id).exists()
        assert store.path_for(session_id).with_suffix(".lock").exists()


def test_a_lock_file_removed_while_waited_for_is_not_the_one_locked(tmp_path: Path) -> None:
    """A hook that opened the lock before tidy removed it must not hold a lock on a file
    no other hook can see: it locks the one now at the path."""
    store = SessionStore(tmp_path, lock_timeout_s=5.0)
    path = store.path_for("s")
    lock = path.with_suffix(".lock")
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(store._lock_file(path)))
    waiter.start()  # off the main thread it polls the file it opened
    time.sleep(0.2)
    lock.unlink()
    os.close(os.open(lock, os.O_RDWR | os.O_CREAT))  # another hook's new lock file
    os.close(holder)
    waiter.join(5)
    (descriptor,) = got
    try:
        assert os.fstat(descriptor).st_ino == os.stat(lock).st_ino
    finally:
        os.close(descriptor)


def test_rearm_forgets_the_ledger_and_the_turns() -> None:
    session = Session({"pdf": LedgerEntry(Source.MODEL, 0.0)}, ["one"])
    session.rearm()
    assert session == Session()


def test_the_store_round_trips_and_reads_the_reference_format(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.update("abc", lambda s: s.mark_recommended("pdf", 0.7))
    assert store.load("abc").loaded == {"pdf": LedgerEntry(Source.RECOMMENDED, 0.7)}
    legacy = {"loaded": {"xlsx": "model", "docx": {"source": "ski", "confidence": 0.5}}}
    store.path_for("old").write_text(json.dumps(legacy))
    assert store.load("old").loaded == {
        "xlsx": LedgerEntry(Source.MODEL, 0.0),
        "docx": LedgerEntry(Source.RECOMMENDED, 0.5),
    }


@pytest.mark.parametrize("session_id", ["../../etc/passwd", "/abs/path", "a\x00b", "", "é" * 300])
def test_any_session_id_stays_inside_the_directory(tmp_path: Path, session_id: str) -> None:
    store = SessionStore(tmp_path / "sessions")
    path = store.path_for(session_id)
    assert path.parent == tmp_path / "sessions"
    store.update(session_id, lambda s: s.mark_loaded("pdf"))
    assert store.load(session_id).loaded["pdf"].source is Source.MODEL


@pytest.mark.parametrize("damage", [b"{not json", b"\xff"])
def test_a_corrupt_file_is_moved_aside_and_the_session_starts_empty(
    tmp_path: Path, damage: bytes
) -> None:
    """Not JSON, or not UTF-8 (which stopped every later prompt of the session)."""
    store = SessionStore(tmp_path)
    store.path_for("s").write_bytes(damage)
    session = store.update("s", lambda s: s.mark_recommended("pdf", 0.9))
    assert session.loaded == {"pdf": LedgerEntry(Source.RECOMMENDED, 0.9)}
    kept = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes() == damage


def test_a_lock_held_too_long_fails_open_with_a_reason(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, lock_timeout_s=0.05)
    store.update("s", lambda s: None)
    holder = os.open(store.path_for("s").with_suffix(".lock"), os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with pytest.raises(LedgerUnavailable, match="stayed locked"):
            store.update("s", lambda s: s.mark_loaded("pdf"))
    finally:
        os.close(holder)
    assert store.load("s").loaded == {}


def _mark_many(directory: str, worker: int, count: int) -> None:
    store = SessionStore(Path(directory), lock_timeout_s=60.0)
    for n in range(count):
        store.update("shared", lambda s, n=n: s.mark_recommended(f"skill-{worker}-{n}", 0.5))


@pytest.mark.slow  # over 7 s here; .ci/run runs it
def test_concurrent_writers_on_one_session_lose_no_entry(tmp_path: Path) -> None:
    workers, each = 8, 125  # 1,000 read-modify-writes racing on one file
    # spawn, not fork: the test process has threads by now (models, watchers, coverage's
    # tracer), and a forked child inherits any lock one of them held, held for ever: a
    # child then hung inside its ledger update, holding the ledger's lock.
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_mark_many, args=(str(tmp_path), w, each)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    assert len(SessionStore(tmp_path).load("shared").loaded) == workers * each
