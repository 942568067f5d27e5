"""`init`: wire `skill-explorer hook` into Claude Code's settings.json (merged, backed up)."""

from __future__ import annotations

import argparse
import os

from explorer.cli.base import EXIT_OK, EXIT_USAGE, Command, say
from explorer.engine import LoadedConfig


class InitCommand(Command):
    name = "init"
    help = (
        "add the hook to .claude/settings.json: UserPromptSubmit, PostToolUse (Read|Skill) "
        "and SessionStart (merges; keeps a backup)"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--user",
            action="store_true",
            help="write ~/.claude/settings.json (every project) instead of ./.claude/settings.json",
        )
        parser.add_argument(
            "--skills",
            action="append",
            default=[],
            metavar="DIR",
            help="skills roots for the hook command (default: what the hook finds itself: "
            "$SKILL_EXPLORER_ROOTS, $SKI_ROOTS, roots in the config, ~/.claude/skills, "
            "~/.claude/plugins, ./.claude/skills)",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="rewrite the hook's own entries when they are there already (a moved "
            "installation, other --skills); every other hook stays",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="print the merged settings, write nothing"
        )

    def main(self, args: argparse.Namespace) -> int:
        """No config is needed to write the hook entry."""
        from explorer.engine.host import (
            SetupError,
            event_command,
            hook_command,
            install_hook,
            settings_path,
            wired_commands,
        )

        missing = [root for root in args.skills if not os.path.isdir(os.path.expanduser(root))]
        if missing:
            say(
                f"{', '.join(missing)}: no such directory; the hook would find no skills "
                "there; nothing was written"
            )
            return EXIT_USAGE
        path = settings_path(args.user)
        command = hook_command(args.skills)
        try:
            installed, text = install_hook(
                path, command, dry_run=args.dry_run, replace=args.replace
            )
        except SetupError as error:
            say(f"{error}; nothing was written")
            return EXIT_USAGE
        except OSError as error:
            say(f"{path}: cannot write: {error.strerror or error}")
            return EXIT_USAGE
        # An older entry init did not replace (all wired, or only the session events added).
        others = [wired.text for wired in wired_commands(path) or [] if wired.text != command]
        if args.dry_run:
            print(text, end="")
            if others and not args.replace:  # the JSON above keeps it: say so, off stdout
                say(f"the prompt's hook stays: {others[0]}; `--replace` rewrites it to: {command}")
            return EXIT_OK
        if not installed.events:
            print(f"the hook is already wired in {installed.path}; nothing changed")
        else:
            verb = "wrote" if args.replace else "added"
            backup = f" (previous file kept as {installed.backup})" if installed.backup else ""
            print(f"{verb} the hook for {', '.join(installed.events)} to {installed.path}{backup}:")
            for event in installed.events:
                print(f"  {event}: {event_command(installed.command, event)}")
            print("next: `skill-explorer index` fills the embedding cache; `skill-explorer doctor`")
            print("      shows the roots, model and config the hook will use")
            if not args.skills:
                _say_if_no_personal_root()
        if others:
            print(f"  the prompt's hook runs: {others[0]}")
            print(f"  init would run:         {command}")
            print("  `skill-explorer init --replace` rewrites it (every other hook stays)")
        return EXIT_OK

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:  # pragma: no cover
        raise NotImplementedError  # main() does the work


def _say_if_no_personal_root() -> None:
    """Without --skills the hook reads the default roots; when neither of the personal ones
    exists it injects nothing outside a project with ./.claude/skills, and says so only in
    doctor: init says it where the user is looking."""
    from explorer.engine.discovery import default_roots

    personal = default_roots()[:2]  # the third is the agent's ./.claude/skills, per project
    if not any(os.path.isdir(root) for root in personal):
        print(
            f"note: neither {' nor '.join(personal)} exists yet: the hook injects nothing "
            "outside a project with ./.claude/skills until one does (or `init --skills DIR`)"
        )
