"""Measuring routing: labelled cases, evaluation, calibration sweeps (one library,
several, the reranker's gate), benchmark libraries, quality pins, why cases flipped.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Budget": "multical",
    "CalibrationReport": "calibrate",
    "Case": "cases",
    "CaseError": "cases",
    "CaseResult": "evaluate",
    "CaseSet": "cases",
    "Comparison": "evaluate",
    "DEFAULT_MANIFEST": "libraries",
    "EvalReport": "evaluate",
    "FIR_BUDGET": "multical",
    "Flip": "evaluate",
    "FlipCause": "flips",
    "HOST_VALUE_PENALTY": "evaluate",
    "LibraryError": "libraries",
    "LibrarySpec": "libraries",
    "MultiCalibration": "multical",
    "NEAR_MISS_BUDGET": "multical",
    "OBSERVE_ONLY": "cases",
    "Rates": "evaluate",
    "RerankerCalibration": "rerankcal",
    "Shift": "flips",
    "by_library": "quality",
    "calibrate_libraries": "multical",
    "calibrate_reranker": "rerankcal",
    "compare": "evaluate",
    "flip_causes": "flips",
    "library_roots": "libraries",
    "materialise_jsonl": "libraries",
    "load_cases": "cases",
    "memoised": "calibrate",
    "missing_skill_warnings": "evaluate",
    "open_libraries": "libraries",
    "own_trigger_evals": "cases",
    "parse_library_arg": "libraries",
    "passes": "evaluate",
    "quality_dict": "quality",
    "read_baseline": "quality",
    "read_manifest": "libraries",
    "regressions": "quality",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.qa.calibrate import CalibrationReport as CalibrationReport
    from explorer.engine.qa.calibrate import memoised as memoised
    from explorer.engine.qa.cases import OBSERVE_ONLY as OBSERVE_ONLY
    from explorer.engine.qa.cases import Case as Case
    from explorer.engine.qa.cases import CaseError as CaseError
    from explorer.engine.qa.cases import CaseSet as CaseSet
    from explorer.engine.qa.cases import load_cases as load_cases
    from explorer.engine.qa.cases import own_trigger_evals as own_trigger_evals
    from explorer.engine.qa.evaluate import HOST_VALUE_PENALTY as HOST_VALUE_PENALTY
    from explorer.engine.qa.evaluate import CaseResult as CaseResult
    from explorer.engine.qa.evaluate import Comparison as Comparison
    from explorer.engine.qa.evaluate import EvalReport as EvalReport
    from explorer.engine.qa.evaluate import Flip as Flip
    from explorer.engine.qa.evaluate import Rates as Rates
    from explorer.engine.qa.evaluate import compare as compare
    from explorer.engine.qa.evaluate import missing_skill_warnings as missing_skill_warnings
    from explorer.engine.qa.evaluate import passes as passes
    from explorer.engine.qa.flips import FlipCause as FlipCause
    from explorer.engine.qa.flips import Shift as Shift
    from explorer.engine.qa.flips import flip_causes as flip_causes
    from explorer.engine.qa.libraries import DEFAULT_MANIFEST as DEFAULT_MANIFEST
    from explorer.engine.qa.libraries import LibraryError as LibraryError
    from explorer.engine.qa.libraries import LibrarySpec as LibrarySpec
    from explorer.engine.qa.libraries import library_roots as library_roots
    from explorer.engine.qa.libraries import materialise_jsonl as materialise_jsonl
    from explorer.engine.qa.libraries import open_libraries as open_libraries
    from explorer.engine.qa.libraries import parse_library_arg as parse_library_arg
    from explorer.engine.qa.libraries import read_manifest as read_manifest
    from explorer.engine.qa.multical import FIR_BUDGET as FIR_BUDGET
    from explorer.engine.qa.multical import NEAR_MISS_BUDGET as NEAR_MISS_BUDGET
    from explorer.engine.qa.multical import Budget as Budget
    from explorer.engine.qa.multical import MultiCalibration as MultiCalibration
    from explorer.engine.qa.multical import calibrate_libraries as calibrate_libraries
    from explorer.engine.qa.quality import by_library as by_library
    from explorer.engine.qa.quality import quality_dict as quality_dict
    from explorer.engine.qa.quality import read_baseline as read_baseline
    from explorer.engine.qa.quality import regressions as regressions
    from explorer.engine.qa.rerankcal import RerankerCalibration as RerankerCalibration
    from explorer.engine.qa.rerankcal import calibrate_reranker as calibrate_reranker
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
