"""Renderings of a Decision for the terminal (`route`, `why`) and for Markdown.

Rendering only: every number shown comes from the Decision or the index's explain.
Terminal renderings are lists of blocks (text and rich tables) for `explorer.terminal.emit`,
which makes skill text visible-safe and fits tables to the terminal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from rich.console import RenderableType

from explorer.engine import Decision, Index, Verdict
from explorer.engine.base import counted
from explorer.engine.host import is_control_payload
from explorer.engine.inference import sentence_attribution
from explorer.engine.route import (
    GUARD_KEYS,
    PROMPT_READ_CHARS,
    Gate,
    GateName,
    InjectionMode,
    Row,
    Stage,
    bar_text,
    excluded_query_terms,
    missing_query_terms,
    p_text,
    reason,
    room_text,
    shown_against,
)
from explorer.terminal import ColumnLegend, FittedTable, Verbatim, plain, render, table, visible

Blocks = list[str | RenderableType]


def format_value(value: Any) -> str:
    """A gate input or threshold as people read it."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)


def decision_summary(decision: Decision) -> str:
    """One line per injected skill, or why nothing was injected."""
    head = f"stage: {decision.stage}"
    if not decision.injected:
        failed = [gate.name for gate in decision.gates if not gate.passed and not gate.skipped]
        because = f" (last failed gate: {failed[-1]})" if failed else ""
        if failed[-2:-1] and failed[-1] is GateName.TASKS:
            # The tasks gate fails only after the whole prompt did: name that gate first.
            because = f" (last failed gate: {failed[-2]}; no task of the prompt passed it either)"
        return f"{head}\nno skill injected{because}"
    lines = [head]
    for item in decision.injected:
        lines.append(
            f"inject {item.id}  confidence {item.confidence:.2f} ({item.band}, "
            f"{INJECTED_AS[item.mode]})"
        )
    return "\n".join(lines)


# What the hook puts in the context for an injected skill (§5.7), in words: a bare "body"
# means something only to a reader of configuration.md.
INJECTED_AS = {
    InjectionMode.BODY: "its SKILL.md body injected",
    InjectionMode.DESCRIPTION: "its path and description injected",
}


def closest_line(decision: Decision) -> str | None:
    """With nothing injected after the skills were scored, the first row's reason: the
    skill that came closest and the number that kept it out (`why` lists every row). A
    blank or empty prompt scored none: no row came closer than another."""
    if decision.injected or not decision.rows or decision.stage in (Stage.BLANK, Stage.EMPTY):
        return None
    return f"best candidate: {reason_text(decision, decision.rows[0])}"


# The channel table's columns in the order they give way on a narrow terminal (hybrid#,
# the skill, the verdict, cos and bm25 always stay): first any of these that hold one value
# in every row (kw 0.00 when no keyword matched, p "—" without the relevance model), then
# the rest in this order.
NARROW_DROPS = (
    *("jacc", "proj", "file", "ph", "fused", "bm25#", "norm", "kw", "score", "overlap"),
    *("rerank", "p"),
)


def channel_table(decision: Decision, rows: Sequence[Row]) -> FittedTable:
    """`rows` in the order given (the decision's: the injected first), each with its rank
    by hybrid score, the `rank` of `--json` and of `eval`'s `expected#rank`: an injected
    skill that is not first by hybrid score says so."""
    trace, seconds = decision.relevance, decision.injected_ids[1:]

    def bar(row: Row) -> float:
        """The bar the row's p was held to: a second skill's is its own (§9.12)."""
        if trace is None:
            return 0.0
        second = row.verdict is Verdict.SECOND_SKILL or row.id in seconds
        return trace.second_threshold if second else trace.threshold

    headers = [
        "hybrid#",
        "skill",
        "verdict",
        "score",
        "cos",
        "kw",
        "ph",
        "file",
        "proj",
        "bm25",
        "norm",
        "fused",
        "bm25#",
        "rerank",
        "p",
        "overlap",
        "jacc",
    ]
    body = [
        [
            str(row.rank),
            plain(row.id),
            plain("INJECT", style="bold green") if row.verdict is Verdict.INJECT else row.verdict,
            f"{row.score:.3f}",
            f"{row.cosine:.3f}",
            f"{row.keyword:.2f}",
            f"{row.phrase:.2f}",
            f"{row.file:.2f}",
            f"{row.project:.2f}",
            f"{row.bm25:.2f}",
            f"{row.bm25_norm:.2f}",
            f"{row.bm25_fused:.2f}",
            str(row.bm25_rank or "—"),
            "—" if row.rerank is None else f"{row.rerank:.2f}",
            "—" if row.relevance is None else p_text(row.relevance, bar(row)),
            f"{row.matched_terms}/{row.query_terms}",
            f"{row.jaccard:.2f}",
        ]
        for row in rows
    ]
    return FittedTable(headers, body, right={0, *range(3, 17)}, droppable=NARROW_DROPS)


def reason_text(decision: Decision, row: Row) -> str:
    """One skill's reason from engine/route/reasons.py, with the gap to injection."""
    why = reason(decision, row)
    gap = f"  ({why.gap_text()})" if why.gap_text() else ""
    return f"{row.id}: {why.gate}: {why.text}{gap}"


def matches_text(row: Row) -> str:
    """What earned the row its boosts: `kw: "pdf" (name) +0.15, file: report.pdf → pdf +0.30`."""
    return ", ".join(f"{match.label()} {match.added()}" for match in row.matches)


def thresholds_text(gate: Gate) -> str:
    """`key=value` per threshold; a `<key>_from` one (where <key>'s value came from, e.g.
    "MiniLM's") is shown in parentheses beside its value."""
    return " ".join(
        f"{key}={format_value(value)}"
        + (f" ({gate.thresholds[key + '_from']})" if key + "_from" in gate.thresholds else "")
        for key, value in gate.thresholds.items()
        if not (key.endswith("_from") and key[: -len("_from")] in gate.thresholds)
    )


def gate_line(gate: Gate) -> str:
    mark = "·" if gate.skipped else ("✓" if gate.passed else "✗")
    inputs = " ".join(f"{key}={format_value(value)}" for key, value in gate.inputs.items())
    limits = thresholds_text(gate)
    text = f"  {mark} {gate.name:<18} §{gate.section:<4} {inputs}"
    if limits:
        text += f"  | {limits}"
    if gate.note:
        text += f"  ({gate.note})"
    return text


TERMS_SHOWN = 40  # query terms a list or table of `why` shows: a pasted log has thousands


def listed(terms: Sequence[str]) -> str:
    """Up to TERMS_SHOWN terms, comma-separated, and how many in all past that."""
    if len(terms) <= TERMS_SHOWN:
        return ", ".join(terms)
    return f"{', '.join(terms[:TERMS_SHOWN])} … ({len(terms):,} in all)"


def terms_table(index: Index, query_terms: Sequence[str], skill_id: str) -> Blocks:
    """The BM25 terms table of one skill, over the terms the decision read from its prompt."""
    position = index.positions[skill_id]
    explain = index.lexical.explain_terms(query_terms, position)
    terms = list(explain.terms)
    if len(terms) > TERMS_SHOWN:  # a pasted log: the matched terms first, then as many
        terms = [term for term in terms if term.matched] + [t for t in terms if not t.matched]
    body = [
        [
            term.term,
            "yes" if term.matched else "no",
            str(term.tf),
            str(term.df),
            f"{term.idf:.3f}",
            f"{term.contribution:.3f}",
        ]
        for term in terms[:TERMS_SHOWN]
    ]
    lines: Blocks = [
        f"BM25 terms for {skill_id}: score {explain.score:.3f}, normalised "
        f"{explain.normalised:.3f} (N={index.lexical.n}, dl={int(index.lexical.dl[position])}, "
        f"avgdl={index.lexical.avgdl:.1f}, k1={index.lexical.k1}, b={index.lexical.b})"
    ]
    if body:
        lines.append(
            table(["term", "match", "tf", "df", "idf", "contrib"], body, right={2, 3, 4, 5})
        )
    else:
        lines.append("  (the prompt has no content terms)")
    if len(terms) > TERMS_SHOWN:
        lines.append(f"… {len(terms) - TERMS_SHOWN} more terms, none in the description")
    missing = missing_query_terms(explain)
    if missing:
        lines.append(f"missing from the description, rarest first: {listed(missing)}")
    excluded = excluded_query_terms(index.skills[position].description, explain)
    if excluded:
        lines.append(f"excluded by the description (§9.12): {', '.join(excluded)}")
    return lines


def attribution_lines(decision: Decision, index: Index, skill_id: str) -> list[str]:
    """What each sentence of the skill's description adds to the reranker's logit for the
    decision's prompt: the logit whole, less the logit with that sentence left out."""
    skill = index.skills[index.positions[skill_id]]
    reranker = index.models.reranker
    found = sentence_attribution(reranker, decision.prompt, skill.description, skill.body_head)
    if found is None:
        return []
    found = dataclasses.replace(found, reranked=decision.row(skill_id).rerank is not None)
    lines = [
        f"reranker on {skill_id}: logit {found.logit:+.2f}; what each sentence of the "
        "description adds to it (the logit without the sentence, subtracted):"
    ]
    lines += [f"  ({note})" for note in found.notes()]
    lines += [f"  {e.number():>6}  {e.text}{e.remark()}" for e in found.listed]
    if found.unlisted:
        lines.append(f"  {'unread':>6}  … {counted(found.unlisted, 'more sentence')} past it")
    return lines


def relevance_lines(decision: Decision, rows: list[Row]) -> list[str]:
    """§9.12: each candidate's probability as the sum of what each feature added."""
    trace = decision.relevance
    if trace is None:
        return []
    positions = decision.channels.positions or {}
    lines = [
        "",
        f"relevance model ({trace.model}): p = {trace.formula}, s = bias {trace.bias:+.2f} + "
        f"the features' log-odds; inject at p ≥ {bar_text(trace.threshold)}, a second skill "
        f"at p ≥ {bar_text(trace.second_threshold)}",
    ]
    roomed = False
    for row in rows:
        at = trace.at(positions.get(row.id, -1))
        if at is None:
            continue
        named = trace.top_contributions(at, 4)
        rest = float(trace.contributions[at].sum()) - sum(value for _, value in named)
        score = trace.bias + float(trace.contributions[at].sum())
        p = shown_against(float(trace.probabilities[at]), trace.threshold)
        lines.append(
            f"  {row.id}: p {p}, s {score:+.2f} = {trace.bias:+.2f} + {trace.drivers(at, 4)}, "
            f"the other {len(trace.features) - len(named)} features {rest:+.2f}"
        )
        if room := room_text(decision, row):
            lines.append(f"    room: {room}")
            roomed = True
    if roomed:
        lines.append(
            "  (room: the p a channel would give, and what it would add to s, if it alone "
            "favoured the skill as strongly as the model ever rewards: the most headroom "
            "first; rooms do not add up)"
        )
    return lines


def preset_line(decision: Decision) -> str:
    """The preset and its departures from the reference, as one line (§9, presets.py)."""
    tuning = decision.tuning
    if not tuning:
        return "preset: (unknown)"
    parts = [f"preset: {tuning['preset']}"]
    if tuning.get("relevance"):
        bar = f" at p ≥ {bar_text(decision.relevance.threshold)}" if decision.relevance else ""
        parts.append(f"the relevance model decides over every channel (§9.12){bar}")
        return "; ".join(parts)
    if tuning.get("relevance_off"):
        parts.append(str(tuning["relevance_off"]))
    if tuning["bm25_weight"]:
        parts.append(f"score += {tuning['bm25_weight']:g} × bm25_norm")
    # presets.resolve_guards: whose cosines the guard values are ("MiniLM's", "scaled from
    # MiniLM's ...", "off: ...", "pinned"); one note when all three share it.
    origins = {key: str(tuning.get(f"{key}_from", "")) for key in GUARD_KEYS}
    shared = len(set(origins.values())) == 1
    own = {key: "" if shared or not origin else f" ({origin})" for key, origin in origins.items()}
    if tuning["floor_log_slope"]:
        parts.append(
            f"floor {tuning['base_min_similarity']:.3f} + {tuning['floor_log_slope']:.3g} × "
            f"ln({tuning.get('floor_n', 'N')}/200) = {tuning['min_similarity']:.3f}"
            + (
                f" ({len(decision.channels.ids)} skills, clamped to the sizes it was fit on)"
                if tuning.get("floor_n", len(decision.channels.ids)) != len(decision.channels.ids)
                else ""
            )
            + own["floor_log_slope"]
        )
    keyword_cos, lexical_cos = tuning["keyword_min_cosine"], tuning["lexical_min_cosine"]
    guards = [
        name
        for name, on in (
            ("generic keywords ignored", tuning["keyword_generic_guard"]),
            (f"keyword needs cos ≥ {keyword_cos:.3g}" + own["keyword_min_cosine"], keyword_cos),
            (f"fast path needs cos ≥ {lexical_cos:.3g}" + own["lexical_min_cosine"], lexical_cos),
        )
        if on
    ]
    if guards:
        parts.append("guards: " + ", ".join(guards))
    if shared and origins["keyword_min_cosine"]:
        parts.append(f"slope and cosine guards: {origins['keyword_min_cosine']}")
    if len(parts) == 1:
        parts.append("the reference's cascade")
    return "; ".join(parts)


def dense_line(decision: Decision) -> str:
    """The dense model and the floor it gives the cascade, with where that floor comes
    from. Where the relevance model decides, the floor serves only prompts it cannot
    judge: the line says that, and leaves the floor's provenance to --json."""
    models, thresholds = decision.models, decision.thresholds
    if decision.tuning.get("relevance"):
        return (
            f"dense model: {models['dense']} (the cascade's floor, min_similarity "
            f"{thresholds['min_similarity']:.2f}, serves only prompts the relevance model "
            "cannot judge)"
        )
    return (
        f"dense model: {models['dense']} (min_similarity {thresholds['min_similarity']:.2f}, "
        f"score_margin {thresholds['score_margin']:.2f}: {models['calibration']})"
    )


PROMPT_SHOWN = 500  # characters of the prompt `why` quotes: a pasted log is not repeated whole


def prompt_line(prompt: str) -> str:
    """`why`'s first line: the prompt quoted, cut at PROMPT_SHOWN characters with its length,
    and how much of it the router read when that is not all of it (routing.md §2.6)."""
    if len(prompt) <= PROMPT_SHOWN:
        return f"prompt: {prompt!r}"
    read = ""
    if len(prompt) > PROMPT_READ_CHARS:
        half = f"{PROMPT_READ_CHARS // 2:,}"
        read = f"; the router reads its first and last {half} (§2.6)"
    return f"prompt: {prompt[:PROMPT_SHOWN]!r}… ({len(prompt):,} characters{read})"


def shown_rows(decision: Decision, top: int, skill: str | None) -> list[Row]:
    """The first `top` rows in the decision's order, then, wherever they stand, the skills that
    decided: the injected ones, the relevance model's best candidate (the one that came
    closest when nothing was injected) and `skill` (--skill)."""
    shown = list(decision.rows[: max(top, 1)])
    wanted = list(decision.injected_ids)
    trace = decision.relevance
    if trace is not None and trace.ranked:
        wanted.append(decision.channels.ids[trace.candidates[trace.ranked[0]]])
    if skill:
        wanted.append(skill)
    extra = {
        skill_id: number
        for skill_id in wanted
        if (number := decision.rows.index_of(skill_id)) is not None
        and all(row.id != skill_id for row in shown)
    }
    shown += [decision.row(skill_id) for skill_id in sorted(extra, key=extra.__getitem__)]
    return shown


def injection_lines(text: str, shown_lines: int | None) -> Blocks:
    """What the hook would inject, as the agent receives it: its first `shown_lines`, which
    name the skills and open a body, then how much more there is (None: all of it). A body
    injected whole would be most of a `why`."""
    lines = text.splitlines()
    if shown_lines is None or len(lines) <= shown_lines:
        return ["hook would inject:", Verbatim(text)]
    return [
        f"hook would inject ({len(text):,} characters; --text shows them all):",
        Verbatim("\n".join(lines[:shown_lines])),
        f"[… {counted(len(lines) - shown_lines, 'more line')}]",
    ]


def why_report(
    decision: Decision,
    index: Index,
    *,
    top: int = 8,
    skill: str | None = None,
    text_lines: int | None = None,
) -> Blocks:
    models = decision.models
    reranker = models["reranker"] or f"none — {models['reranker_note']}"
    lines: Blocks = [
        prompt_line(decision.prompt),
        f"query terms: {listed(decision.query_terms) or '(none)'}",
        dense_line(decision),
        preset_line(decision),
        f"reranker: {reranker}",
        *(
            [f"multilingual encoder: {models['multilingual']} (§9.14)"]
            if models.get("multilingual")
            else []
        ),
        "",
        decision_summary(decision),
        "",
    ]
    shown = shown_rows(decision, top, skill)
    channels = channel_table(decision, shown)
    lines.append(channels)
    hidden = len(decision.rows) - len(shown)
    if hidden > 0:
        lines.append(f"… {hidden} more skills (--top N)")
    lines.append(ColumnLegend(channels, COLUMN_PHRASES, "columns: "))
    lines += ["", "why (the number that decided; the explorer's table says the same):"]
    if decision.relevance is not None:
        lines.append(RELEVANCE_LEGEND)
    lines += [f"  {reason_text(decision, row)}" for row in shown]
    matched = [row for row in shown if row.matches]
    if matched:
        lines += ["", "what matched (keyword, phrase, file and project boosts):"]
        lines += [f"  {row.id}: {matches_text(row)}" for row in matched]
    lines += relevance_lines(decision, shown)
    lines += ["", "gates, in cascade order:", *(gate_line(gate) for gate in decision.gates)]
    explained = [skill] if skill else [row.id for row in decision.rows[: min(top, 3)]]
    for skill_id in explained:
        lines += ["", *terms_table(index, decision.query_terms, skill_id)]
    if skill:
        attribution = attribution_lines(decision, index, skill)
        lines += ["", *attribution] if attribution else []
    if decision.text and is_control_payload(decision.prompt):
        lines += ["", "hook would inject: nothing (it ignores a control payload, §7)"]
    elif decision.text:
        lines += ["", *injection_lines(decision.text, text_lines)]
    timings = ", ".join(f"{name} {value:.1f}" for name, value in decision.timings_ms.items())
    lines += ["", f"timings (ms): {timings}"]
    return lines


# What the channel table's headers stand for, under it (docs/routing.md has each channel):
# `fused`, `#`, `proj` and `jacc` say little on their own.
COLUMN_PHRASES = {
    "hybrid#": "hybrid# the rank by hybrid score (--json's rank, eval's expected#rank), beside "
    "rows in the decision's order",
    "score": "score = cos + kw + ph (phrase) + file + proj (project) + fused (BM25 in the "
    "score, by bm25_weight)",
    "bm25": "bm25 the BM25 score",
    "norm": "norm = bm25 / the idf of the prompt's terms summed",
    "bm25#": "bm25# the BM25 rank",
    "rerank": "rerank the cross-encoder's logit",
    "p": "p the relevance model's probability",
    "overlap": "overlap the prompt's terms in the description",
    "jacc": "jacc the Jaccard of the prompt's and the description's terms",
}


# Under the relevance model a reason names features with numbers that are easy to read
# as the features' own values (a "bm25 lead +0.64" for a skill BM25 never matched).
RELEVANCE_LEGEND = (
    "  (beside a feature: what it adds to the log-odds s, not the feature's value; with "
    '"vs X": that minus what it adds for X)'
)

EXPORT_TOP = 15  # the export's rows: the decision's first ones, then the highlighted skill


def markdown_report(
    decision: Decision, index: Index, skill: str | None = None, *, top: int = EXPORT_TOP
) -> str:
    """The explanation as Markdown, for an issue, a pull request or a design note: the
    first `top` rows, with each one's reason, and `skill` (the highlighted one) wherever
    it ranks; no terminal code in it, whatever a skill's text holds."""

    def cell(value: object) -> str:
        """Table cells only: GFM needs `\\|` there, even inside a code span."""
        return str(value).replace("|", "\\|").replace("\n", " ")

    def code(value: object) -> str:
        """A code span outside a table: no escaping shows up literally, so none is added."""
        text = " ".join(str(value).split())
        fence = "``" if "`" in text else "`"
        pad = " " if fence == "``" else ""
        return f"{fence}{pad}{text}{pad}{fence}"

    injected = ", ".join(f"{code(i.id)} ({i.confidence:.2f}, {i.band})" for i in decision.injected)
    lines = [
        f"# Why: {code(decision.prompt)}",
        "",
        f"- stage: **{decision.stage}**",
        f"- injected: {injected or 'nothing'}",
        f"- dense model: {decision.models['dense']}; reranker: "
        f"{decision.models['reranker'] or 'none'}",
        f"- min_similarity {decision.thresholds['min_similarity']:.2f}, "
        f"score_margin {decision.thresholds['score_margin']:.2f}",
        f"- {preset_line(decision)}",
        "",
        "## Skills",
        "",
        "| # | skill | verdict | score | cos | kw | ph | file | bm25 | norm | fused | rerank "
        "| p | overlap | why |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = list(decision.rows[: max(top, 1)])
    if skill and all(row.id != skill for row in rows) and decision.rows.index_of(skill) is not None:
        rows.append(decision.row(skill))
    for row in rows:
        rerank = "—" if row.rerank is None else f"{row.rerank:.2f}"
        p = "—" if row.relevance is None else p_text(row.relevance)
        why = reason(decision, row)
        gap = f" ({why.gap_text()})" if why.gap_text() else ""
        lines.append(
            f"| {row.rank} | `{cell(row.id)}` | {row.verdict} | {row.score:.3f} | "
            f"{row.cosine:.3f} | {row.keyword:.2f} | {row.phrase:.2f} | {row.file:.2f} | "
            f"{row.bm25:.2f} | {row.bm25_norm:.2f} | {row.bm25_fused:.2f} | {rerank} | {p} | "
            f"{row.matched_terms}/{row.query_terms} | {cell(why.text + gap)} |"
        )
    hidden = len(decision.rows) - len(rows)
    if hidden > 0:
        lines += ["", f"{hidden} more skills not shown (the decision JSON, ctrl+y, has them all)."]
    matched = [row for row in rows if row.matches]
    if matched:
        lines += ["", "## What matched", ""]
        lines += [f"- {code(row.id)}: {code(matches_text(row))}" for row in matched]
    lines += ["", "## Gates, in cascade order", ""]
    lines += [f"- {code(gate_line(gate).strip())}" for gate in decision.gates]
    explained = skill or (decision.rows[0].id if decision.rows else None)
    if explained is not None:
        lines += ["", f"## BM25 terms of {code(explained)}", "", "```"]
        lines += [render(block) for block in terms_table(index, decision.query_terms, explained)]
        lines += ["```"]
        attribution = attribution_lines(decision, index, explained)
        if attribution:
            lines += ["", f"## The reranker on {code(explained)}", "", "```", *attribution, "```"]
    lines += ["", "## The hook would inject", "", "```", decision.text or "(nothing)", "```", ""]
    # Skill text is a stranger's: a Markdown file is read in a terminal too (cat, less -R).
    return visible("\n".join(lines))
