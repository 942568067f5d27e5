"""Synthetic skill libraries and prompts for the benchmarks: realistic shape, fixed by a seed.

Descriptions follow a Zipf-like word distribution, so BM25 document frequencies, token
lengths and text lengths look like those of a real library. Skill `i` depends only on
(seed, i): a library of 100 is a prefix of one of 1,000.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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


def vocabulary_size(seed: int = 0) -> int:
    """How many distinct words the libraries of `seed` draw from (reported in the bench meta)."""
    return _vocabulary(seed).size
