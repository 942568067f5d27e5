"""`lint DIR...`: the Agent Skills spec rules and the retrieval rules, over a library."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    Progress,
    add_common_options,
    fraction,
    positive_int,
    say,
)
from explorer.cli.library import Engines
from explorer.cli.roots import command_roots
from explorer.engine import LoadedConfig
from explorer.engine.base import counted
from explorer.terminal import emit

if TYPE_CHECKING:
    from explorer.engine import Index
    from explorer.engine.qa import Case


class LintCommand(Command):
    name = "lint"
    help = "check skills against the Agent Skills spec and for retrieval problems"
    description = (
        "Spec rules (name, description, keys, XML tags, reserved words) and "
        "retrieval rules (near-duplicates, generic terms, trigger language, dead keywords, "
        "Claude Code listing budget). Exit 1 when there are errors."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("dirs", nargs="*", metavar="DIR", help="skills roots (as --skills)")
        parser.add_argument(
            "--claude-code",
            action="store_true",
            help="accept Claude Code's extra frontmatter keys",
        )
        parser.add_argument("--json", action="store_true", help="print the findings as JSON")
        parser.add_argument(
            "--context-tokens",
            type=positive_int,
            default=200_000,
            metavar="N",
            help="context window for the listing budget (default 200000)",
        )
        parser.add_argument(
            "--near-duplicate",
            type=fraction,
            default=0.85,
            metavar="X",
            help="dense cosine from which two descriptions count as near-duplicates "
            "(0.85); so do two that each match the other's words at a normalised BM25 of "
            "0.5 or more, whatever X",
        )
        parser.add_argument(
            "--ignore",
            action="append",
            default=[],
            metavar="RULE",
            help="leave out a rule's findings, as claude-code/name-only, or a family's, as "
            "claude-code (repeatable); ignored errors do not fail",
        )
        parser.add_argument(
            "--all-near-duplicates",
            action="store_true",
            help="report every near-duplicate pair (default: each skill's 3 closest, "
            "and a count of the rest)",
        )
        parser.add_argument(
            "--collisions",
            action="store_true",
            help="instead of the rules: the pairs of skills that compete for the same prompts "
            "(the --cases file's and each description's own sentences), ranked, with the "
            "words they share and the cases that flip between them",
        )
        parser.add_argument(
            "--cases",
            metavar="FILE",
            help="with --collisions: cases to route too (TOML, TSV, or a trigger eval set "
            "with --skill)",
        )
        parser.add_argument(
            "--skill",
            metavar="ID",
            help="with --collisions --cases X.json: the skill the trigger eval set is about",
        )
        parser.add_argument(
            "--top",
            type=positive_int,
            default=20,
            metavar="N",
            help="with --collisions: the N heaviest pairs (default 20)",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import lint
        from explorer.engine.author import (
            NEAR_DUPLICATE_SHOWN,
            RULES,
            has_errors,
            ignoring,
            unknown_rules,
        )
        from explorer.qa_report import lint_text

        if not args.collisions and (args.cases or args.skill):
            say("--cases and --skill are read by --collisions only (the rules take no cases)")
            return EXIT_USAGE
        if args.collisions and args.ignore:
            say("--ignore names rules; --collisions runs none")
            return EXIT_USAGE
        unknown = unknown_rules(args.ignore)
        if unknown:
            say(f"--ignore: no rule {', '.join(unknown)}; the rules: {', '.join(RULES)}")
            return EXIT_USAGE
        roots = command_roots(args, loaded)
        if roots is None:
            return EXIT_USAGE
        # The rules report a broken file as a finding; the collision map does not, so
        # there the index says it, as every other command does.
        index = Engines(args).index(roots, loaded.config, quiet=not args.collisions)
        if args.collisions:
            return self._collisions(args, loaded, index)
        findings = lint(
            roots,
            claude_code=args.claude_code,
            index=index,
            config=loaded.config,
            context_tokens=args.context_tokens,
            near_duplicate=args.near_duplicate,
            near_duplicate_shown=None if args.all_near_duplicates else NEAR_DUPLICATE_SHOWN,
        )
        shown = ignoring(findings, args.ignore)
        if args.json:
            data = {
                "schema": "skill-explorer/lint@1",
                "skills": len(index),
                "findings": [finding.to_dict() for finding in shown],
                "ignored": len(findings) - len(shown),
            }
            print(json.dumps(data, indent=2))
        else:
            emit(lint_text(shown, len(index), ignored=len(findings) - len(shown)))
        return EXIT_FAILED if has_errors(shown) else EXIT_OK

    def _collisions(self, args: argparse.Namespace, loaded: LoadedConfig, index: Index) -> int:
        from explorer.cli.library import load_case_set, unknown_skill
        from explorer.engine.author import collision_map
        from explorer.qa_report import collisions_text

        cases: tuple[Case, ...] = ()
        if unknown_skill(index, args.skill):
            return EXIT_USAGE
        if args.cases:
            case_set = load_case_set(args.cases, args.skill)
            if case_set is None:
                return EXIT_USAGE
            cases = case_set.cases
            # The map routes a case when one of the skills it expects is in the library.
            known = set(index.ids)
            left = [case for case in cases if case.expect and not set(case.expect) & known]
            if left:
                unknown = sorted({skill for case in left for skill in case.expect})
                say(
                    f"warning: {args.cases}: {counted(len(left), 'case')} about skills not in "
                    f"this library ({', '.join(unknown)}), left out of the map"
                )
        # Every case and every description's sentences are routed: 18 s at 130 skills.
        routing = None if args.json else Progress(sys.stderr, "routing", "routed", "prompts")
        found = collision_map(index, loaded.config, cases, progress=routing)
        if args.json:
            data = found.to_dict()
            data["collisions"] = data["collisions"][: args.top]
            print(json.dumps(data, indent=2, ensure_ascii=True))
        else:
            emit(collisions_text(found, args.top, sum(not case.expect for case in cases)))
        return EXIT_OK
