"""The session ledger when it cannot be used (explorer/engine/route/session.py): every failure
is a LedgerUnavailable with the path and the reason, so the hook routes without it."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from explorer.engine.route.session import (
    LedgerEntry,
    LedgerUnavailable,
    Session,
    SessionStore,
    Source,
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a session file holds a JSON object"),
        ({"loaded": ["pdf"]}, "'loaded' is not an object"),
        ({"loaded": {"pdf": 3}}, "ledger entry for 'pdf' is neither a string nor an object"),
        ({"recent_prompts": "merge pdf"}, "'recent_prompts' is not a list of strings"),
        ({"recent_prompts": ["ok", 3]}, "'recent_prompts' is not a list of strings"),
    ],
)
def test_a_malformed_ledger_says_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Session.from_json(data)


def test_both_entry_forms_are_read() -> None:
    session = Session.from_json(
        {"loaded": {"pdf": "model", "xlsx": {"source": "ski", "confidence": 0.7}}}
    )
    assert session.loaded == {
        "pdf": LedgerEntry(Source.MODEL, 0.0),  # the reference's bare string
        "xlsx": LedgerEntry(Source.RECOMMENDED, 0.7),
    }


def test_a_lock_held_too_long_fails_open_off_the_main_thread(tmp_path: Path) -> None:
    """The explorer's threads cannot take a signal: they poll for the lock until the timeout."""
    store = SessionStore(tmp_path, lock_timeout_s=0.05)
    store.update("s", lambda s: None)
    holder = os.open(store.path_for("s").with_suffix(".lock"), os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    raised: list[BaseException] = []

    def update() -> None:
        try:
            store.update("s", lambda s: s.mark_loaded("pdf"))
        except LedgerUnavailable as error:
            raised.append(error)

    try:
        worker = threading.Thread(target=update)
        worker.start()
        worker.join(10)
    finally:
        os.close(holder)
    assert len(raised) == 1 and "stayed locked for 0.1 s" in str(raised[0])
    # Once the lock is free, a thread takes it at once.
    worker = threading.Thread(target=update)
    worker.start()
    worker.join(10)
    assert len(raised) == 1 and store.load("s").loaded == {"pdf": LedgerEntry(Source.MODEL, 0.0)}


def test_a_directory_that_cannot_be_made_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = SessionStore(tmp_path / "file" / "sessions")
    with pytest.raises(LedgerUnavailable, match="cannot open the session lock in"):
        store.load("s")


def test_a_ledger_that_cannot_be_read_or_written_is_unavailable(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.path_for("s").mkdir()  # a directory where the ledger file should be
    with pytest.raises(LedgerUnavailable, match=r"cannot read .*\.json"):
        store.load("s")
    with pytest.raises(LedgerUnavailable, match=r"cannot write .*\.json"):
        store._write(store.path_for("s"), Session())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # cleaned up
