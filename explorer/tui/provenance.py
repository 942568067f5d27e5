"""Where each config value in force comes from, for the F2 editor's labels.

A field the user never set is not always "the default": a `None` field follows the
preset (the §9 departures, and under `calibrated` the MiniLM knee), the dense model's
own §4 calibration, or the cross-encoder's §5.4 one. A field that is set came from a
config file layer or from `--set`, or was edited in F2. The editor used to call every
`None` field "(the model's)", which was wrong for `lexical_min` (the preset's 4.0) and
every other departure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from explorer.engine import Config
from explorer.engine.base import dense_model, toml_value
from explorer.engine.inference import ModelStatus
from explorer.engine.route import GUARD_KEYS, PRESETS, load_relevance_model, resolve
from explorer.tui.health import short_path

DEFAULTS = Config()
# The §9 departures a preset sets when the field is None (engine/route/presets.py); the
# cosine-valued ones (GUARD_KEYS) also depend on the dense model.
PRESET_FIELDS = frozenset(
    {
        "bm25_weight",
        "floor_log_slope",
        "keyword_generic_guard",
        "keyword_min_cosine",
        "lexical_min_cosine",
        "lexical_min",
        "lexical_margin",
    }
)
KNEE_FIELDS = frozenset({"min_similarity", "score_margin"})  # §4
RERANK_FIELDS = frozenset({"rerank_min", "rerank_margin"})  # §5.4


@dataclass(frozen=True)
class Source:
    """A field's value in force (as TOML text; "" when it cannot be known yet) and where
    it comes from, in words."""

    value: str
    label: str
    note: str = ""  # more than fits the list: the floor in force after the ln N rule


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else toml_value(value)


def layer_label(source: str, cwd: str | None = None) -> str:
    """A config layer as the status bar names it: `--set`, `./skill-explorer.toml`, `~/…`."""
    if source == "--set" or not source:
        return source
    return short_path(source, cwd)


def field_source(
    name: str,
    config: Config,
    *,
    baseline: Config | None = None,
    sources: Mapping[str, str] | None = None,
    status: ModelStatus | None = None,
    skills: int = 0,
) -> Source:
    """Where `config.<name>` comes from: "edited here" (differs from `baseline`, what the
    app started with), the layer in `sources` (field -> file path or "--set", from
    `load_config`), else, for a None field, the preset, the dense model's calibration or
    the reranker's (`status`, `skills`: the library in force), else "default"."""
    value = getattr(config, name)
    if baseline is not None and value != getattr(baseline, name):
        return Source(_text(value), "edited here")
    if sources and name in sources:
        return Source(_text(value), layer_label(sources[name]))
    if value is not None:
        return Source(_text(value), "default")
    preset = PRESETS[config.preset]
    if name == "model":
        return Source(dense_model(config), f"preset {preset.name!r}")
    if name == "relevance_threshold":
        relevance = load_relevance_model()
        tuning = resolve(config, status, max(skills, 1)) if status is not None else None
        off = tuning.relevance_off if tuning is not None else ""
        threshold = relevance.thresholds_for(max(skills, 1))[0]
        label = f"the model's for {skills:,} skills ({relevance.name})"
        return Source(_text(threshold), label, off)
    if name in GUARD_KEYS:
        # Cosine-valued: the preset's value for the dense model in force (§9.7.1).
        if status is None:
            return Source("", f"preset {preset.name!r}, per dense model (models loading)")
        tuning = resolve(config, status, max(skills, 1))
        origin = tuning.origin(name)
        short = origin.split(" ×")[0]  # "scaled from MiniLM's"; the factor goes in the note
        label = f"preset {preset.name!r}" + (f" ({short})" if short else "")
        return Source(_text(getattr(tuning, name)), label, origin if short != origin else "")
    if name in PRESET_FIELDS:
        if status is None:
            return Source(_text(getattr(preset, name)), f"preset {preset.name!r}")
        # Through resolve: under models the learned preset's relevance model cannot read,
        # its calibrated gates are in force (§9.12), with their values.
        tuning = resolve(config, status, max(skills, 1))
        return Source(_text(getattr(tuning, name)), f"preset {preset.name!r}", tuning.relevance_off)
    if name in RERANK_FIELDS:
        if status is None:
            return Source("", "the reranker's calibration (models loading)")
        tuning = resolve(config, status, max(skills, 1))
        model = status.reranker or "none loaded"
        return Source(_text(getattr(tuning, name)), f"the reranker's ({model})")
    if name in KNEE_FIELDS:
        if status is None:
            return Source("", "the model's calibration (models loading)")
        tuning = resolve(config, status, max(skills, 1))
        number = tuning.base_min_similarity if name == "min_similarity" else tuning.score_margin
        note = ""
        if name == "min_similarity" and tuning.min_similarity != number:
            note = f"the floor in force at {skills} skills: {tuning.min_similarity:.3f} (ln N rule)"
        if status.dense in preset.knees:
            return Source(_text(number), f"preset {preset.name!r} ({status.dense})", note)
        return Source(_text(number), f"the model's calibration ({status.dense})", note)
    return Source("", "default")
