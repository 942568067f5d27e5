"""The text the hook injects (spec §5.6-§5.7), in this engine's format or the reference's.

`inject_format = "explorer"` (the default) lists each pick with its confidence, band and
path, so the model (and the author reading the trace) sees how sure the router is and
where the file is; the char budget counts the whole text and a lone long body is cut
with a marker instead of being dropped. `inject_format = "reference"` lays the text out
as the reference router does (skill-inject 0.9.0, src/inject.rs and src/hook.rs): a
header, a blank line, then blocks separated by blank lines; directive blocks carry the
`SkillRecommendation(`name`)` token, the description, the evidence of the file and
project channels and a verb whose force follows `directive_strength` and the band; body
blocks wrap the body in `<skill name="…">` tags; blocks are added while the next one
fits `char_budget` bytes (the header is not counted; the first block always goes in).

The reference's header and verb wording is AGPL prose, so the wording here is our own,
with the same meaning and the same three levels of force; structure, tokens and rules
are the reference's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import Skill
from explorer.engine.route.decision import Band, band

EXPLORER_HEADER = (
    "Skill router: these skills match the user's request; "
    "read a skill's SKILL.md before using it.\n"
)
EXPLORER_HEADER_HARD = (
    "Skill router: these skills match the user's request; "
    "read a skill's SKILL.md and use it before you respond.\n"
)
TRUNCATION_MARK = "\n[… cut at char_budget; read the whole SKILL.md]"

# The reference-format wording (ours; see the module docstring).
REFERENCE_DIRECTIVE_HEADER = (
    "A retrieval and rerank pass, separate from your own skill selection, matched these "
    "skills to the request. Invoke the ones that fit by name with the `Skill` tool rather "
    "than reading their files. Using a matching skill is better than doing its task by "
    "hand; pass over a recommendation only when it plainly does not apply:"
)
REFERENCE_BODY_HEADER = "The instructions of the skills that match this request follow:"
VERB_SOFT = "invoke it now, before you answer."
VERB_HARD_HIGH = "you MUST invoke it before answering."
VERB_HARD = "you should invoke it before answering."
FILE_EVIDENCE = "a file of this skill's document type is part of this conversation"


def strength(config: Config) -> str:
    """`auto` is `soft` for Claude Code, as the reference resolves it for that host."""
    return "soft" if config.directive_strength == "auto" else config.directive_strength


@dataclass(frozen=True)
class Pick:
    """One skill that survived the gates, with what the text may say about it."""

    position: int
    skill: Skill
    confidence: float
    body: bool  # inject the body rather than a pointer
    file_evidence: bool = False  # the file channel fired for it
    project_term: str | None = None  # the project channel fired for it, on this term


@dataclass(frozen=True)
class Built:
    text: str
    kept: tuple[Pick, ...]
    dropped: tuple[Pick, ...]  # over char_budget
    used: int  # characters (explorer) or bytes (reference) counted against the budget


def build(picks: list[Pick], config: Config) -> Built:
    if config.inject_format == "reference":
        return _reference(picks, config)
    return _explorer(picks, config)


def _explorer(picks: list[Pick], config: Config) -> Built:
    header = EXPLORER_HEADER_HARD if strength(config) == "hard" else EXPLORER_HEADER
    parts: list[str] = []
    kept: list[Pick] = []
    dropped: list[Pick] = []
    used = len(header)
    for pick in picks:
        skill = pick.skill
        summary = (
            f"{skill.id} (confidence {pick.confidence:.2f}, {band(pick.confidence)}; {skill.path})"
        )
        body = skill.body if pick.body else ""  # read once: it may come from the file
        if pick.body and not body.strip():
            # No body (a frontmatter never closed reads to the end of the file): "Its
            # instructions follow" and nothing would point the model at nothing, so the
            # description goes instead. The reference's format keeps its empty block.
            pick = dataclasses.replace(pick, body=False)
        if pick.body:
            entry = f"- {summary}. Its instructions follow.\n\n{body}"
        else:
            entry = f"- {summary}: {' '.join(skill.description.split())}"
        room = config.char_budget - used - (1 if parts else 0)
        if len(entry) > room:
            if parts or room < 200:
                dropped.append(pick)
                continue
            entry = entry[: room - len(TRUNCATION_MARK)] + TRUNCATION_MARK
        parts.append(entry)
        used += len(entry) + (1 if len(parts) > 1 else 0)
        kept.append(pick)
    if not parts:  # nothing is sent, not even the header
        return Built("", (), tuple(dropped), 0)
    return Built(header + "\n".join(parts), tuple(kept), tuple(dropped), used)


def _reference(picks: list[Pick], config: Config) -> Built:
    blocks: list[str] = []
    kept: list[Pick] = []
    dropped: list[Pick] = []
    used = 0
    for index, pick in enumerate(picks):
        block = _body_block(pick.skill) if pick.body else _directive_block(pick, config)
        size = len(block.encode("utf-8"))
        if blocks and used + size > config.char_budget:
            dropped.extend(picks[index:])  # the reference stops at the first that overflows
            break
        used += size
        blocks.append(block)
        kept.append(pick)
    if not blocks:
        return Built("", (), tuple(dropped), 0)
    all_body = all(pick.body for pick in kept)
    header = REFERENCE_BODY_HEADER if all_body else REFERENCE_DIRECTIVE_HEADER
    return Built(f"{header}\n\n" + "\n\n".join(blocks), tuple(kept), tuple(dropped), used)


def _directive_block(pick: Pick, config: Config) -> str:
    force = strength(config)
    if force == "hard":
        verb = VERB_HARD_HIGH if band(pick.confidence) is Band.HIGH else VERB_HARD
    else:
        verb = VERB_SOFT
    why = FILE_EVIDENCE if pick.file_evidence else None
    if why is None and pick.project_term:
        why = f"you are working in a {pick.project_term} project"
    evidence = f" [matched because {why}]" if why else ""
    return (
        f"- SkillRecommendation(`{pick.skill.name}`): {pick.skill.description}{evidence} — {verb}"
    )


def _body_block(skill: Skill) -> str:
    body = skill.body.strip() or skill.description
    return f'<skill name="{skill.name}">\n{body}\n</skill>'
