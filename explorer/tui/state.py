"""The explorer's state: what it was started with (`Options`), what it knows now
(`ExplorerState`), and what its layout was when it closed (`UIState`).

The layout is a small JSON file in the platform state directory (engine/base/paths.py), one per
user. It is a convenience, never a requirement: a missing, unreadable, corrupt or foreign
file gives the defaults, a field of the wrong type is dropped alone, and a failed write is
ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.engine import Config, LoadedConfig
from explorer.engine.author import LintMemo
from explorer.engine.base import ski_config_path, state_dir, user_config_path, write_atomically
from explorer.engine.inference import LogitMemo
from explorer.tui.health import layers_text, warned_reasons

if TYPE_CHECKING:
    from explorer.engine import Decision, Index, LiveIndex
    from explorer.engine.author import CollisionMap
    from explorer.engine.discovery import Problem
    from explorer.engine.host import Replay
    from explorer.engine.qa import Comparison, EvalReport, FlipCause
    from explorer.engine.route import Row

FILE_NAME = "explorer-ui.json"
PANEL_SIZES = (45, 60, 30)  # % of the height below the table; F10 cycles them
# What F4 shows below the table: "auto" is both side by side on a wide terminal and the
# tabs alone on a narrow one (80x24: one panel at a time, readable); then one or the other.
BOTTOM_VIEWS = ("auto", "tabs", "decision")


@dataclass
class UIState:
    sort_key: str = "decision"
    sort_reverse: bool = False
    hidden: list[str] = field(default_factory=list)  # column keys the user turned off
    panel_size: int = PANEL_SIZES[0]
    maximised: bool = False
    bottom: str = BOTTOM_VIEWS[0]


def state_path() -> Path:
    return state_dir() / FILE_NAME


def load_state(path: Path | None = None) -> UIState:
    """The saved state; anything unusable in it falls back to the default, field by field."""
    try:
        data = json.loads((path or state_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return UIState()
    if not isinstance(data, dict):
        return UIState()
    state = UIState()
    for spec in fields(UIState):
        value: Any = data.get(spec.name)
        default = getattr(state, spec.name)
        if isinstance(default, list):
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                setattr(state, spec.name, value)
        elif type(value) is type(default):
            setattr(state, spec.name, value)
    if state.panel_size not in PANEL_SIZES:
        state.panel_size = PANEL_SIZES[0]
    if state.bottom not in BOTTOM_VIEWS:
        state.bottom = BOTTOM_VIEWS[0]
    return state


def save_state(state: UIState, path: Path | None = None) -> None:
    """Write the state; an unwritable state directory only means it is not remembered."""
    target = path or state_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, json.dumps(asdict(state), indent=2) + "\n")
    except OSError:
        pass


@dataclass(frozen=True)
class ConfigLayers:
    """Where the config in force came from: the status bar names the layers, F2 each
    field's. An F2 save replaces it (`saved`)."""

    loaded: LoadedConfig | None = None  # every layer, as the command line loaded them
    # Every layer but the project file F2 saves to: what a field cleared there takes.
    without_project_file: LoadedConfig | None = None

    @property
    def text(self) -> str:
        """`config: defaults < ./skill-explorer.toml`, lowest first ("" when not known)."""
        return layers_text(self.loaded) if self.loaded is not None else ""

    @property
    def sources(self) -> Mapping[str, str]:
        """Each field's layer (load_config's sources): the fields no layer sets are absent."""
        return self.loaded.sources if self.loaded is not None else {}

    def saved(self, path: Path, sources: Mapping[str, str]) -> ConfigLayers:
        """After F2 wrote `path` (the project file, which a save may create): it is a
        layer now, above the user's and the reference's files, and each field comes from
        `sources`."""
        loaded = self.loaded or LoadedConfig(Config(), {}, (), ())
        written = str(path.resolve())
        files = loaded.files
        if written not in (str(Path(file).resolve()) for file in files):
            lower = {str(user_config_path().resolve()), str(ski_config_path().resolve())}
            at = sum(1 for file in files if str(Path(file).resolve()) in lower)
            files = (*files[:at], written, *files[at:])
        return replace(self, loaded=replace(loaded, files=files, sources=dict(sources)))


@dataclass(frozen=True)
class Options:
    """How the explorer was started (the command line): fixed for the app's life."""

    roots: tuple[str, ...]
    cache_dir: str | None = None
    initial_prompt: str = ""
    show_timings: bool = True  # off for stable screenshots in tests
    cases_path: str | None = None  # --cases FILE, else the library's cases.toml (cases_file)
    cases_given: bool = False  # --cases: a missing file is a problem to show, not "no cases"
    cases_skill: str | None = None  # the skill a skill-creator trigger eval set is about
    cwd: str | None = None  # the working directory of the project channel (§3.5)
    history_log: str | None = None  # a telemetry log to replay (§10); None: no History tab
    # Where the layout is read and written, fixed at start: a save as the app closes goes
    # where the start read from, whatever the environment says by then.
    state_file: Path = field(default_factory=state_path)

    @property
    def cases_file(self) -> str | None:
        """The cases file to run: --cases FILE, or the library's cases.toml while there is
        one. Read at each use: a cases.toml made while the app runs is run as it appears."""
        path = self.cases_path
        return path if path and (self.cases_given or os.path.isfile(path)) else None


@dataclass(frozen=True, eq=False)  # one snapshot's: compared by identity
class SnapshotFacts:
    """What the explorer reads from every skill of a snapshot, read once where the snapshot
    is made: the live index's thread builds these before it posts the change, so the event
    loop never walks the whole library after a save (at 26,000 skills, several passes cost
    tens of milliseconds each on a busy machine, and a keystroke waited behind them)."""

    snapshot: Index
    warned_reasons: Mapping[str, str]  # skill id -> its file's first warning (⚠)
    warnings: tuple[Problem, ...]
    # What lint and the cases read: two snapshots with the same content give the same
    # findings, so a re-index of unchanged files runs neither again.
    content: tuple[object, ...]

    @classmethod
    def of(cls, snapshot: Index) -> SnapshotFacts:
        warnings = snapshot.warnings
        return cls(
            snapshot=snapshot,
            warned_reasons=warned_reasons(snapshot, warnings),
            warnings=warnings,
            content=_content_key(snapshot, warnings),
        )


def _content_key(snapshot: Index, warnings: tuple[Problem, ...]) -> tuple[object, ...]:
    """Every file's path and content hash, the rejected files and warnings, and whether
    vectors exist (the dense near-duplicate check)."""
    return (
        snapshot.paths,
        tuple(skill.hash for skill in snapshot.skills),
        snapshot.rejected,
        warnings,
        snapshot.models.status.dense,
        snapshot.vectors is not None,
    )


@dataclass
class ExplorerState:
    """What the explorer knows now, in one plain object: the screen draws it, the app's
    tasks replace its parts. Changed on the UI thread only (workers hand results back
    with call_from_thread first)."""

    config: Config
    # What the files hold: the config the app started with, or the one F2 last saved. F2
    # marks edits against it, and saves the fields that differ from it.
    baseline: Config
    layers: ConfigLayers = field(default_factory=ConfigLayers)  # where each value comes from
    initial_skill: str | None = None  # --skill: the row to open focused on, until shown
    loading: str = "starting…"  # what is loading now; "" once the live index is in
    snapshot: Index | None = None
    live: LiveIndex | None = None
    # The lexical-only snapshot shown while the models load: its ranking is provisional,
    # so a decision made on it neither keeps the cursor nor bases deltas.
    loading_snapshot: Index | None = None
    previous_snapshot: Index | None = None  # before the last re-index: compare's base
    decision: Decision | None = None
    decided_on: Index | None = None  # the snapshot of the decision on screen
    panels_shown: Decision | None = None  # the decision the panels show
    pinned_prompt: str | None = None
    highlighted: str | None = None
    delta_base: Mapping[str, Row] | None = None  # the rows ▲/▼ compare with
    typing: bool = False  # the last decision came from a keystroke: panels wait for a pause
    comparing: bool = False  # F8: the ranking diff in place of the table
    last_change: str = "watching: no change yet"
    findings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # SKILL.md -> lint's
    lint_errors: int = 0  # among the findings: the status bar's count (tasks.Quality)
    cases_report: EvalReport | None = None
    cases_problem: str | None = None  # why the cases file did not read (the Cases tab says)
    cases_run: tuple[Index, Config] | None = None  # the snapshot and config it was run on
    comparison: Comparison | None = None  # the last re-run against the one before
    flip_causes: Mapping[str, FlipCause] = field(default_factory=dict)  # prompt -> its cause
    history_replay: Replay | None = None
    # ctrl+l's map, with what it was made for (the snapshot's roots and version, the
    # config, the cases): opened again on the same, it shows at once.
    collisions: tuple[tuple[object, ...], CollisionMap] | None = None
    quality_for: tuple[tuple[object, ...], Config] | None = None  # the last lint's input
    quality_running: bool = False  # lint and the cases run for a newer snapshot or config
    history_for: tuple[tuple[object, ...], Config] | None = None  # the last replay's input
    # What the next lint takes from the last: each unchanged file's findings, the dense
    # near-duplicate pairs already found. Used by one lint at a time (tasks.InTurn).
    lint_memo: LintMemo = field(default_factory=LintMemo)
    # The cross-encoder's logits, kept from one cases run (and what-if keystroke) to the
    # next: a save changes one skill's document, and only its pairs need the model again.
    logits: LogitMemo = field(default_factory=LogitMemo)
    facts: SnapshotFacts | None = None  # of the snapshot on screen
    message: str = ""  # the notice over the table (no skills, a missing root)
    ui: UIState = field(default_factory=UIState)
    first_paint_ms: float | None = None  # construction to first frame, for the bench
    painted_at: float = 0.0  # when the last decision reached the screen, for the bench
    painted_on: Index | None = None  # the snapshot of that decision, for the bench

    def facts_of(self, snapshot: Index, known: SnapshotFacts | None = None) -> SnapshotFacts:
        """The snapshot's facts: `known` when they are its own (made off the event loop),
        else the last ones when they are, else made now."""
        for facts in (known, self.facts):
            if facts is not None and facts.snapshot is snapshot:
                self.facts = facts
                return facts
        self.facts = SnapshotFacts.of(snapshot)
        return self.facts

    def provisional(self) -> bool:
        """Whether the decision on screen was made on the lexical-only loading snapshot."""
        return self.decided_on is not None and self.decided_on is self.loading_snapshot

    def models_loading(self) -> bool:
        """The snapshot in force is the lexical one: the dense model is not in yet."""
        return self.snapshot is not None and self.snapshot is self.loading_snapshot

    def still_loading(self) -> bool:
        """The models are not in yet: the decision or the snapshot is the lexical one."""
        return self.provisional() or self.models_loading()
