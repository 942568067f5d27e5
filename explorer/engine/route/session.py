"""The session ledger: what a conversation already has, so the hook does not repeat itself.

A router that decides each prompt alone re-injects the same skill on every turn. The
reference router (reference: src/session.rs, src/observe.rs, src/session_start.rs) keeps,
per `session_id`, which skills are already in context and how they got there:

* **loaded by the model** (it read the SKILL.md or called the Skill tool): never injected
  again in that session;
* **recommended by us** at some confidence: injected again only when it newly reaches the
  high band (one stronger nudge; after a high showing, never);
* a **compaction** forgets the ledger (re-arm), because the summary lost the skill's text.

It also keeps the recent prompts, which feed the conversation context (`context_depth`).

Where we go further than the reference: every read-modify-write of a session file happens
under an advisory lock, so concurrent hooks on one session (the host fires them in parallel
on fast typing; PostToolUse arrives while a prompt is being routed) lose no entry. The
reference merges on save and leaves a small lost-update window. Writes are atomic (temp
file + rename); a file that cannot be parsed is moved aside, never silently overwritten;
and a lock that cannot be had in time fails open, because the hook never blocks a prompt.
See docs/routing.md, §10.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from explorer.engine.base.files import pid_alive

LEDGER_FORMAT = "skill-explorer/session@1"
LOCK_TIMEOUT_S = 10.0  # far above a ledger update (about a millisecond), far below a hook's 60 s
_SAFE_ID = re.compile(r"[^A-Za-z0-9_.-]")
# A temporary ledger, as _write names it: .<session file>.json.<pid>.<ns>.tmp
_TEMPORARY_RE = re.compile(r"^\..+\.json\.(\d+)\.\d+\.tmp$")
ORPHAN_AGE_S = 60.0
# A ledger untouched this long belongs to a conversation that ended: it goes (with its
# lock and any copy set aside as corrupt), so the directory does not keep every prompt of
# every session for ever. A conversation resumed after it starts with an empty ledger.
SESSION_MAX_AGE_S = 30 * 24 * 3600.0
# Of each recent prompt the ledger keeps this much: the context it feeds names files and
# manifests, which a prompt names early; a pasted log of a megabyte is not kept whole.
PROMPT_KEEP_CHARS = 4_000


class Source(StrEnum):
    """Who put a skill into the conversation."""

    RECOMMENDED = "ski"  # we injected it (the reference's name for the value)
    MODEL = "model"  # the model loaded it itself: the strongest signal


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """How a skill got into context, and the confidence we last showed for it (0 if never)."""

    source: Source
    confidence: float


class SessionVerdict(StrEnum):
    """The ledger's answer for one skill the cascade would inject."""

    NEW = "new"  # not in the ledger: inject
    RISEN = "risen_to_high"  # recommended below the high band before, now in it: inject again
    LOADED = "loaded_by_model"  # the model has it: never again
    ALREADY = "already_recommended"  # recommended before and not newly high: stay quiet


@dataclass(slots=True)
class Session:
    """One conversation's ledger and its recent prompts (oldest first)."""

    loaded: dict[str, LedgerEntry] = field(default_factory=dict)
    recent_prompts: list[str] = field(default_factory=list)

    def verdict(self, skill_id: str, confidence: float, high: float) -> SessionVerdict:
        """Whether `skill_id`, about to be injected at `confidence`, should be sent again."""
        entry = self.loaded.get(skill_id)
        if entry is None:
            return SessionVerdict.NEW
        if entry.source is Source.MODEL:
            return SessionVerdict.LOADED
        if confidence >= high > entry.confidence:
            return SessionVerdict.RISEN
        return SessionVerdict.ALREADY

    def mark_recommended(self, skill_id: str, confidence: float) -> None:
        """Record an injection; a skill the model loaded stays loaded."""
        entry = self.loaded.get(skill_id)
        if entry is None or entry.source is Source.RECOMMENDED:
            self.loaded[skill_id] = LedgerEntry(Source.RECOMMENDED, confidence)

    def mark_loaded(self, skill_id: str) -> None:
        """Record that the model loaded the skill itself; keeps the confidence we had shown."""
        entry = self.loaded.get(skill_id)
        self.loaded[skill_id] = LedgerEntry(Source.MODEL, entry.confidence if entry else 0.0)

    def push_prompt(self, prompt: str, depth: int) -> None:
        """Keep the last `depth` distinct prompts, each cut to PROMPT_KEEP_CHARS; a blank
        prompt or a resubmit is skipped."""
        text = prompt.strip()[:PROMPT_KEEP_CHARS]
        if depth <= 0 or not text or (self.recent_prompts and self.recent_prompts[-1] == text):
            return
        self.recent_prompts.append(text)
        del self.recent_prompts[:-depth]

    def rearm(self) -> None:
        """Forget everything (after a compaction the summary no longer holds the skills)."""
        self.loaded.clear()
        self.recent_prompts.clear()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": LEDGER_FORMAT,
            "loaded": {
                skill_id: {"source": entry.source.value, "confidence": entry.confidence}
                for skill_id, entry in sorted(self.loaded.items())
            },
            "recent_prompts": list(self.recent_prompts),
            "updated": time.time(),
        }

    @classmethod
    def from_json(cls, data: Any) -> Session:
        """Read our format and the reference's (a bare "ski"/"model" string per skill)."""
        if not isinstance(data, dict):
            raise ValueError("a session file holds a JSON object")
        loaded: dict[str, LedgerEntry] = {}
        raw_loaded = data.get("loaded", {})
        if not isinstance(raw_loaded, dict):
            raise ValueError("'loaded' is not an object")
        for skill_id, raw in raw_loaded.items():
            if isinstance(raw, str):
                loaded[skill_id] = LedgerEntry(Source(raw), 0.0)
            elif isinstance(raw, dict):
                confidence = float(raw.get("confidence", 0.0))
                loaded[skill_id] = LedgerEntry(Source(raw["source"]), confidence)
            else:
                raise ValueError(f"ledger entry for {skill_id!r} is neither a string nor an object")
        prompts = data.get("recent_prompts", [])
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise ValueError("'recent_prompts' is not a list of strings")
        return cls(loaded, list(prompts))


def _remove_idle(lock: Path, now: float) -> list[Path]:
    """A conversation's ledger, its copies set aside as corrupt, and its lock (which keeps
    the time it was made), when none of the ledgers was written within SESSION_MAX_AGE_S.

    Only under the conversation's own lock, taken without waiting: a session in use,
    this process's own included, keeps its files. A hook that opened the lock file before
    it went finds, once it holds the lock, that the file is no longer the one at the path
    and locks the new one (`SessionStore._locked`)."""
    try:
        descriptor = os.open(lock, os.O_RDWR)
    except OSError:
        return []
    try:
        if not _try_lock(descriptor, lock):
            return []
        ledgers = list(lock.parent.glob(lock.name.removesuffix(".lock") + ".json*"))
        if any(now - path.stat().st_mtime <= SESSION_MAX_AGE_S for path in ledgers):
            return []
        removed = []
        for path in (*ledgers, lock):
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
        return removed
    except (OSError, LedgerUnavailable):
        return []
    finally:
        os.close(descriptor)


class LedgerUnavailable(Exception):
    """The ledger could not be read or locked in time; the caller routes without it."""


class _LockTimeout(Exception):
    pass


def _try_lock(descriptor: int, path: Path) -> bool:
    """Take the exclusive lock if it is free; False when another holds it."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno not in (errno.EAGAIN, errno.EACCES):
            raise LedgerUnavailable(f"cannot lock {path}: {error}") from error
        return False
    return True


def _lock(descriptor: int, timeout_s: float, path: Path) -> None:
    """Take the exclusive lock within `timeout_s`, or raise LedgerUnavailable.

    In a main thread (every hook process) the wait is a blocking flock cut short by a
    timer: the kernel wakes a waiter as soon as the lock is free, so a crowd of hooks is
    served in turn. Elsewhere (the explorer's threads) it polls, since only a main
    thread can take a signal.
    """
    if _try_lock(descriptor, path):
        return
    timed_out = LedgerUnavailable(f"{path} stayed locked for {timeout_s:.1f} s")
    if threading.current_thread() is threading.main_thread():

        def expire(_signum: int, _frame: object) -> None:
            raise _LockTimeout

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except _LockTimeout:
            raise timed_out from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    deadline = time.monotonic() + timeout_s
    while not _try_lock(descriptor, path):
        if time.monotonic() > deadline:
            raise timed_out
        time.sleep(0.002)


@dataclass(frozen=True)
class SessionStore:
    """Session files under `directory`, one per session id, each updated under a lock."""

    directory: Path
    lock_timeout_s: float = LOCK_TIMEOUT_S
    # Orphans are looked for once per store: a hook process opens one store, so the next
    # hook still tidies up, and a long-lived writer does not rescan the directory under the
    # lock on every update (a thousand racing updates then starved a waiter past its timeout).
    _tidied: list[bool] = field(default_factory=list, init=False, repr=False, compare=False)

    def path_for(self, session_id: str) -> Path:
        """A file name that cannot escape the directory, whatever the host sends as an id."""
        digest = hashlib.blake2b(session_id.encode("utf-8", "replace"), digest_size=6).hexdigest()
        readable = _SAFE_ID.sub("_", session_id)[:64]
        return self.directory / f"{readable}-{digest}.json"

    def load(self, session_id: str) -> Session:
        """The session as it is now (read under the lock, so never half-written)."""
        with self._locked(session_id) as path:
            return self._read(path)

    def update(self, session_id: str, change: Callable[[Session], None]) -> Session:
        """Read, apply `change`, and write back atomically, all under the session's lock."""
        with self._locked(session_id) as path:
            session = self._read(path)
            change(session)
            self._write(path, session)
            return session

    def tidy(self) -> list[Path]:
        """Delete the temporary ledgers of hooks killed before their rename (those whose
        writer is dead, or older than ORPHAN_AGE_S: its pid reused since; a write takes
        milliseconds), and the files of conversations over SESSION_MAX_AGE_S idle
        (`_remove_idle`). A live writer's fresh file stays. Returns what went."""
        removed: list[Path] = []
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return removed
        now = time.time()
        for entry in entries:
            match = _TEMPORARY_RE.match(entry.name)
            try:
                age = now - entry.stat(follow_symlinks=False).st_mtime
                if match is not None and (age > ORPHAN_AGE_S or not pid_alive(int(match.group(1)))):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
                elif age > SESSION_MAX_AGE_S and entry.name.endswith(".lock"):
                    removed += _remove_idle(Path(entry.path), now)
            except OSError:
                continue  # gone already (another hook), or not ours to remove
        return removed

    @contextlib.contextmanager
    def _locked(self, session_id: str) -> Iterator[Path]:
        path = self.path_for(session_id)
        descriptor = self._lock_file(path)
        try:
            if not self._tidied:  # every hook that reads or writes a ledger tidies up
                self._tidied.append(True)
                self.tidy()
            yield path
        finally:
            os.close(descriptor)  # closing releases the lock

    def _lock_file(self, path: Path) -> int:
        """The session's lock file, open and locked. A lock file that `tidy` removed while
        this process waited for it is no longer at its path: the next one is locked then."""
        lock = path.with_suffix(".lock")
        while True:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as error:
                message = f"cannot open the session lock in {self.directory}: {error}"
                raise LedgerUnavailable(message) from error
            try:
                _lock(descriptor, self.lock_timeout_s, path)
                held, now = os.fstat(descriptor), os.stat(lock)
                if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
                    return descriptor
            except FileNotFoundError:
                pass  # removed after this process opened it
            except BaseException:
                os.close(descriptor)
                raise
            os.close(descriptor)

    def _read(self, path: Path) -> Session:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return Session()
        except OSError as error:
            raise LedgerUnavailable(f"cannot read {path}: {error}") from error
        try:  # bytes that are not UTF-8 are damage too (UnicodeDecodeError is a ValueError)
            return Session.from_json(json.loads(data.decode("utf-8")))
        except (ValueError, KeyError, TypeError):
            # Kept for a human to look at; the conversation goes on with an empty ledger.
            with contextlib.suppress(OSError):
                path.rename(path.with_name(f"{path.name}.corrupt-{time.time_ns()}"))
            return Session()

    def _write(self, path: Path, session: Session) -> None:
        # named as _TEMPORARY_RE expects: tidy finds it if this process dies here
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{time.time_ns()}.tmp")
        try:
            temporary.write_text(json.dumps(session.to_json(), indent=1), encoding="utf-8")
            os.replace(temporary, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise LedgerUnavailable(f"cannot write {path}: {error}") from error
