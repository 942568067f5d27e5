"""`watch DIR...`: keep a live index and print one line per re-index until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from explorer.cli.base import EXIT_OK, EXIT_USAGE, Command, add_common_options, say
from explorer.cli.library import engine_for, problem_lines
from explorer.cli.roots import command_roots, watchable
from explorer.engine import LoadedConfig
from explorer.engine.base import counted
from explorer.terminal import emit

if TYPE_CHECKING:
    from explorer.engine import Index
    from explorer.engine.discovery import Problem
    from explorer.engine.index import IndexChange


def change_line(change: IndexChange) -> str:
    """The summary of one re-index and the ids it added (+), removed (-) and changed (~)."""
    names = " ".join(
        [
            *(f"+{i}" for i in change.added),
            *(f"-{i}" for i in change.removed),
            *(f"~{i}" for i in change.changed),
        ]
    )
    return f"{change.summary}  {names}".rstrip()


def saved_warnings(snapshot: Index, change: IndexChange) -> list[Problem]:
    """The parse warnings of the skills this re-index added or changed (invalid YAML that
    the line reader recovered, say): routed, so no error, but a save that made one should
    say it, as the first build does."""
    touched = {
        snapshot.skills[snapshot.positions[skill]].path
        for skill in (*change.added, *change.changed)
        if skill in snapshot.positions
    }
    return [problem for problem in snapshot.warnings if problem.path in touched]


class ErrorLedger:
    """The errors already named, so that a re-index names only what changed: each new error
    once, and each file still there whose error is gone as fixed. Every save repeated every
    broken file of the library; the summary line still counts them all."""

    def __init__(self, named: Iterable[Problem]) -> None:
        self.named = {str(problem): problem for problem in named}

    def update(self, errors: Iterable[Problem]) -> list[str]:
        """The lines for this re-index's errors against the ones named before."""
        current = {str(problem): problem for problem in errors}
        lines = [f"  error {text}" for text in current if text not in self.named]
        still = {problem.path for problem in current.values()}
        lines += [
            f"  fixed {problem.path} (was: {problem.message})"
            for text, problem in self.named.items()
            if text not in current and problem.path not in still and os.path.exists(problem.path)
        ]
        self.named = current
        return lines


class WatchCommand(Command):
    name = "watch"
    help = "re-index live as files change; one line per re-index (Ctrl-C stops)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots (as --skills)")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import LiveIndex
        from explorer.engine.base import give_back, hand_back_large_blocks

        hand_back_large_blocks()  # a process that stays up: freed arrays go back (memory.py)
        stop = threading.Event()
        # SIGTERM (a service manager, `kill`) stops it as cleanly as Ctrl-C does.
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        roots = command_roots(args, loaded)
        if roots is None:
            return EXIT_USAGE
        if not watchable(roots):
            say(f"nothing to watch: no such file or directory: {', '.join(roots)}")
            return EXIT_USAGE
        config = loaded.config
        engine = engine_for(args, config)
        live = LiveIndex(roots, config, engine.models, engine.cache)
        give_back()  # what the first build decoded and dropped
        first = live.snapshot
        watched = [root for root in first.roots if os.path.exists(root)]
        missing = [root for root in first.roots if not os.path.exists(root)]
        emit(
            f"v{first.version} {counted(len(first), 'skill')}, "
            f"{counted(len(first.rejected), 'error')} "
            f"{first.timings_ms.get('total', 0.0):.1f} ms; watching {', '.join(watched)}"
            + (f"; not found, so not watched: {', '.join(missing)}" if missing else "")
        )
        for line in problem_lines(first, verbose=bool(args.verbose)):  # what the errors are
            say(line)

        said: set[str] = set()

        def notes() -> None:
            for note in list(live.notes):
                if note not in said:
                    said.add(note)
                    emit(f"note: {note}")

        errors = ErrorLedger(first.rejected)  # problem_lines has just named them

        def report(change: IndexChange) -> None:
            emit(
                change_line(change),
                *errors.update(change.errors),
                *(f"  warning {problem}" for problem in saved_warnings(live.snapshot, change)),
            )
            notes()

        def interrupted(*_: object) -> None:
            # Ctrl-C stops it as SIGTERM does, and another while it shuts down (a key held,
            # `timeout -s INT` signalling the process and its group) is no traceback; the
            # one after that ends a shutdown that hangs.
            if stop.is_set():
                signal.signal(signal.SIGINT, signal.SIG_DFL)
            stop.set()

        live.subscribe(report)
        signal.signal(signal.SIGINT, interrupted)  # until here it interrupts the first build
        with live:
            choice = live.watcher_choice
            emit(f"watcher: {choice.backend} ({choice.reason})")
            notes()
            while not stop.wait(1.0):  # a short wait: a signal handler runs between two
                pass
        return EXIT_OK
