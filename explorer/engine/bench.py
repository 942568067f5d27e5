"""Performance bench: is the engine as fast and as small as the targets say, against baselines?

Every figure is measured against a baseline taken in the same run on the same machine
(raw query embedding, bm25s, a bare ONNX process, a direct embedding loop), so a
verdict survives a slow or busy machine. Synthetic libraries stand in for real ones:
their descriptions follow a Zipf-like word distribution, so BM25 document frequencies,
token lengths and batch padding look like those of a real library.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import Config
from explorer.engine.embed import cpu_count
from explorer.engine.lexical import LexicalIndex
from explorer.engine.models import Models, load_models, packaged_minilm
from explorer.engine.pipeline import decide
from explorer.engine.skills import Discovery, Skill, discover
from explorer.engine.snapshot import Index, build_index, index_skills
from explorer.engine.text import match_tokens

METRICS: tuple[str, ...] = (
    "decide_warm",
    "bm25_26k",
    "hook_cold",
    "peak_rss_1000",
    "index_build",
    "live_save",
    "cold_open",
)
DEFAULT_SIZES: tuple[int, ...] = (100, 1000)
WARM_LIMIT = 1000  # decide_warm, hook_cold and index_build run on requested sizes up to this
BM25_SIZE = 26_000
RSS_SIZE = 1000
RSS_DECIDES = 20
HOOK_REPEATS = 7
BM25_PROMPTS = 200
RANK_BM25_PROMPTS = 20  # rank_bm25 scores in a Python loop: context only, so few prompts
TOP_K = 10
BUILD_CHUNKS = 4
SUBPROCESS_TIMEOUT = 180.0

# Targets (the numbers).
DECIDE_FACTOR, DECIDE_SLACK_MS = 1.2, 2.0
BM25_FACTOR = 2.0
HOOK_FACTOR = 1.2
RSS_LIMIT_MB = 300.0
BUILD_FACTOR = 1.25
LIVE_SAVE_LIMIT_MS = 100.0  # at 1,000 skills
COLD_OPEN_LIMIT_MS = 1000.0
LIVE_SAVES = 30

# ---------------------------------------------------------------------------------------------
# Vocabulary. Real words in the order of a rough frequency guess; compounds form the long tail.

_VERBS = """
build test debug deploy configure generate review fix create update parse validate format
lint refactor migrate document analyze search query index convert export import render
monitor profile optimize install run write edit summarize extract transform merge split
sort filter scan audit secure encrypt sign verify cache compress publish release package
bundle compile schedule automate backup restore sync stream upload download fetch crawl
scrape benchmark trace log alert visualize plot chart translate annotate classify cluster
label detect forecast train evaluate quantize serialize bisect rebase squash tag triage
notify estimate draft proofread transcribe prototype design style theme animate localize
inspect diagnose reproduce instrument provision scale rollback replicate ingest serve proxy
route mock stub patch upgrade pin vendor containerize harden sanitize redact anonymize embed
aggregate normalize resize crop tune orchestrate authenticate authorize decrypt rank plan
map wrap ship scaffold transpile debounce throttle paginate retry seed snapshot diff
""".split()

_NOUNS = """
file code test api data project function error repository config document database table
query model component page server client request response schema endpoint branch commit
pipeline workflow job task issue report chart image script command package dependency
module class type service user session token key secret log metric dashboard alert message
email notification form template spreadsheet presentation slide pdf invoice contract build
release version changelog deployment environment container cluster node pod image registry
bucket object directory archive backup snapshot volume disk memory thread process socket
port protocol parser grammar compiler interpreter binary library method interface macro
decorator fixture mock assertion coverage benchmark regression bug exception stacktrace
crash warning rule style formatter widget layout grid palette font icon animation
accessibility translation locale string encoding regex pattern embedding vector prompt
completion agent tool skill plugin extension hook shell terminal flag argument option
setting preference avatar photo video audio transcript subtitle caption thumbnail sprite
texture shader mesh scene camera frame sensor device firmware driver kernel filesystem
permission role policy certificate credential cookie header payload webhook event topic
partition trace incident runbook workbook sheet graph diagram deck letter newsletter
channel thread comment ticket sprint backlog roadmap milestone budget forecast transaction
ledger payment subscription customer lead campaign audience segment funnel experiment
variant feature rollout staging production cdn domain gateway firewall network subnet
blob lockfile manifest vault account migration column row record field value tag label
queue worker cron scheduler index cursor transaction replica shard backend frontend
handler middleware router controller view store state reducer hook context provider
route sitemap seo analytics tracking survey quiz lesson course curriculum note journal
calendar meeting agenda minutes summary outline essay article blog post tweet thread
caption headline story script storyboard logo brand mockup wireframe prototype persona
requirement specification proposal estimate quote receipt expense tax payroll timesheet
inventory order shipment warehouse supplier catalog product price discount coupon cart
checkout refund dispute chargeback fraud risk compliance audit gdpr license copyright
citation reference bibliography dataset sample feature label split epoch checkpoint
weight gradient loss optimizer tokenizer corpus vocabulary notebook cell kernel plot
""".split()

_ADJECTIVES = """
typed async concurrent distributed incremental legacy remote local secure encrypted stale
flaky slow large nested recursive reusable responsive accessible interactive static dynamic
serverless headless realtime batch offline multilingual structured unstructured tabular
relational columnar immutable idempotent parallel cached versioned signed compressed sparse
dense custom internal external public private shared scheduled automated manual failing
broken missing duplicate outdated unused insecure minimal verbose strict
""".split()

_TOOLS = """
python github docker typescript react git javascript postgres kubernetes aws rust go slack
excel jira notion figma terraform node npm pip pytest jest linux macos windows android ios
django flask fastapi rails spring express nextjs vue svelte angular tailwind webpack vite
esbuild rollup babel vitest playwright cypress selenium helm ansible pulumi gcp azure lambda
s3 cloudflare vercel netlify heroku mysql sqlite redis mongodb elasticsearch kafka rabbitmq
nats grpc graphql openapi protobuf json yaml toml csv parquet avro word powerpoint sketch
confluence gitlab bitbucket jenkins circleci sentry datadog grafana prometheus opentelemetry
pandas numpy pytorch tensorflow jax sklearn huggingface onnx spark airflow dbt snowflake
bigquery duckdb tableau stripe twilio sendgrid shopify salesforce hubspot zendesk openai
langchain llamaindex ffmpeg imagemagick latex markdown pandoc cargo poetry uv conda homebrew
nix unity unreal blender godot kotlin swift ruby php elixir haskell scala java bash zsh
powershell
""".split()

_PREFIXES = """
micro auto multi meta sub inter re pre post hyper geo bio crypto data web cloud net dev ops
infra cross edge
""".split()

_PREPOSITIONS = ("for", "in", "from", "with", "across", "into", "using", "inside", "against")
_COMPOUNDS = 2000
_DOUBLED = frozenset(
    {"debug", "log", "tag", "stub", "pin", "plot", "scan", "plan", "map", "wrap", "ship"}
)


def _zipf_weights(count: int, exponent: float = 1.07, offset: float = 2.7) -> list[float]:
    """Zipf-Mandelbrot: a few words everywhere, a long tail of rare ones (realistic BM25 df)."""
    return [1.0 / (rank + offset) ** exponent for rank in range(1, count + 1)]


def _cumulative(weights: Sequence[float]) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


@dataclass(frozen=True)
class _Vocabulary:
    """Word classes with cumulative Zipf weights, fixed for a seed."""

    verbs: list[str]
    nouns: list[str]
    adjectives: list[str]
    tools: list[str]
    cum: dict[str, list[float]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(set(self.verbs) | set(self.nouns) | set(self.adjectives) | set(self.tools))


def _vocabulary(seed: int) -> _Vocabulary:
    rng = random.Random(f"vocabulary-{seed}")
    base = list(dict.fromkeys(_NOUNS))
    compounds = sorted({prefix + noun for prefix in _PREFIXES for noun in base if len(noun) > 2})
    extra = [word for word in rng.sample(compounds, _COMPOUNDS) if word not in set(base)]
    nouns = base + extra  # real words first: they are the frequent ones
    vocabulary = _Vocabulary(
        list(dict.fromkeys(_VERBS)), nouns, list(dict.fromkeys(_ADJECTIVES)), list(_TOOLS)
    )
    for name in ("verbs", "nouns", "adjectives", "tools"):
        words = getattr(vocabulary, name)
        vocabulary.cum[name] = _cumulative(_zipf_weights(len(words)))
    return vocabulary


def _third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in ("a", "e", "o", "u"):
        return verb[:-1] + "ies"
    return verb + "s"


def _gerund(verb: str) -> str:
    if verb in _DOUBLED:
        return verb + verb[-1] + "ing"
    if verb.endswith("e") and not verb.endswith(("ee", "ye")):
        return verb[:-1] + "ing"
    return verb + "ing"


def _plural(noun: str) -> str:
    if noun.endswith(("s", "sh", "ch", "x", "z")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


class _Writer:
    """Draws words for one description (or prompt) and remembers the ones a name can reuse."""

    def __init__(self, vocabulary: _Vocabulary, rng: random.Random) -> None:
        self.v, self.rng = vocabulary, rng
        self.nouns: list[str] = []
        self.tools: list[str] = []
        self.verbs: list[str] = []

    def _draw(self, name: str) -> str:
        words: list[str] = getattr(self.v, name)
        return self.rng.choices(words, cum_weights=self.v.cum[name])[0]

    def verb(self) -> str:
        word = self._draw("verbs")
        self.verbs.append(word)
        return word

    def tool(self) -> str:
        word = self._draw("tools")
        self.tools.append(word)
        return word

    def noun(self) -> str:
        word = self._draw("nouns")
        self.nouns.append(word)
        return word

    def np(self) -> str:
        """A noun phrase: [adjective] [modifier] noun, sometimes plural."""
        rng = self.rng
        parts: list[str] = []
        if rng.random() < 0.3:
            parts.append(self._draw("adjectives"))
        if rng.random() < 0.35:
            parts.append(self.tool() if rng.random() < 0.4 else self.noun())
        head = self.noun()
        parts.append(_plural(head) if rng.random() < 0.35 else head)
        return " ".join(parts)

    def prep(self) -> str:
        return self.rng.choice(_PREPOSITIONS)

    def opening(self) -> str:
        rng, pick = self.rng, self.rng.randrange(4)
        if pick == 0:
            return (
                f"{_third_person(self.verb()).capitalize()} {self.np()} {self.prep()} {self.np()}."
            )
        if pick == 1:
            return (
                f"{_third_person(self.verb()).capitalize()} and {_third_person(self.verb())} "
                f"{self.np()} {self.prep()} {self.tool()} {self.np()}."
            )
        if pick == 2:
            kind = rng.choice(("Toolkit", "Guide", "Helper", "Workflow", "Utilities"))
            return f"{kind} for {_gerund(self.verb())} {self.np()} with {self.tool()}."
        return f"Helps {self.verb()} {self.np()} and {self.np()} {self.prep()} {self.tool()}."

    def use_when(self) -> str:
        pick = self.rng.randrange(4)
        if pick == 0:
            return (
                f"Use when the user asks to {self.verb()} {self.np()}, {self.verb()} "
                f"{self.np()}, or {self.verb()} {self.np()}."
            )
        if pick == 1:
            return f"Use when working with {self.tool()} {self.np()} or {self.np()}."
        if pick == 2:
            return (
                f"Use when {_gerund(self.verb())} {self.np()} {self.prep()} {self.tool()} "
                f"and the {self.np()} needs {_gerund(self.verb())}."
            )
        return f"Use when the user mentions {self.np()}, {self.np()}, or {self.tool()}."

    def filler(self) -> str:
        pick = self.rng.randrange(6)
        if pick == 0:
            return f"Supports {self.np()}, {self.np()}, and {self.np()}."
        if pick == 1:
            return f"Also {_third_person(self.verb())} {self.np()} {self.prep()} {self.np()}."
        if pick == 2:
            return f"Works with {self.tool()} and {self.tool()}."
        if pick == 3:
            return f"Handles {self.np()} and {self.np()}."
        if pick == 4:
            return f'Triggers on "{self.verb()} {self.np()}".'
        return f"Not for {_gerund(self.verb())} {self.np()}."


@dataclass(frozen=True)
class _Spec:
    """One synthetic skill, with the parts a targeted prompt can be made from."""

    name: str
    description: str
    body: str
    verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    tools: tuple[str, ...]


MIN_WORDS, MAX_WORDS = 20, 60


def _skill(vocabulary: _Vocabulary, seed: int, index: int) -> _Spec:
    """Skill `index` depends only on (seed, index): libraries of different sizes share a prefix."""
    rng = random.Random(f"skill-{seed}-{index}")
    writer = _Writer(vocabulary, rng)
    target = rng.randint(MIN_WORDS, MAX_WORDS - 8)
    opening, closing = writer.opening(), writer.use_when()
    middle: list[str] = []
    words = len(opening.split()) + len(closing.split())
    for _attempt in range(40):
        if words >= target:
            break
        sentence = writer.filler()
        if words + len(sentence.split()) <= MAX_WORDS:
            middle.append(sentence)
            words += len(sentence.split())
    while words < MIN_WORDS:
        sentence = f"Works with {writer.tool()}."
        middle.append(sentence)
        words += 3
    description = " ".join([opening, *middle, closing])
    first = (writer.tools or writer.nouns)[0]
    second = writer.nouns[0] if writer.nouns[0] != first else writer.verbs[0]
    name = f"{first}-{second}-{index:05d}"
    title = " ".join(part.capitalize() for part in (first, second))
    body = (
        f"# {title}\n\n{opening}\n\n## Steps\n\n"
        f"1. {writer.verb().capitalize()} the {writer.np()}.\n"
        f"2. {writer.verb().capitalize()} {writer.np()} {writer.prep()} {writer.tool()}.\n"
        f"3. Check the {writer.np()} and report what changed.\n"
    )
    return _Spec(
        name, description, body, tuple(writer.verbs), tuple(writer.nouns), tuple(writer.tools)
    )


def _skills(count: int, seed: int) -> Iterator[_Spec]:
    vocabulary = _vocabulary(seed)
    for index in range(count):
        yield _skill(vocabulary, seed, index)


def generate_library(directory: Path, count: int, seed: int = 0) -> Path:
    """Write `count` synthetic skills as `skill-NNNNN/SKILL.md`; the same seed, the same bytes.

    Existing files of the same names are overwritten; nothing else in `directory` is touched.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for index, spec in enumerate(_skills(count, seed)):
        folder = directory / f"skill-{index:05d}"
        folder.mkdir(exist_ok=True)
        text = f"---\nname: {spec.name}\ndescription: {spec.description}\n---\n\n{spec.body}"
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return directory


def synthetic_descriptions(count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """(ids, descriptions) of a library held only in memory: the 26k BM25 bench needs no files."""
    ids, descriptions = [], []
    for spec in _skills(count, seed):
        ids.append(spec.name)
        descriptions.append(spec.description)
    return ids, descriptions


def synthetic_prompts(count: int, seed: int = 0, library_size: int = 1000) -> list[str]:
    """`count` DISTINCT prompts; half aim at a skill of the library, half are generic.

    Distinct because the embedder caches query vectors: a repeated prompt times a dict lookup.
    """
    vocabulary = _vocabulary(seed)
    rng = random.Random(f"prompts-{seed}")
    prompts: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(prompts) < count:
        attempts += 1
        writer = _Writer(vocabulary, rng)
        if rng.random() < 0.5 and library_size:
            spec = _skill(vocabulary, seed, rng.randrange(library_size))
            verb = rng.choice(spec.verbs)
            noun = rng.choice(spec.nouns)
            tool = rng.choice(spec.tools) if spec.tools else writer.tool()
            prompt = rng.choice(
                (
                    f"help me {verb} the {noun} with {tool}",
                    f"can you {verb} my {tool} {noun} and {writer.verb()} the {writer.np()}",
                    f"I need to {verb} {_plural(noun)} in this {tool} project",
                )
            )
        else:
            prompt = rng.choice(
                (
                    f"how do I {writer.verb()} {writer.np()} {writer.prep()} {writer.tool()}?",
                    f"can you {writer.verb()} the {writer.np()} in this {writer.tool()} project",
                    f"{writer.verb()} my {writer.np()} and {writer.verb()} the {writer.np()}",
                    f"the {writer.np()} keeps failing after {_gerund(writer.verb())} "
                    f"{writer.np()}, what should I check?",
                )
            )
        if attempts > count * 20:
            prompt = f"{prompt} (case {attempts})"
        if prompt not in seen:
            seen.add(prompt)
            prompts.append(prompt)
    return prompts


# ---------------------------------------------------------------------------------------------
# Measuring helpers


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _stats(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "median_ms": float(statistics.median(samples_ms)),
        "p95_ms": float(np.percentile(np.asarray(samples_ms, dtype=np.float64), 95)),
        "n": len(samples_ms),
    }


def _verdict(measured: float, target: float) -> dict[str, Any]:
    ratio = measured / target if target > 0 else float("inf")
    return {"target_value": target, "ratio": ratio, "pass": bool(ratio <= 1.0)}


def _error(metric: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"metric": metric, "pass": False, "error": message, "note": message, **extra}


def _timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return _ms(time.perf_counter() - started)


# ---------------------------------------------------------------------------------------------
# 1. decide_warm


def bench_decide_warm(
    index: Index, config: Config, prompts: Sequence[str], embed_prompts: Sequence[str]
) -> dict[str, Any]:
    """decide() against a bare query embedding: the cascade should cost little beyond the model.

    Each timed call gets a fresh prompt (the embedder caches queries); decide and embed
    alternate so drift in machine speed hits both series alike.
    """
    embedder = index.models.embedder
    if embedder is None:
        return _error("decide_warm", f"no dense model: {index.models.status.dense_error}")
    decide_ms: list[float] = []
    embed_ms: list[float] = []
    stages: dict[str, list[float]] = {}
    for position, (prompt, other) in enumerate(zip(prompts, embed_prompts, strict=True)):
        if position % 2:
            embed_ms.append(_timed(lambda q=other: embedder.embed_query(q)))
        started = time.perf_counter()
        decision = decide(prompt, index, config)
        decide_ms.append(_ms(time.perf_counter() - started))
        if not position % 2:
            embed_ms.append(_timed(lambda q=other: embedder.embed_query(q)))
        for stage, value in decision.timings_ms.items():
            stages.setdefault(stage, []).append(value)
    ours, baseline = _stats(decide_ms), _stats(embed_ms)
    target = DECIDE_FACTOR * baseline["median_ms"] + DECIDE_SLACK_MS
    verdict = _verdict(ours["median_ms"], target)
    breakdown = {stage: float(statistics.median(values)) for stage, values in stages.items()}
    slowest = max((item for item in breakdown.items() if item[0] != "total"), key=lambda x: x[1])
    return {
        "metric": "decide_warm",
        "size": len(index),
        **ours,
        "baseline": {"name": "embed_query", **baseline},
        "target": f"<= {DECIDE_FACTOR} x embed_query median + {DECIDE_SLACK_MS:g} ms",
        **verdict,
        "breakdown_ms": breakdown,
        "note": (
            f"{len(index)} skills, model {index.models.status.dense}, reranker off; "
            f"embed_query median {baseline['median_ms']:.2f} ms; "
            f"slowest stage {slowest[0]} {slowest[1]:.2f} ms"
        ),
    }


def _warm_decide(index: Index, config: Config, prompts: Sequence[str]) -> None:
    for prompt in prompts:
        decide(prompt, index, config)


# ---------------------------------------------------------------------------------------------
# 2. bm25_26k


def bench_bm25(count: int = BM25_SIZE, prompts: int = BM25_PROMPTS, seed: int = 0) -> dict:
    """Our vectorised BM25 + explain of the top 10, against bm25s and rank_bm25 at 26k skills.

    Both sides are timed from the raw prompt (tokenising included) on the same token lists.
    """
    ids, descriptions = synthetic_descriptions(count, seed)
    documents = [match_tokens(text) for text in descriptions]
    started = time.perf_counter()
    lexical = LexicalIndex(documents, ids)
    build_ms = _ms(time.perf_counter() - started)
    queries = synthetic_prompts(prompts + 10, seed + 1, library_size=count)
    warmup, queries = queries[:10], queries[10:]

    def ours(prompt: str) -> np.ndarray:
        raw = lexical.score(prompt).raw
        top = np.argpartition(-raw, TOP_K)[:TOP_K]
        top = top[np.argsort(-raw[top], kind="stable")]
        lexical.explain_many(prompt, [int(position) for position in top])
        return top

    score_ms = [_timed(lambda p=prompt: lexical.score(p)) for prompt in queries[:50]]

    notes: list[str] = []
    retriever: Any = None
    bm25s_build_ms = None
    try:
        import bm25s

        started = time.perf_counter()
        retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        retriever.index(documents, show_progress=False)
        bm25s_build_ms = _ms(time.perf_counter() - started)
    except Exception as error:  # ImportError, or an API change in an optional package
        notes.append(f"bm25s unavailable ({type(error).__name__}: {error})")
        retriever = None

    def theirs(prompt: str) -> np.ndarray:
        tokens = list(dict.fromkeys(match_tokens(prompt)))
        found, _scores = retriever.retrieve([tokens], k=TOP_K, show_progress=False)
        return found[0]

    for prompt in warmup:
        ours(prompt)
        if retriever is not None:
            theirs(prompt)
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    agreement: list[float] = []
    for position, prompt in enumerate(queries):
        order = (0, 1) if position % 2 == 0 else (1, 0)
        mine = other = None
        for which in order:
            if which == 0:
                started = time.perf_counter()
                mine = ours(prompt)
                ours_ms.append(_ms(time.perf_counter() - started))
            elif retriever is not None:
                started = time.perf_counter()
                other = theirs(prompt)
                theirs_ms.append(_ms(time.perf_counter() - started))
        if mine is not None and other is not None:
            agreement.append(len(set(mine.tolist()) & set(other.tolist())) / TOP_K)

    rank_stats = None
    try:
        from rank_bm25 import BM25Okapi

        okapi = BM25Okapi(documents, k1=1.2, b=0.75)
        rank_ms = []
        for prompt in queries[:RANK_BM25_PROMPTS]:
            started = time.perf_counter()
            scores = okapi.get_scores(list(dict.fromkeys(match_tokens(prompt))))
            np.argpartition(-scores, TOP_K)[:TOP_K]
            rank_ms.append(_ms(time.perf_counter() - started))
        rank_stats = _stats(rank_ms)
    except Exception as error:  # optional package
        notes.append(f"rank_bm25 unavailable ({type(error).__name__}: {error})")

    mine_stats = _stats(ours_ms)
    result: dict[str, Any] = {
        "metric": "bm25_26k",
        "size": count,
        **mine_stats,
        "score_only_median_ms": float(statistics.median(score_ms)),
        "build_ms": build_ms,
        "target": f"<= {BM25_FACTOR:g} x bm25s top-{TOP_K} median",
    }
    if rank_stats is not None:
        result["rank_bm25"] = {"name": "BM25Okapi.get_scores", **rank_stats}
    if theirs_ms:
        baseline = _stats(theirs_ms)
        result["baseline"] = {"name": "bm25s retrieve k=10", **baseline, "build_ms": bm25s_build_ms}
        result.update(_verdict(mine_stats["median_ms"], BM25_FACTOR * baseline["median_ms"]))
        notes.insert(
            0,
            f"ours = score + argpartition + explain x{TOP_K}; score alone "
            f"{result['score_only_median_ms']:.2f} ms; bm25s {baseline['median_ms']:.2f} ms; "
            f"top-10 agreement {100 * statistics.mean(agreement):.0f}%",
        )
    else:
        result.update({"target_value": None, "ratio": None, "pass": False})
        notes.insert(0, "no bm25s baseline: cannot judge")
    if rank_stats is not None:
        notes.append(f"rank_bm25 {rank_stats['median_ms']:.1f} ms")
    result["note"] = "; ".join(notes)
    return result


# ---------------------------------------------------------------------------------------------
# 3. hook_cold and 4. peak_rss_1000 (subprocesses)

_BASELINE_SCRIPT = """
import json, sys
import numpy as np
import onnxruntime
from tokenizers import Tokenizer
tokenizer = Tokenizer.from_file(sys.argv[2])
session = onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
encoding = tokenizer.encode(json.load(sys.stdin)["prompt"])
ids = np.array([encoding.ids], dtype=np.int64)
feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
if "token_type_ids" in {item.name for item in session.get_inputs()}:
    feed["token_type_ids"] = np.zeros_like(ids)
session.run(None, feed)
print(json.dumps({"ok": True}))
"""

_RSS_SCRIPT = """
import json, resource, sys

def peak_mb():
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import Config
from explorer.engine.models import load_models
from explorer.engine.pipeline import decide
from explorer.engine.snapshot import build_index
job = json.load(sys.stdin)
phases = {"imports": peak_mb()}
config = Config(**job["config"])
cache = EmbeddingCache(job["cache"])
models = load_models(config, cache)
phases["models"] = peak_mb()
index = build_index([job["library"]], config, models, cache)
phases["build"] = peak_mb()
for prompt in job["prompts"]:
    decide(prompt, index, config)
phases["decides"] = peak_mb()
print(json.dumps({
    "peak_mb": peak_mb(),
    "phases": phases,
    "skills": len(index),
    "embedded": index.embedded,
    "dense": models.status.dense,
    "reranker": models.status.reranker,
}))
"""


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _child_env(cache_home: Path, config_home: Path) -> dict[str, str]:
    """A child that finds this checkout, caches under `cache_home`, and reads no user config."""
    env = dict(os.environ)
    root = str(_project_root())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    env["XDG_CACHE_HOME"] = str(cache_home)
    env["XDG_CONFIG_HOME"] = str(config_home)
    return env


@dataclass
class _Run:
    ms: float
    returncode: int
    stdout: str
    stderr: str


def _run_child(
    args: Sequence[str], stdin: str, env: dict[str, str], cwd: Path, timeout: float
) -> _Run:
    started = time.perf_counter()
    try:
        done = subprocess.run(
            list(args),
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _Run(_ms(time.perf_counter() - started), -1, "", f"timed out after {timeout:g} s")
    return _Run(_ms(time.perf_counter() - started), done.returncode, done.stdout, done.stderr)


def _hook_problem(run: _Run) -> str | None:
    """Why a hook run does not count (a crash, a non-zero exit, output that is not the JSON)."""
    tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
    if run.returncode != 0:
        return f"exit {run.returncode}: {tail or 'no stderr'}"
    out = run.stdout.strip()
    if not out:
        return None
    try:
        payload = json.loads(out)
    except json.JSONDecodeError:
        return f"stdout is not JSON: {out[:120]!r}"
    if not isinstance(payload, dict) or "hookSpecificOutput" not in payload:
        return f"stdout lacks hookSpecificOutput: {out[:120]!r}"
    return None


def bench_hook_cold(
    libraries: dict[int, tuple[Path, Path]],
    work: Path,
    *,
    repeats: int = HOOK_REPEATS,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Process start to JSON out, against a bare process that loads the model and embeds once.

    `libraries` maps a size to (skills dir, XDG_CACHE_HOME). Runs are interleaved
    (baseline, then each library) so a busy moment hits every series alike.
    """
    config_home = work / "xdg-config-empty"
    config_home.mkdir(parents=True, exist_ok=True)
    prompts = synthetic_prompts(repeats * (len(libraries) + 1) + 2, seed + 2)
    try:
        model, tokenizer = packaged_minilm()
    except Exception as error:  # ModelError: no packaged model, no baseline
        return {
            f"hook_cold@{size}": _error("hook_cold", f"no baseline model: {error}", size=size)
            for size in libraries
        }
    baseline_args = [sys.executable, "-c", _BASELINE_SCRIPT, str(model), str(tokenizer)]
    hook_args = {
        size: [sys.executable, "-m", "explorer", "hook", "--skills", str(directory)]
        for size, (directory, _cache) in libraries.items()
    }
    envs = {size: _child_env(cache, config_home) for size, (_dir, cache) in libraries.items()}
    base_env = _child_env(work / "xdg-cache-baseline", config_home)

    def payload(prompt: str) -> str:
        return json.dumps({"prompt": prompt, "session_id": "b", "cwd": "/"})

    problems: dict[int, str] = {}
    for size in libraries:  # pre-warm: fills the embedding cache and the page cache
        run = _run_child(hook_args[size], payload(prompts[-1]), envs[size], work, 600.0)
        problem = _hook_problem(run)
        if problem:
            problems[size] = problem
    _run_child(baseline_args, payload(prompts[-2]), base_env, work, SUBPROCESS_TIMEOUT)

    baseline_ms: list[float] = []
    hook_ms: dict[int, list[float]] = {size: [] for size in libraries}
    outputs: dict[int, int] = dict.fromkeys(libraries, 0)
    baseline_problem = None
    prompt_iter = iter(prompts)
    for _rep in range(repeats):
        run = _run_child(baseline_args, payload(next(prompt_iter)), base_env, work, 600.0)
        if run.returncode != 0:
            baseline_problem = f"baseline exit {run.returncode}: {run.stderr.strip()[-300:]}"
            break
        baseline_ms.append(run.ms)
        for size in libraries:
            if size in problems:
                continue
            run = _run_child(hook_args[size], payload(next(prompt_iter)), envs[size], work, 600.0)
            problem = _hook_problem(run)
            if problem:
                problems[size] = problem
                continue
            hook_ms[size].append(run.ms)
            outputs[size] += bool(run.stdout.strip())

    results: dict[str, dict[str, Any]] = {}
    base = _stats(baseline_ms) if baseline_ms else None
    for size in libraries:
        key = f"hook_cold@{size}"
        target_text = f"<= {HOOK_FACTOR} x bare onnx process median"
        if baseline_problem or base is None:
            results[key] = _error("hook_cold", baseline_problem or "no baseline", size=size)
            continue
        baseline = {"name": "python -c onnxruntime+tokenizers, 1 inference", **base}
        if size in problems or not hook_ms[size]:
            message = f"hook failed: {problems.get(size, 'no successful run')}"
            results[key] = _error(
                "hook_cold", message, size=size, baseline=baseline, target=target_text
            )
            results[key]["note"] = f"{message}; baseline median {base['median_ms']:.0f} ms"
            continue
        ours = _stats(hook_ms[size])
        results[key] = {
            "metric": "hook_cold",
            "size": size,
            **ours,
            "baseline": baseline,
            "target": target_text,
            **_verdict(ours["median_ms"], HOOK_FACTOR * base["median_ms"]),
            "note": (
                f"{size} skills, warm embedding cache; baseline median {base['median_ms']:.0f} ms; "
                f"{outputs[size]}/{len(hook_ms[size])} runs printed JSON"
            ),
        }
    return results


def bench_peak_rss(library: Path, config: Config, work: Path, *, seed: int = 0) -> dict[str, Any]:
    """Peak RSS of a child that loads the models, builds the index and routes 20 prompts.

    Run twice: with an empty embedding cache (the first `index`, every description
    embedded: the worst case and the headline) and again with that cache filled (what
    every later hook process does). Each child reports its own high-water mark after
    each phase; RUSAGE_CHILDREN would mix in earlier children.
    """
    cache = Path(tempfile.mkdtemp(prefix="rss-cache-", dir=work))
    job = {
        "config": dataclasses.asdict(config),
        "cache": str(cache),
        "library": str(library),
        "prompts": synthetic_prompts(RSS_DECIDES, seed + 3),
    }
    env = _child_env(work / "xdg-cache-rss", work / "xdg-config-empty")
    reports: list[dict[str, Any]] = []
    for _run in ("cold", "warm"):
        run = _run_child([sys.executable, "-c", _RSS_SCRIPT], json.dumps(job), env, work, 600.0)
        if run.returncode != 0:
            tail = run.stderr.strip()[-300:]
            return _error("peak_rss_1000", f"child exit {run.returncode}: {tail}")
        try:
            reports.append(json.loads(run.stdout.strip().splitlines()[-1]))
        except (json.JSONDecodeError, IndexError):
            return _error("peak_rss_1000", f"child printed no report: {run.stdout[-200:]!r}")
    cold, warm = reports
    phases = ", ".join(f"{name} {value:.0f}" for name, value in cold["phases"].items())
    return {
        "metric": "peak_rss_1000",
        "size": cold["skills"],
        "value": cold["peak_mb"],
        "unit": "MB",
        "warm_value": warm["peak_mb"],
        "phases_mb": {"cold": cold["phases"], "warm": warm["phases"]},
        "target": f"<= {RSS_LIMIT_MB:g} MB",
        **_verdict(cold["peak_mb"], RSS_LIMIT_MB),
        "note": (
            f"{cold['skills']} skills, {cold['embedded']} embedded, {RSS_DECIDES} decides; "
            f"high-water after {phases} MB; with a warm cache {warm['peak_mb']:.0f} MB "
            f"({warm['embedded']} embedded); dense {cold['dense']}, reranker {cold['reranker']}"
        ),
    }


# ---------------------------------------------------------------------------------------------
# 5. index_build


def bench_index_build(
    root: Path,
    config: Config,
    models: Models,
    cache: EmbeddingCache,
    *,
    chunks: int = BUILD_CHUNKS,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-skill embedding cost of a cold build against embedding the same texts directly.

    The library is cut into `chunks` parts; for each, a cold `index_skills` (every text new
    to `cache`) and the floor (the embedder's own length-sorted batches of the same texts)
    run back to back, in alternating order, so load from other processes hits both alike.
    Unsorted batches of 32 are timed for context (what the sorting saves). Afterwards
    `cache` holds every description, so later builds of this library are warm.
    """
    embedder = models.embedder
    if embedder is None:
        return _error("index_build", f"no dense model: {models.status.dense_error}")
    started = time.perf_counter()
    found = discover([root])
    parse_ms = _ms(time.perf_counter() - started)
    skills = found.skills
    n = len(skills)
    if not n:
        return _error("index_build", f"no skills under {root}")
    embedder.embed_documents(synthetic_descriptions(32, seed + 5)[1])  # warm the session up
    batch = int(getattr(embedder, "batch_size", 32))
    build_ms = floor_ms = unsorted_ms = lexical_ms = 0.0
    embedded = 0
    step = -(-n // max(1, chunks))
    for number, start in enumerate(range(0, n, step)):
        part = skills[start : start + step]
        texts = [skill.description for skill in part]

        def build(part: tuple[Skill, ...] = part) -> tuple[float, float, int]:
            index = index_skills(Discovery(part, ()), [root], config, models, cache)
            return index.timings_ms["embed"], index.timings_ms["lexical"], index.embedded

        def floor(texts: list[str] = texts) -> float:
            return _timed(lambda: embedder.embed_documents(texts))

        if number % 2 == 0:
            embed_ms, lex_ms, count = build()
            floor_ms += floor()
        else:
            floor_ms += floor()
            embed_ms, lex_ms, count = build()
        build_ms += embed_ms
        lexical_ms += lex_ms
        embedded += count
        unsorted_ms += _timed(
            lambda texts=texts: [
                embedder.embed_documents(texts[i : i + batch]) for i in range(0, len(texts), batch)
            ]
        )
    build_per, sorted_per, unsorted_per = build_ms / n, floor_ms / n, unsorted_ms / n
    return {
        "metric": "index_build",
        "size": n,
        "value": build_per,
        "unit": "ms/skill",
        "baseline": {
            "name": "embed_documents, length-sorted batches",
            "value": sorted_per,
            "unsorted_value": unsorted_per,
        },
        "target": f"<= {BUILD_FACTOR} x direct sorted embedding per skill",
        **_verdict(build_per, BUILD_FACTOR * sorted_per),
        "note": (
            f"{embedded}/{n} embedded (empty cache), {chunks} interleaved chunks; floor "
            f"{sorted_per:.2f} ms/skill sorted, {unsorted_per:.2f} unsorted; "
            f"parse {parse_ms:.0f} ms, lexical {lexical_ms:.0f} ms for {n} skills"
        ),
    }


# ---------------------------------------------------------------------------------------------
# 6. live_save and 7. cold_open (the live index)


def bench_live_save(
    library: Path, config: Config, models: Models, cache: EmbeddingCache, *, saves: int = LIVE_SAVES
) -> dict[str, Any]:
    """Save of one SKILL.md -> a snapshot that holds it, through real watchdog events.

    Each save gives a description never seen before, so every sample includes its one
    embedding. The library is a copy: the other metrics keep theirs unchanged.
    """
    from explorer.engine.live import LiveIndex

    work = Path(tempfile.mkdtemp(prefix="live-", dir=library.parent))
    root = Path(shutil.copytree(library, work / library.name))
    paths = sorted(root.rglob("SKILL.md"))
    samples: list[float] = []
    with LiveIndex([root], config, models, cache) as live:
        live.wait_for(lambda snap: snap.version >= 2, 10.0)  # the start-up catch-up walk
        names = {skill.path: skill.id for skill in live.snapshot.skills}
        for number in range(saves):
            path = paths[(number * 7919) % len(paths)]
            name = names[str(path)]
            description = f"Saved edit {number} of {name}: reviews typed payloads quickly."
            text = f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n"
            started = time.perf_counter()
            path.write_text(text, encoding="utf-8")
            seen = live.wait_for(
                lambda snap, n=name, d=description: snap.skills[snap.positions[n]].description == d,
                10.0,
            )
            if not seen:
                return _error("live_save", f"save {number} of {path} not seen within 10 s")
            samples.append(_ms(time.perf_counter() - started))
    shutil.rmtree(work, ignore_errors=True)
    stats = _stats(samples)
    return {
        "metric": "live_save",
        "size": len(paths),
        **stats,
        "target": f"median <= {LIVE_SAVE_LIMIT_MS:g} ms at 1,000 skills",
        **_verdict(stats["median_ms"], LIVE_SAVE_LIMIT_MS),
        "note": (
            f"{len(paths)} skills, {saves} saves, each a new description (one embedding); "
            f"debounce {config.watch_debounce_ms:g} ms, max delay {config.watch_max_delay_ms:g} ms"
        ),
    }


_OPEN_SCRIPT = """
import json, sys, time
started = time.perf_counter()
from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import Config
from explorer.engine.live import LiveIndex
from explorer.engine.models import load_models
job = json.load(sys.stdin)
imported = time.perf_counter()
config = Config(**job["config"])
cache = EmbeddingCache(job["cache"])
models = load_models(config, cache)
loaded = time.perf_counter()
live = LiveIndex([job["library"]], config, models, cache)
opened = time.perf_counter()
print(json.dumps({
    "imports_ms": (imported - started) * 1000, "models_ms": (loaded - imported) * 1000,
    "index_ms": (opened - loaded) * 1000, "skills": len(live.snapshot),
    "embedded": live.snapshot.embedded,
}))
"""


def bench_cold_open(library: Path, config: Config, work: Path) -> dict[str, dict[str, Any]]:
    """A new process opens the library: once with an empty cache, then with it warm."""
    cache = Path(tempfile.mkdtemp(prefix="open-cache-", dir=work))
    job = json.dumps(
        {"config": dataclasses.asdict(config), "cache": str(cache), "library": str(library)}
    )
    env = _child_env(work / "xdg-cache-open", work / "xdg-config-empty")
    reports: list[dict[str, Any]] = []
    for _state in ("empty", "warm"):
        run = _run_child([sys.executable, "-c", _OPEN_SCRIPT], job, env, work, 900.0)
        if run.returncode != 0:
            return {
                "cold_open": _error(
                    "cold_open", f"child exit {run.returncode}: {run.stderr.strip()[-300:]}"
                )
            }
        reports.append(json.loads(run.stdout.strip().splitlines()[-1]))
    empty, warm = reports
    warm_total = warm["imports_ms"] + warm["models_ms"] + warm["index_ms"]
    per_skill = empty["index_ms"] / max(empty["skills"], 1)
    return {
        "cold_open_warm": {
            "metric": "cold_open",
            "size": warm["skills"],
            "value": warm_total,
            "unit": "ms",
            "target": f"<= {COLD_OPEN_LIMIT_MS:g} ms, warm embedding cache",
            **_verdict(warm_total, COLD_OPEN_LIMIT_MS),
            "note": (
                f"{warm['skills']} skills, {warm['embedded']} embedded; imports "
                f"{warm['imports_ms']:.0f} ms, models {warm['models_ms']:.0f} ms, index "
                f"{warm['index_ms']:.0f} ms"
            ),
        },
        "cold_open_empty": {
            "metric": "cold_open",
            "size": empty["skills"],
            "value": per_skill,
            "unit": "ms/skill",
            "target": "time per skill (no target)",
            "pass": True,
            "note": (
                f"{empty['skills']} skills, {empty['embedded']} embedded; index "
                f"{empty['index_ms']:.0f} ms, models {empty['models_ms']:.0f} ms"
            ),
        },
    }


# ---------------------------------------------------------------------------------------------
# The whole bench


def run_bench(
    skills_dir: str | None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    config: Config | None = None,
    *,
    repeats: int = 50,
    include: set[str] | None = None,
    work_dir: Path | None = None,
    seed: int = 0,
    hook_repeats: int = HOOK_REPEATS,
    bm25_prompts: int = BM25_PROMPTS,
) -> dict[str, Any]:
    """Run the chosen metrics; returns {"meta": ..., "metrics": {row key: row}}, JSON-able.

    Row keys carry the library size (`decide_warm@1000`) where a metric runs per size.
    """
    config = config or Config()
    chosen = set(METRICS) if include is None else set(include)
    unknown = chosen - set(METRICS)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; choose from {', '.join(METRICS)}")
    small = sorted({int(size) for size in sizes if 0 < int(size) <= WARM_LIMIT})
    began = time.perf_counter()
    sections: dict[str, float] = {}
    metrics: dict[str, dict[str, Any]] = {}
    quiet = config.replace(reranker="off")  # decide_warm and index_build: no reranker

    with ExitStack() as stack:
        if work_dir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="explorer-bench-")))
        else:
            work = Path(work_dir)
            work.mkdir(parents=True, exist_ok=True)

        libraries: dict[int, Path] = {}
        caches: dict[int, Path] = {}

        def library(size: int) -> Path:
            if size not in libraries:
                libraries[size] = generate_library(work / f"lib-{size}", size, seed)
                caches[size] = work / f"xdg-cache-{size}"
            return libraries[size]

        def library_cache(size: int) -> Path:
            """Where the hook, given XDG_CACHE_HOME = caches[size], keeps its vectors."""
            library(size)
            return caches[size] / "skill-explorer"

        models: Models | None = None
        indexes: dict[int, Index] = {}
        build_size = max(small) if small else None
        wants_decide = "decide_warm" in chosen and bool(small or skills_dir)
        if wants_decide or ("index_build" in chosen and small):
            models = load_models(quiet)

        if "index_build" in chosen and build_size is not None and models is not None:
            clock = time.perf_counter()
            shutil.rmtree(library_cache(build_size), ignore_errors=True)  # a reused work_dir
            cache = EmbeddingCache(library_cache(build_size))  # empty: the build is cold
            metrics[f"index_build@{build_size}"] = bench_index_build(
                library(build_size), quiet, models, cache, seed=seed
            )
            cache.close()
            sections["index_build"] = time.perf_counter() - clock
        elif "index_build" in chosen:
            metrics["index_build"] = _error("index_build", f"no size <= {WARM_LIMIT} requested")

        if wants_decide and models is not None:
            clock = time.perf_counter()
            for size in small:
                # the hook's cache: warm for the size index_build filled, cold otherwise
                cache = EmbeddingCache(library_cache(size))
                indexes[size] = build_index([library(size)], quiet, models, cache)
                cache.close()
            sections["build"] = time.perf_counter() - clock

        if wants_decide and models is not None:
            clock = time.perf_counter()
            targets: list[tuple[str, Index]] = [
                (f"decide_warm@{size}", indexes[size]) for size in small
            ]
            if skills_dir:
                user_cache = EmbeddingCache(work / "xdg-cache-user" / "skill-explorer")
                user_index = build_index([skills_dir], quiet, models, user_cache)
                user_cache.close()
                targets.append(("decide_warm@skills_dir", user_index))
            # every timed call in the whole section gets a prompt never embedded before
            per = 2 * repeats + 5
            prompts = synthetic_prompts(per * len(targets), seed + 4, max(small or [0]))
            for number, (key, index) in enumerate(targets):
                batch = prompts[number * per : (number + 1) * per]
                _warm_decide(index, quiet, batch[:5])
                row = bench_decide_warm(index, quiet, batch[5 : 5 + repeats], batch[5 + repeats :])
                if key.endswith("skills_dir"):
                    row["note"] = f"{skills_dir}: {row['note']}"
                metrics[key] = row
            sections["decide_warm"] = time.perf_counter() - clock

        if "bm25_26k" in chosen:
            clock = time.perf_counter()
            metrics["bm25_26k"] = bench_bm25(BM25_SIZE, bm25_prompts, seed)
            sections["bm25_26k"] = time.perf_counter() - clock

        if "hook_cold" in chosen:
            clock = time.perf_counter()
            hook_libraries = {size: (library(size), caches[size]) for size in small}
            if hook_libraries:
                metrics.update(
                    bench_hook_cold(hook_libraries, work, repeats=hook_repeats, seed=seed)
                )
            else:
                metrics["hook_cold"] = _error("hook_cold", f"no size <= {WARM_LIMIT} requested")
            sections["hook_cold"] = time.perf_counter() - clock

        if "peak_rss_1000" in chosen:
            clock = time.perf_counter()
            metrics["peak_rss_1000"] = bench_peak_rss(library(RSS_SIZE), config, work, seed=seed)
            sections["peak_rss_1000"] = time.perf_counter() - clock

        if "live_save" in chosen and small:
            clock = time.perf_counter()
            models = models or load_models(quiet)
            for size in small:
                cache = EmbeddingCache(library_cache(size))
                build_index([library(size)], quiet, models, cache)  # warm, as in real use
                metrics[f"live_save@{size}"] = bench_live_save(library(size), quiet, models, cache)
                cache.close()
            sections["live_save"] = time.perf_counter() - clock

        if "cold_open" in chosen:
            clock = time.perf_counter()
            metrics.update(bench_cold_open(library(RSS_SIZE), quiet, work))
            sections["cold_open"] = time.perf_counter() - clock

    meta = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": cpu_count(),
        "onnxruntime": _version("onnxruntime"),
        "bm25s": _version("bm25s"),
        "rank_bm25": _version("rank_bm25"),
        "model": models.status.dense if models else config.model,
        "sizes": list(sizes),
        "repeats": repeats,
        "seed": seed,
        "vocabulary": _vocabulary(seed).size,
        "skills_dir": skills_dir,
        "sections_s": sections,
        "elapsed_s": time.perf_counter() - began,
    }
    return {"meta": meta, "metrics": metrics}


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed
        return None


# ---------------------------------------------------------------------------------------------
# Report


def _fmt(value: float | None, unit: str = "ms") -> str:
    if value is None:
        return "-"
    if unit == "MB":
        return f"{value:.0f} MB"
    if unit == "ms/skill":
        return f"{value:.2f} ms/sk"
    return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"


def _baseline_text(row: dict[str, Any]) -> str:
    baseline = row.get("baseline")
    if not baseline:
        return "-"
    if "median_ms" in baseline:
        return _fmt(baseline["median_ms"])
    return _fmt(baseline.get("value"), row.get("unit", "ms"))


def format_report(result: dict[str, Any]) -> str:
    """A plain-text table (one row per metric and size) followed by each row's note."""
    header = ("metric", "median", "p95", "baseline", "target", "ratio", "verdict")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for key, row in result.get("metrics", {}).items():
        unit = row.get("unit", "ms")
        if "value" in row:
            median, p95 = _fmt(row["value"], unit), "-"
        else:
            median, p95 = _fmt(row.get("median_ms")), _fmt(row.get("p95_ms"))
        target_value = row.get("target_value")
        target = _fmt(target_value, unit) if target_value is not None else "-"
        ratio = row.get("ratio")
        verdict = "ERROR" if "error" in row else ("PASS" if row.get("pass") else "FAIL")
        rows.append(
            (
                key,
                median,
                p95,
                _baseline_text(row),
                target,
                f"{ratio:.2f}" if isinstance(ratio, float) else "-",
                verdict,
            )
        )
        notes.append(f"{key}: {row.get('target', '')}; {row.get('note', '')}".strip())
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    out = [line(header), line(["-" * width for width in widths])]
    out.extend(line(cells) for cells in rows)
    meta = result.get("meta", {})
    if meta:
        out.append("")
        out.append(
            f"python {meta.get('python')}, onnxruntime {meta.get('onnxruntime')}, "
            f"{meta.get('cpus')} cpus, model {meta.get('model')}, "
            f"elapsed {meta.get('elapsed_s', 0.0):.1f} s"
        )
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)
