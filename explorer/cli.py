"""`skill-explorer`: thin command adapters over the engine (route, why, hook, index, bench).

Exit codes: 0 success; 1 the command ran but could not do its job (no skills found, a
model failed to load for `index`); 2 bad usage or configuration. `hook` always exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from explorer import __version__
from explorer.command_roots import command_roots
from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import ConfigError, LoadedConfig, load_config
from explorer.engine.models import Models, load_models
from explorer.engine.snapshot import Index, build_index
from explorer.qa_cli import HANDLERS as QA_HANDLERS
from explorer.qa_cli import add_commands as add_qa_commands

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class Engine:
    loaded: LoadedConfig
    cache: EmbeddingCache
    models: Models
    index: Index


def _common(parser: argparse.ArgumentParser, *, skills: bool = True) -> None:
    if skills:
        parser.add_argument(
            "--skills",
            action="append",
            default=[],
            metavar="DIR",
            help="a skills root (repeatable); default: the config's roots",
        )
    parser.add_argument("--config", metavar="FILE", help="a TOML config layered over the others")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="assignments",
        help="override one config field (repeatable), e.g. --set min_similarity=0.45",
    )
    parser.add_argument(
        "--ski-config",
        action="store_true",
        help="also read the reference router's ~/.config/ski/config.toml (lowest file layer)",
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="where the embedding cache lives")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skill-explorer",
        description="See why an agent skill triggers, or why it does not.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    route = commands.add_parser("route", help="route one prompt and print the decision")
    route.add_argument("prompt")
    route.add_argument("--json", action="store_true", help="print the full decision as JSON")
    _common(route)

    why = commands.add_parser("why", help="explain a routing: channels, gates and BM25 terms")
    why.add_argument("prompt")
    why.add_argument("--skill", metavar="ID", help="explain this skill's terms, even if it lost")
    why.add_argument("--top", type=int, default=8, metavar="N", help="rows to show (default 8)")
    _common(why)

    hook = commands.add_parser(
        "hook", help="Claude Code UserPromptSubmit hook: JSON on stdin, context on stdout"
    )
    _common(hook)

    index = commands.add_parser("index", help="build or refresh the persistent index")
    index.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots")
    _common(index, skills=False)

    bench = commands.add_parser("bench", help="measure speed and memory against the targets")
    bench.add_argument("--sizes", default="100,1000", help="library sizes (default 100,1000)")
    bench.add_argument("--repeats", type=int, default=50, help="prompts per timing (default 50)")
    bench.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="METRIC",
        help="run only this metric (repeatable)",
    )
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    _common(bench)
    explore = commands.add_parser(
        "explore", help="the interactive explorer (the default: skill-explorer [DIR])"
    )
    explore.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots (default: .)")
    explore.add_argument("--prompt", default="", help="start with this prompt typed")
    explore.add_argument(
        "--cases",
        metavar="FILE",
        help="labelled cases to re-run on every re-index (default: DIR/cases.toml when it exists)",
    )
    _common(explore, skills=False)

    watch = commands.add_parser(
        "watch", help="re-index live as files change; one line per re-index (Ctrl-C stops)"
    )
    watch.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots")
    _common(watch, skills=False)
    add_qa_commands(commands, _common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    commands = next(
        action.choices
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    if not arguments or (
        arguments[0] not in commands and arguments[0] not in ("-h", "--help", "--version")
    ):
        arguments = ["explore", *arguments]  # skill-explorer [DIR] opens the explorer
    args = parser.parse_args(arguments)
    if args.command == "hook":
        from explorer.engine.hook import run_hook

        return run_hook(
            sys.stdin,
            sys.stdout,
            sys.stderr,
            cli_roots=args.skills,
            config_file=args.config,
            assignments=args.assignments,
            use_ski_config=args.ski_config,
            cache_dir=args.cache_dir,
        )
    try:
        loaded = load_config(args.config, args.assignments, use_ski_config=args.ski_config)
    except ConfigError as error:
        print(f"skill-explorer: {error}", file=sys.stderr)
        return EXIT_USAGE
    for warning in loaded.warnings:
        print(f"skill-explorer: warning: {warning}", file=sys.stderr)
    handlers = {
        "route": cmd_route,
        "why": cmd_why,
        "index": cmd_index,
        "bench": cmd_bench,
        "watch": cmd_watch,
        "explore": cmd_explore,
    }
    return {**handlers, **QA_HANDLERS}[args.command](args, loaded)


def open_engine(roots: Sequence[str], args: argparse.Namespace, loaded: LoadedConfig) -> Engine:
    config = loaded.config
    cache = EmbeddingCache(args.cache_dir or config.cache_dir or None)
    models = load_models(config, cache)
    for warning in (*cache.warnings, *models.warnings):
        print(f"skill-explorer: warning: {warning}", file=sys.stderr)
    index = build_index(roots, config, models, cache)
    return Engine(loaded, cache, models, index)


def _report_library(engine: Engine) -> bool:
    """Say what was rejected or warned about; False when there is nothing to route over."""
    for problem in engine.index.rejected:
        print(f"skill-explorer: skipped {problem}", file=sys.stderr)
    for problem in engine.index.warnings:
        print(f"skill-explorer: warning: {problem}", file=sys.stderr)
    if not len(engine.index):
        print(
            f"skill-explorer: no valid skills under {', '.join(engine.index.roots)}",
            file=sys.stderr,
        )
        return False
    return True


def _library_engine(args: argparse.Namespace, loaded: LoadedConfig) -> Engine | int:
    """The engine over the roots, or the exit code that says why there is none."""
    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    engine = open_engine(roots, args, loaded)
    return engine if _report_library(engine) else EXIT_FAILED


def cmd_route(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.pipeline import decide

    engine = _library_engine(args, loaded)
    if isinstance(engine, int):
        return engine
    decision = decide(args.prompt, engine.index, loaded.config)
    if args.json:
        print(decision.to_json())
        return EXIT_OK
    from explorer.report import decision_summary

    print(decision_summary(decision))
    return EXIT_OK


def cmd_why(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.pipeline import decide
    from explorer.report import why_report

    engine = _library_engine(args, loaded)
    if isinstance(engine, int):
        return engine
    if args.skill and args.skill not in engine.index.positions:
        print(f"skill-explorer: no skill with id {args.skill!r}", file=sys.stderr)
        return EXIT_USAGE
    decision = decide(args.prompt, engine.index, loaded.config)
    print(why_report(decision, engine.index, top=args.top, skill=args.skill))
    return EXIT_OK


def cmd_index(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    started = time.perf_counter()
    engine = open_engine(roots, args, loaded)
    elapsed = (time.perf_counter() - started) * 1000
    index = engine.index
    for problem in index.rejected:
        print(f"skipped  {problem}")
    for problem in index.warnings:
        print(f"warning  {problem}")
    cached = len(index) - index.embedded if index.vectors is not None else 0
    print(
        f"indexed {len(index)} skills from {', '.join(index.roots)}: "
        f"{index.embedded} embedded, {cached} from cache, "
        f"{len(index.rejected)} skipped, {len(index.warnings)} warnings "
        f"({engine.models.status.dense}, cache {engine.cache.path}) in {elapsed:.0f} ms"
    )
    if engine.models.embedder is None:
        return EXIT_FAILED
    return EXIT_OK if len(index) else EXIT_FAILED


def cmd_bench(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.bench import format_report, run_bench

    try:
        sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    except ValueError:
        print(
            f"skill-explorer: --sizes {args.sizes!r}: expected numbers like 100,1000",
            file=sys.stderr,
        )
        return EXIT_USAGE
    only = set(args.only)
    ui = not only or "ui" in only
    engine_metrics = only - {"ui"}
    result: dict = {"meta": {}, "metrics": {}}
    if not only or engine_metrics:
        result = run_bench(
            args.skills[0] if args.skills else None,
            sizes,
            loaded.config,
            repeats=args.repeats,
            include=engine_metrics or None,
        )
    if ui:
        from explorer.tui.bench import run_ui_bench

        result["metrics"].update(run_ui_bench(tuple(sizes), loaded.config))
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return EXIT_OK


def cmd_watch(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.engine.live import IndexChange, LiveIndex

    roots = command_roots(args, loaded)
    if roots is None:
        return EXIT_USAGE
    config = loaded.config
    cache = EmbeddingCache(args.cache_dir or config.cache_dir or None)
    models = load_models(config, cache)
    for warning in (*cache.warnings, *models.warnings):
        print(f"skill-explorer: warning: {warning}", file=sys.stderr)
    live = LiveIndex(roots, config, models, cache)
    first = live.snapshot
    print(
        f"v{first.version} {len(first)} skills, {len(first.rejected)} errors "
        f"{first.timings_ms.get('total', 0.0):.1f} ms; watching {', '.join(first.roots)}",
        flush=True,
    )

    def report(change: IndexChange) -> None:
        names = " ".join(
            [
                *(f"+{i}" for i in change.added),
                *(f"-{i}" for i in change.removed),
                *(f"~{i}" for i in change.changed),
            ]
        )
        print(f"{change.summary}  {names}".rstrip(), flush=True)
        for problem in change.errors:
            print(f"  error {problem}", flush=True)

    live.subscribe(report)
    with live:
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return EXIT_OK


def cmd_explore(args: argparse.Namespace, loaded: LoadedConfig) -> int:
    from explorer.tui.app import ExplorerApp

    roots = list(args.dirs) or [os.path.expanduser(r) for r in loaded.config.roots] or ["."]
    app = ExplorerApp(
        roots,
        loaded.config,
        cache_dir=args.cache_dir,
        initial_prompt=args.prompt,
        cases_path=args.cases,
    )
    app.run()
    return EXIT_OK
