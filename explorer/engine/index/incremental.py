"""Incremental re-indexing: a save re-embeds one skill and patches the index around it.

A full `index_skills` re-tokenises and re-sorts every posting of the library, hashes
every description and rebuilds every table: 2-3 s at 26,000 skills, for one edited file.
When a re-index changes skills in place (the same paths in the same order: an editor's
save, a `git checkout` of existing files), this instead

* embeds only the descriptions that changed (through the cache),
* copies only the blocks of the vector matrix that hold a changed row (`DenseRows`;
  the new snapshot shares every other block with the previous one),
* patches BM25 (`LexicalIndex.patched`: the changed documents' postings go to an
  overlay, the rest are shared with the previous index; dl, avgdl and each document's
  length norm recomputed, vectorised),
* patches the keyword, trigger-phrase and ecosystem tables for the changed skills only,

and returns a new immutable Index, which the live index swaps in as before. Scores are
bit-identical to a full rebuild's (tests compare after random edits).

Added or removed skills shift every position after them (skills are in path order).
`patch_index` handles those too (`_patch_shifted`): the vector blocks from the first
moved row on are rebuilt, the BM25 base's documents get their new positions (its
postings stay shared), the table entries are moved with one increasing remap, and only
the added and changed skills are embedded and tokenised; the result is
again what a full rebuild would build, which tests check after random adds, removes,
renames and edits.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from explorer.engine.base.config import Config, dense_body_chars
from explorer.engine.discovery.skills import Discovery, Skill
from explorer.engine.index.lexical import LexicalIndex, indexed_text_tokens
from explorer.engine.index.rows import DenseRows
from explorer.engine.index.snapshot import (
    Index,
    builds_multilingual,
    dense_text,
    ecosystem_keys,
    id_ranks,
    keyword_keys,
    multilingual_text,
    phrase_tokens,
)
from explorer.engine.inference.cache import EmbeddingCache, embed_with_cache, text_hash
from explorer.engine.inference.embed import Embedder
from explorer.engine.inference.models import Models


def changed_positions(previous: Index, skills: Sequence[Skill]) -> list[int] | None:
    """Positions whose skill changed, or None when skills were added, removed or moved."""
    if len(skills) != len(previous.skills):
        return None
    changed = []
    for position, (old, new) in enumerate(zip(previous.skills, skills, strict=True)):
        if old is new:
            continue
        if old.path != new.path:
            return None
        if old != new:
            changed.append(position)
    return changed


PhraseEntry = tuple[int, tuple[str, ...]]  # (skill position, the phrase's tokens)


class _Tables(NamedTuple):
    """What a patch recomputes: every part of an Index that follows from its skills."""

    vectors: DenseRows | None
    multilingual: DenseRows | None  # §9.14
    lexical: LexicalIndex
    keyword_postings: dict[str, np.ndarray]
    phrase_table: dict[str, tuple[PhraseEntry, ...]]
    ecosystem_postings: dict[str, np.ndarray]
    id_rank: np.ndarray
    positions: dict[str, int]
    embedded: int  # descriptions the model embedded (not read from the cache)


def patch_index(
    previous: Index,
    found: Discovery,
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    *,
    version: int,
    changed: Sequence[int] | None = None,
) -> Index | None:
    """`previous` with the changed skills of `found` patched in; None when it cannot be.

    `changed`: when the caller knows the same paths are in the same places and only these
    positions may differ (a save), so no pass compares every skill."""
    if previous.dense_body_chars != dense_body_chars(config):
        return None  # §9.13: every vector reads a different text now
    if builds_multilingual(config, models) != (previous.multilingual is not None):
        return None  # §9.14: the multilingual vectors are wanted now, or no longer
    started = time.perf_counter()
    skills = found.skills
    if changed is not None and len(skills) == len(previous.skills):
        old = previous.skills
        changed = [i for i in changed if old[i] != skills[i]]
    else:
        changed = changed_positions(previous, skills)
    if not hasattr(previous.lexical, "patched"):
        return None
    timings: dict[str, float] = {}
    in_place = changed is not None
    try:
        if changed is None:
            tables = _patch_shifted(previous, skills, config, models, cache, timings, started)
        else:
            tables = _patch_in_place(
                previous, skills, changed, config, models, cache, timings, started
            )
    except ValueError:
        return None
    return dataclasses.replace(
        previous,
        skills=skills,
        rejected=found.rejected,
        vectors=tables.vectors,
        multilingual=tables.multilingual,
        lexical=tables.lexical,
        keyword_postings=tables.keyword_postings,
        phrase_table=tables.phrase_table,
        ecosystem_postings=tables.ecosystem_postings,
        id_rank=tables.id_rank,
        positions=tables.positions,
        paths=previous.paths if in_place else tuple(skill.path for skill in skills),
        version=version,
        built_at=time.time(),
        timings_ms=timings,
        embedded=tables.embedded,
    )


def _repost(
    table: Mapping[str, np.ndarray],
    changed: Sequence[int],
    old: Sequence[Skill],
    new: Sequence[Skill],
    keys_of: Callable[[Skill], Iterable[str]],
) -> dict[str, np.ndarray]:
    """A position table (§3.2 keywords, §3.5 ecosystem) with each changed position taken
    out of its old skill's keys and put under its new skill's (a key listed twice, twice),
    each list ascending as a build makes it."""
    out = dict(table)
    changed_set = set(changed)
    added: dict[str, list[int]] = {}
    for i in changed:
        for key in keys_of(new[i]):
            added.setdefault(key, []).append(i)
    gone = np.array(sorted(changed_set), dtype=np.int64)
    for key in {key for i in changed for key in keys_of(old[i])}.union(added):
        kept = np.asarray(out.get(key, ()), dtype=np.int64)
        kept = kept[~np.isin(kept, gone)]  # vectorised: a common token lists most skills
        more = added.get(key)
        if more:
            kept = np.sort(np.concatenate([kept, np.array(more, dtype=np.int64)]), kind="stable")
        if len(kept):
            out[key] = kept
        else:
            out.pop(key, None)
    return out


def _patch_in_place(
    previous: Index,
    skills: Sequence[Skill],
    changed: list[int],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    timings: dict[str, float],
    started: float,
) -> _Tables:
    """The same paths in the same order, some changed: patch only the changed positions."""
    body_chars = previous.dense_body_chars
    vectors, embedded = _rows_in_place(
        previous.vectors,
        models.embedder,
        lambda skill: dense_text(skill, body_chars),
        previous.skills,
        skills,
        changed,
        cache,
    )
    multilingual, _ = _rows_in_place(
        previous.multilingual,
        models.multilingual,
        multilingual_text,
        previous.skills,
        skills,
        changed,
        cache,
    )
    embedded_at = time.perf_counter()
    timings["embed"] = (embedded_at - started) * 1000

    lexical = previous.lexical
    tokens = {i: indexed_text_tokens(skills[i], config.bm25_index_name_keywords) for i in changed}
    old_tokens = {
        i: indexed_text_tokens(previous.skills[i], config.bm25_index_name_keywords) for i in changed
    }
    if tokens != old_tokens:
        lexical = lexical.patched(tokens)
    renamed = any(previous.skills[i].id != skills[i].id for i in changed)
    ids = [skill.id for skill in skills] if renamed else []
    if renamed:
        lexical = lexical.with_ids(ids)

    old = previous.skills
    keywords = _repost(previous.keyword_postings, changed, old, skills, keyword_keys)
    ecosystem = _repost(previous.ecosystem_postings, changed, old, skills, ecosystem_keys)

    changed_set = set(changed)
    phrases = dict(previous.phrase_table)
    firsts: set[str] = set()
    new_entries: dict[str, list[PhraseEntry]] = {}
    for i in changed:
        for phrase in previous.skills[i].trigger_phrases:
            firsts.add(phrase_tokens(phrase)[0])
        for phrase in skills[i].trigger_phrases:
            words = phrase_tokens(phrase)
            firsts.add(words[0])
            new_entries.setdefault(words[0], []).append((i, words))
    for first in firsts:
        entries = [e for e in phrases.get(first, ()) if e[0] not in changed_set]
        entries += new_entries.get(first, [])
        entries.sort(key=lambda entry: entry[0])  # stable: a skill's phrases keep order
        if entries:
            phrases[first] = tuple(entries)
        else:
            phrases.pop(first, None)

    id_rank, by_id = previous.id_rank, previous.positions
    if renamed:
        id_rank = id_ranks(ids)
        by_id = {skill_id: position for position, skill_id in enumerate(ids)}
    timings["lexical"] = (time.perf_counter() - embedded_at) * 1000
    return _Tables(
        vectors, multilingual, lexical, keywords, phrases, ecosystem, id_rank, by_id, embedded
    )


def _rows_in_place(
    rows: DenseRows | None,
    embedder: Embedder | None,
    text_of: Callable[[Skill], str],
    old: Sequence[Skill],
    new: Sequence[Skill],
    changed: Sequence[int],
    cache: EmbeddingCache | None,
) -> tuple[DenseRows | None, int]:
    """One vector space's rows with the changed positions whose text changed embedded
    again (only the blocks holding them are copied), and how many the model embedded."""
    old_texts = [text_of(old[i]) for i in changed]
    new_texts = [text_of(new[i]) for i in changed]
    if embedder is None or rows is None or new_texts == old_texts:
        return rows, 0
    fresh, embedded = embed_with_cache(embedder, new_texts, cache)
    return DenseRows.of(rows).replaced(changed, fresh), embedded


def _rows_shifted(
    rows: DenseRows | None,
    embedder: Embedder | None,
    text_of: Callable[[Skill], str],
    old: Sequence[Skill],
    new: Sequence[Skill],
    old_to_new: np.ndarray,
    fresh: Sequence[int],
    cache: EmbeddingCache | None,
) -> tuple[DenseRows | None, int]:
    """One vector space's rows moved to the new positions, the `fresh` ones computed."""
    if embedder is None or rows is None:
        return None, 0
    old_rows = DenseRows.of(rows)
    computed = np.zeros((0, old_rows.shape[1]), dtype=old_rows.dtype)
    embedded = 0
    if fresh:
        # Vectors of the skills that left or changed, by text: a moved or re-saved
        # description is not embedded again.
        known = {
            text_hash(text_of(old[int(i)])): old_rows[int(i)]
            for i in np.flatnonzero(old_to_new < 0)
        }
        computed, embedded = embed_with_cache(
            embedder, [text_of(new[i]) for i in fresh], cache, known
        )
    return old_rows.remapped(old_to_new, len(new), list(fresh), computed), embedded


def _correspondence(previous: Index, skills: Sequence[Skill]) -> tuple[np.ndarray, list[int]]:
    """`old_to_new[i]`: the new position of previous skill i when it is unchanged (-1 when
    it was removed or changed), and the new positions that need computing."""
    new_at = {skill.path: position for position, skill in enumerate(skills)}
    old_to_new = np.full(len(previous.skills), -1, dtype=np.int64)
    reused = np.zeros(len(skills), dtype=bool)
    for old_position, old in enumerate(previous.skills):
        position = new_at.get(old.path)
        if position is None:
            continue
        new = skills[position]
        if old is new or old == new:
            old_to_new[old_position] = position
            reused[position] = True
    return old_to_new, [int(i) for i in np.flatnonzero(~reused)]


def _remap_postings(
    table: Mapping[str, np.ndarray], old_to_new: np.ndarray, extra: dict[str, list[int]]
) -> dict[str, np.ndarray]:
    """A position table (§3.2 keywords, §3.5 ecosystem) with every position moved, dropped
    positions gone and `extra` merged in, each list ascending as a build makes it."""
    keys = list(table)
    out: dict[str, np.ndarray] = {}
    if keys:
        lengths = np.fromiter((len(table[key]) for key in keys), dtype=np.int64, count=len(keys))
        bounds = np.zeros(len(keys) + 1, dtype=np.int64)
        bounds[1:] = np.cumsum(lengths)
        moved = old_to_new[np.concatenate([np.asarray(table[key]) for key in keys])]
        dropped = np.zeros(len(keys), dtype=np.int64)
        nonempty = lengths > 0
        dropped[nonempty] = np.add.reduceat(moved < 0, bounds[:-1][nonempty])
        starts, ends, drops = bounds[:-1].tolist(), bounds[1:].tolist(), dropped.tolist()
        for key, start, end, drop in zip(keys, starts, ends, drops, strict=True):
            part = moved[start:end]
            if drop:
                part = part[part >= 0]
            more = extra.get(key)
            if more:
                part = np.sort(
                    np.concatenate([part, np.array(more, dtype=np.int64)]), kind="stable"
                )
            if len(part):
                out[key] = part
    for key, more in extra.items():
        if key not in out and key not in table:
            out[key] = np.array(sorted(more), dtype=np.int64)
    return out


def _patch_shifted(
    previous: Index,
    skills: Sequence[Skill],
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    timings: dict[str, float],
    started: float,
) -> _Tables:
    """Skills added or removed (and any changed): move the rest, compute only the new."""
    old_to_new, fresh = _correspondence(previous, skills)
    body_chars = previous.dense_body_chars
    vectors, embedded = _rows_shifted(
        previous.vectors,
        models.embedder,
        lambda skill: dense_text(skill, body_chars),
        previous.skills,
        skills,
        old_to_new,
        fresh,
        cache,
    )
    multilingual, _ = _rows_shifted(
        previous.multilingual,
        models.multilingual,
        multilingual_text,
        previous.skills,
        skills,
        old_to_new,
        fresh,
        cache,
    )
    embedded_at = time.perf_counter()
    timings["embed"] = (embedded_at - started) * 1000

    ids = [skill.id for skill in skills]
    lexical = previous.lexical.remapped(
        old_to_new,
        len(skills),
        {i: indexed_text_tokens(skills[i], config.bm25_index_name_keywords) for i in fresh},
        ids,
    )
    keyword_extra: dict[str, list[int]] = {}
    ecosystem_extra: dict[str, list[int]] = {}
    phrase_extra: dict[str, list[PhraseEntry]] = {}
    for position in fresh:
        skill = skills[position]
        for key in keyword_keys(skill):
            keyword_extra.setdefault(key, []).append(position)
        for token in ecosystem_keys(skill):
            ecosystem_extra.setdefault(token, []).append(position)
        for phrase in skill.trigger_phrases:
            tokens = phrase_tokens(phrase)
            phrase_extra.setdefault(tokens[0], []).append((position, tokens))
    keywords = _remap_postings(previous.keyword_postings, old_to_new, keyword_extra)
    ecosystem = _remap_postings(previous.ecosystem_postings, old_to_new, ecosystem_extra)
    phrases: dict[str, tuple[PhraseEntry, ...]] = {}
    for first in {*previous.phrase_table, *phrase_extra}:
        entries = [
            (int(old_to_new[position]), tokens)
            for position, tokens in previous.phrase_table.get(first, ())
            if old_to_new[position] >= 0
        ]
        entries += phrase_extra.get(first, [])
        entries.sort(key=lambda entry: entry[0])  # stable: a skill's phrases keep order
        if entries:
            phrases[first] = tuple(entries)
    id_rank = id_ranks(ids)
    positions = {skill_id: position for position, skill_id in enumerate(ids)}
    timings["lexical"] = (time.perf_counter() - embedded_at) * 1000
    return _Tables(
        vectors, multilingual, lexical, keywords, phrases, ecosystem, id_rank, positions, embedded
    )
