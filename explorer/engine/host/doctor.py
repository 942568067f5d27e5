"""`doctor`: what the router will use, read the way the hook reads it, and what is wrong.

Every check is data (a Check with a status and a message), so the command only renders.
A problem that stops routing is an error; one that weakens it (no reranker, a skill the
router skips) is a warning; the rest is information.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from explorer.engine.base.config import (
    Config,
    LoadedConfig,
    dense_model,
    ski_config_path,
    skipped_error,
    user_config_path,
)
from explorer.engine.base.text import counted
from explorer.engine.discovery.roots import Roots, resolve_roots
from explorer.engine.discovery.skills import INVALID_YAML
from explorer.engine.host.setup import (
    WiredCommand,
    missing_session_events,
    settings_path,
    wired_commands,
)

OK, INFO, WARNING, ERROR = "ok", "info", "warning", "error"
FLOOR_SIZE = 200  # the library size the floor is quoted at when no skill was found


@dataclass(frozen=True)
class Check:
    area: str  # config | roots | skills | watch | model | reranker | cache | hook
    status: str  # ok | info | warning | error
    message: str


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    def add(self, area: str, status: str, message: str) -> None:
        self.checks.append(Check(area, status, message))

    @property
    def errors(self) -> list[Check]:
        return [check for check in self.checks if check.status == ERROR]

    @property
    def problems(self) -> list[Check]:
        return [check for check in self.checks if check.status in (ERROR, WARNING)]


def diagnose(
    loaded: LoadedConfig,
    cli_roots: Sequence[str] = (),
    *,
    cache_dir: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    config_errors: Sequence[str] = (),
) -> Report:
    """Look at everything the hook would use, in the order it uses it.

    `config_errors`: what made the config unusable for the other commands (a file or a
    --set they refuse); `loaded` is then the config without those, as the hook reads it.
    """
    report = Report()
    _config_checks(report, loaded, cwd, config_errors)
    skill_count = _skill_checks(report, loaded.config, cli_roots, cwd)
    _watch_check(report)
    _model_checks(report, loaded.config, cache_dir, skill_count)
    _hook_checks(report, cwd)
    return report


def _watch_check(report: Report) -> None:
    """Which file watcher the live index (the explorer, `watch`) would run, and why."""
    from explorer.engine.index.watchers import choose_backend

    choice = choose_backend()
    report.add("watch", OK, f"live index watcher: {choice.backend} ({choice.reason})")


def _config_checks(
    report: Report,
    loaded: LoadedConfig,
    cwd: str | os.PathLike[str] | None,
    config_errors: Sequence[str],
) -> None:
    """The config layers, lowest first: which were read, trusted, refused, and each value set."""
    config = loaded.config
    considered = [
        (ski_config_path(), "the reference router's config"),
        (user_config_path(), "your user config"),
        (Path(cwd or os.getcwd()) / "skill-explorer.toml", "this project's config"),
    ]
    for path, label in considered:
        state = "read" if str(path) in loaded.files else "not present"
        if path.is_file() and str(path) not in loaded.files:
            state = "present but not read"
        report.add("config", INFO, f"{label}: {path} ({state})")
    project = considered[2][0]
    if project.is_file():
        from explorer.engine.host.trust import is_trusted

        if is_trusted(project.parent):
            report.add("config", INFO, f"{project.parent} is trusted: the hook reads its config")
        else:
            report.add(
                "config",
                WARNING,
                f"{project.parent} is not trusted: the hook ignores its config "
                f"(skill-explorer trust {shlex.quote(str(project.parent))})",
            )
    for file_name in loaded.files:
        if file_name not in {str(item) for item, _ in considered}:
            report.add("config", INFO, f"--config file: {file_name} (read)")
    for name, source in sorted(loaded.sources.items()):
        report.add("config", INFO, f"{name} = {getattr(config, name)!r} from {source}")
    for error in config_errors:
        report.add("config", ERROR, f"{error} (route, why and the explorer stop on it)")
    for warning in loaded.warnings:
        if skipped_error(warning) not in config_errors:  # said above, as the error it is
            report.add("config", WARNING, warning)
    for note in loaded.notes:
        report.add("config", INFO, note)


def _skill_checks(
    report: Report, config: Config, cli_roots: Sequence[str], cwd: str | os.PathLike[str] | None
) -> int:
    """The roots and the skills under them; returns how many skills route."""
    from explorer.engine.discovery.skills import discover

    found = resolve_roots(cli_roots, config.roots, cwd=cwd)
    wired = None if cli_roots else _wired_roots(cwd)
    if wired is not None:
        found = wired
    if not found.roots:
        report.add(
            "roots",
            ERROR,
            "no skills root: none of the default roots exists "
            f"({', '.join(found.looked)}); pass --skills DIR, set roots in the config, "
            "$SKILL_EXPLORER_ROOTS or $SKI_ROOTS",
        )
    for root in found.roots:
        status = OK if os.path.isdir(root) else ERROR
        note = "" if status == OK else " (does not exist)"
        report.add("roots", status, f"{root} from {found.source}{note}")
    if not found.roots:
        return 0
    discovery = discover(found.roots)
    count = len(discovery.skills)
    report.add(
        "skills",
        OK if count else ERROR,
        f"{counted(count, 'skill')} found" if count else "no valid skill under the roots",
    )
    for problem in discovery.rejected:
        report.add("skills", WARNING, f"skipped {problem}")
    unreadable = sum(
        any(problem.rule == INVALID_YAML for problem in skill.warnings)
        for skill in discovery.skills
    )
    if unreadable:
        report.add(
            "skills",
            WARNING,
            f"frontmatter YAML cannot read: {counted(unreadable, 'skill')}, routed here by "
            f"the line reader; Claude Code and other hosts may not load "
            f"{'it' if unreadable == 1 else 'them'} (lint shows which)",
        )
    warned = sum(
        any(problem.rule != INVALID_YAML for problem in skill.warnings)
        for skill in discovery.skills
    )
    if warned:
        report.add(
            "skills",
            INFO,
            f"routed with parse warnings: {counted(warned, 'skill')} (lint shows them)",
        )
    return count


def _model_checks(report: Report, config: Config, cache_dir: str | None, skill_count: int) -> None:
    """The cache, the models, and the thresholds they give this library."""
    from explorer.engine.inference.cache import EmbeddingCache
    from explorer.engine.inference.models import (
        MODEL_CHOICES,
        is_known_model,
        load_models,
    )
    from explorer.engine.route.presets import guards_summary, resolve
    from explorer.engine.route.relevance import load_relevance_model

    cache = EmbeddingCache(cache_dir or config.cache_dir or None)
    cache_state = "usable" if cache.available else "not usable"
    report.add("cache", OK if cache.available else WARNING, f"{cache.path} ({cache_state})")
    for warning in cache.warnings:
        report.add("cache", WARNING, warning)
    models = load_models(config, cache)
    model_status = models.status
    if models.embedder is None:
        dense_problem = model_status.dense_error
        report.add("model", ERROR, f"dense model unavailable, cosine channel off: {dense_problem}")
    else:
        where = f" ({model_status.dense_path})" if model_status.dense_path else ""
        report.add("model", OK, f"dense model {model_status.dense}{where}")
    if not is_known_model(config):
        # The reference's fallback, so only a warning where it routes; here it is a typo
        # that costs every channel but words, and the relevance model with them.
        near = difflib.get_close_matches(dense_model(config), MODEL_CHOICES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        report.add(
            "model",
            ERROR,
            f"model = {dense_model(config)!r} names no model{hint}: the hook routes on the "
            f"bag-of-words lane; known: {', '.join(MODEL_CHOICES)}",
        )
    for warning in models.warnings:
        if warning == model_status.reranker_note:
            continue  # the reranker's section says it
        if warning.startswith("unknown model"):
            continue  # the error above says it
        if models.embedder is not None or "dense model" not in warning:
            report.add("model", WARNING, warning)
    # The floor and margin in force are the preset's for this model and library size
    # (presets.resolve), not the model's own knee, which only the reference preset uses.
    # The cosine-valued guards follow the dense model too (presets.resolve_guards).
    tuning = resolve(config, model_status, skill_count or FLOOR_SIZE)
    rule = ""
    if tuning.floor_log_slope:
        rule = (
            f" = {tuning.base_min_similarity:.2f} + {tuning.floor_log_slope:.3g} × "
            f"ln({tuning.floor_n}/200)"
        )
        if skill_count and tuning.floor_n != skill_count:
            rule += f" ({skill_count} skills, clamped to the sizes it was fit on)"
    report.add(
        "model",
        INFO,
        f"floor {tuning.min_similarity:.3f}{rule}, margin {tuning.score_margin:.2f} "
        f"({tuning.source}); pinned values win",
    )
    report.add("model", INFO, f"preset {config.preset}: {guards_summary(tuning)}")
    if tuning.relevance:  # §9.12: the model, not the floor above, decides every prompt
        relevance = load_relevance_model()
        threshold, second = relevance.thresholds_for(skill_count or FLOOR_SIZE)
        pinned = config.relevance_threshold
        bar = f"{threshold:g}" if pinned is None else f"{pinned:g} (pinned)"
        size = counted(skill_count, "skill")
        if not skill_count:
            size = f"as for {FLOOR_SIZE} skills: none was found"
        report.add(
            "model",
            INFO,
            f"decides: relevance model {relevance.name}, inject at p ≥ {bar}, a second skill "
            f"at p ≥ {second:g} ({size}); the floor and margin above serve only where it "
            "cannot decide",
        )
    elif tuning.relevance_off:
        report.add("model", WARNING, f"the relevance model does not decide: {tuning.relevance_off}")
    if models.reranker is None:
        report.add("reranker", *_missing_reranker(config, model_status.reranker_note))
    else:
        report.add("reranker", OK, f"{model_status.reranker} ({model_status.reranker_path})")


RERANKER_WORDS = ("auto", "packaged", "off")  # what `reranker` takes besides a path


def _missing_reranker(config: Config, note: str) -> tuple[str, str]:
    """The status and message for a reranker not loaded. Asked away, information; `auto`
    finding none, a warning; one the config names that is not there, an error, with the
    nearest word: the hook routes without stage 2, and the relevance model with it."""
    from explorer.engine.inference.models import reranker_off

    if reranker_off(config):
        return INFO, note
    choice = config.reranker.strip()
    if choice.lower() == "auto":
        return WARNING, note
    near = difflib.get_close_matches(choice.lower(), RERANKER_WORDS, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return ERROR, f"{note}{hint}; reranker takes {', '.join(RERANKER_WORDS)} or a path"


def _hook_checks(report: Report, cwd: str | os.PathLike[str] | None) -> None:
    """Whether Claude Code runs our hook here, on every session event (§10), with a
    program that is there and roots that exist: a wired command that cannot run, or
    that reads no skills, injects nothing without a word to anyone."""
    project = settings_path(False, cwd)
    user = settings_path(True)
    wired = {path: wired_commands(path) for path in (project, user)}
    for path, commands in wired.items():
        label = "no settings file" if commands is None else "hook not wired"
        if commands:
            label = f"hook wired: {'; '.join(command.text for command in commands)}"
        report.add("hook", INFO, f"{path}: {label}")
        for command in commands or []:
            _wired_command_checks(report, path, command, cwd)
        missing = missing_session_events(path)
        if missing:
            report.add(
                "hook",
                WARNING,
                f"{path}: {', '.join(missing)} not wired: the session ledger cannot see what "
                "the model loads or a compaction; run `skill-explorer init` again to add them",
            )
    distinct = {command.text for found in wired.values() for command in found or []}
    if len(distinct) > 1:
        holders = ", ".join(str(path) for path, found in wired.items() if found)
        report.add(
            "hook",
            WARNING,
            f"{len(distinct)} different hook commands are wired ({holders}): Claude Code "
            "runs each, so a prompt can get its skill twice; keep one",
        )
    if not any(wired.values()):
        report.add(
            "hook",
            WARNING,
            "Claude Code does not run skill-explorer's hook here: run `skill-explorer init` "
            "(or `init --user`)",
        )


def _as_claude_code_runs(cwd: str | os.PathLike[str] | None) -> tuple[str, dict[str, str]]:
    """The directory and variables Claude Code runs a hook command with: the project's,
    and $CLAUDE_PROJECT_DIR set to it."""
    project = os.path.abspath(cwd or os.getcwd())
    return project, {**os.environ, "CLAUDE_PROJECT_DIR": project}


def _wired_roots(cwd: str | os.PathLike[str] | None) -> Roots | None:
    """The roots the wired hook reads (its --skills, as Claude Code runs it in the project,
    the project's settings first), or None when no wired command names any it can see:
    without --skills, doctor checks what the hook will use."""
    project, variables = _as_claude_code_runs(cwd)
    for path in (settings_path(False, cwd), settings_path(True)):
        for command in wired_commands(path) or []:
            roots = [_expanded(root, variables) for root in command.roots]
            if roots and all(roots):
                where = tuple(str(Path(project, os.path.expanduser(root))) for root in roots)
                return Roots(where, f"the hook wired in {path}")
    return None


def _wired_command_checks(
    report: Report, path: Path, command: WiredCommand, cwd: str | os.PathLike[str] | None
) -> None:
    """The wired command's program and --skills roots, as Claude Code runs it: in the
    project's directory, with $CLAUDE_PROJECT_DIR set to it. What names another variable
    cannot be checked from here, and is said to be unchecked rather than missing."""
    project, variables = _as_claude_code_runs(cwd)
    again = ["skill-explorer", "init", "--replace"]
    again += ["--user"] if path == settings_path(True) else []
    program = _expanded(command.program, variables)
    roots = {root: _expanded(root, variables) for root in command.roots}
    unchecked = [word for word, value in [(command.program, program), *roots.items()] if not value]
    if unchecked:
        report.add(
            "hook",
            INFO,
            f"{path}: not checked, it names variables doctor cannot see: {', '.join(unchecked)}",
        )
    if program and _missing_program(program, project):
        keep = [word for root in command.roots for word in ("--skills", root)]
        report.add(
            "hook",
            ERROR,
            f"{path}: the hook's program {command.program} is not there (a moved or deleted "
            f"installation?): Claude Code cannot run it; `{shlex.join(again + keep)}` writes "
            "this installation's command",
        )
    missing = [
        root
        for root, value in roots.items()
        if value and not Path(project, os.path.expanduser(value)).is_dir()
    ]
    if missing and len(missing) == len(command.roots):
        report.add(
            "hook",
            ERROR,
            f"{path}: the hook's --skills {', '.join(missing)}: no such directory, so it "
            f"finds no skills; `{shlex.join(again)} --skills DIR` rewrites it",
        )
    elif missing:
        report.add(
            "hook",
            WARNING,
            f"{path}: the hook's --skills {', '.join(missing)}: no such directory",
        )


_VARIABLE = re.compile(r"\$(\w+|\{(\w+)\})")


def _expanded(word: str, variables: Mapping[str, str]) -> str:
    """`word` with $NAME and ${NAME} replaced; '' when one of them is not set."""

    def value(match: re.Match[str]) -> str:
        return variables.get(match.group(2) or match.group(1), "\0")

    expanded = _VARIABLE.sub(value, word)
    return "" if "\0" in expanded else expanded


def _missing_program(program: str, project: str) -> bool:
    """Whether the program is nowhere: a path (relative to the project, where Claude Code
    runs hooks) that is gone, or a bare name no directory of this PATH holds."""
    if os.sep in program or (os.altsep and os.altsep in program):
        found = Path(project, os.path.expanduser(program))
        return not (found.is_file() and os.access(found, os.X_OK))
    return shutil.which(program) is None
