"""Incremental re-indexing: a save re-embeds one skill and patches the index around it.

A full `index_skills` re-tokenises and re-sorts every posting of the library, hashes
every description and rebuilds every table: 2-3 s at 26,000 skills, for one edited file.
When a re-index changes skills in place (the same paths in the same order: an editor's
save, a `git checkout` of existing files), this instead

* embeds only the descriptions that changed (through the cache),
* copies the vector matrix once and overwrites the changed rows,
* patches BM25 (`LexicalIndex.patched`: postings of the changed documents out and in,
  then dl, avgdl and every weight recomputed, vectorised),
* patches the keyword, trigger-phrase and ecosystem tables for the changed skills only,

and returns a new immutable Index, which the live index swaps in as before. Scores are
bit-identical to a full rebuild's (tests compare after random edits). Added or removed
skills shift every position after them, so those re-indexes still build in full.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from explorer.engine.cache import EmbeddingCache, embed_with_cache
from explorer.engine.config import Config
from explorer.engine.lexical import indexed_text_tokens
from explorer.engine.models import Models
from explorer.engine.skills import Discovery, Skill
from explorer.engine.snapshot import Index, ecosystem_keys, keyword_keys, phrase_tokens


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
        if old != new or old.stale != new.stale:
            changed.append(position)
    return changed


def patch_index(
    previous: Index,
    found: Discovery,
    config: Config,
    models: Models,
    cache: EmbeddingCache | None,
    *,
    version: int,
) -> Index | None:
    """`previous` with the changed skills of `found` patched in; None when it cannot be."""
    started = time.perf_counter()
    skills = found.skills
    changed = changed_positions(previous, skills)
    if changed is None or not hasattr(previous.lexical, "patched"):
        return None
    try:
        timings: dict[str, float] = {}
        vectors = previous.vectors
        embedded = 0
        old_texts = [previous.skills[i].description for i in changed]
        new_texts = [skills[i].description for i in changed]
        if models.embedder is not None and vectors is not None and new_texts != old_texts:
            fresh, embedded = embed_with_cache(models.embedder, new_texts, cache)
            vectors = vectors.copy()
            vectors[changed] = fresh
        embedded_at = time.perf_counter()
        timings["embed"] = (embedded_at - started) * 1000

        lexical = previous.lexical
        tokens = {
            i: indexed_text_tokens(skills[i], config.bm25_index_name_keywords) for i in changed
        }
        old_tokens = {
            i: indexed_text_tokens(previous.skills[i], config.bm25_index_name_keywords)
            for i in changed
        }
        if tokens != old_tokens:
            lexical = lexical.patched(tokens)
        ids = [skill.id for skill in skills]
        renamed = any(previous.skills[i].id != skills[i].id for i in changed)
        if renamed:
            lexical = lexical.with_ids(ids)

        keyword_postings = dict(previous.keyword_postings)
        old_keys = {i: keyword_keys(previous.skills[i]) for i in changed}
        new_keys = {i: keyword_keys(skills[i]) for i in changed}
        changed_set = set(changed)
        for key in {k for keys in (*old_keys.values(), *new_keys.values()) for k in keys}:
            positions = [int(p) for p in keyword_postings.get(key, ()) if int(p) not in changed_set]
            positions += [i for i in changed for k in new_keys[i] if k == key]
            if positions:
                keyword_postings[key] = np.array(sorted(positions), dtype=np.int64)
            else:
                keyword_postings.pop(key, None)

        ecosystem_postings = dict(previous.ecosystem_postings)
        old_tokens_eco = {i: ecosystem_keys(previous.skills[i]) for i in changed}
        new_tokens_eco = {i: ecosystem_keys(skills[i]) for i in changed}
        for token in {
            t for keys in (*old_tokens_eco.values(), *new_tokens_eco.values()) for t in keys
        }:
            positions = [
                int(p) for p in ecosystem_postings.get(token, ()) if int(p) not in changed_set
            ]
            positions += [i for i in changed if token in new_tokens_eco[i]]
            if positions:
                ecosystem_postings[token] = np.array(sorted(positions), dtype=np.int64)
            else:
                ecosystem_postings.pop(token, None)

        phrase_table = dict(previous.phrase_table)
        firsts: set[str] = set()
        new_entries: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for i in changed:
            for phrase in previous.skills[i].trigger_phrases:
                firsts.add(phrase_tokens(phrase)[0])
            for phrase in skills[i].trigger_phrases:
                words = phrase_tokens(phrase)
                firsts.add(words[0])
                new_entries.setdefault(words[0], []).append((i, words))
        for first in firsts:
            entries = [e for e in phrase_table.get(first, ()) if e[0] not in changed_set]
            entries += new_entries.get(first, [])
            entries.sort(key=lambda entry: entry[0])  # stable: a skill's phrases keep order
            if entries:
                phrase_table[first] = tuple(entries)
            else:
                phrase_table.pop(first, None)

        id_rank, by_id = previous.id_rank, previous.positions
        if renamed:
            id_rank = np.empty(len(ids), dtype=np.int64)
            id_rank[np.argsort(np.array(ids, dtype=object), kind="stable")] = np.arange(len(ids))
            by_id = {skill_id: position for position, skill_id in enumerate(ids)}
        timings["lexical"] = (time.perf_counter() - embedded_at) * 1000
    except ValueError:
        return None
    return dataclasses.replace(
        previous,
        skills=skills,
        rejected=found.rejected,
        vectors=vectors,
        lexical=lexical,
        keyword_postings=keyword_postings,
        phrase_table=phrase_table,
        ecosystem_postings=ecosystem_postings,
        id_rank=id_rank,
        positions=by_id,
        paths=tuple(skill.path for skill in skills),
        version=version,
        built_at=time.time(),
        timings_ms=timings,
        embedded=embedded,
    )
