"""Text normalisation shared by every lexical channel (spec §2, §1.4 phrases).

Kept byte-for-byte faithful to the reference, quirks included, so that a BM25 or
keyword score shown here is the one the router computes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

# §2.1: runs of ASCII letters and digits; everything else ends a token.
_TOKEN_RE = re.compile(r"[A-Za-z0-9]{2,}")

# §2.2: deliberately small and free of domain words.
STOPWORDS: frozenset[str] = frozenset(
    (
        "the an of to for and or in on at is it be as by with from into me my we our you your "
        "this that these those use used when user users say says want wants ask asks do does "
        "not if so up out via are was will can a i"
    ).split()
)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(text: str) -> str:
    """The text with each lone surrogate as U+FFFD.

    A str holds one only from undecodable input: a command line's bytes that are not
    UTF-8 (Python keeps them as surrogates), or half a pair in a JSON escape. Tokenizers
    refuse such a str outright, UTF-8 cannot encode it, and one character must not cost
    the whole prompt: each model's input goes through this, and so do the prompts of the
    hook's payload and of a JSON cases file, which are hashed and written as UTF-8."""
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def tokenize(text: str) -> list[str]:
    """§2.1: lower-cased ASCII alphanumeric tokens of length >= 2, camelCase kept whole."""
    return [token.lower() for token in _TOKEN_RE.findall(text)]


def latin_accented(char: str) -> bool:
    """A Latin letter outside ASCII: beside one, a §2.1 token is a piece of a word ("lisis"
    of "análisis", "voc" of "você"). Beside a CJK character it is a whole word: those
    scripts use no spaces ("LNP" of "给LNP做封面")."""
    return char.isalpha() and not char.isascii() and unicodedata.name(char, "").startswith("LATIN")


def whole_tokens(text: str) -> list[str]:
    """§2.5 match tokens of the words §2.1 reads whole: what a person would call the text's
    words, for showing; routing reads every token, pieces included."""
    kept = [
        found.group()
        for found in _TOKEN_RE.finditer(text)
        if not latin_accented(text[found.start() - 1 : found.start()] or " ")
        and not latin_accented(text[found.end() : found.end() + 1] or " ")
    ]
    return match_tokens(" ".join(kept))


def content_tokens(text: str) -> list[str]:
    """§2.3: tokens minus stopwords, order and repeats kept."""
    return [token for token in tokenize(text) if token not in STOPWORDS]


def norm_token(token: str) -> str:
    """§2.4: the reference's singular form, applied at match time only."""
    if len(token) <= 3 or not token.endswith("s"):
        return token
    if token.endswith(("ss", "us", "is")):
        return token
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if token.endswith(("sses", "ches", "shes", "xes", "zes")):
        return token[:-2]
    return token[:-1]


def match_tokens(text: str) -> list[str]:
    """§2.5: normalised content tokens, used by BM25, overlap and phrase matching."""
    return [norm_token(token) for token in content_tokens(text)]


def keyword_tokens(text: str) -> set[str]:
    """§2.5: the prompt side of keyword matching keeps stopwords."""
    return {norm_token(token) for token in tokenize(text)}


def jaccard(left: Iterable[str], right: Iterable[str]) -> float:
    """§9.4: token-set overlap; two empty sets give 0.0, not 1.0."""
    a, b = set(left), set(right)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


_CURLY_PAIRS = {"\u201c": "\u201d", "\u2018": "\u2019"}
_STRAIGHT = {'"', "'"}
_OPENER_RE = re.compile("[\"'\u201c\u2018]")
MIN_PHRASE_TOKENS = 2
MAX_PHRASE_TOKENS = 10


def quoted_spans(text: str) -> list[str]:
    """§1.4: spans in straight or curly quotes, apostrophes excluded.

    A straight quote opens only at the start or after a non-alphanumeric character, and
    closes only at the end or before one, so "don't" and "it's" never open a span.
    """
    spans: list[str] = []
    unclosed: set[str] = set()  # a closer missing after i is missing after any later i too
    position = 0
    while match := _OPENER_RE.search(text, position):
        start, char = match.start(), match.group()
        position = start + 1
        if char in unclosed:
            continue
        if char in _STRAIGHT:
            if start and text[start - 1].isalnum():
                continue  # an apostrophe, not an opening quote
            close = _find_straight_close(text, char, position)
        else:
            found = text.find(_CURLY_PAIRS[char], position)
            close = found if found != -1 else None
        if close is None:
            unclosed.add(char)
            continue
        spans.append(text[position:close])
        position = close + 1
    return spans


def _find_straight_close(text: str, quote: str, start: int) -> int | None:
    position = text.find(quote, start)
    while position != -1:
        after = position + 1
        if after == len(text) or not text[after].isalnum():
            return position
        position = text.find(quote, after)
    return None


def trigger_phrases(description: str) -> list[str]:
    """§1.4: quoted spans with 2-10 content tokens, stored as those tokens joined by spaces."""
    phrases: list[str] = []
    for span in quoted_spans(description):
        tokens = content_tokens(span)
        if MIN_PHRASE_TOKENS <= len(tokens) <= MAX_PHRASE_TOKENS:
            phrase = " ".join(tokens)
            if phrase not in phrases:
                phrases.append(phrase)
    return phrases


def shared_prefix(first: str, second: str) -> int:
    """How many leading characters two texts share: where an edit of one into the other
    begins."""
    for at, (a, b) in enumerate(zip(first, second, strict=False)):
        if a != b:
            return at
    return min(len(first), len(second))


def clipped(text: str, limit: int) -> str:
    """`text` whole, or cut to `limit` characters ending in an ellipsis: never cut silently."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(number: int, noun: str, plural: str = "") -> str:
    """'1 skill', '2 skills': a count a user reads (`plural` when not noun + 's')."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def did_you_mean(wanted: str, names: Iterable[str], count: int = 3) -> str:
    """ " (did you mean 'x', 'y'?)" with the names nearest a mistyped one, or "". They are
    compared folded (case, and any run of spaces, dashes or underscores alike), so
    `KUBERNETES DEBUGGER` finds `kubernetes-debugger` and `awp-wallet` "AWP Wallet"."""
    from difflib import get_close_matches

    def folded(name: str) -> str:
        return "-".join(re.findall(r"[^\W_]+", name.lower()))

    by_fold = {folded(name): name for name in names}
    close = [by_fold[key] for key in get_close_matches(folded(wanted), list(by_fold), n=count)]
    return f" (did you mean {', '.join(repr(name) for name in close)}?)" if close else ""
