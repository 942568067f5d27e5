"""The index store's skill records are encoded once (skills.record_fields), and the bytes
are the ones the store held when each record went through JSON twice (asdict, dumps,
loads, drop the body, dumps): a store written before loads, and one written now loads in
a reader that expects the old bytes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import (
    Skill,
    load_skill,
    skill_from_record,
    skill_record,
)
from explorer.engine.index.store import _Reader, open_index, store_path
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models

# Frontmatter that YAML gives types JSON lacks (a date), nesting, non-ASCII and a
# parse warning (a recovered invalid line): every path through the encoder.
RICH = """---
name: rich-skill
description: "Résumé tools: merge PDFs — and “quoted” text 🚀"
keywords: [pdf, résumé, merge]
created: 2024-05-01
metadata:
  tags: [a, b]
  nested: {depth: 2, when: 2023-01-02}
  score: 0.5
version: 3
---
# Rich

Body text that the store must not hold (the head of it is `body_head`).
"""
BROKEN = """---
name: broken-skill
description: first: second: third
---
Body.
"""


def _old_store_record(skill: Skill) -> str:
    """What save_store wrote before: the parse-cache record decoded and encoded again."""
    data = dataclasses.asdict(skill)
    data["warnings"] = [dataclasses.asdict(problem) for problem in skill.warnings]
    record = json.loads(json.dumps(data, default=str, ensure_ascii=False))
    record.pop("body", None)
    return json.dumps(record, ensure_ascii=False)


def _old_cache_record(skill: Skill) -> str:
    data = dataclasses.asdict(skill)
    data["warnings"] = [dataclasses.asdict(problem) for problem in skill.warnings]
    return json.dumps(data, default=str, ensure_ascii=False)


def _library(root: Path) -> list[Skill]:
    for name, text in (("rich-skill", RICH), ("broken-skill", BROKEN)):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(text, encoding="utf-8")
    skills = [load_skill(str(root / name / "SKILL.md")) for name in ("broken-skill", "rich-skill")]
    assert all(isinstance(skill, Skill) for skill in skills)
    return skills  # type: ignore[return-value]


def test_one_encoding_gives_the_bytes_of_the_double_round_trip(tmp_path: Path) -> None:
    skills = _library(tmp_path / "skills")
    broken, rich = skills
    assert broken.warnings and rich.frontmatter["metadata"]["nested"]["when"]  # the cases
    for skill in skills:
        assert skill_record(skill, body=False) == _old_store_record(skill)
        assert skill_record(skill) == _old_cache_record(skill)  # the parse cache's, too
        assert "body" not in json.loads(skill_record(skill, body=False))
        assert skill_from_record(skill_record(skill)) == skill


def test_the_store_holds_the_old_records_and_reads_them_back(tmp_path: Path) -> None:
    skills = _library(tmp_path / "skills")
    roots = [str(tmp_path / "skills")]
    config, models = Config(model="bow"), assemble_models(BowEmbedder())
    cache = EmbeddingCache(tmp_path / "cache")
    assert open_index(roots, config, models, cache).source != "store"  # built and written
    reader = _Reader(store_path(cache, roots, config))
    by_path = {skill.path: skill for skill in skills}
    stored = list(reader.records("records"))
    assert sorted(stored) == sorted(_old_store_record(skill) for skill in skills)
    opened = open_index(roots, config, models, cache)
    assert opened.source == "store"
    for skill in opened.index.skills:  # materialised from the records, bodies from the files
        assert skill == by_path[skill.path]
        assert skill.body == by_path[skill.path].body
        assert skill.frontmatter == json.loads(
            json.dumps(by_path[skill.path].frontmatter, default=str)
        )
