"""A prompt read once: every token set the channels, gates and explanations use.

Each channel once tokenised the prompt its own way (match tokens for BM25 and phrases,
keyword tokens with stopwords kept, script tokens, a negation scan, file-shaped words).
Reading them in one place means a channel and the explanation of its score cannot
disagree about what the prompt said, and the prompt is tokenised once per `decide()`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from explorer.engine.base.text import STOPWORDS, norm_token, tokenize
from explorer.engine.discovery.line_reader import WHITESPACE, ascii_lower
from explorer.engine.route.relevance import negated_terms, script_tokens

# §3.4: a named file of a document family boosts the skill with that family's id.
FILE_FAMILIES = {
    "pdf": "pdf",
    **dict.fromkeys(("xlsx", "xls", "xlsm", "csv", "tsv", "ods", "numbers"), "xlsx"),
    **dict.fromkeys(("docx", "doc", "rtf", "odt", "pages"), "docx"),
    **dict.fromkeys(("pptx", "ppt", "odp", "key"), "pptx"),
}
# §3.4: what separates file names in prose (reference: src/context.rs file_tokens).
_FILE_SPLIT_RE = re.compile(f"[{re.escape(WHITESPACE)}\"'()`,]+")
_COMMAND_RE = re.compile(r"[A-Za-z0-9_:-]+", re.ASCII)
_WHITESPACE_RE = re.compile(f"[{re.escape(WHITESPACE)}]+")


# docs/routing.md §2.6: how much of a prompt the router reads, from its head and its tail.
PROMPT_READ_CHARS = 100_000


def prompt_read(prompt: str) -> str:
    """The part of a prompt the router reads (docs/routing.md §2.6): all of it up to
    PROMPT_READ_CHARS, else that many characters, half from its start and half from its
    end, joined by a line break. A pasted log or file around a request puts the request at
    one end; reading megabytes between costs the hook its time budget and changes no
    model's input (each reads its first few hundred tokens)."""
    if len(prompt) <= PROMPT_READ_CHARS:
        return prompt
    half = PROMPT_READ_CHARS // 2
    return f"{prompt[:half]}\n{prompt[-half:]}"


def named_files(text: str) -> list[tuple[str, str]]:
    """(file name, extension) for every file-shaped word, as the reference reads them
    (src/context.rs).

    Words are split at whitespace and at `"'()`,`; trailing `.:;!?` are trimmed; the
    extension is what follows the last dot, lower-cased, and a bare `.pdf` (nothing
    before the dot) names no file. So `data.csv.gz` is a gz, `a.key.pdf` a pdf.
    """
    found = []
    for word in _FILE_SPLIT_RE.split(text):
        name = word.rstrip(".:;!?")
        stem, dot, extension = name.rpartition(".")
        if dot and stem:
            found.append((name, ascii_lower(extension)))
    return found


def file_extensions(text: str) -> list[str]:
    """The extension of every file-shaped word (see named_files)."""
    return [extension for _, extension in named_files(text)]


def family_files(prompt: str, context: Sequence[str] = ()) -> dict[str, str]:
    """§3.4: family -> the first file that names it, in the prompt (or a recent turn).

    The reference scans the recent turns and the prompt as one text (src/hook.rs).
    """
    text = " ".join((*context, prompt)) if context else prompt
    found: dict[str, str] = {}
    for name, extension in named_files(text):
        if extension in FILE_FAMILIES:
            found.setdefault(FILE_FAMILIES[extension], name)
    return found


def file_families(prompt: str, context: Sequence[str] = ()) -> list[str]:
    """§3.4: the document families whose files the prompt (or a recent turn) names."""
    return list(family_files(prompt, context))


def invoked_names(prompt: str) -> set[str]:
    """§5.6: the skill a *leading* `/name` invokes (the host loads it itself).

    As the reference reads it (src/hook.rs): trim the start, strip one `/`, take the
    first whitespace-separated word; every character must be in [A-Za-z0-9_:-], and
    `/plugin:skill` names `skill`. Case is kept: `/PDF` does not drop `pdf`. A `/word`
    later in the prompt, or a path such as `/tmp/x`, invokes nothing.
    """
    stripped = prompt.lstrip(WHITESPACE)
    if not stripped.startswith("/"):
        return set()
    words = [word for word in _WHITESPACE_RE.split(stripped[1:]) if word]
    if not words or not _COMMAND_RE.fullmatch(words[0]):
        return set()
    return {words[0].rsplit(":", 1)[-1]}


@dataclass(frozen=True)
class Query:
    """One prompt (and the recent turns that count for files), parsed.

    `terms` are the BM25 query terms (match tokens, de-duplicated, first occurrence
    first); `keyword_tokens` keep stopwords, as §2.5 asks of the prompt side of keyword
    matching; `families` and `extensions` read the recent turns with the prompt, as the
    reference scans them as one text.
    """

    text: str
    context: tuple[str, ...]
    tokens: tuple[str, ...]  # §2.1, in order
    match_tokens: tuple[str, ...]  # §2.5, in order, repeats kept
    terms: tuple[str, ...]
    keyword_tokens: frozenset[str]
    script_tokens: frozenset[str]
    negated: frozenset[str]
    families: Mapping[str, str]  # document family -> the first file named of it
    extensions: tuple[str, ...]
    invoked: frozenset[str]

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @classmethod
    def parse(cls, prompt: str, context: Sequence[str] = ()) -> Query:
        tokens = tuple(tokenize(prompt))
        matched = tuple(norm_token(token) for token in tokens if token not in STOPWORDS)
        text = " ".join((*context, prompt)) if context else prompt
        return cls(
            text=prompt,
            context=tuple(context),
            tokens=tokens,
            match_tokens=matched,
            terms=tuple(dict.fromkeys(matched)),
            keyword_tokens=frozenset(norm_token(token) for token in tokens),
            script_tokens=script_tokens(prompt),
            negated=negated_terms(prompt),
            families=family_files(prompt, context),
            extensions=tuple(file_extensions(text)),
            invoked=frozenset(invoked_names(prompt)),
        )
