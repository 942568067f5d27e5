"""Helpers for the differential parity tests.

Each test states one behaviour of the reference router (skill-inject 0.9.0) as read
from its source, and names the file it was read from. The reference is AGPL: these are
restatements of behaviour, never copies of its code or its test corpora.
"""

from __future__ import annotations

from pathlib import Path

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.route.decision import Decision, Row
from explorer.engine.route.pipeline import decide

# Parity is with the reference's cascade: its preset, unless a test passes its own config.
REFERENCE = Config(preset="reference")


def write_raw(root: Path, directory: str, text: str) -> Path:
    """A SKILL.md with exactly this text (no quoting help), for reader edge cases."""
    folder = root / directory
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


def bow_library(root: Path, skills: dict[str, str], config: Config | None = None) -> Index:
    """Index raw SKILL.md texts (directory -> text) on the offline bag-of-words lane."""
    for directory, text in skills.items():
        write_raw(root, directory, text)
    return build_index([root], config or REFERENCE, assemble_models(BowEmbedder()))


def route(prompt: str, index: Index, config: Config | None = None, **kwargs: object) -> Decision:
    return decide(prompt, index, config or REFERENCE, **kwargs)  # type: ignore[arg-type]


def row(decision: Decision, skill_id: str) -> Row:
    return decision.row(skill_id)
