"""The watcher at scale (explorer/engine/index/watcher.py): lost events, watch limits, SIGTERM."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.live import LiveIndex
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.index.watcher import inotify_available, overflow_event
from explorer.engine.index.watchers import InotifyWatch
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(not inotify_available(), reason="Linux inotify only")

MODELS = assemble_models(BowEmbedder())
CONFIG = Config()
TIMEOUT = 60.0
# Each test runs on a small library by default and at scale (5,000 skills, seconds each)
# when slow tests are selected, as .ci/checks does.
SIZES = [200, pytest.param(5000, marks=pytest.mark.slow)]


def _write(root: Path, name: str, description: str) -> None:
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(
        f'---\nname: {name}\ndescription: "{description}"\n---\n# {name}\n', encoding="utf-8"
    )


@pytest.fixture(scope="module", params=SIZES, ids=lambda size: f"{size}-skills")
def big_library(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big") / "skills"
    for number in range(request.param):
        _write(root, f"skill-{number:05d}", f"Handle task {number} with tool {number % 97}.")
    return root


@pytest.fixture
def library(big_library: Path, tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    shutil.copytree(big_library, root)
    return root


def _state(index: Index) -> list[tuple[str, str, str]]:
    return [(skill.id, skill.hash, skill.description) for skill in index.skills]


def _mutate(root: Path, seed: int) -> None:
    """Adds, deletions, edits (some same-size) and a moved directory, without any pause."""
    rng = random.Random(seed)
    names = sorted(os.listdir(root))
    for name in rng.sample(names, 40):
        _write(root, name, f"Edited {name} for the overflow test.")
    for name in rng.sample(names, 5):
        path = root / name / "SKILL.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("Handle", "Mangle", 1), encoding="utf-8")
    for name in rng.sample(names, 30):
        shutil.rmtree(root / name, ignore_errors=True)
    for number in range(60):
        _write(root / "nested" / f"group-{number % 3}", f"new-{number}", f"New skill {number}.")
    survivors = sorted(os.listdir(root))
    os.rename(root / survivors[7], root / "renamed-directory")


def _equal_to_disk(live: LiveIndex, root: Path) -> bool:
    fresh = build_index([root], CONFIG, MODELS)
    return live.wait_for(lambda snap: _state(snap) == _state(fresh), TIMEOUT)


# Real inotify waits; test_polling_alone_follows_the_disk keeps the re-scan in the default run.
@pytest.mark.slow
def test_lost_events_and_an_overflow_recover_exactly_the_disk(library: Path) -> None:
    with LiveIndex([library], CONFIG, MODELS, backend="inotify") as live:
        skills = len(live.snapshot)
        assert live.backend == "inotify" and skills in (200, 5000)
        assert isinstance(live.watcher, InotifyWatch)
        watcher = live.watcher.inotify
        assert live.wait_for(lambda _: live.rescans >= 2, TIMEOUT)  # the catch-up walk
        # The kernel queue overflows: every event of this burst is lost ...
        real_hint = watcher._hint
        watcher._hint = lambda path: None
        _mutate(library, seed=1)
        time.sleep(0.5 if skills > 1000 else 0.2)  # the burst's events arrive, unhinted
        watcher._hint = real_hint
        # ... and all the kernel says is IN_Q_OVERFLOW.
        before = live.rescans
        watcher.handle(overflow_event())
        assert _equal_to_disk(live, library)
        assert live.rescans > before and watcher.overflows == 1
        # It settles: no loop of re-scans or re-watches once it is equal to the disk.
        settled = live.reindex_count
        time.sleep(1.5 if skills > 1000 else 0.5)
        assert live.reindex_count - settled <= 1
        assert live.overflows == 1
        # Live events work again afterwards.
        _write(library, "after-overflow", "Seen after the overflow.")
        assert live.wait_for(lambda snap: "after-overflow" in snap.positions, TIMEOUT)


def test_a_small_watch_limit_says_so_and_polls_the_rest(library: Path) -> None:
    with LiveIndex([library], CONFIG, MODELS, backend="inotify", max_watches=100) as live:
        assert live.wait_for(lambda _: live.rescans >= 2, TIMEOUT)  # the catch-up walk
        assert any("fs.inotify.max_user_watches" in note for note in live.notes), live.notes
        assert isinstance(live.watcher, InotifyWatch) and live.watcher.inotify.watched == 100
        _mutate(library, seed=2)  # mostly in directories no watch covers
        assert _equal_to_disk(live, library)


def test_polling_alone_follows_the_disk(library: Path) -> None:
    with LiveIndex([library], CONFIG, MODELS, backend="poll") as live:
        _write(library, "skill-00199", "Edited while only polling.")
        assert _equal_to_disk(live, library)


@pytest.mark.slow  # a watch process; test_cli.py's watch test starts one in the default set
def test_sigterm_stops_watch(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    _write(root, "one", "The only skill.")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "explorer", "watch", str(root), "--set", "model=bow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "watching" in first, process.stderr.read() if process.stderr else first
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
