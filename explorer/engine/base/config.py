"""Every field of the cascade under the reference's key names, and where values come from.

Sources, lowest first: defaults < $XDG_CONFIG_HOME/skill-explorer/config.toml <
./skill-explorer.toml < --config FILE < --set key=value. The reference router's own
`~/.config/ski/config.toml` can be layered in on request and is read as-is.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from explorer.engine.base import paths
from explorer.engine.base.ranges import range_error
from explorer.engine.base.toml_reading import TomlUnreadable, read_toml_text


class ConfigError(ValueError):
    """A config value that cannot be used; the message names the key, the source and the type."""


@dataclass(frozen=True)
class Config:
    """The cascade's knobs (§3-§5, §9). Defaults are the reference's."""

    # §4 calibration: None follows the dense model's own knee (see models.CALIBRATION).
    min_similarity: float | None = None
    score_margin: float | None = None
    # §5.1 confident winner
    high_conf: float = 2.0
    clear_gap: float = 0.12
    # §5.2 lexical fast path (off while lexical_min = 0); margin 0.0 as in the reference
    # None = the preset's value (reference: 0.0 and 0.0, as in the reference)
    lexical_min: float | None = None
    lexical_margin: float | None = None
    # §5.3 recall floor
    recall_floor: float = 0.50
    # §5.4 rerank and agreement gate
    rerank_top_k: int = 12
    # None follows the cross-encoder's own gate (see models.RERANK_CALIBRATION).
    rerank_min: float | None = None
    rerank_margin: float | None = None
    # §3 hybrid channels
    keyword_boost: float = 0.15
    phrase_boost: float = 0.20
    file_boost: float = 0.3
    project_boost: float = 0.15
    """§3.5: added to a skill whose ecosystem the working directory's manifests (or a code
    file named in the conversation) imply, when its cosine is at least min_similarity -
    0.06. 0.15 and on, as in the reference (src/config.rs); 0 turns the channel off."""
    # §9.12: None follows the relevance model's own threshold (chosen at a 5 % false-inject
    # budget, docs/quality.md "Other thresholds" gives what each value buys on held-out
    # libraries). Lower finds more of the right skills and injects on more prompts that
    # need none.
    relevance_threshold: float | None = None
    # §5.6 after the stage
    max_skills: int = 2
    char_budget: int = 6000
    body_inject_min: float = 0.92
    force: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    inject_mode: str = "directive"
    """How picks are injected: "directive" points at each skill and escalates a lone pick
    at >= body_inject_min to its body; "body" injects every pick's body (the reference's
    inject_mode)."""
    directive_strength: str = "auto"
    """How firmly the text asks the model to use a skill: "soft", "hard" (imperative, and
    stronger still for a high-band pick in the reference format) or "auto" (soft: what
    the reference chooses for Claude Code)."""
    inject_format: str = "explorer"
    """The injected text's layout: "explorer" (confidence, band and path per skill; the
    budget counts the whole text; a lone long body is cut, not dropped) or "reference"
    (the reference's blocks, SkillRecommendation token, evidence and byte budget)."""
    # §9 extensions (defaults keep parity with the reference)
    candidate_strategy: str = "dense"
    bm25_index_name_keywords: bool = False
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Departures from the reference, bundled in named presets (engine/route/presets.py); None
    # takes the preset's value. preset = "reference" is the reference's cascade exactly.
    preset: str = "learned"
    bm25_weight: float | None = None  # adds bm25_weight * bm25_norm to the hybrid score
    floor_log_slope: float | None = None  # floor = min_similarity + slope * ln(N / 200)
    keyword_generic_guard: bool | None = None  # generic name tokens earn no keyword boost
    keyword_min_cosine: float | None = None  # a keyword boost needs this cosine (0 = off)
    dense_body_chars: int | None = None
    """§9.13: how many characters of the body's opening (§1.4 body_head) the dense model
    reads after the description; 0 embeds the description alone, as the reference does.
    None takes the preset's value (PRESET_DENSE_BODY_CHARS)."""
    lexical_min_cosine: float | None = None  # the fast path's winner needs this cosine
    # models (§6)
    model: str | None = None
    """The dense model; None takes the preset's (PRESET_MODEL)."""
    model_path: str = ""
    tokenizer_path: str = ""
    pooling: str = "mean"
    query_prefix: str = ""
    max_length: int = 256
    models_dir: str = ""
    ski_models_dir: str = "~/.config/ski/models"
    reranker: str = "auto"
    # the live index: a burst ends after this quiet time, and never waits longer than the max
    watch_debounce_ms: float = 25.0
    watch_max_delay_ms: float = 250.0
    hook_budget_ms: float = 5000.0
    """The hook's time budget, from when it starts reading its input: descriptions the
    cache does not hold yet are embedded only while it lasts (what was embedded is cached,
    the next call goes on); past it the hook answers from the lexical channels alone and
    says so in its telemetry record. Claude Code waits 60 s for a hook by default."""
    # the explorer: key remaps by binding id, e.g. { reindex = "ctrl+r" }
    keymap: dict[str, str] = field(default_factory=dict)
    # where the router and the hook look for skills, and where caches live
    roots: list[str] = field(default_factory=list)
    cache_dir: str = ""
    # §10 the session: the conversation window and the opt-in usage log
    context_depth: int = 3
    """How many recent prompts of the session feed the file and project channels (§3.5);
    0 keeps no window. 3, as in the reference (src/config.rs)."""
    telemetry: bool = False
    """Log each hook decision and what the model then loaded to telemetry.jsonl under the
    state directory (also SKILL_EXPLORER_TELEMETRY=1); read back by `history`."""
    telemetry_prompts: bool = False
    """Also keep the prompt's text in that log (also SKILL_EXPLORER_TELEMETRY_PROMPTS=1),
    which replay needs; without it a short hash stands in for the prompt."""

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


# Fields that decide which models load: two configs equal on these can share the models.
MODEL_FIELDS: tuple[str, ...] = (
    "model",
    "model_path",
    "tokenizer_path",
    "pooling",
    "query_prefix",
    "max_length",
    "models_dir",
    "ski_models_dir",
    "reranker",
)
PRESET_NAMES: tuple[str, ...] = ("reference", "calibrated", "learned")
# §9.13: each preset's dense_body_chars. Here rather than in route/presets.py because the
# index, below the router, embeds what it says.
PRESET_DENSE_BODY_CHARS: dict[str, int] = {"reference": 0, "calibrated": 0, "learned": 150}
# §6: each preset's dense model. The learned preset's relevance model was fitted to the
# packaged skill encoder's cosines (§9.12); the others' thresholds are MiniLM's (§4).
PRESET_MODEL: dict[str, str] = {
    "reference": "minilm",
    "calibrated": "minilm",
    "learned": "skill-encoder",
}
CHOICES: dict[str, tuple[str, ...]] = {
    "inject_mode": ("directive", "body"),
    "directive_strength": ("auto", "soft", "hard"),
    "inject_format": ("explorer", "reference"),
    "preset": PRESET_NAMES,
    "candidate_strategy": ("dense", "union"),
    "pooling": ("mean", "cls"),
}
_HINTS = get_type_hints(Config)
FIELD_NAMES: tuple[str, ...] = tuple(item.name for item in fields(Config))


def dense_model(config: Config) -> str:
    """§6: the dense model this config runs."""
    return config.model if config.model is not None else PRESET_MODEL[config.preset]


def model_key(config: Config) -> tuple[str, ...]:
    """What decides which models load, the dense model resolved: two configs with the same
    key can share their models and their stored index."""
    return tuple(
        dense_model(config) if name == "model" else str(getattr(config, name))
        for name in MODEL_FIELDS
    )


def dense_body_chars(config: Config) -> int:
    """§9.13: the characters of a skill's body opening its dense vector reads."""
    if config.dense_body_chars is not None:
        return config.dense_body_chars
    return PRESET_DENSE_BODY_CHARS[config.preset]


@dataclass(frozen=True)
class LoadedConfig:
    """A config plus what the user should hear about it."""

    config: Config
    sources: dict[str, str]  # field -> where its value came from, for fields not at default
    warnings: tuple[str, ...]
    files: tuple[str, ...]  # the files that were read, lowest precedence first
    notes: tuple[str, ...] = ()  # things worth knowing that are not problems (ski-only keys)

    def pinned(self, name: str) -> bool:
        return name in self.sources


def type_label(name: str) -> str:
    hint = _HINTS[name]
    if name in CHOICES:
        return " | ".join(repr(choice) for choice in CHOICES[name])
    return {
        float: "a number",
        int: "an integer",
        bool: "true or false",
        str: "a string",
        list[str]: "a list of strings",
        dict[str, str]: "a table of strings",
        float | None: "a number",
        str | None: "a string",
        int | None: "an integer",
        bool | None: "true or false",
    }.get(hint, str(hint))


def coerce(name: str, value: Any, source: str, *, ranged: bool = True) -> Any:
    """One value checked against its field's type, then (`ranged`) its usable range
    (ranges.py: NaN, infinity, `max_skills = 0`); errors name the source, the key and
    what is expected. Config files, `--set` and the explorer's editor all come here."""
    typed = _typed(name, value, source)
    problem = range_error(name, typed) if ranged else None
    if problem is not None:
        raise ConfigError(f"{source}: {problem}")
    return typed


def _typed(name: str, value: Any, source: str) -> Any:
    """`value` as the type of field `name`, or a ConfigError naming the expected type."""
    if name not in _HINTS:
        raise ConfigError(f"{source}: unknown key {name!r}")
    hint = _HINTS[name]
    optional = get_origin(hint) is not None and type(None) in get_args(hint)
    base = hint
    if optional:
        base = next(arg for arg in get_args(hint) if arg is not type(None))

    def fail() -> ConfigError:
        return ConfigError(
            f"{source}: {name} = {value!r} is not valid; expected {type_label(name)}"
        )

    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail()
        return float(value)
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail()
        return value
    if base is bool:
        if not isinstance(value, bool):
            raise fail()
        return value
    if base is str:
        if not isinstance(value, str) or (name in CHOICES and value not in CHOICES[name]):
            raise fail()
        return value
    if get_origin(base) is list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise fail()
        return list(value)
    if get_origin(base) is dict:
        if not isinstance(value, dict) or not all(
            isinstance(key, str) and isinstance(item, str) for key, item in value.items()
        ):
            raise fail()
        return dict(value)
    raise fail()  # pragma: no cover - every field type is handled above


def apply(
    config: Config, values: Mapping[str, Any], source: str, warnings: list[str]
) -> tuple[Config, dict[str, str]]:
    """Layer `values` over `config`; unknown keys warn, tables are read as flat sections."""
    changes: dict[str, Any] = {}
    for key, value in _flatten(values):
        if key not in _HINTS:
            warnings.append(f"{source}: unknown key {key!r} ignored")
            continue
        changes[key] = coerce(key, value, source)
    return config.replace(**changes), dict.fromkeys(changes, source)


def _apply_each(
    config: Config, values: Mapping[str, Any], source: str, warnings: list[str]
) -> tuple[Config, dict[str, str]]:
    """`apply` key by key, each bad value a warning that skips that key alone: the hook
    keeps a file's `deny` and `roots` when its `max_skills` has a typo."""
    changed: dict[str, str] = {}
    for key, value in _flatten(values):
        try:
            config, one = apply(config, {key: value}, source, warnings)
        except ConfigError as error:
            warnings.append(f"{error}{KEY_IGNORED}")
            continue
        changed.update(one)
    return config, changed


def _flatten(values: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in values.items():
        if isinstance(value, dict) and key not in _HINTS:
            yield from _flatten(value, f"{prefix}{key}.")
        elif prefix and key in _HINTS:
            yield key, value  # a known key inside a section table: [routing] min_similarity
        else:
            yield f"{prefix}{key}", value


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return read_toml_text(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file: {error.strerror}") from error
    except TomlUnreadable as error:
        raise ConfigError(f"{path}: {error}") from error


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` from --set: the value is read as TOML, else taken as a plain string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: expected key=value")
    return key, read_value(key, raw)


def read_value(name: str, raw: str) -> Any:
    """A value typed by a person: TOML if it parses, else text; text fields keep the text."""
    raw = raw.strip()
    try:
        value = read_toml_text(f"value = {raw}")["value"]
    except TomlUnreadable:
        return raw
    if _HINTS.get(name) is str and not isinstance(value, str):
        return raw  # query_prefix=2024 is text, not a number
    return value


def user_config_path() -> Path:
    return paths.config_dir() / "config.toml"


def user_state_dir() -> Path:
    """Where session ledgers and the telemetry log live ($XDG_STATE_HOME/skill-explorer)."""
    return paths.state_dir()


PROJECT_CONFIG_NAME = "skill-explorer.toml"

# The reference router's own config file (skill-inject 0.9.0, src/config.rs FileConfig):
# the keys it reads. Keys we have as fields take effect; the rest are understood and
# reported as not used here, with the reason.
SKI_KEYS: frozenset[str] = frozenset(
    (
        "model min_similarity score_margin max_skills char_budget keyword_boost phrase_boost "
        "roots inject_mode directive_strength deny force context_depth context_weight "
        "vague_lo vague_hi file_boost project_boost recall_floor high_conf clear_gap "
        "rerank_top_k rerank_min rerank_margin body_inject_min lexical_min lexical_margin "
        "telemetry"
    ).split()
)
SKI_ONLY_KEYS: dict[str, str] = {
    "context_weight": "the dense context blend is not implemented (off in the reference too)",
    "vague_lo": "the dense context blend is not implemented (off in the reference too)",
    "vague_hi": "the dense context blend is not implemented (off in the reference too)",
}
SKI_LENIENT_CHOICES = ("inject_mode", "directive_strength")  # a bad value keeps the default


def ski_config_path() -> Path:
    """The reference's config file: $XDG_CONFIG_HOME/ski/config.toml (src/paths.rs)."""
    return paths.ski_config_dir() / "config.toml"


def read_ski_config(
    path: Path, warnings: list[str], notes: list[str] | None = None
) -> dict[str, Any] | None:
    """The reference's config.toml as the reference reads it, or None when it is unusable.

    Like the reference (src/config.rs FileConfig::load): a file that is not valid TOML, or
    whose known keys hold values of the wrong type, is ignored as a whole, with a warning
    (never silently); an unknown inject_mode or directive_strength keeps the default;
    keys the reference does not read are ignored. Keys the reference reads but this engine
    does not use (context_depth, telemetry, ...) go to `notes` with the reason.
    """
    try:
        raw = read_toml(path)
    except ConfigError as error:
        warnings.append(f"{error}; the reference's config is ignored")
        return None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in SKI_KEYS:
            continue
        if key in SKI_ONLY_KEYS and key not in _HINTS:
            if notes is not None:
                notes.append(f"{path}: {key} = {value!r} is not used here: {SKI_ONLY_KEYS[key]}")
            continue
        if key in SKI_LENIENT_CHOICES and isinstance(value, str):
            normal = value.strip().lower()
            if normal not in CHOICES[key]:
                warnings.append(
                    f"{path}: {key} = {value!r} is not one of {', '.join(CHOICES[key])}; "
                    "the default is kept, as the reference does"
                )
                continue
            value = normal
        try:
            typed = coerce(key, value, str(path), ranged=False)
        except ConfigError as error:
            warnings.append(f"{error}; the reference's whole config file is ignored, as it does")
            return None
        problem = range_error(key, typed)  # the reference reads any number: this key only
        if problem is not None:
            warnings.append(f"{path}: {problem}; the default is kept")
            continue
        values[key] = typed
    return values


# What a lenient load (strict=False) appends to the error of a file, a key or a --set it
# skips.
FILE_IGNORED = "; this file is ignored"
KEY_IGNORED = "; this key is ignored, the file's others apply"
SET_IGNORED = "; this --set is ignored"


def skipped_error(warning: str) -> str | None:
    """The error behind a warning of a lenient load that skipped a file, a key or a --set."""
    for suffix in (FILE_IGNORED, KEY_IGNORED, SET_IGNORED):
        if warning.endswith(suffix):
            return warning.removesuffix(suffix)
    return None


def load_config(
    config_file: str | os.PathLike[str] | None = None,
    assignments: Iterable[str] = (),
    *,
    use_ski_config: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    strict: bool = True,
    trust: Callable[[Path], bool] | None = None,
    project: bool = True,
) -> LoadedConfig:
    """Build the effective config from every source, lowest precedence first.

    The reference router's `config.toml` is the lowest layer when it exists (turn it off
    with use_ski_config=False, `--no-ski-config` on the command line). With strict=False
    (the hook) one of our own files, or a --set, that cannot be used is a warning and is
    skipped, so a typo never silences the router. With `trust` (the hook:
    explorer.engine.host.trust), the project's skill-explorer.toml is read only when
    trust(its directory) is true. With project=False the project file is not read: what
    every other layer gives, which is what a field takes when its line leaves that file.
    """
    config = Config()
    sources: dict[str, str] = {}
    warnings: list[str] = []
    notes: list[str] = []
    files: list[str] = []
    if use_ski_config:
        ski = ski_config_path()
        if ski.is_file():
            values = read_ski_config(ski, warnings, notes)
            if values is not None:
                config, changed = apply(config, values, str(ski), warnings)
                sources.update(changed)
                files.append(str(ski))
    layers = [user_config_path()]
    if project:
        layers.append(Path(cwd or os.getcwd()) / PROJECT_CONFIG_NAME)
    if config_file is not None:
        layers.append(Path(config_file))
    for position, path in enumerate(layers):
        explicit = config_file is not None and position == len(layers) - 1
        if not explicit and not path.is_file():
            continue
        if project and position == 1 and trust is not None and not trust(path.parent):
            warnings.append(
                f"{path}: project config not trusted, ignored; if you trust this repository, "
                f"run: skill-explorer trust {shlex.quote(str(path.parent))}"
            )
            continue
        try:
            values = read_toml(path)
        except ConfigError as error:
            if strict:
                raise
            warnings.append(f"{error}{FILE_IGNORED}")  # no key of it can be read
            continue
        said = len(warnings)
        try:
            config, changed = apply(config, values, str(path), warnings)
        except ConfigError:
            if strict:
                raise
            del warnings[said:]  # each key again, alone: a bad value loses only its own key
            config, changed = _apply_each(config, values, str(path), warnings)
        sources.update(changed)
        files.append(str(path))
    for assignment in assignments:
        try:
            key, value = parse_assignment(assignment)
            if key not in _HINTS:
                known = ", ".join(FIELD_NAMES)
                raise ConfigError(f"--set: unknown key {key!r}; known keys: {known}")
            config, changed = apply(config, {key: value}, "--set", warnings)
        except ConfigError as error:
            if strict:
                raise
            warnings.append(f"{error}{SET_IGNORED}")  # the hook routes on
            continue
        sources.update(changed)
    return LoadedConfig(config, sources, tuple(warnings), tuple(files), tuple(notes))


def to_toml(config: Config, only: Iterable[str] | None = None) -> str:
    """Serialise fields (all, or `only` those named) as flat TOML, for saving edits."""
    import tomlkit

    document = tomlkit.document()
    names = list(only) if only is not None else list(FIELD_NAMES)
    for name in names:
        value = getattr(config, name)
        if value is not None:
            document[name] = toml_item(value)
    return tomlkit.dumps(document)


def toml_item(value: Any) -> Any:
    """A tomlkit item for one field value; a mapping is an inline table (one line)."""
    import tomlkit

    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({str(key): toml_item(item) for key, item in value.items()})
        return table
    if isinstance(value, (bool, int, float, str, list)):
        return tomlkit.item(value)
    raise TypeError(f"cannot write {value!r} as TOML")


def toml_value(value: Any) -> str:
    """One value as a TOML literal (tomlkit's escaping: any text round-trips)."""
    text: str = toml_item(value).as_string()
    return text
