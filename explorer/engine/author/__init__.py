"""For a skill's author: lint, rewriting a description, what-if and compare,
the tuner, the collision map.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "COLLISION_WEIGHTS": "collisions",
    "Candidate": "tune",
    "Channel": "compare",
    "Collision": "collisions",
    "CollisionMap": "collisions",
    "Edit": "rewrite",
    "Effect": "tune",
    "Entry": "compare",
    "Finding": "lint",
    "Flip": "tune",
    "LintMemo": "lint",
    "Move": "compare",
    "NEAR_DUPLICATE_SHOWN": "lint",
    "NEAR_HYBRID": "collisions",
    "NEAR_P": "collisions",
    "Part": "tune",
    "RULES": "lint",
    "RankingDiff": "compare",
    "SEVERITIES": "lint",
    "SPLIT_SEED": "tune",
    "SaveError": "rewrite",
    "Standing": "whatif",
    "TuneCache": "tune",
    "Tally": "tune",
    "TuneResult": "tune",
    "WhatIf": "whatif",
    "WhatIfMemo": "whatif",
    "apply": "tune",
    "cases_for": "tune",
    "changed_on_disk": "rewrite",
    "is_about": "tune",
    "collision_map": "collisions",
    "edit_description": "rewrite",
    "has_errors": "lint",
    "ignoring": "lint",
    "lint_files": "lint",
    "patched_index": "whatif",
    "ranking_diff": "compare",
    "read_skill_text": "rewrite",
    "shortcomings": "tune",
    "remembering": "tune",
    "save": "rewrite",
    "split_cases": "tune",
    "typed_case": "tune",
    "unknown_rules": "lint",
    "what_if": "whatif",
    "with_cases": "whatif",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.author.collisions import COLLISION_WEIGHTS as COLLISION_WEIGHTS
    from explorer.engine.author.collisions import NEAR_HYBRID as NEAR_HYBRID
    from explorer.engine.author.collisions import NEAR_P as NEAR_P
    from explorer.engine.author.collisions import Collision as Collision
    from explorer.engine.author.collisions import CollisionMap as CollisionMap
    from explorer.engine.author.collisions import collision_map as collision_map
    from explorer.engine.author.compare import Channel as Channel
    from explorer.engine.author.compare import Entry as Entry
    from explorer.engine.author.compare import Move as Move
    from explorer.engine.author.compare import RankingDiff as RankingDiff
    from explorer.engine.author.compare import ranking_diff as ranking_diff
    from explorer.engine.author.lint import NEAR_DUPLICATE_SHOWN as NEAR_DUPLICATE_SHOWN
    from explorer.engine.author.lint import RULES as RULES
    from explorer.engine.author.lint import SEVERITIES as SEVERITIES
    from explorer.engine.author.lint import Finding as Finding
    from explorer.engine.author.lint import LintMemo as LintMemo
    from explorer.engine.author.lint import has_errors as has_errors
    from explorer.engine.author.lint import ignoring as ignoring
    from explorer.engine.author.lint import lint_files as lint_files
    from explorer.engine.author.lint import unknown_rules as unknown_rules
    from explorer.engine.author.rewrite import Edit as Edit
    from explorer.engine.author.rewrite import SaveError as SaveError
    from explorer.engine.author.rewrite import changed_on_disk as changed_on_disk
    from explorer.engine.author.rewrite import edit_description as edit_description
    from explorer.engine.author.rewrite import read_skill_text as read_skill_text
    from explorer.engine.author.rewrite import save as save
    from explorer.engine.author.tune import SPLIT_SEED as SPLIT_SEED
    from explorer.engine.author.tune import Candidate as Candidate
    from explorer.engine.author.tune import Effect as Effect
    from explorer.engine.author.tune import Flip as Flip
    from explorer.engine.author.tune import Part as Part
    from explorer.engine.author.tune import Tally as Tally
    from explorer.engine.author.tune import TuneCache as TuneCache
    from explorer.engine.author.tune import TuneResult as TuneResult
    from explorer.engine.author.tune import apply as apply
    from explorer.engine.author.tune import cases_for as cases_for
    from explorer.engine.author.tune import is_about as is_about
    from explorer.engine.author.tune import remembering as remembering
    from explorer.engine.author.tune import shortcomings as shortcomings
    from explorer.engine.author.tune import split_cases as split_cases
    from explorer.engine.author.tune import typed_case as typed_case
    from explorer.engine.author.whatif import Standing as Standing
    from explorer.engine.author.whatif import WhatIf as WhatIf
    from explorer.engine.author.whatif import WhatIfMemo as WhatIfMemo
    from explorer.engine.author.whatif import patched_index as patched_index
    from explorer.engine.author.whatif import what_if as what_if
    from explorer.engine.author.whatif import with_cases as with_cases
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
