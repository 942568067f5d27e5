"""`index DIR...`: build or refresh the persistent embedding cache, and say what it holds."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from explorer.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Command, add_common_options, say
from explorer.cli.library import engine_for, problem_lines
from explorer.cli.roots import command_roots
from explorer.engine import LoadedConfig
from explorer.engine.base import counted
from explorer.terminal import emit


class EmbedProgress:
    """Count, rate and ETA of a cold build's embedding, on stderr.

    On a terminal one line is rewritten in place; in a log, a line every 10 % or 30 s.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.started = 0.0
        self.last_line = 0.0
        self.last_share = -1.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done == 0:
            self.started = self.last_line = now
            self.stream.write(f"embedding {total} descriptions\n" if not self.tty else "")
            return
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        share = done / total
        line = (
            f"embedded {done}/{total} ({100 * share:.0f} %), {rate:.0f}/s, "
            f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s"
        )
        if self.tty:
            self.stream.write(f"\r{line}" + ("\n" if done == total else ""))
        elif done == total or share - self.last_share >= 0.1 or now - self.last_line >= 30:
            self.stream.write(line + "\n")
            self.last_share, self.last_line = share, now
        self.stream.flush()


class IndexCommand(Command):
    name = "index"
    help = "build or refresh the persistent index"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots (as --skills)")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        roots = command_roots(args, loaded)
        if roots is None:
            return EXIT_USAGE
        from explorer.engine import open_library

        started = time.perf_counter()
        engine = engine_for(args, loaded.config)
        index = open_library(
            roots, loaded.config, engine=engine, persisted=True, progress=EmbedProgress(sys.stderr)
        )
        elapsed = (time.perf_counter() - started) * 1000
        for line in problem_lines(index, verbose=args.verbose):
            say(line)  # stderr, as every command names them: stdout is the result
        cached = len(index) - index.embedded if index.vectors is not None else 0
        emit(
            f"indexed {counted(len(index), 'skill')} from {', '.join(index.roots)}: "
            f"{index.embedded} embedded, {cached} from cache, "
            f"{len(index.rejected)} skipped, {counted(len(index.warnings), 'warning')} "
            f"({engine.models.status.dense}, cache {engine.cache.path}) in {elapsed:.0f} ms"
        )
        if engine.models.embedder is None:
            return EXIT_FAILED
        return EXIT_OK if len(index) else EXIT_FAILED
