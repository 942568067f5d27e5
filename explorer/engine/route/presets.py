"""Named presets, and `resolve`: the one place every effective threshold is worked out.

`resolve(config, status, n)` gives the `Tuning` one decision runs with: the floor and margin
(§4), the §9 departures, the cosine guards for this dense model and the agreement gate's
values for this reranker (§5.4). decide(), `why`, `doctor`, lint, calibration and the
explorer's F2 editor all read it, so none of them works a threshold out on its own.

The reference (spec §3-§5) scores a skill by cosine + keyword + phrase + file and lets
BM25 act only as a fast path. Measured on real libraries, its gates throw away most of
the right skills that stage 1 already ranks first, and its name-token keyword boost is
behind most false injections. The departures that fix this are §9 extensions, each a
config option whose value `None` means "the preset's value":

* `bm25_weight`: adds `bm25_weight * bm25_norm` (BM25 ÷ Σ idf of the query terms, so a
  perfect match and no match stay apart whatever the library) to the hybrid score.
* `floor_log_slope`: the cosine stage's floor grows with the library's size N as
  `min_similarity + floor_log_slope * ln(N / FLOOR_REFERENCE_N)`: the best unrelated
  skill of a bigger library scores higher by chance alone.
* `keyword_generic_guard`: keyword matches on stopwords and generic words ("you", "set",
  "what") earn no keyword boost.
* `keyword_min_cosine`: a keyword boost needs this cosine (0 = no floor).
* `lexical_min_cosine`: the lexical fast path's winner needs this cosine (0 = no floor).
* `lexical_min`, `lexical_margin`: the §5.2 fast path itself (the reference: 0 = off).

Three of these are cosines (`keyword_min_cosine`, `lexical_min_cosine`) or cosines per
e-fold of library size (`floor_log_slope`), and a cosine means something only for the dense
model it was measured with: 0.6 is "close in meaning" for MiniLM and unremarkable for bge.
So a preset holds them per dense model (`Preset.guards`), as it holds its knees, and
`resolve_guards` says what another model gets (docs/routing.md, "§9.7.1 Guards per dense
model").

`preset = "reference"` sets every departure to the reference's behaviour, so its
decisions are the reference's. The values of the other presets come from
`skill-explorer calibrate` over the benchmark libraries' train splits
(docs/calibration.md); a value pinned in a config file or with --set always wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from explorer.engine.base.config import PRESET_NAMES, Config
from explorer.engine.base.text import STOPWORDS
from explorer.engine.inference.models import (
    CALIBRATION,
    MINILM,
    PACKAGED_ENCODER,
    Calibration,
    ModelStatus,
    RerankCalibration,
)
from explorer.engine.inference.rerank import AGREEMENT_SLACK

REFERENCE = "reference"
CALIBRATED = "calibrated"
LEARNED = "learned"
FLOOR_REFERENCE_N = 200  # the library size at which a preset's floor is quoted

# Words that say nothing about which skill is meant, so a skill name made of them must not
# pull a prompt in by keyword: question words, fillers and verbs any request may carry.
# Domain words never belong here ("test", "review", "deploy", "chart" name real tasks).
GENERIC_WORDS: frozenset[str] = frozenset(
    (
        "what how which who whom whose why where there here than then before after about "
        "all any some each every more most much many very just also only like get got "
        "make made set put take let go going run new one two first last next best good "
        "help helper need needs find show give keep start stop try see look know think "
        "thing things way something anything everything please thanks now today tell "
        "am been being has have had would should could may might must shall"
    ).split()
)


def generic_word(token: str) -> bool:
    """True for a token that cannot identify a skill: a §2.2 stopword or a GENERIC_WORDS one."""
    return token in STOPWORDS or token in GENERIC_WORDS


GUARD_KEYS = ("keyword_min_cosine", "lexical_min_cosine", "floor_log_slope")
# How a model is named where a guard value says whose it is: "(MiniLM's)".
MODEL_LABELS = {MINILM: "MiniLM", PACKAGED_ENCODER: "the skill encoder"}


def model_label(name: str) -> str:
    return MODEL_LABELS.get(name, name)


@dataclass(frozen=True)
class Guards:
    """The departures valued in one dense model's cosines (GUARD_KEYS); 0 = off."""

    keyword_min_cosine: float = 0.0
    lexical_min_cosine: float = 0.0
    floor_log_slope: float = 0.0  # cosine per e-fold of library size

    def scaled(self, ratio: float) -> Guards:
        # A cosine threshold cannot exceed 1; past it the guard would remove everything.
        return Guards(
            min(self.keyword_min_cosine * ratio, 1.0),
            min(self.lexical_min_cosine * ratio, 1.0),
            self.floor_log_slope * ratio,
        )


NO_GUARDS = Guards()


@dataclass(frozen=True)
class Preset:
    """The values a preset gives the departures, and its own knees and guards per dense
    model."""

    name: str
    summary: str
    bm25_weight: float = 0.0
    keyword_generic_guard: bool = False
    lexical_min: float = 0.0  # §5.2 fast path: 0 = off
    lexical_margin: float = 0.0
    # The library sizes the floor rule was measured on: outside them the rule is not
    # extrapolated, N is clamped into the range (docs/routing.md, "§9.6 A floor that
    # follows the library's size").
    floor_sizes: tuple[int, int] = (1, 1_000_000)
    # dense model name -> (min_similarity, score_margin) measured under this preset; a model
    # not listed keeps its own reference knee (models.CALIBRATION), said in the source.
    knees: dict[str, Calibration] = field(default_factory=dict)
    # dense model name -> the cosine-valued departures calibrated with it. The first entry
    # is the one other models' values are scaled from (resolve_guards); empty: none at all.
    guards: dict[str, Guards] = field(default_factory=dict)
    # §9.12: the relevance model decides over every channel instead of the §5.1-§5.5 gates.
    relevance: bool = False


PRESETS: dict[str, Preset] = {
    REFERENCE: Preset(
        REFERENCE,
        "the reference's cascade (skill-inject 0.9.0): cosine + keyword + phrase + file, "
        "BM25 only as a fast path, a constant floor, no guards",
    ),
    # The default. Chosen by `skill-explorer calibrate --manifest benchmarks/libraries.toml`
    # on the train splits of four real libraries (130 to 2,018 skills) together, within 5 %
    # false injections on plain negatives and 30 % on near-misses (docs/routing.md, "§9.9
    # Calibration over real libraries"; docs/calibration.md). What it changes: the
    # lexical fast path is on (BM25 >= 4, ahead of the runner-up by 2) but only for a
    # winner whose cosine is >= 0.2; a name-token keyword boost counts only at a cosine
    # >= 0.6; and the cosine stage's floor is 0.44 at 200 skills, + 0.06 per e-fold of
    # library size. The fused BM25 channel raises top-1 but not recall within the budget,
    # so it stays an option (documented with its figures).
    CALIBRATED: Preset(
        CALIBRATED,
        "the reference's channels with the lexical fast path on behind a cosine guard, the "
        "keyword boost only for prompts already close in meaning, and a floor calibrated on "
        "real libraries that rises with ln N",
        floor_sizes=(130, 2018),  # the benchmark libraries' sizes
        lexical_min=4.0,
        lexical_margin=2.0,
        knees={
            "minilm": Calibration(
                0.44,
                0.12,
                "calibrated on the benchmark libraries' train splits (docs/calibration.md)",
            ),
        },
        # In MiniLM's cosines: calibrated with it, together with its knee above.
        guards={
            "minilm": Guards(keyword_min_cosine=0.6, lexical_min_cosine=0.2, floor_log_slope=0.06),
        },
    ),
    # §9.12: no channel decides alone. Every channel (cosine, BM25, keywords, phrases, files,
    # the reranker's logit, exclusions and negations, other scripts) is a feature of one
    # relevance model trained and chosen leave-library-out (docs/quality.md); the hybrid
    # score only orders the candidates it reads. The fast path and the keyword cosine guard
    # are off: the model weighs the same evidence with the rest.
    LEARNED: Preset(
        LEARNED,
        "one relevance model over every channel (cosine, BM25, keywords, the reranker's "
        "logit, exclusions, negations), trained and chosen on libraries it never saw",
        keyword_generic_guard=True,
        relevance=True,
        knees={
            "minilm": Calibration(
                0.44, 0.12, "calibrated on the benchmark libraries' train splits (README)"
            ),
            # Not measured for this model: the relevance model decides, and the knee reaches
            # its features only through the project channel's gate (§3.5), with which the
            # model was fitted; the §5 gates read it when that model steps aside.
            PACKAGED_ENCODER: Calibration(
                0.44, 0.12, "MiniLM's calibrated knee, kept for the skill encoder (§9.15)"
            ),
        },
    ),
}
assert tuple(PRESETS) == PRESET_NAMES


@dataclass(frozen=True)
class Tuning:
    """The effective values one decision runs with: preset, pinned values and library size."""

    preset: str
    min_similarity: float  # the floor in force for this library (after the ln N rule)
    score_margin: float
    base_min_similarity: float  # the floor quoted at N = FLOOR_REFERENCE_N
    floor_log_slope: float
    floor_n: int  # the library size the floor rule used: N, clamped to the preset's sizes
    bm25_weight: float
    keyword_generic_guard: bool
    keyword_min_cosine: float
    lexical_min_cosine: float
    lexical_min: float
    lexical_margin: float
    source: str  # where the floor and margin came from, for `why`
    # GUARD_KEYS -> where its value came from ("MiniLM's", "scaled from MiniLM's ...",
    # "off: ...", "pinned"); "" when the preset has no such guard (the reference).
    origins: dict[str, str] = field(default_factory=dict)
    relevance: bool = False  # §9.12: the relevance model decides
    relevance_off: str = ""  # §9.12: why the learned preset's model does not (its gates do)
    # §5.3-§5.4 with this reranker: a pinned value wins, else the reranker's own gate.
    recall_floor: float = 0.5  # lowered to the reranker's own floor where it has one (§9)
    rerank_min: float = 0.0
    rerank_margin: float = 0.0
    rerank_source: str = ""  # where the gate's values came from, for the trace
    rerank_floor: float | None = None  # the reranker's own eligibility floor; None: §5.4's
    fast_path_off: str = ""  # why the reranker turns the §5.2 fast path off ("": it does not)

    def origin(self, key: str) -> str:
        return self.origins.get(key, "")

    @property
    def agreement_floor(self) -> float:
        """§5.4: the hybrid score a candidate needs for the reranker to judge it: the
        reranker's own floor, else `min_similarity - 0.03`."""
        if self.rerank_floor is None:
            return self.min_similarity - AGREEMENT_SLACK
        return self.rerank_floor

    def as_dict(self) -> dict[str, float | bool | str]:
        return {
            "preset": self.preset,
            "min_similarity": self.min_similarity,
            "score_margin": self.score_margin,
            "base_min_similarity": self.base_min_similarity,
            "floor_log_slope": self.floor_log_slope,
            "floor_n": self.floor_n,
            "bm25_weight": self.bm25_weight,
            "keyword_generic_guard": self.keyword_generic_guard,
            "keyword_min_cosine": self.keyword_min_cosine,
            "lexical_min_cosine": self.lexical_min_cosine,
            "lexical_min": self.lexical_min,
            "lexical_margin": self.lexical_margin,
            "relevance": self.relevance,
            "relevance_off": self.relevance_off,
            **{f"{key}_from": origin for key, origin in self.origins.items() if origin},
        }


def clamp_size(n: int, sizes: tuple[int, int] = (1, 1_000_000)) -> int:
    low, high = sizes
    return min(max(n, low, 1), high)


def floor_for(base: float, slope: float, n: int, sizes: tuple[int, int] = (1, 1_000_000)) -> float:
    """The floor rule: `base + slope * ln(N / FLOOR_REFERENCE_N)` with N clamped into
    `sizes`, the library sizes the rule was measured on; slope 0 is a constant."""
    if slope == 0.0:
        return base
    return base + slope * math.log(clamp_size(n, sizes) / FLOOR_REFERENCE_N)


def _pick(value: float | bool | None, default: float | bool) -> float | bool:
    return default if value is None else value


def resolve_guards(preset: Preset, status: ModelStatus) -> tuple[Guards, str]:
    """The cosine-valued departures for this dense model, and where they came from.

    A guard value is a point on one model's cosine scale. The packaged MiniLM's were
    calibrated with it; under another model the same number sits somewhere else in that
    model's distribution (under the bag-of-words lane a cosine of 0.6 means the prompt
    repeats the description, so "keyword needs cos ≥ 0.6" silently turned keywords off).
    So, in order:

    * the model has values of its own in the preset: those;
    * the model's knee (§4, its floor in this preset or its own) was chosen for it: the
      anchor model's values scaled by knee / anchor's knee. The knee is the one place where
      both models are known to mean the same thing ("relevance starts here"), and cosine 0
      (orthogonal) means the same in every model, so the map through those two points is a
      proportion; it keeps each guard where it sat relative to the floor it was calibrated
      with. Measured on the bag-of-words lane (docs/models.md, "Guards per dense model"), it falls
      between MiniLM's raw values (which throttle bow's recall) and no guards at all (which
      raise its false injections most);
    * the knee is borrowed (the reference's models without a knee of their own, a user's own
      ONNX model) or there is no dense model: off, the reference's behaviour for these three
      values. A ratio to a borrowed knee says nothing about the model's scale, and a cosine
      guard over an absent cosine channel would remove every keyword and fast path.

    A value pinned in a config file or with --set always wins (`resolve`).
    """
    if not preset.guards:
        return NO_GUARDS, ""
    own = preset.guards.get(status.dense)
    if own is not None:
        return own, f"{model_label(status.dense)}'s"
    if status.dense == "none":
        return NO_GUARDS, "off: no dense model"
    anchor_name, anchor = next(iter(preset.guards.items()))
    anchor_knee = preset.knees.get(anchor_name) or CALIBRATION[anchor_name]
    knee = preset.knees.get(status.dense) or status.calibration
    if knee.borrowed:
        return NO_GUARDS, "off: no calibration for this model"
    ratio = knee.min_similarity / anchor_knee.min_similarity
    label = model_label(anchor_name)
    return anchor.scaled(ratio), (
        f"scaled from {label}'s × {ratio:.3g} (knee {knee.min_similarity:g} / "
        f"{anchor_knee.min_similarity:g})"
    )


def resolve(config: Config, status: ModelStatus, n: int) -> Tuning:
    """§4 + presets: a pinned value wins, else the preset's, else the model's own knee;
    the cosine-valued guards follow the dense model (resolve_guards)."""
    preset = PRESETS[config.preset]
    relevance_off = relevance_mismatch(status) if preset.relevance else ""
    if relevance_off:
        # §9.12: the relevance model cannot read these models' numbers; the calibrated
        # gates decide, with their values for this dense model.
        preset = PRESETS[CALIBRATED]
    knee = preset.knees.get(status.dense)
    if knee is None:
        knee = status.calibration
        source = status.calibration.source
        if preset.name != REFERENCE:
            source += f"; preset {preset.name!r} has no knee of its own for this model"
    else:
        source = knee.source
    base = config.min_similarity if config.min_similarity is not None else knee.min_similarity
    margin = config.score_margin if config.score_margin is not None else knee.score_margin
    guards, guards_from = resolve_guards(preset, status)
    origins = {
        key: "pinned" if getattr(config, key) is not None else guards_from for key in GUARD_KEYS
    }
    slope = float(_pick(config.floor_log_slope, guards.floor_log_slope))
    gate = resolve_rerank(config, status)
    return Tuning(
        preset=config.preset,
        min_similarity=floor_for(base, slope, n, preset.floor_sizes),
        score_margin=margin,
        base_min_similarity=base,
        floor_log_slope=slope,
        floor_n=clamp_size(n, preset.floor_sizes),
        bm25_weight=float(_pick(config.bm25_weight, preset.bm25_weight)),
        keyword_generic_guard=bool(
            _pick(config.keyword_generic_guard, preset.keyword_generic_guard)
        ),
        keyword_min_cosine=float(_pick(config.keyword_min_cosine, guards.keyword_min_cosine)),
        lexical_min_cosine=float(_pick(config.lexical_min_cosine, guards.lexical_min_cosine)),
        lexical_min=float(_pick(config.lexical_min, preset.lexical_min)),
        lexical_margin=float(_pick(config.lexical_margin, preset.lexical_margin)),
        source=source,
        origins=origins,
        relevance=preset.relevance,
        relevance_off=relevance_off,
        **gate,
    )


def resolve_rerank(config: Config, status: ModelStatus) -> dict[str, Any]:
    """§5.3-§5.4 for the reranker in force: a pinned rerank_min / rerank_margin wins, else
    the reranker's own (models.RERANK_CALIBRATION). Outside the reference preset a reranker
    with its own floor judges candidates down to it (the recall floor follows), and one
    calibrated without the §5.2 fast path turns the fast path off."""
    calibration: RerankCalibration = status.rerank_calibration
    departs = status.reranker is not None and config.preset != REFERENCE
    own_floor = calibration.floor if departs else None
    pinned = config.rerank_min is not None and config.rerank_margin is not None
    return {
        "recall_floor": (
            config.recall_floor if own_floor is None else min(config.recall_floor, own_floor)
        ),
        "rerank_min": float(_pick(config.rerank_min, calibration.rerank_min)),
        "rerank_margin": float(_pick(config.rerank_margin, calibration.rerank_margin)),
        "rerank_source": "pinned in config" if pinned else calibration.source,
        "rerank_floor": own_floor,
        "fast_path_off": calibration.source if departs and not calibration.fast_path else "",
    }


def relevance_mismatch(status: ModelStatus) -> str:
    """§9.12: why the packaged relevance model cannot judge with these models ('' if it
    can); a missing or broken model file is said by decide()'s trace instead."""
    from explorer.engine.route.relevance import load_relevance_model

    try:
        model = load_relevance_model()
    except (OSError, ValueError):
        return ""
    mismatch = model.mismatch(status.dense, status.reranker, status.multilingual)
    return f"relevance model off ({mismatch}): the calibrated gates decide" if mismatch else ""


def guards_summary(tuning: Tuning) -> str:
    """The cosine-valued departures in force and whose they are, for `doctor`:
    `keyword_min_cosine 0.6, lexical_min_cosine 0.2, floor_log_slope 0.06 (MiniLM's)`."""
    values = {key: float(getattr(tuning, key)) for key in GUARD_KEYS}
    origins = {key: tuning.origin(key) for key in GUARD_KEYS}
    if len(set(origins.values())) == 1:
        text = ", ".join(f"{key} {value:.3g}" for key, value in values.items())
        return text + (f" ({origins[GUARD_KEYS[0]]})" if origins[GUARD_KEYS[0]] else "")
    return ", ".join(
        f"{key} {values[key]:.3g}" + (f" ({origins[key]})" if origins[key] else "")
        for key in GUARD_KEYS
    )
