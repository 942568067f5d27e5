"""Filesystem truth in the live index: a chmod, an edit through a symlinked SKILL.md and an
edit through a hard link are all seen (explorer/engine/index/live.py, watcher.py). Before, the
watches were on the directories that hold each SKILL.md alone, without IN_ATTRIB: a write
under the file's other name, or a change of mode, went unheard until a full re-scan."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index import live as live_module
from explorer.engine.index.live import LiveIndex
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models

TIMEOUT = 20.0
CONFIG = Config(model="bow", watch_debounce_ms=25.0, watch_max_delay_ms=250.0)
MODELS = assemble_models(BowEmbedder())
REPO = Path(__file__).resolve().parents[2]


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n"


def settle(live: LiveIndex) -> None:
    """Wait until the start's own re-scans are done (no work queued, no build running for
    0.3 s): an edit made during one of them would be seen by that walk, not by a watch."""
    quiet_since = time.monotonic()
    deadline = quiet_since + TIMEOUT
    while time.monotonic() < deadline:
        if not live._work.empty() or live._build_lock.locked():
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 0.3:
            return
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """What no watch covers (watchdog's linked files) is polled every 50 ms, not every
    second or more: these tests are about what is seen, not how often the disk is read."""
    monkeypatch.setattr(live_module, "HEALTH_CHECK_S", 0.05)
    monkeypatch.setattr(live_module, "poll_interval", lambda paths: 0.05)


def described(index: Index, skill_id: str) -> str | None:
    position = index.positions.get(skill_id)
    return None if position is None else index.skills[position].description


# watchdog's half waits on its polling of linked files; test_live_watchdog.py keeps that
# backend in the default run
@pytest.fixture(params=["inotify", pytest.param("watchdog", marks=pytest.mark.slow)])
def linked(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[LiveIndex, Path]]:
    """A root whose `sym` SKILL.md is a symlink and whose `hard` SKILL.md is a hard link,
    both to files outside it."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (root / "sym").mkdir(parents=True)
    (root / "hard").mkdir()
    (outside / "sym.md").write_text(skill_text("sym", "Before, through a symlink."))
    (outside / "hard.md").write_text(skill_text("hard", "Before, through a hard link."))
    (root / "sym" / "SKILL.md").symlink_to(outside / "sym.md")
    os.link(outside / "hard.md", root / "hard" / "SKILL.md")
    with LiveIndex([root], CONFIG, MODELS, backend=request.param) as live:
        assert described(live.snapshot, "sym") == "Before, through a symlink."
        assert described(live.snapshot, "hard") == "Before, through a hard link."
        settle(live)
        yield live, outside


def test_an_edit_of_a_symlinked_skill_md_at_its_target_is_seen(
    linked: tuple[LiveIndex, Path],
) -> None:
    live, outside = linked
    (outside / "sym.md").write_text(skill_text("sym", "Edited at the target."))
    assert live.wait_for(lambda s: described(s, "sym") == "Edited at the target.", TIMEOUT)


@pytest.mark.slow  # real watcher waits, both backends; the hard-link tests stay in the default run
def test_a_target_replaced_by_rename_is_seen_and_then_its_next_edit(
    linked: tuple[LiveIndex, Path],
) -> None:
    live, outside = linked
    temporary = outside / ".sym.md.tmp"
    temporary.write_text(skill_text("sym", "Saved by rename."))
    os.replace(temporary, outside / "sym.md")
    assert live.wait_for(lambda s: described(s, "sym") == "Saved by rename.", TIMEOUT)
    (outside / "sym.md").write_text(skill_text("sym", "Then edited in place."))
    assert live.wait_for(lambda s: described(s, "sym") == "Then edited in place.", TIMEOUT)


def test_an_edit_through_a_hard_link_is_seen(linked: tuple[LiveIndex, Path]) -> None:
    live, outside = linked
    with open(outside / "hard.md", "r+", encoding="utf-8") as handle:  # same inode
        handle.write(skill_text("hard", "Edited under its other name."))
        handle.truncate()
    assert live.wait_for(lambda s: described(s, "hard") == "Edited under its other name.", TIMEOUT)


def test_a_new_hard_link_arrives_whole_and_is_seen(tmp_path: Path) -> None:
    """`ln` creates a SKILL.md with its content already there: no close-after-write follows."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "new").mkdir(parents=True)
    outside.mkdir()
    (outside / "new.md").write_text(skill_text("new", "Linked in."))
    with LiveIndex([root], CONFIG, MODELS, backend="inotify") as live:
        settle(live)
        os.link(outside / "new.md", root / "new" / "SKILL.md")
        assert live.wait_for(lambda s: described(s, "new") == "Linked in.", TIMEOUT)


CHMOD_CHILD = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile
    from pathlib import Path
    import watchdog.observers, watchdog.observers.inotify, watchdog.observers.polling, yaml
    from explorer.engine.base.config import Config
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.index.live import LiveIndex
    from explorer.engine.inference.models import assemble_models

    if os.geteuid() == 0:
        # Root reads a mode-000 file anyway: this thread (and the ones it starts) reaches
        # the filesystem as `nobody`, without the capabilities that override modes.
        ctypes.CDLL(None, use_errno=True).setfsuid(65534)
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    (base / "pdf").mkdir()
    skill = base / "pdf" / "SKILL.md"
    skill.write_text("---\\nname: pdf\\ndescription: Merge PDF files.\\n---\\n")
    config = Config(model="bow", watch_debounce_ms=25.0, watch_max_delay_ms=250.0)
    with LiveIndex([base], config, assemble_models(BowEmbedder()),
                   backend=sys.argv[1]) as live:
        def served(index):
            return [s.id for s in index.skills]
        assert served(live.snapshot) == ["pdf"], "not indexed"
        skill.chmod(0)
        assert live.wait_for(lambda s: served(s) == [], 20), "chmod 000 not seen"
        assert live.snapshot.rejected, "an unreadable file is not reported"
        skill.chmod(0o644)
        assert live.wait_for(lambda s: served(s) == ["pdf"], 20), "chmod 644 not seen"
        (base / "pdf").chmod(0)
        assert live.wait_for(lambda s: served(s) == [], 20), "directory chmod not seen"
        (base / "pdf").chmod(0o755)
        assert live.wait_for(lambda s: served(s) == ["pdf"], 20), "directory 755 not seen"
    print("ok")
    """
)


@pytest.mark.slow  # real watcher waits, both backends; test_live.py keeps edits in the default run
@pytest.mark.parametrize("backend", ["inotify", "watchdog"])
def test_chmod_is_seen(backend: str) -> None:
    """A SKILL.md (or its directory) made unreadable leaves the library, as the hook
    would read it; readable again, it is back. Root reads a mode-000 file anyway, so as
    root the child reaches the files as `nobody` (setfsuid), in a process of its own."""
    _child_says_ok(CHMOD_CHILD, backend, timeout=120)


def _child_says_ok(code: str, argument: str, *, timeout: float) -> None:
    """`code` run in a process of its own (it may drop to `nobody`), ending with "ok"."""
    result = subprocess.run(
        [sys.executable, "-c", code, argument],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


READ_ONLY_CACHE_CHILD = textwrap.dedent(
    """
    import ctypes, os, shutil, sys, tempfile
    from pathlib import Path
    import numpy as np
    from explorer.engine.inference.cache import EmbeddingCache

    folder_writable = sys.argv[1] == "folder-writable"
    base = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        warm = EmbeddingCache(base)
        warm.put_many("m", {"a": np.ones(4, dtype=np.float32)})
        warm.close()
        (base / "embeddings.sqlite3").chmod(0o444)
        base.chmod(0o777 if folder_writable else 0o555)
        if os.geteuid() == 0:  # as `nobody`, without the capabilities that override modes
            ctypes.CDLL(None, use_errno=True).setfsuid(65534)
        cache = EmbeddingCache(base)
        assert cache.available, cache.warnings
        assert cache.get_many("m", ["a"], 4)["a"].tolist() == [1.0] * 4
        cache.put_many("m", {"b": np.ones(4, dtype=np.float32)})
        cache.put_many("m", {"c": np.ones(4, dtype=np.float32)})
        assert cache.read_only and cache.count("m") == 1, cache.warnings
        assert len(cache.warnings) == 1 and "is read-only" in cache.warnings[0], cache.warnings
        cache.close()
    finally:
        if os.geteuid() == 0:
            ctypes.CDLL(None, use_errno=True).setfsuid(0)
        base.chmod(0o755)
        shutil.rmtree(base)
    print("ok")
    """
)


@pytest.mark.parametrize("folder", ["folder-writable", "folder-read-only"])
def test_a_cache_it_may_not_write_is_read_for_real(folder: str) -> None:
    """A warm cache file this process may read but not write, in a folder it may write (it
    opens, and the first write is refused) or not (SQLite cannot even open it read-only:
    it is opened as immutable): its vectors are read, one warning says so, nothing is
    written. As root the child reaches the files as `nobody` (setfsuid)."""
    _child_says_ok(READ_ONLY_CACHE_CHILD, folder, timeout=60)
