"""The project channel (spec §3.5): the working directory's ecosystem lifts its skills.

As the reference router does it (skill-inject 0.9.0, src/context.rs and src/rank.rs):
manifest files in the working directory and up to five of its ancestors (`uv.lock`,
`Cargo.toml`, ...) and code files named in the prompt or recent turns (`etl.py`) give
ecosystem terms, most specific first. A skill matches the first term found among its
keywords' tokens or its description's match tokens. A matching skill gets
`project_boost` (0.15) when its own cosine is at least `min_similarity - 0.06`: an ambient
signal may lift a near-floor skill over the line, never rescue an unrelated one.

Written from the behaviour only; the reference's code is AGPL and is not copied.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from explorer.engine.base.text import norm_token

PROJECT_GATE_SLACK = 0.06  # the boost needs cosine >= min_similarity - this
PROJECT_WALK_LEVELS = 6  # the working directory and five ancestors

# Manifest file -> ecosystem terms, most specific first (a uv.lock says "uv" before
# "python"). Checked in this order in each directory.
MANIFEST_TERMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Cargo.toml", ("rust", "cargo")),
    ("go.mod", ("go", "golang")),
    ("uv.lock", ("uv", "python")),
    ("pyproject.toml", ("python",)),
    ("requirements.txt", ("python", "pip")),
    ("setup.py", ("python",)),
    ("Pipfile", ("python",)),
    ("package.json", ("javascript", "node", "npm")),
    ("tsconfig.json", ("typescript",)),
    ("Gemfile", ("ruby",)),
    ("pom.xml", ("java", "maven")),
    ("build.gradle", ("java", "gradle")),
    ("build.gradle.kts", ("kotlin", "gradle")),
    ("Dockerfile", ("docker",)),
    ("docker-compose.yml", ("docker",)),
    ("compose.yaml", ("docker",)),
    ("flake.nix", ("nix",)),
    ("CMakeLists.txt", ("cmake",)),
)

# Code-file extension -> ecosystem terms (document formats belong to the file channel).
CODE_EXTENSION_TERMS: dict[str, tuple[str, ...]] = {
    "py": ("python",),
    "ipynb": ("python", "jupyter", "notebook"),
    "rs": ("rust",),
    "go": ("go", "golang"),
    "ts": ("typescript",),
    "tsx": ("typescript",),
    "js": ("javascript", "node"),
    "jsx": ("javascript", "node"),
    "mjs": ("javascript", "node"),
    "rb": ("ruby",),
    "java": ("java",),
    "kt": ("kotlin",),
    "tf": ("terraform",),
    "sql": ("sql",),
    "sh": ("shell", "bash"),
    "bash": ("shell", "bash"),
}


def manifest_terms(cwd: str | os.PathLike[str] | None) -> list[str]:
    """Terms of the manifests in `cwd` and its ancestors (six levels), de-duplicated."""
    terms: list[str] = []
    if not cwd:
        return terms
    directory = os.path.abspath(os.fspath(cwd))
    for _ in range(PROJECT_WALK_LEVELS):
        for manifest, implied in MANIFEST_TERMS:
            if os.path.exists(os.path.join(directory, manifest)):
                terms.extend(term for term in implied if term not in terms)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return terms


def code_terms(extensions: Sequence[str]) -> list[str]:
    """Terms of the code files named (their extensions, in order of mention)."""
    terms: list[str] = []
    for extension in extensions:
        for term in CODE_EXTENSION_TERMS.get(extension, ()):
            if term not in terms:
                terms.append(term)
    return terms


def skills_for_terms(terms: Sequence[str], postings: Mapping[str, np.ndarray]) -> dict[int, str]:
    """Skill position -> the first term (in `terms` order) among its ecosystem tokens."""
    matched: dict[int, str] = {}
    for term in dict.fromkeys(norm_token(term) for term in terms):
        for position in postings.get(term, ()):
            matched.setdefault(int(position), term)
    return matched
