"""`index DIR...`: build or refresh the persistent embedding cache, and say what it holds."""

from __future__ import annotations

import argparse
import sys
import time

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Progress,
    add_common_options,
    say,
)
from explorer.cli.library import engine_for, problem_lines
from explorer.cli.roots import command_roots
from explorer.engine import LoadedConfig
from explorer.engine.base import counted
from explorer.terminal import emit


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
            roots,
            loaded.config,
            engine=engine,
            persisted=True,
            progress=Progress(sys.stderr, "embedding", "embedded", "descriptions"),
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
