"""decide(), the one cascade, and what it reads and returns: presets and the
thresholds resolver, the relevance model, the channels' matches, the Decision and its
reasons.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "CLAUSE_SHOWN": "reasons",
    "FEATURE_LABELS": "relevance",
    "GUARD_KEYS": "presets",
    "Gate": "decision",
    "GateName": "decision",
    "InjectionMode": "decision",
    "LOGIT": "reasons",
    "PROBABILITY": "reasons",
    "Match": "matches",
    "MatchKind": "matches",
    "PRESETS": "presets",
    "PROMPT_READ_CHARS": "query",
    "Reason": "reasons",
    "Row": "decision",
    "Rows": "decision",
    "RowsById": "decision",
    "Session": "session",
    "Stage": "decision",
    "bar_text": "reasons",
    "excluded_query_terms": "relevance",
    "json_default": "decision",
    "load_relevance_model": "relevance",
    "missing_query_terms": "relevance",
    "p_text": "reasons",
    "prompt_read": "query",
    "reason": "reasons",
    "room_text": "reasons",
    "resolve": "presets",
    "shown_against": "reasons",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.route.decision import Gate as Gate
    from explorer.engine.route.decision import GateName as GateName
    from explorer.engine.route.decision import InjectionMode as InjectionMode
    from explorer.engine.route.decision import Row as Row
    from explorer.engine.route.decision import Rows as Rows
    from explorer.engine.route.decision import RowsById as RowsById
    from explorer.engine.route.decision import Stage as Stage
    from explorer.engine.route.decision import json_default as json_default
    from explorer.engine.route.matches import Match as Match
    from explorer.engine.route.matches import MatchKind as MatchKind
    from explorer.engine.route.presets import GUARD_KEYS as GUARD_KEYS
    from explorer.engine.route.presets import PRESETS as PRESETS
    from explorer.engine.route.presets import resolve as resolve
    from explorer.engine.route.query import PROMPT_READ_CHARS as PROMPT_READ_CHARS
    from explorer.engine.route.query import prompt_read as prompt_read
    from explorer.engine.route.reasons import CLAUSE_SHOWN as CLAUSE_SHOWN
    from explorer.engine.route.reasons import LOGIT as LOGIT
    from explorer.engine.route.reasons import PROBABILITY as PROBABILITY
    from explorer.engine.route.reasons import Reason as Reason
    from explorer.engine.route.reasons import bar_text as bar_text
    from explorer.engine.route.reasons import p_text as p_text
    from explorer.engine.route.reasons import reason as reason
    from explorer.engine.route.reasons import room_text as room_text
    from explorer.engine.route.reasons import shown_against as shown_against
    from explorer.engine.route.relevance import FEATURE_LABELS as FEATURE_LABELS
    from explorer.engine.route.relevance import excluded_query_terms as excluded_query_terms
    from explorer.engine.route.relevance import load_relevance_model as load_relevance_model
    from explorer.engine.route.relevance import missing_query_terms as missing_query_terms
    from explorer.engine.route.session import Session as Session
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
