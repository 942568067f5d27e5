"""Explain why not: the BM25 terms of any skill, and its description with matches lit."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.engine.base import STOPWORDS, norm_token
from explorer.engine.discovery import Skill
from explorer.engine.index import Explain, phrase_tokens
from explorer.engine.route import Match, MatchKind, excluded_query_terms, missing_query_terms
from explorer.terminal import visible
from explorer.tui.widgets import update_text

_WORD_RE = re.compile(r"[A-Za-z0-9]{2,}")


def highlighted_description(description: str, matched: set[str]) -> Text:
    """The description as plain text, with every word whose match token matched lit."""
    text = Text(visible(description))
    for match in _WORD_RE.finditer(text.plain):
        word = match.group().lower()
        if word not in STOPWORDS and norm_token(word) in matched:
            text.stylize("bold reverse yellow", match.start(), match.end())
    return text


def match_label(skill: Skill, match: Match) -> str:
    """A match as the Terms tab names it: a phrase as its author wrote it."""
    if match.kind is MatchKind.PHRASE:
        tokens = tuple(match.term.split())
        written = next((p for p in skill.trigger_phrases if phrase_tokens(p) == tokens), None)
        if written is not None:
            return f'ph: "{written}"'
    return match.label()


def matches_text(skill: Skill, matches: tuple[Match, ...]) -> Text:
    """What earned the skill its boosts, one per line, with what each added."""
    out = Text()
    if not matches:
        out.append("no keyword, phrase or file matched\n", style="dim")
        return out
    out.append("what matched\n", style="bold")
    for match in matches:
        out.append(
            f"  {visible(match_label(skill, match)):<34}", style="green" if match.boost else "dim"
        )
        out.append(f" {match.added()}\n", style="" if match.boost else "dim")
    return out


def other_script_words(prompt: str) -> list[str]:
    """The prompt's words outside ASCII that give BM25 nothing at all, in order, once
    each: §2.1 reads runs of ASCII letters and digits only ("café" still gives "caf")."""
    words = (word.strip(".,;:!?()[]{}\"'") for word in prompt.split())
    silent = (word for word in words if not word.isascii() and not _WORD_RE.search(word))
    return list(dict.fromkeys(silent))


def singular_forms(prompt: str) -> list[str]:
    """`postgres → postgre`: the prompt's words that BM25 reads in another form (§2.4, the
    reference's singular rule, which cuts a final s), so a term the table lists is found
    in the prompt."""
    pairs = (
        (word, norm_token(word))
        for word in dict.fromkeys(found.group().lower() for found in _WORD_RE.finditer(prompt))
        if word not in STOPWORDS
    )
    return [f"{word} → {term}" for word, term in pairs if term != word]


def terms_text(
    skill: Skill, explain: Explain, matches: tuple[Match, ...] = (), prompt: str = ""
) -> Text:
    out = Text()
    out.append(visible(f"{skill.id} "), style="bold")
    out.append(f"  BM25 {explain.score:.3f}  normalised {explain.normalised:.3f}\n", style="dim")
    out.append_text(matches_text(skill, matches))
    if explain.terms:
        first = explain.terms[0]
        out.append(
            f"N={first.n} dl={first.dl} avgdl={first.avgdl:.1f} k1={first.k1} b={first.b}\n\n",
            style="dim",
        )
        out.append(
            f"{'term':<18}{'match':>6}{'tf':>4}{'df':>5}{'idf':>7}{'contrib':>9}\n",
            style="bold underline",
        )
        for term in explain.terms:
            style = "green" if term.matched else "dim"
            out.append(
                f"{visible(term.term)[:17]:<18}{'yes' if term.matched else 'no':>6}{term.tf:>4}"
                f"{term.df:>5}{term.idf:>7.3f}{term.contribution:>9.3f}\n",
                style=style,
            )
        singular = singular_forms(prompt)
        if singular:
            out.append(
                visible(f"terms are singular forms (§2.4): {', '.join(singular[:3])}\n"),
                style="dim",
            )
    others = other_script_words(prompt)
    if not explain.terms and not others:
        out.append("the prompt has no content terms\n", style="dim")
    if others:
        out.append(
            visible(
                f"no BM25 term (§2.1 reads ASCII words): {', '.join(others[:8])}"
                f"{' …' if len(others) > 8 else ''}; the relevance model reads them as "
                "other scripts (§9.12)\n"
            ),
            style="yellow",
        )
    out.append("\ndescription\n", style="bold")
    out.append_text(highlighted_description(skill.description, set(explain.matched)))
    out.append("\n")
    missing = missing_query_terms(explain)
    if missing:
        out.append("\nmissing query terms, rarest first: ", style="bold")
        out.append(visible(", ".join(missing)), style="red")
        out.append("\n")
    excluded = excluded_query_terms(skill.description, explain)
    if excluded:
        # §9.12: words the description says it is not for count against the skill.
        out.append("\nexcluded by the description: ", style="bold")
        out.append(visible(", ".join(excluded)), style="yellow")
        out.append("\n")
    return out


class TermsPanel(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static("Highlight a skill to see its terms.", id="terms-body")

    def show(
        self, skill: Skill, explain: Explain, matches: tuple[Match, ...] = (), prompt: str = ""
    ) -> None:
        text = terms_text(skill, explain, matches, prompt)
        update_text(self.query_one("#terms-body", Static), text)
