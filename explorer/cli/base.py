"""What every command shares: the Command base class, exit codes, common options, arg types.

Exit codes: 0 success; 1 the command ran but could not do its job (no skills found, a
model failed to load for `index`, a QA threshold not met, lint errors); 2 bad usage or
configuration. `hook` always exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import ClassVar, TextIO

from explorer.engine import ConfigError, LoadedConfig, load_config
from explorer.terminal import visible

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def say(message: str) -> None:
    """One line to stderr, prefixed with the program's name (stdout is for results)."""
    print(f"skill-explorer: {visible(message)}", file=sys.stderr)


def described_by(doc: str | None) -> str:
    """A command module's docstring past its first paragraph (its usage line, which
    argparse prints already), as the command's --help description."""
    return (doc or "").split("\n\n", 1)[-1]


class Command:
    """One subcommand: declares its arguments, then adapts parsed args to the engine.

    Subclasses keep their engine imports inside `run`: parsing the command line must stay
    cheap, because the hook starts a new process for every prompt.
    """

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str | None] = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this command's own options and the common ones it takes."""
        add_common_options(parser)

    def main(self, args: argparse.Namespace) -> int:
        """Load the layered config (a bad one is a usage error), then run."""
        try:
            loaded = load_config(args.config, args.assignments, use_ski_config=args.ski_config)
        except ConfigError as error:
            say(str(error))
            return EXIT_USAGE
        for warning in loaded.warnings:
            say(f"warning: {warning}")
        return self.run(args, loaded)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        raise NotImplementedError


class Progress:
    """Count, rate and ETA of a long run (a cold build's embedding, the collision map's
    routing), on stderr: on a terminal one line rewritten in place; in a log, a line every
    10 % or 30 s. Called with (done, total), from (0, total) to (total, total)."""

    def __init__(self, stream: TextIO, doing: str, done_verb: str, things: str) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.doing, self.done_verb, self.things = doing, done_verb, things
        self.started = 0.0
        self.last_line = 0.0
        self.last_share = -1.0

    def __call__(self, done: int, total: int) -> None:
        if not total:  # nothing to count (no prompt, no description to embed)
            return
        now = time.perf_counter()
        if done == 0:
            self.started = self.last_line = now
            self.stream.write(f"{self.doing} {total} {self.things}\n" if not self.tty else "")
            return
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        share = done / total
        line = (
            f"{self.done_verb} {done}/{total} ({100 * share:.0f} %), {rate:.0f}/s, "
            f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s"
        )
        if self.tty:
            self.stream.write(f"\r{line}" + ("\n" if done == total else ""))
        elif done == total or share - self.last_share >= 0.1 or now - self.last_line >= 30:
            self.stream.write(line + "\n")
            self.last_share, self.last_line = share, now
        self.stream.flush()


def existing_directory(value: str) -> str:
    """An argparse type: a directory that exists, else a usage error that names it (a
    mistyped --cwd would otherwise read no manifests and say nothing)."""
    if not os.path.isdir(value):
        raise argparse.ArgumentTypeError(f"{value}: not a directory")
    return value


def prompt_text(value: str) -> str:
    """An argparse type: the prompt as given, or with `-` the whole of stdin (a paste
    longer than one command-line argument may be: Linux stops at 128 KB), its trailing
    line breaks dropped as a shell's `$(cat file)` drops them. A terminal or an empty
    stdin is a usage error: the prompt was meant to come from a pipe or a file."""
    if value != "-":
        return value
    if sys.stdin is None or sys.stdin.isatty():
        raise argparse.ArgumentTypeError("- reads the prompt from stdin: pipe or redirect it")
    try:
        text = sys.stdin.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(f"cannot read the prompt from stdin: {error}") from None
    if not text.strip():
        raise argparse.ArgumentTypeError("- reads the prompt from stdin, which was empty")
    return text


def add_prompt_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "prompt",
        type=prompt_text,
        help="the prompt, as a user would type it (quoted); - reads it from stdin",
    )


def add_cwd_option(parser: argparse.ArgumentParser) -> None:
    """--cwd, as route, why and the explorer take it: the hook's cwd, given by hand."""
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        type=existing_directory,
        help="the working directory whose manifests feed the project channel "
        "(as the hook's cwd does; default: none)",
    )


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """--skills, --config, --set, --[no-]ski-config, --cache-dir, --verbose.

    Every command takes --skills DIR, so one spelling works everywhere; the commands that
    also take positional DIRs (index, watch, lint, the explorer) read both."""
    parser.add_argument(
        "--skills",
        action="append",
        default=[],
        metavar="DIR",
        help="a skills root (repeatable); default: $SKILL_EXPLORER_ROOTS, else $SKI_ROOTS, "
        "else the config's roots, else those of ~/.claude/skills, ~/.claude/plugins and "
        "./.claude/skills that exist",
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
        dest="ski_config",
        action="store_true",
        default=True,
        help="read the reference router's $XDG_CONFIG_HOME/ski/config.toml when it exists "
        "(the lowest file layer; the default)",
    )
    parser.add_argument(
        "--no-ski-config",
        dest="ski_config",
        action="store_false",
        help="do not read the reference router's config.toml",
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="where the embedding cache lives")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="name every skipped file and parse warning (by default more than a few are "
        "counted in one line)",
    )


def fraction(text: str) -> float:
    """An argparse type: a number from 0 to 1 (recall and false-inject rate are rates)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be above 0")
    return value
