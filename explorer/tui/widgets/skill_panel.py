"""The highlighted skill as the engine read it: path, frontmatter, head, errors, hash."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.engine.base import counted
from explorer.engine.discovery import Skill
from explorer.engine.inference import Attribution, Reading
from explorer.terminal import plain, visible


def _frontmatter_lines(frontmatter: dict[str, Any]) -> Text:
    out = Text()
    for key, value in frontmatter.items():
        out.append(visible(f"  {key}: "), style="cyan")
        out.append_text(plain(" ".join(str(value).split())[:400]))
        out.append("\n")
    return out


def skill_text(skill: Skill, indexed_at: float, findings: Sequence[str] | None = None) -> Text:
    out = Text()
    out.append(visible(f"{skill.id}\n"), style="bold")
    out.append_text(plain(skill.path, style="dim"))
    out.append("\n")
    for problem in skill.warnings:
        out.append("\nwarning ", style="bold yellow")
        out.append_text(plain(str(problem)))
        out.append("\n")
    for finding in findings or []:
        out.append("\nlint ", style="bold yellow")
        out.append_text(plain(finding))
        out.append("\n")
    out.append("\nfrontmatter\n", style="bold")
    out.append_text(_frontmatter_lines(skill.frontmatter))
    out.append("\nkeywords ", style="bold")
    out.append_text(plain(", ".join(skill.keywords) or "—"))
    out.append("\ntrigger phrases ", style="bold")
    out.append_text(plain("; ".join(skill.trigger_phrases) or "—"))
    out.append("\n\nbody head\n", style="bold")
    out.append_text(plain(skill.body_head or "—"))
    out.append("\n\n")
    stamp = time.strftime("%H:%M:%S", time.localtime(indexed_at))
    out.append(f"hash {skill.hash}   indexed {stamp}\n", style="dim")
    return out


SENTENCE_LIMIT = 160  # a longer sentence is cut here, with an ellipsis


def attribution_text(skill_id: str, found: Attribution | None, note: str = "") -> Text:
    """The reranker's logit for the prompt, and what each sentence of the description adds
    to it (the logit with the sentence left out, subtracted): what to keep, what to cut."""
    out = Text()
    if found is None:
        out.append_text(plain(note or "no cross-encoder loaded: no sentence attribution", "dim"))
        return out
    out.append("reranker ", style="bold")
    out.append_text(plain(f"logit {found.logit:+.2f} on {skill_id}; each sentence adds:\n"))
    for line in found.notes():
        out.append_text(plain(f"  ({line})\n", "dim"))
    for effect in found.listed:
        sentence = effect.text
        if effect.reading is Reading.UNREAD:
            style = "dim"
        else:
            style = "bold green" if effect.delta > 0 else "bold red"
        out.append(f"  {effect.number():>6}  ", style=style)
        shown = sentence if len(sentence) <= SENTENCE_LIMIT else sentence[: SENTENCE_LIMIT - 1]
        out.append_text(plain(shown + ("…" if shown != sentence else "") + effect.remark() + "\n"))
    if found.unlisted:
        out.append(
            f"  {'unread':>6}  … {counted(found.unlisted, 'more sentence')} past it\n", "dim"
        )
    return out


class SkillPanel(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static(id="skill-attribution")
        yield Static("Highlight a skill to see how the engine read it.", id="skill-body")

    def show(self, skill: Skill, indexed_at: float, findings: Sequence[str] | None = None) -> None:
        self.query_one("#skill-body", Static).update(skill_text(skill, indexed_at, findings))

    def show_attribution(self, skill_id: str, found: Attribution | None, note: str = "") -> None:
        self.query_one("#skill-attribution", Static).update(attribution_text(skill_id, found, note))
