"""The immutable library state a decision runs on: skills, vectors, BM25 statistics.

An Index is built once per library version and never mutated, so a reader always sees
one consistent snapshot while a newer one is being built.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from explorer.engine.base.config import Config, dense_body_chars
from explorer.engine.base.text import norm_token, tokenize
from explorer.engine.discovery.bodies import body_on_disk
from explorer.engine.discovery.skills import Discovery, Problem, Skill, discover
from explorer.engine.index import rows
from explorer.engine.index.lexical import LexicalIndex, indexed_text_tokens
from explorer.engine.index.rows import DenseRows
from explorer.engine.inference.cache import (
    CachedSkills,
    EmbeddingCache,
    OutOfTime,
    Progress,
    embed_blocks_with_cache,
    text_hash,
)
from explorer.engine.inference.embed import Embedder
from explorer.engine.inference.models import Models, assemble_models


@dataclass(frozen=True)
class Index:
    """One version of the library, ready for `decide()`."""

    skills: Sequence[Skill]  # a tuple, or the persisted store's skills made on demand
    rejected: tuple[Problem, ...]
    roots: tuple[str, ...]
    models: Models
    # [N, dim], L2-normalised, in row blocks that the snapshots after a save share
    # (rows.py); None without a dense model
    vectors: DenseRows | None
    lexical: LexicalIndex
    # The three token tables are read-only: dicts when built here, the store's lazy views
    # (store.KeywordPostings, store.PhraseTable) when a snapshot is opened from disk.
    # norm_token(keyword) -> skill indices, repeats kept (§3.2)
    keyword_postings: Mapping[str, np.ndarray]
    phrase_table: Mapping[str, tuple[tuple[int, tuple[str, ...]], ...]]  # first token -> phrases
    id_rank: np.ndarray  # each skill's position in id order: the tie-break (§3.6)
    positions: dict[str, int]
    paths: tuple[str, ...]
    version: int = 1
    built_at: float = field(default_factory=time.time)
    timings_ms: dict[str, float] = field(default_factory=dict)
    embedded: int = 0  # descriptions embedded by the model (not read from the cache) in this build
    # §3.5 project channel: token -> skills whose keywords' tokens or description's match
    # tokens hold it (an ecosystem term such as "uv" or "rust" resolves through this).
    ecosystem_postings: Mapping[str, np.ndarray] = field(default_factory=dict)
    # What a person should hear about how this index was obtained: a damaged store that
    # was rebuilt, descriptions left unembedded by the hook's time budget (hook.py).
    notes: tuple[str, ...] = ()
    dense_body_chars: int = 0  # §9.13: the body opening each vector reads (config's value)
    # §9.14: [N, 512] multilingual vectors of multilingual_text, in blocks like `vectors`;
    # None unless the learned preset built them
    multilingual: DenseRows | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return self.lexical.ids

    def __len__(self) -> int:
        return len(self.skills)

    def dense_text(self, skill: Skill) -> str:
        """§9.13: what this index's dense model embedded for `skill`."""
        return dense_text(skill, self.dense_body_chars)

    def vectors_by_text(self) -> dict[str, np.ndarray]:
        """text hash -> vector, for re-indexing without a cache round trip."""
        if self.vectors is None:
            return {}
        return {
            text_hash(self.dense_text(skill)): self.vectors[row]
            for row, skill in enumerate(self.skills)
        }

    def multilingual_by_text(self) -> dict[str, np.ndarray]:
        """The same for the multilingual vectors (§9.14)."""
        if self.multilingual is None:
            return {}
        return {
            text_hash(multilingual_text(skill)): self.multilingual[row]
            for row, skill in enumerate(self.skills)
        }

    @property
    def warnings(self) -> tuple[Problem, ...]:
        known = getattr(self.skills, "warnings", None)  # a stored index keeps them apart
        if known is not None:
            return tuple(known)
        return tuple(problem for skill in self.skills for problem in skill.warnings)


def dense_text(skill: Skill, body_chars: int) -> str:
    """§9.13: the description, then up to `body_chars` of the body's opening cut at a word
    boundary. Authors' own trigger prompts often use the words of the instructions rather
    than of the description; the opening says what the skill does in them."""
    head = skill.body_head
    if body_chars <= 0 or not head:
        return skill.description
    if len(head) > body_chars:
        cut = head[:body_chars]
        head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return skill.description + "\n" + head


def multilingual_text(skill: Skill) -> str:
    """§9.14: what the multilingual encoder reads of a skill: its name and description."""
    return f"{skill.name}: {skill.description}"


def builds_multilingual(config: Config, models: Models) -> bool:
    """§9.14: only the learned preset reads the multilingual cosine, so only it pays for
    the vectors."""
    return models.multilingual is not None and config.preset == "learned"


BUDGET_NOTE = "time budget:"  # starts the note of an index cut short by its deadline


def keyword_keys(skill: Skill) -> list[str]:
    """§3.2: the keyword table's keys for one skill, one per keyword entry.

    §2.5: keywords are singularised like the prompt (reference: src/rank.rs); an entry
    listed twice, or two that singularise alike, count once each.
    """
    return [norm_token(keyword) for keyword in skill.keywords]


def ecosystem_keys(skill: Skill) -> set[str]:
    """§3.5: the tokens under which the project channel finds a skill (keywords, description)."""
    ecosystem = {norm_token(token) for keyword in skill.keywords for token in tokenize(keyword)}
    return ecosystem.union(skill.description_tokens)


def phrase_tokens(phrase: str) -> tuple[str, ...]:
    """§3.3: a trigger phrase as the normalised tokens the phrase table matches."""
    return tuple(norm_token(token) for token in phrase.split())


def id_ranks(ids: Sequence[str]) -> np.ndarray:
    """Each skill's position in id order: the tie-break of equal scores (§3.6)."""
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(len(ids))
    return ranks


def build_index(
    roots: Sequence[str | os.PathLike[str]],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None = None,
    *,
    version: int = 1,
    progress: Progress | None = None,
    deadline: float | None = None,
    bodies_on_disk: bool = False,
) -> Index:
    """Discover, parse, embed (through the cache) and index the library under `roots`.

    `bodies_on_disk`: the skills read their bodies from their files when asked
    (bodies.py), for an index that stays in memory while another is built beside it."""
    started = time.perf_counter()
    memo = CachedSkills(cache) if cache is not None else None
    found = discover(roots, memo, keep=body_on_disk if bodies_on_disk else None)
    if memo is not None:
        memo.flush()
    parsed = time.perf_counter()
    index = index_skills(
        found, roots, config, models, cache, version=version, progress=progress, deadline=deadline
    )
    index.timings_ms["parse"] = (parsed - started) * 1000
    index.timings_ms["total"] = (time.perf_counter() - started) * 1000
    return index


def _embedded_rows(
    embedder: Embedder,
    texts: list[str],
    cache: EmbeddingCache | None,
    reuse: Mapping[str, np.ndarray] | None,
    progress: Progress | None,
    deadline: float | None,
) -> tuple[DenseRows | None, int, str | None]:
    """One model's rows of the texts, how many it embedded, and, when the deadline came
    first, no rows and the note that says so (what was embedded is cached for next time)."""
    try:
        blocks, embedded = embed_blocks_with_cache(
            embedder, texts, cache, reuse, progress, deadline, block_rows=rows.BLOCK_ROWS
        )
    except OutOfTime as short:
        later = (
            "and the cache is read-only, so no later call gets further"
            if cache is not None and cache.read_only
            else "the next call embeds more (`skill-explorer index` does all)"
        )
        note = (
            f"{BUDGET_NOTE} {short.left} of {short.total} new descriptions not embedded by "
            f"{embedder.name} yet; this answer uses the lexical channels alone (no dense "
            f"model, no reranker), {later}"
        )
        return None, short.total - short.left, note
    return DenseRows.adopt(blocks), embedded, None


def index_skills(
    found: Discovery,
    roots: Sequence[str | os.PathLike[str]],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None = None,
    *,
    version: int = 1,
    previous: Index | None = None,
    progress: Progress | None = None,
    deadline: float | None = None,
) -> Index:
    """Index already-parsed skills; vectors of `previous` are reused for unchanged texts.

    `deadline` (time.monotonic(); the hook's time budget): when the descriptions the cache
    does not hold cannot all be embedded before it, what was embedded is cached and this
    index has the lexical channels alone (no dense model, no reranker: `lexical_only`),
    with a note; the next call resumes the embedding."""
    skills = found.skills
    body_chars = dense_body_chars(config)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    vectors: DenseRows | None = None
    multilingual: DenseRows | None = None
    embedded = 0
    short_of_time: str | None = None
    if models.embedder is not None:
        vectors, embedded, short_of_time = _embedded_rows(
            models.embedder,
            [dense_text(skill, body_chars) for skill in skills],
            cache,
            previous.vectors_by_text() if previous is not None else None,
            progress,
            deadline,
        )
    if short_of_time is None and models.multilingual and builds_multilingual(config, models):
        multilingual, _, short_of_time = _embedded_rows(
            models.multilingual,
            [multilingual_text(skill) for skill in skills],
            cache,
            previous.multilingual_by_text() if previous is not None else None,
            None,
            deadline,
        )
    notes: tuple[str, ...] = ()
    if short_of_time is not None:
        models, notes = lexical_only(models, short_of_time), (short_of_time,)
    embedded_at = time.perf_counter()
    timings["embed"] = (embedded_at - started) * 1000

    ids = [skill.id for skill in skills]
    lexical = LexicalIndex(
        [indexed_text_tokens(skill, config.bm25_index_name_keywords) for skill in skills],
        ids,
        k1=config.bm25_k1,
        b=config.bm25_b,
    )
    keyword_lists: dict[str, list[int]] = {}
    ecosystem_lists: dict[str, list[int]] = {}
    phrases: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for position, skill in enumerate(skills):
        for key in keyword_keys(skill):
            keyword_lists.setdefault(key, []).append(position)
        for token in ecosystem_keys(skill):
            ecosystem_lists.setdefault(token, []).append(position)
        for phrase in skill.trigger_phrases:
            tokens = phrase_tokens(phrase)
            phrases.setdefault(tokens[0], []).append((position, tokens))
    id_rank = id_ranks(ids)
    timings["lexical"] = (time.perf_counter() - embedded_at) * 1000
    return Index(
        skills=skills,
        rejected=found.rejected,
        roots=tuple(os.path.abspath(os.fspath(root)) for root in roots),
        models=models,
        vectors=vectors,
        lexical=lexical,
        keyword_postings={
            keyword: np.array(indices, dtype=np.int64) for keyword, indices in keyword_lists.items()
        },
        phrase_table={token: tuple(entries) for token, entries in phrases.items()},
        id_rank=id_rank,
        positions={skill_id: position for position, skill_id in enumerate(ids)},
        paths=tuple(skill.path for skill in skills),
        version=version,
        timings_ms=timings,
        embedded=embedded,
        ecosystem_postings={
            token: np.array(indices, dtype=np.int64) for token, indices in ecosystem_lists.items()
        },
        notes=notes,
        dense_body_chars=body_chars,
        multilingual=multilingual,
    )


def lexical_only(models: Models, reason: str) -> Models:
    """`models` without the dense model and the reranker: a decision from BM25, keywords,
    phrases and files, as with no model at all (how the hook answers past its budget)."""
    return assemble_models(
        None,
        None,
        dense_error=reason,
        reranker_note=reason,
        warnings=list(models.warnings),
    )
