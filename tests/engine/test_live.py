"""The live index against a real filesystem and real watchdog events.

Every wait is a condition with a timeout (LiveIndex.wait_for), never a bare sleep, so
the tests hold on a slow CI machine as well as on a fast laptop.
"""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.live import IndexChange, LiveIndex
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models

TIMEOUT = 20.0
CONFIG = Config(model="bow", watch_debounce_ms=25.0, watch_max_delay_ms=250.0)
MODELS = assemble_models(BowEmbedder())


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def atomic_write(path: Path, text: str) -> None:
    """What most editors do: write a temporary file, then rename it over the original."""
    temporary = path.with_name(f".{path.name}.{random.random():.6f}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def described(index: Index, skill_id: str) -> str | None:
    """The description the snapshot serves under `skill_id`, or None: a file caught half
    written (a plain write is a truncate, then the text) is out of the library meanwhile."""
    position = index.positions.get(skill_id)
    return None if position is None else index.skills[position].description


def state(index: Index) -> list[tuple[str, str, str]]:
    return [(s.id, s.hash, s.path) for s in index.skills]


def same_as_disk(index: Index, root: Path) -> bool:
    fresh = build_index([root], CONFIG, MODELS)
    if state(index) != state(fresh):
        return False
    if fresh.vectors is None or index.vectors is None:
        return fresh.vectors is index.vectors
    return bool(np.array_equal(index.vectors, fresh.vectors))


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write(root / "pdf" / "SKILL.md", skill_text("pdf", "Merge and split PDF files."))
    write(root / "xlsx" / "SKILL.md", skill_text("xlsx", "Spreadsheet formulas and CSV."))
    return root


@pytest.fixture
def live(library: Path) -> Iterator[LiveIndex]:
    with LiveIndex([library], CONFIG, MODELS) as index:
        assert index.wait_for(lambda snap: same_as_disk(snap, library), TIMEOUT)
        yield index


def ids(index: Index) -> set[str]:
    return {skill.id for skill in index.skills}


def test_create_modify_delete_rename(live: LiveIndex, library: Path) -> None:
    write(library / "docx" / "SKILL.md", skill_text("docx", "Word documents."))
    assert live.wait_for(lambda snap: "docx" in ids(snap), TIMEOUT)
    atomic_write(library / "pdf" / "SKILL.md", skill_text("pdf", "Fill PDF forms."))
    assert live.wait_for(lambda snap: described(snap, "pdf") == "Fill PDF forms.", TIMEOUT)
    (library / "xlsx").rename(library / "sheets")
    assert live.wait_for(
        lambda snap: snap.skills[snap.positions["xlsx"]].path.endswith("sheets/SKILL.md"),
        TIMEOUT,
    )
    shutil.rmtree(library / "docx")
    assert live.wait_for(lambda snap: "docx" not in ids(snap), TIMEOUT)
    assert live.wait_for(lambda snap: same_as_disk(snap, library), TIMEOUT)


def test_subscribers_hear_what_changed(live: LiveIndex, library: Path) -> None:
    changes: list[IndexChange] = []
    heard = threading.Event()

    def listen(change: IndexChange) -> None:
        changes.append(change)
        if change.added:
            heard.set()

    live.subscribe(listen)
    write(library / "pptx" / "SKILL.md", skill_text("pptx", "Slide decks."))
    assert heard.wait(TIMEOUT)
    change = next(change for change in changes if change.added)
    assert change.added == ("pptx",) and change.removed == () and change.version >= 2
    assert {"parse", "embed", "total"} <= set(change.timings_ms)


def test_it_says_while_a_change_is_being_read(
    live: LiveIndex, library: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`changing` holds from a burst's first event to the swap (and not after): the
    explorer's lint gives way to a save meanwhile."""
    seen: list[bool] = []
    build = live._build

    def watched(**kwargs: object) -> object:
        seen.append(live.changing)
        return build(**kwargs)  # type: ignore[arg-type]

    def settled() -> bool:
        deadline = time.monotonic() + TIMEOUT
        while live.changing and time.monotonic() < deadline:
            time.sleep(0.01)
        return not live.changing

    assert settled()  # the watcher's first walk after the start
    monkeypatch.setattr(live, "_build", watched)
    write(library / "pptx" / "SKILL.md", skill_text("pptx", "Slide decks."))
    assert live.wait_for(lambda snap: "pptx" in ids(snap), TIMEOUT)
    assert settled()
    assert seen and all(seen)


def test_editor_noise_is_ignored(live: LiveIndex, library: Path) -> None:
    before = live.reindex_count
    for noise in (".SKILL.md.swp", "SKILL.md~", "notes.tmp", "4913"):
        write(library / "pdf" / noise, "scratch")
    write(library / "pdf" / "SKILL.md", skill_text("pdf", "Rotate PDF pages."))
    assert live.wait_for(lambda snap: "Rotate" in (described(snap, "pdf") or ""), TIMEOUT)
    assert live.reindex_count - before <= 2


def test_a_file_that_breaks_is_rejected_as_the_hook_reads_it(
    live: LiveIndex, library: Path
) -> None:
    """A half-written SKILL.md is what the hook would read: the skill is out of the
    library, its file among the rejected with the reason, and every decision on the live
    index is a fresh build's (the others compete without it); whole again, it is back."""
    from tests.engine.test_incremental import _answer

    path = library / "pdf" / "SKILL.md"
    full = skill_text("pdf", "Extract tables from PDF files.")
    path.write_text(full[:20], encoding="utf-8")  # half written: no closing fence
    assert live.wait_for(lambda snap: "pdf" not in snap.positions, TIMEOUT)
    (problem,) = [p for p in live.snapshot.rejected if p.path == str(path)]
    assert "description" in problem.message  # the cut fell before the description
    fresh = build_index([library], CONFIG, MODELS)
    assert state(live.snapshot) == state(fresh)
    for prompt in ("merge two pdf files", "split a pdf and fill in the form"):
        assert _answer(live.snapshot, prompt, CONFIG) == _answer(fresh, prompt, CONFIG)
    path.write_text(full, encoding="utf-8")
    assert live.wait_for(
        lambda snap: (
            "pdf" in snap.positions
            and described(snap, "pdf") == "Extract tables from PDF files."
            and not snap.rejected
        ),
        TIMEOUT,
    )


def test_a_storm_of_saves_coalesces(live: LiveIndex, library: Path) -> None:
    path = library / "pdf" / "SKILL.md"
    before = live.reindex_count
    started = time.monotonic()
    for number in range(250):  # 0.5 s of saves: two max_delay windows
        path.write_text(skill_text("pdf", f"Version {number} of the PDF skill."), "utf-8")
        time.sleep(max(0.0, started + (number + 1) / 500 - time.monotonic()))
    assert live.wait_for(
        lambda snap: described(snap, "pdf") == "Version 249 of the PDF skill.",
        TIMEOUT,
    )
    # At most one re-index per max_delay while the events last (0.5 s on an idle machine;
    # longer when a busy machine slows the writer down).
    writing = time.monotonic() - started
    assert live.reindex_count - before <= writing / live.max_delay_s + 4


def test_git_checkout_switches_many_files_at_once(live: LiveIndex, library: Path) -> None:
    for number in range(40):
        write(library / f"skill-{number}" / "SKILL.md", skill_text(f"skill-{number}", "One."))
    assert live.wait_for(lambda snap: same_as_disk(snap, library), TIMEOUT)
    before = live.reindex_count
    for number in range(40):  # a branch switch: rewrite half, delete a quarter
        if number % 4 == 0:
            shutil.rmtree(library / f"skill-{number}")
        elif number % 2:
            atomic_write(
                library / f"skill-{number}" / "SKILL.md",
                skill_text(f"skill-{number}", "Two, on the other branch."),
            )
    assert live.wait_for(lambda snap: same_as_disk(snap, library), TIMEOUT)
    assert live.reindex_count - before <= 5


# Real watcher waits; test_create_modify_delete_rename keeps the watcher in the default run.
@pytest.mark.slow
def test_a_root_deleted_and_recreated(live: LiveIndex, library: Path) -> None:
    shutil.rmtree(library)
    assert live.wait_for(lambda snap: len(snap) == 0, TIMEOUT)
    write(library / "csv" / "SKILL.md", skill_text("csv", "Clean CSV exports."))
    assert live.wait_for(lambda snap: ids(snap) == {"csv"}, TIMEOUT)
    write(library / "json" / "SKILL.md", skill_text("json", "Validate JSON files."))
    assert live.wait_for(lambda snap: ids(snap) == {"csv", "json"}, TIMEOUT)


def test_symlinked_skill_directories_are_followed_and_watched(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    write(outside / "linked" / "SKILL.md", skill_text("linked", "Lives outside the root."))
    root.mkdir()
    (root / "linked").symlink_to(outside / "linked", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)  # must not hang
    with LiveIndex([root], CONFIG, MODELS) as live:
        assert ids(live.snapshot) == {"linked"}
        write(outside / "linked" / "SKILL.md", skill_text("linked", "Edited at its target."))
        assert live.wait_for(
            lambda snap: snap.skills[0].description == "Edited at its target.", TIMEOUT
        )


def test_duplicates_promote_the_next_copy_when_the_first_goes(
    live: LiveIndex, library: Path
) -> None:
    write(library / "zz-copy" / "SKILL.md", skill_text("pdf", "The second pdf skill."))
    assert live.wait_for(lambda snap: any("duplicate" in p.message for p in snap.rejected), TIMEOUT)
    shutil.rmtree(library / "pdf")
    assert live.wait_for(
        lambda snap: described(snap, "pdf") == "The second pdf skill.",
        TIMEOUT,
    )


def test_reindex_now_and_versions(live: LiveIndex) -> None:
    version = live.snapshot.version
    change = live.reindex_now()
    assert change.version == version + 1 == live.snapshot.version
    assert change.full and change.added == change.removed == change.changed == ()


def test_a_walk_that_finds_the_library_as_served_keeps_the_snapshot(library: Path) -> None:
    """The watcher's own full walks (start's catch-up, a lost event, a poll) that find the
    files as served swap in no new snapshot and tell no subscriber: a new one re-decides
    the explorer's prompt and re-runs its lint for nothing. A walk that finds a change
    swaps as ever, and "re-index now" always does."""
    changes: list[IndexChange] = []
    with LiveIndex([library], CONFIG, MODELS) as live:
        live.subscribe(changes.append)
        assert live.wait_for(lambda _: live.rescans >= 2, TIMEOUT)  # the catch-up walk
        first = live.snapshot
        assert (first.version, live.reindex_count, changes) == (1, 0, [])
        live._work.put(None)  # what a lost event or a moved root asks for: a full walk
        assert live.wait_for(lambda _: live.rescans >= 3, TIMEOUT)
        assert live.snapshot is first and changes == []
        write(library / "docx" / "SKILL.md", skill_text("docx", "Word documents."))
        live._work.put(None)
        assert live.wait_for(lambda snap: "docx" in ids(snap), TIMEOUT)
        assert changes and changes[-1].added == ("docx",)
    forced = live.reindex_now()
    assert forced.version == live.snapshot.version and forced.added == ()


def _operations(root: Path, rng: random.Random) -> Callable[[], None]:
    """One random edit of the kinds editors, tools and people make."""
    existing = sorted(path.parent for path in root.rglob("SKILL.md"))
    name = f"s{rng.randrange(60)}"
    text = skill_text(name, f"Skill {name} does task {rng.randrange(1000)} with care.")
    kind = rng.choice(
        ["create", "modify", "delete", "rename", "atomic", "partial", "move", "noise"]
    )

    def run() -> None:
        if kind == "create" or not existing:
            write(root / name / "SKILL.md", text)
            return
        target = rng.choice(existing)
        if kind == "modify":
            write(target / "SKILL.md", text.replace(f"name: {name}", f"name: {target.name}"))
        elif kind == "delete":
            shutil.rmtree(target)
        elif kind == "rename":
            destination = root / f"{target.name}-r{rng.randrange(1000)}"
            if not destination.exists():
                target.rename(destination)
        elif kind == "atomic":
            atomic_write(target / "SKILL.md", text)
        elif kind == "partial":
            (target / "SKILL.md").write_text(text[: rng.randrange(1, len(text))], "utf-8")
            (target / "SKILL.md").write_text(text, "utf-8")
        elif kind == "move":
            nested = root / f"group{rng.randrange(3)}"
            nested.mkdir(exist_ok=True)
            destination = nested / target.name
            if not destination.exists() and nested not in target.parents and target != nested:
                target.rename(destination)
        else:
            write(target / ".SKILL.md.swp", "swap")

    return run


@pytest.mark.parametrize("operations", [300, pytest.param(1000, marks=pytest.mark.slow)])
def test_random_operations_end_equal_to_a_fresh_index(tmp_path: Path, operations: int) -> None:
    root = tmp_path / "skills"
    root.mkdir()
    rng = random.Random(20261121)
    with LiveIndex([root], CONFIG, MODELS) as live:
        for _ in range(operations):
            _operations(root, rng)()
        assert live.wait_for(lambda snap: same_as_disk(snap, root), 60.0), (
            f"live: {state(live.snapshot)}\nfresh: {state(build_index([root], CONFIG, MODELS))}"
        )
        assert live.failures == []


def test_a_moved_file_and_a_broken_one_in_its_old_place(tmp_path: Path) -> None:
    """mv A/SKILL.md B/SKILL.md, then a broken A/SKILL.md: B is the skill, A is an error."""
    root = tmp_path / "skills"
    write(root / "a" / "SKILL.md", skill_text("shared", "Merge and split PDF files."))
    live = LiveIndex([root], CONFIG, MODELS)  # not started: re-index by hand, no timing
    (root / "b").mkdir()
    os.replace(root / "a" / "SKILL.md", root / "b" / "SKILL.md")
    (root / "a" / "SKILL.md").write_text("", encoding="utf-8")
    change = live.reindex_now()
    (skill,) = live.snapshot.skills
    assert (skill.id, skill.path) == ("shared", str(root / "b" / "SKILL.md"))
    assert [problem.path for problem in change.errors] == [str(root / "a" / "SKILL.md")]
    assert state(live.snapshot) == state(build_index([root], CONFIG, MODELS))
    # The incremental path (only the two files touched) ends the same way.
    write(root / "b" / "SKILL.md", skill_text("shared", "Merge PDF files."))
    live._reindex(full=False, touched=[str(root / "b" / "SKILL.md")])
    assert state(live.snapshot) == state(build_index([root], CONFIG, MODELS))


def test_a_broken_file_carries_its_reason_not_its_last_version_s_warnings(
    tmp_path: Path,
) -> None:
    """Invalid YAML the line reader recovered, then an empty description: the file's one
    problem is the second; the first described a version no longer on disk."""
    path = tmp_path / "skills" / "a" / "SKILL.md"
    write(path, "---\nname: a\ndescription: Merge PDF files: split them too\n---\nbody\n")
    live = LiveIndex([tmp_path / "skills"], CONFIG, MODELS)
    assert [problem.path for problem in live.snapshot.warnings] == [str(path)]
    path.write_text("---\nname: a\ndescription: ''\n---\nbody\n", encoding="utf-8")
    live._reindex(full=False, touched=[str(path)])
    assert live.snapshot.skills == ()
    (problem,) = live.snapshot.rejected
    assert problem.path == str(path) and "description" in problem.message
    assert live.snapshot.warnings == ()


def test_the_live_index_reads_bodies_from_disk(tmp_path: Path) -> None:
    """The live index holds no body in memory; a body read on demand is the file's, and
    the injected text equals a fresh build's."""
    from tests.conftest import SAMPLE_SKILLS

    root = tmp_path / "skills"
    shutil.copytree(SAMPLE_SKILLS, root)
    from explorer.engine.inference.cache import EmbeddingCache

    config = Config(inject_mode="body")
    live = LiveIndex([root], config, MODELS, EmbeddingCache(tmp_path / "cache"))
    fresh = build_index([root], config, MODELS)
    held = sum(len(vars(skill).get("body", "")) for skill in live.snapshot.skills)
    assert held == 0
    assert [s.body for s in live.snapshot.skills] == [s.body for s in fresh.skills]
    assert all(s.body for s in fresh.skills)
    from explorer.engine.route.pipeline import decide

    prompt = "merge two report.pdf files into one"
    assert decide(prompt, live.snapshot, config).text == decide(prompt, fresh, config).text


def write_long_bodied_skills(root: Path, count: int = 300) -> int:
    """`count` skills with bodies of ~28 KB each; returns the bodies' total length."""
    body = "A paragraph of steps that only the injected text needs.\n" * 500
    for number in range(count):
        write(
            root / f"s{number:03}" / "SKILL.md",
            skill_text(f"s{number:03}", f"tool {number} for task {number}") + body,
        )
    return count * len(body)


def test_a_warm_first_build_never_holds_every_body_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening a library whose parse cache is warm reads cached records a chunk at a time
    and drops each body as it goes: at 26,000 skills, holding every record and every body
    at once was a peak of some 300 MB that the allocator kept as the explorer's size."""
    import tracemalloc

    from explorer.engine.discovery import skills as skills_module
    from explorer.engine.inference.cache import EmbeddingCache

    root = tmp_path / "skills"
    bodies = write_long_bodied_skills(root)
    LiveIndex([root], CONFIG, MODELS, EmbeddingCache(tmp_path / "cache"))  # warms the cache
    monkeypatch.setattr(skills_module, "PARSE_CHUNK", 20)
    cache = EmbeddingCache(tmp_path / "cache")
    tracemalloc.start()
    try:
        live = LiveIndex([root], CONFIG, MODELS, cache)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(live.snapshot.skills) == 300
    assert peak < bodies / 2, f"peak {peak / 1e6:.1f} MB for {bodies / 1e6:.1f} MB of bodies"


def test_an_index_with_bodies_on_disk_never_holds_every_body_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer's first, lexical-only index (the live index's seed) is read the same
    way: a chunk of cached records at a time, each body dropped as its skill is read."""
    import tracemalloc

    from explorer.engine.discovery import skills as skills_module
    from explorer.engine.discovery.bodies import BodyOnDisk
    from explorer.engine.inference.cache import EmbeddingCache

    root = tmp_path / "skills"
    bodies = write_long_bodied_skills(root)
    build_index([root], CONFIG, MODELS, EmbeddingCache(tmp_path / "cache"))  # warms the cache
    monkeypatch.setattr(skills_module, "PARSE_CHUNK", 20)
    cache = EmbeddingCache(tmp_path / "cache")
    tracemalloc.start()
    try:
        index = build_index([root], CONFIG, MODELS, cache, bodies_on_disk=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(index.skills) == 300 and all(isinstance(s, BodyOnDisk) for s in index.skills)
    assert index.skills[0].body.startswith("# s000")
    assert peak < bodies / 2, f"peak {peak / 1e6:.1f} MB for {bodies / 1e6:.1f} MB of bodies"


def test_a_seeded_first_build_shares_the_seeds_skills_and_reads_what_changed(
    tmp_path: Path,
) -> None:
    """The explorer's first, lexical-only index stays on screen while the live index is
    built: seeded with it, the build takes its skills (one copy of each in memory, not
    two) for files whose content hash is unchanged, and parses a file saved in between."""
    from explorer.engine.discovery.bodies import BodyOnDisk
    from explorer.engine.index.opening import Engine, open_library

    root = tmp_path / "skills"
    for name in ("pdf", "xlsx", "docx"):
        write(root / name / "SKILL.md", skill_text(name, f"Work with {name} files."))
    seed = open_library([root], CONFIG, engine=Engine(None, MODELS), bodies_on_disk=True)
    assert all(isinstance(skill, BodyOnDisk) for skill in seed.skills)
    assert seed.skills[seed.positions["pdf"]].body == "# pdf\n\nSteps."
    atomic_write(root / "xlsx" / "SKILL.md", skill_text("xlsx", "Spreadsheet formulas."))
    live = LiveIndex([root], CONFIG, MODELS, seed=seed)
    by_id = {skill.id: skill for skill in live.snapshot.skills}
    assert by_id["pdf"] is seed.skills[seed.positions["pdf"]]
    assert by_id["docx"] is seed.skills[seed.positions["docx"]]
    assert by_id["xlsx"].description == "Spreadsheet formulas."
    assert same_as_disk(live.snapshot, root)
