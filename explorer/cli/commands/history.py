"""`history [LOG...]`: what the hook did in real sessions, and what the current library changes.

Reads the opt-in telemetry log (ours, default `<state dir>/telemetry.jsonl`, or the
reference router's), prints per skill how often it was injected, loaded after injection,
injected with its body (nothing left to load), ignored, a near-miss (ranked <= 3, not
injected, loaded by the model anyway) or never surfaced; then decides every logged prompt
whose text was kept again, against the current descriptions and config, and lists the
prompts whose injection would change.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    described_by,
    say,
)
from explorer.engine import LoadedConfig
from explorer.terminal import emit, one_line, table

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

    from explorer.engine.host import Replay, UsageReport


def default_log() -> Path:
    from explorer.engine.base import user_state_dir
    from explorer.engine.host import TELEMETRY_FILE

    return user_state_dir() / TELEMETRY_FILE


class HistoryCommand(Command):
    name = "history"
    help = "usage from the telemetry log, and the logged prompts an edit would change"
    description = described_by(__doc__)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "logs",
            nargs="*",
            metavar="LOG",
            help="telemetry JSONL files, ours or the reference's "
            "(default: telemetry.jsonl under the state directory)",
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--no-replay",
            dest="replay",
            action="store_false",
            help="only the usage report: do not decide the logged prompts again",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine.host import (
            pipeline_decider,
            read_events,
            replay_json,
            replay_sessions,
            report_json,
            usage_report,
        )

        paths = [Path(log) for log in args.logs] or [default_log()]
        for path in paths:
            if not path.is_file():
                if args.logs:
                    say(f"{path}: no such file")
                    return EXIT_USAGE
                say(
                    f"no telemetry log at {path}: turn it on with telemetry = true "
                    "(and telemetry_prompts = true for replay) in the config, or "
                    "SKILL_EXPLORER_TELEMETRY=1"
                )
                return EXIT_FAILED
        try:
            read = read_events(paths)
        except OSError as error:
            say(f"cannot read the log: {error}")
            return EXIT_FAILED
        for problem in read.skipped[:5]:
            say(f"skipped {problem}")
        if len(read.skipped) > 5:
            say(f"skipped {len(read.skipped) - 5} more lines")
        report = usage_report(read.events)
        result = None
        if args.replay:
            from explorer.cli.library import library_index

            index = library_index(args, loaded)
            if isinstance(index, int):
                return index
            config = loaded.config
            decider = pipeline_decider(index, config)
            result = replay_sessions(read.events, decider, depth=config.context_depth)
        if args.json:
            data: dict[str, object] = {
                "schema": "skill-explorer/history@1",
                "logs": [str(path) for path in paths],
                "skipped_lines": len(read.skipped),
                "usage": report_json(report),
            }
            if result is not None:
                data["replay"] = replay_json(result)
            print(json.dumps(data, indent=2, ensure_ascii=True))
            return EXIT_OK
        emit(*usage_blocks(report, paths))
        if result is not None:
            emit(*replay_blocks(result))
        return EXIT_OK


def usage_blocks(report: UsageReport, paths: list[Path]) -> list[RenderableType]:
    """The usage report as text: a summary line and one row per skill, then the totals."""
    from explorer.engine.host import SkillUsage

    def cells(name: str, usage: SkillUsage) -> list[str]:
        return [
            name,
            str(usage.injected),
            str(usage.loaded_after_injection),
            str(usage.body_given),
            str(usage.ignored),
            str(usage.near_miss),
            str(usage.never_surfaced),
        ]

    summary = (
        f"{report.turns} prompts logged ({report.turns_with_injection} with an injection), "
        f"{report.uses_without_prompt} loads with no logged prompt; from "
        + ", ".join(str(path) for path in paths)
    )
    headers = [
        "skill",
        "injected",
        "loaded after",
        "body given",
        "ignored",
        "near-miss",
        "never surfaced",
    ]
    rows = [cells(skill, report.skills[skill]) for skill in sorted(report.skills)]
    rows.append(cells("total", report.totals()))
    return [summary, table(headers, rows, right=range(1, 7))]


def replay_blocks(result: Replay) -> list[RenderableType]:
    """The replay as text: how many prompts were decided again, and each change."""
    counts = result.counts()
    lines: list[RenderableType] = [
        "",
        f"replayed {result.replayed} prompts against the current library and config"
        + (
            f" ({result.without_text} logged without their text: telemetry_prompts was off)"
            if result.without_text
            else ""
        ),
    ]
    if not result.changes:
        lines.append("no logged prompt would inject differently")
        return lines
    lines.append(
        f"{len(result.changes)} would inject differently: "
        + ", ".join(f"{counts[verdict]} {verdict}" for verdict in ("better", "worse", "changed"))
    )
    rows: list[list[str | Text]] = [
        [
            change.verdict,
            one_line(change.prompt, 80),
            ", ".join(change.before) or "-",
            ", ".join(change.after) or "-",
            ", ".join(change.loaded) or "-",
        ]
        for change in result.changes
    ]
    lines.append(table(["verdict", "prompt", "before", "after", "model loaded"], rows))
    return lines
