"""`tune SKILL_ID --cases FILE`: small description edits for one skill, scored offline."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from explorer.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_common_options,
    positive_int,
    say,
)
from explorer.cli.library import Engines, unknown_skill
from explorer.cli.roots import command_roots
from explorer.engine import LoadedConfig
from explorer.engine.base import clipped, counted
from explorer.engine.route import CLAUSE_SHOWN, bar_text, json_default
from explorer.terminal import emit

if TYPE_CHECKING:
    from explorer.engine.author import Candidate, Flip, Tally, TuneResult

CONTEXT_WORDS = 4  # unchanged words shown on each side of a change
PROMPT_WIDTH = 90


def _signed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def _diff_text(candidate: Candidate) -> str:
    """Changed words as [-removed-] and {+added+}, with a few unchanged words around."""
    pieces = candidate.diff
    out: list[str] = []
    for position, (op, words) in enumerate(pieces):
        if op == "-":
            out.append(f"[-{words}-]")
        elif op == "+":
            out.append(f"{{+{words}+}}")
        else:
            split = words.split()
            first, last = position == 0, position == len(pieces) - 1
            if len(split) <= 2 * CONTEXT_WORDS:
                out.append(words)
            elif first:
                out.append("… " + " ".join(split[-CONTEXT_WORDS:]))
            elif last:
                out.append(" ".join(split[:CONTEXT_WORDS]) + " …")
            else:
                out.append(
                    " ".join(split[:CONTEXT_WORDS]) + " … " + " ".join(split[-CONTEXT_WORDS:])
                )
    return " ".join(out)


def _flip_line(flip: Flip) -> str:
    prompt = clipped(flip.case.prompt.replace("\n", " "), PROMPT_WIDTH)
    if flip.part.value == "other":
        expected = ", ".join(flip.case.expect) or "no skill"
        shared = f"; shared: {expected} still injected, this skill beside it" if flip.beside else ""
        expects = f" (expects {expected}{shared})"
    else:
        expects = " (should trigger)" if flip.case.positive else " (should not)"
    moved = f"cos {_signed(flip.cosine)}, bm25 {_signed(flip.bm25, 2)}"
    if flip.rerank is not None:
        moved += f", rerank {_signed(flip.rerank, 2)}"
    elif flip.rerank_after is not None:
        moved += f", rerank now {flip.rerank_after:.2f}"
    if flip.relevance is not None:
        moved += f", p {_signed(flip.relevance)}"
    was, now = flip.expected_p
    if flip.expected and was is not None and now is not None:  # what decided another's case
        bar = f" (bar {bar_text(flip.bar)})" if flip.bar is not None else ""
        moved += f"; {flip.expected} p {was:.3f} -> {now:.3f}{bar}"
    if flip.terms_gained:
        moved += f", +terms {' '.join(flip.words_gained)}"
    before, after = flip.stages
    moved += f"; decided by {before}" if before == after else f"; decided by {before} -> {after}"
    if flip.task is not None:  # §9.12: a clause routed alone took it, at its own p
        clause, p = flip.task
        moved += f", for its task {clipped(clause, CLAUSE_SHOWN)!r} at p {p:.2f}"
    return f"    {flip.effect.value.upper():7} {flip.part.value:8} {prompt!r}{expects}  [{moved}]"


def _releases(candidate: Candidate) -> str:
    """Other skills' cases it lets go are counted among its fixes: say how many."""
    return f" ({counted(candidate.releases, 'release')})" if candidate.releases else ""


def _channels(candidate: Candidate) -> str:
    shift = candidate.shift
    parts = [f"cosine {_signed(shift.cosine)}", f"BM25 {_signed(shift.bm25, 2)}"]
    if shift.words:
        parts[-1] += f" (terms: {', '.join(shift.words[:6])})"
    if shift.rerank is not None:
        parts.append(f"reranker logit {_signed(shift.rerank, 2)}")
    if shift.relevance is not None:
        parts.append(f"relevance p {_signed(shift.relevance)}")
    return ", ".join(parts)


def _wanted_move(before: Tally, after: Tally) -> str:
    """`should trigger 0/4 -> 1/4; `, or nothing when the part is all should-trigger."""
    was, now = before.should_trigger, after.should_trigger
    return f"should trigger {was} -> {now}; " if was and now else ""


def tune_text(result: TuneResult, *, applied: int | None = None) -> list[str]:
    """The report: the split, the figures before, then each candidate; with `applied` (the
    number --apply wrote) that candidate alone, so that the last one listed is the one
    written."""
    from explorer.engine.author import SPLIT_SEED, Part

    split = result.split
    others = (
        f"{result.others.total} other cases near the skill, {result.others.passed} of them "
        f"passing (of {result.others_total}; the rest are far from it and are routed again only "
        "where an edit brings it near)"
        if result.others_total
        else "no case about other skills (a TOML/TSV file with theirs checks steals)"
    )
    how = (
        "the file's split: train tuned on, validation held out"
        if split.from_file
        else f"{result.share:.0%} of positives and of negatives tuned on, to the nearest "
        f"case, seed {SPLIT_SEED!r}"
    )
    lines = [
        f"tune {result.skill_id}  ({result.path})",
        f"cases: {len(split.tuning)} tuning, {len(split.held_out)} held out ({how}), "
        f"{len(split.others)} about other skills or none",
        f"before: tuning {result.tuning}, held-out {result.held_out}; {others}",
        f"scored {counted(result.evaluated, 'description')} in {result.seconds:.1f} s",
    ]
    lines += [f"note: {note}" for note in result.notes]
    for number, candidate in enumerate(result.candidates, 1):
        if applied not in (None, number):
            continue
        flags = []
        if result.recommended == number - 1:
            flags.append("RECOMMENDED")
        if candidate.steals:
            flags.append(f"STEALS {candidate.steals}")
        if candidate.lexical_only:
            flags.append("LEXICAL ONLY")
        lines += [
            "",
            f"#{number} {' '.join(flags)}".rstrip(),
            f"  held-out {result.held_out.passed}/{result.held_out.total} -> "
            f"{candidate.held_out.passed}/{candidate.held_out.total} "
            f"({_wanted_move(result.held_out, candidate.held_out)}"
            f"net {candidate.part_net(Part.HELD_OUT):+d}), tuning "
            f"{result.tuning.passed}/{result.tuning.total} -> "
            f"{candidate.tuning.passed}/{candidate.tuning.total}; fixes {candidate.fixes}"
            f"{_releases(candidate)}, "
            f"breaks {candidate.breaks} ({candidate.false_injections} of them false "
            f"injections), steals {candidate.steals}; "
            f"{len(candidate.description)} chars",
            f"  edit: {'; '.join(candidate.steps)}",
            f"  diff: {_diff_text(candidate)}",
            f"  channels moved (mean over the "
            f"{'cases it now takes' if candidate.shift.over_fixes else 'cases it flips'}): "
            f"{_channels(candidate)}",
            f"  with the lexical channels off (the words at the old description, the "
            f"models reading the new): {candidate.remaining}"
            + (f", {counted(candidate.dense_steals, 'steal')}" if candidate.dense_steals else "")
            + (
                f"; {candidate.joint_fixes} more "
                f"{'needs' if candidate.joint_fixes == 1 else 'need'} the new words and the "
                "models together"
                if candidate.joint_fixes
                else ""
            ),
        ]
        lines += [_flip_line(flip) for flip in candidate.flips]
    if result.candidates and applied is None:
        lines += [
            "",
            "Write one with --apply N (only the description changes; the file is replaced "
            "atomically).",
        ]
    return lines


class TuneCommand(Command):
    name = "tune"
    help = "propose and score small edits of a skill's description from its trigger evals"
    description = (
        "Split the skill's own cases (a skill-creator trigger eval set, or TOML/TSV cases) "
        "into a tuning part and a held-out part, propose small description edits from the "
        "tuning part (words of missed prompts, a 'Use when' sentence, quoted typical "
        "prompts, a 'Not for' sentence, removing words that pull in wrong prompts), score "
        "each through the router on a patched copy of the library, and rank them by the "
        "held-out part. Cases that expect another skill, or no skill, and that an edit takes "
        "are STEALs. Nothing is written unless --apply."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("skill_id", metavar="SKILL_ID", help="the skill to tune")
        parser.add_argument(
            "--cases",
            metavar="FILE",
            required=True,
            help="the skill's trigger evals (.json: a list of {query, should_trigger} or "
            "{evals: [{prompt, should_trigger}]}), or a .toml/.tsv cases file",
        )
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument(
            "--apply",
            metavar="N",
            type=positive_int,
            help="write candidate N into the skill's SKILL.md (only the description changes)",
        )
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.engine import tune
        from explorer.engine.author import SaveError, apply, cases_for, is_about, read_skill_text
        from explorer.engine.qa import CaseError

        roots = command_roots(args, loaded)
        if roots is None:
            return EXIT_USAGE
        try:
            cases = cases_for(args.cases, args.skill_id)
        except CaseError as error:
            say(str(error))
            return EXIT_USAGE
        for warning in cases.warnings:
            say(f"warning: {warning}")
        if not cases.cases:  # as eval, calibrate and lint --collisions say it
            say(f"{args.cases}: no cases")
            return EXIT_USAGE
        if not any(is_about(case, args.skill_id) for case in cases.cases):
            say(
                f"{args.cases}: no case is about {args.skill_id}: tune needs prompts it should "
                "take and prompts it should not (docs/cli.md, Cases files)"
            )
            return EXIT_USAGE
        index = Engines(args).index(roots, loaded.config)
        if not len(index):
            say(f"no valid skills under {', '.join(index.roots)}")
            return EXIT_FAILED
        if unknown_skill(index, args.skill_id):
            return EXIT_USAGE
        position = index.positions[args.skill_id]
        try:
            original = read_skill_text(index.skills[position].path)
        except SaveError as error:
            say(str(error))
            return EXIT_FAILED
        result = tune(index, loaded.config, args.skill_id, cases.cases, original)
        applied: str | None = None
        missing = args.apply is not None and args.apply > len(result.candidates)
        if args.apply is not None and not missing:
            try:
                edit = apply(result, args.apply)
            except SaveError as error:
                say(str(error))
                return EXIT_FAILED
            applied = edit.path
        if args.json:
            data = result.to_dict()
            data["applied"] = None if applied is None else {"number": args.apply, "path": applied}
            print(json.dumps(data, indent=2, default=json_default, ensure_ascii=True))
        else:
            emit(*tune_text(result, applied=None if applied is None else args.apply))
            if applied is not None:
                print()
                emit(f"wrote candidate {args.apply} into {applied} (only the description changed)")
        if applied is not None and args.apply is not None:
            from explorer.engine.author import shortcomings

            caution = "; ".join(shortcomings(result.candidates[args.apply - 1]))
            if caution:
                say(f"caution: candidate {args.apply} is not one to recommend: {caution}")
        if missing:
            # After the report, so that the search it took is not lost.
            count = len(result.candidates)
            say(f"no candidate {args.apply}: there are {count}; nothing was written")
            return EXIT_USAGE
        return EXIT_OK
