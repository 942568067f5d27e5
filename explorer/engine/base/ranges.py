"""The values each numeric config field can sensibly take, and a message when it cannot.

The second half of config.coerce, after the type: a value of the right type that the
cascade cannot use (`bm25_b = 5`, `max_skills = 0`, NaN or infinity anywhere). coerce is
the one check every value passes, from a config file, `--set` or the explorer's editor,
so each refuses the same values with the same message. The reference's own config.toml
is read as it reads it, leniently: an unusable number there keeps the default, with a
warning (config.read_ski_config).
"""

from __future__ import annotations

import math
from typing import Any

INF = math.inf

# field -> (lowest, highest), both inclusive.
RANGES: dict[str, tuple[float, float]] = {
    "min_similarity": (-1.0, 2.0),
    "score_margin": (0.0, 2.0),
    "high_conf": (0.0, INF),
    "clear_gap": (0.0, INF),
    "lexical_min": (0.0, INF),
    "lexical_margin": (0.0, INF),
    "recall_floor": (-1.0, INF),
    "rerank_top_k": (0, 1000),  # 0: no candidates, the cosine stage decides
    "rerank_min": (-INF, INF),
    "rerank_margin": (0.0, INF),
    "keyword_boost": (0.0, 10.0),
    "phrase_boost": (0.0, 10.0),
    "file_boost": (0.0, 10.0),
    "project_boost": (0.0, 10.0),
    "max_skills": (1, 100),
    "char_budget": (200, 1_000_000),
    "body_inject_min": (0.0, 1.0),
    "relevance_threshold": (0.0, 1.0),
    "bm25_k1": (0.0, 10.0),
    "bm25_b": (0.0, 1.0),
    "bm25_weight": (0.0, 10.0),
    "floor_log_slope": (-1.0, 1.0),
    "keyword_min_cosine": (-1.0, 1.0),
    "lexical_min_cosine": (-1.0, 1.0),
    "dense_body_chars": (0, 600),  # body_head holds at most 600 characters (§1.4)
    "max_length": (8, 8192),
    "watch_debounce_ms": (0.0, 60_000.0),
    "watch_max_delay_ms": (0.0, 600_000.0),
    "hook_budget_ms": (0.0, 600_000.0),  # 0: a new description is never embedded in a hook
    "context_depth": (0, 1000),  # the session's recent prompts read; 0 reads none
}


def range_error(name: str, value: Any) -> str | None:
    """Why `value` is out of range for `name` (naming the range), or None when it is usable."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):  # every field, ranged or not
        return f"{name} = {value} is not a finite number"
    bounds = RANGES.get(name)
    if bounds is None:
        return None
    low, high = bounds
    if low <= value <= high:
        return None
    shown = _show(value)  # 700000, not 700000.0, for a whole number typed into a float field
    if high == INF:
        return f"{name} = {shown} is out of range: at least {_show(low)}"
    if low == -INF:
        return f"{name} = {shown} is out of range: at most {_show(high)}"
    return f"{name} = {shown} is out of range: {_show(low)} to {_show(high)}"


def _show(number: float) -> str:
    """A whole number without its ".0", a huge one in exponent form (1e+300)."""
    if float(number).is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:g}" if abs(number) >= 1e15 else str(number)
