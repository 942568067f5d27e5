"""Finding and reading SKILL.md files: the roots, the walk, the reference's
line reader and YAML, skill bodies kept on disk.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Discovery": "skills",
    "Problem": "skills",
    "SKILL_FILE": "skills",
    "Skill": "skills",
    "default_roots": "roots",
    "discover": "skills",
    "resolve_roots": "roots",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.discovery.roots import default_roots as default_roots
    from explorer.engine.discovery.roots import resolve_roots as resolve_roots
    from explorer.engine.discovery.skills import SKILL_FILE as SKILL_FILE
    from explorer.engine.discovery.skills import Discovery as Discovery
    from explorer.engine.discovery.skills import Problem as Problem
    from explorer.engine.discovery.skills import Skill as Skill
    from explorer.engine.discovery.skills import discover as discover
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
