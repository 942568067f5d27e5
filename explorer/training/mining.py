"""Mine (query, positive, hard negatives) groups from the training libraries, deterministically.

Queries are what a person would type to reach a skill: its "when to use" lines, quoted
example requests, imperative headings and task steps of its body, and the clauses of its
description rewritten into requests by the rules below (the only source for libraries that
carry descriptions alone). The positive is what the router's stage 2 reads at run time
(`rerank_document(description, body_head)`); hard negatives are the skills today's hybrid
ranking (the engine itself, with the packaged MiniLM, no reranker) puts at the top.

Held-back libraries never enter: a training skill whose name is a held-back skill's name,
whose description copies a held-back description, or whose name or description names one of
the held-back skills the issue lists, is dropped before anything is mined from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

TRAIN_LIBRARIES = ("alirezarezvani-claude-skills", "openclaw-large")
HELD_BACK_LIBRARIES = ("anthropic-apache", "k-dense-scientific-skills", "wshobson-agents")
# Copies of held-back skills that the large library carries.
HELD_BACK_MARKERS = (
    "skill-creator",
    "frontend-design",
    "theme-factory",
    "mcp-builder",
    "literature-review",
)
MAX_QUERIES_BODY = 10  # per skill with a body
MAX_QUERIES_DESCRIPTION = 4  # per skill known by its description only
MAX_QUERY_WORDS = 18
NEGATIVES_POOL = 12  # the router's rerank_top_k: the candidates stage 2 sees
VAL_PERCENT = 5  # skills whose id hashes below this go to the validation split

# Verbs a request starts with (base forms). Third person and gerund forms map back to these.
VERBS = frozenset(
    """
    add analyze analyse answer apply archive assess audit automate back book build calculate
    change check choose clean compare compile compose compute configure connect convert
    create debug define deploy design detect diagnose document download draft edit enable
    estimate evaluate explain export extract fetch find fix forecast format generate get
    help identify implement import improve install integrate investigate launch list load
    log make manage map measure merge migrate model monitor move optimize optimise organize
    parse plan post predict prepare prioritize process profile publish query read rebuild
    record reduce refactor remove render replace report research resize restore review
    rewrite run save scaffold scan schedule score search secure send set setup share
    show simulate sort split start store structure summarize summarise sync tag test
    track train transcribe transform translate troubleshoot tune update upload use
    validate verify visualize visualise watch write
    """.split()
)
_THIRD = {
    verb + ("es" if verb.endswith(("s", "sh", "ch", "x", "z")) else "s"): verb for verb in VERBS
}
_THIRD.update(
    {verb[:-1] + "ies": verb for verb in VERBS if verb.endswith("y") and verb[-2] not in "aeiou"}
)


def _gerund(verb: str) -> str:
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye")):
        return verb[:-1] + "ing"
    if verb in ("set", "run", "plan", "log", "map", "get", "tag", "scan", "ship", "chat"):
        return verb + verb[-1] + "ing"
    return verb + "ing"


_GERUND = {_gerund(verb): verb for verb in VERBS}
_REQUEST_START = re.compile(
    r"^(i|i'm|i've|i'd|we|we're|my|our|can|could|would|how|what|why|help|please|is|are|should)\b",
    re.IGNORECASE,
)
_EXAMPLE_START = re.compile(
    r"^(i|i'm|i've|i'd|can you|could you|help|please|how (do|can|should) i|my|our|"
    r"we need|we want)\b",
    re.IGNORECASE,
)
# Verbs that head noun-like headings too often ("Test Types", "Use Cases") to trust there.
_AMBIGUOUS_HEADING_VERBS = frozenset(
    "use test report post log model record map plan process structure design document score "
    "tag watch sort profile query schedule setup show read set track list change".split()
)
_WHEN_HEADING = re.compile(
    r"when to (use|apply|invoke|trigger)|use (this skill )?when|use cases?|trigger|"
    r"example (requests?|prompts?|queries|usage)|common (tasks|requests|use)|"
    r"good for|best for|ideal for",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^(#{1,4})\s+(.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{12,160})[\"”]")
_MARKUP = re.compile(r"\*\*|__|`|\[([^\]]*)\]\([^)]*\)")
_PREFIX = re.compile(
    r"^(?:(?:mode|step|phase|workflow|part|option|stage)\s*\d*\s*[:.)-]\s*|\d+[.)]\s*)+",
    re.IGNORECASE,
)
_USER_WANTS = re.compile(
    r"^(?:(?:use|invoke|activate|trigger)(?: this(?: skill)?)? )?(?:when|if|whenever) "
    r"(?:the |a |an )?(?:user|you|they|someone|people|developers?|teams?|agents?|clients?)"
    r"(?:'s)?\s+(wants?|needs?|would like|asks?(?: for| to| about)?|requests?|is asked to|"
    r"is trying to|tries to|has|have|are|is|mentions?|says?|shares?|provides?)\s+(?:to\s+)?(.*)$",
    re.IGNORECASE,
)
_USE_FOR = re.compile(
    r"^(?:use(?:d)?|useful|helpful|great|ideal|perfect|good)(?: this(?: skill)?)? for\s+(.*)$",
    re.IGNORECASE,
)
_WHEN_DOING = re.compile(
    r"^(?:(?:use|invoke|activate)(?: this(?: skill)?)? )?(?:when|while|for)\s+(.*)$", re.IGNORECASE
)
_QUOTE_TERMS = re.compile(r"['‘\"“]([^'’\"”]{3,60}?)[,.]?['’\"”]")
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_GENERIC_HEADINGS = re.compile(
    r"^(overview|introduction|examples?|references?|resources|notes?|summary|output|outputs|"
    r"inputs?|usage|installation|setup|requirements|prerequisites|license|troubleshooting|"
    r"tips|faq|related|see also|quick start|quickstart|table of contents|contents|"
    r"core (principles|concepts)|best practices|anti-patterns|checklist|workflow|process)\b",
    re.IGNORECASE,
)

VP_TEMPLATES = (
    "{x}",
    "can you {x}?",
    "please {x}",
    "I want to {x}",
    "help me {x}",
    "I need to {x}",
)
NP_TEMPLATES = (
    "help me with {x}",
    "I need {x}",
    "{x}",
    "can you help with {x}?",
    "looking for {x}",
)


@dataclass(frozen=True)
class TrainSkill:
    library: str
    id: str
    name: str
    description: str
    body_head: str
    body: str


@dataclass(frozen=True)
class Group:
    """One training example: a query, its skill, and the hybrid ranking's hard negatives."""

    library: str
    skill: str
    query: str
    rule: str
    split: str
    positive: str
    negatives: tuple[str, ...]  # hybrid top-12 minus the positive and its near-copies, in order
    negative_ids: tuple[str, ...]
    positive_rank: int  # 1-based place of the skill in the hybrid ranking (0: beyond the top 12)


def stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _pick(templates: Sequence[str], key: str) -> str:
    return templates[stable_hash(key) % len(templates)]


def clean(text: str) -> str:
    text = _MARKUP.sub(lambda m: m.group(1) or "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" -–—:;,.").strip()


def _cap_words(text: str, limit: int = MAX_QUERY_WORDS) -> str:
    words = text.split()
    if len(words) <= limit:
        return text
    cut = " ".join(words[:limit])
    comma = cut.rfind(",")
    return cut[:comma] if comma > len(cut) // 2 else cut


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def verb_phrase(text: str) -> str | None:
    """The clause as an imperative verb phrase, if it starts with a known verb in any form."""
    words = text.split()
    if not words:
        return None
    head = words[0].lower().strip(",")
    if head in VERBS:
        base = head
    elif head in _THIRD:
        base = _THIRD[head]
    elif head in _GERUND:
        base = _GERUND[head]
    else:
        return None
    rest = " ".join(words[1:])
    # "creating, editing, or analyzing X" -> "create, edit, or analyze X"
    rest = (
        re.sub(
            r"\b(\w+ing)\b",
            lambda m: _GERUND.get(m.group(1).lower(), m.group(1)),
            rest,
            count=3,
        )
        if head in _GERUND
        else rest
    )
    rest = (
        re.sub(
            r"\b(\w+e?s)\b(?=,| and| or)",
            lambda m: _THIRD.get(m.group(1).lower(), m.group(1)),
            rest,
        )
        if head in _THIRD
        else rest
    )
    return f"{base} {rest}".strip()


def to_request(raw: str, key: str) -> tuple[str, str] | None:
    """Rewrite one clause into a user-style request: (query, rule name), or None."""
    text = clean(_PREFIX.sub("", clean(raw)))
    if len(text.split()) < 2:
        return None
    match = _USER_WANTS.match(text)
    if match:
        verb, rest = match.group(1).lower(), clean(match.group(2))
        if not rest or len(rest.split()) < 2:
            return None
        if verb.startswith(("want", "would like", "is trying", "tries", "is asked", "request")):
            vp = verb_phrase(rest)
            return _cap_words(
                _pick(VP_TEMPLATES, key).format(x=vp) if vp else f"I want to {rest}"
            ), "user-wants"
        if verb.startswith("need"):
            vp = verb_phrase(rest)
            return _cap_words(f"I need to {vp}" if vp else f"I need {rest}"), "user-needs"
        if verb.startswith("ask"):
            vp = verb_phrase(rest)
            return _cap_words(
                _pick(VP_TEMPLATES, key).format(x=vp) if vp else f"help with {rest}"
            ), "user-asks"
        if verb.startswith(("mention", "say")):
            return None  # handled as quoted trigger terms
        if verb in ("has", "have"):
            return _cap_words(f"I have {rest}"), "user-has"
        if verb in ("is", "are"):
            vp = verb_phrase(rest)
            return _cap_words(f"I'm {rest}" if not vp else f"help me {vp}"), "user-is"
        return _cap_words(f"here is {rest}"), "user-shares"
    match = _USE_FOR.match(text)
    if match:
        rest = clean(match.group(1))
        vp = verb_phrase(rest)
        if vp:
            return _cap_words(_pick(VP_TEMPLATES, key).format(x=vp)), "use-for"
        return _cap_words(_pick(NP_TEMPLATES, key).format(x=_lower_first(rest))), "use-for"
    match = _WHEN_DOING.match(text)
    if match:
        rest = clean(match.group(1))
        vp = verb_phrase(rest)
        if vp:
            return _cap_words(_pick(VP_TEMPLATES, key).format(x=vp)), "when-doing"
        if rest.split()[0].lower() in ("the", "a", "an", "working", "dealing"):
            return _cap_words(f"I'm working on {_lower_first(rest)}"), "when-context"
        return None
    if _REQUEST_START.match(text):
        return _cap_words(text), "request"
    vp = verb_phrase(text)
    if vp:
        return _cap_words(_pick(VP_TEMPLATES, key).format(x=vp)), "verb-clause"
    return None


def quoted_terms(text: str) -> list[str]:
    """Trigger terms the description lists in quotes ("mentions 'cold email,' 'SDR emails'")."""
    terms = [clean(term) for term in _QUOTE_TERMS.findall(text)]
    return [term for term in terms if 1 <= len(term.split()) <= 8]


def description_clauses(description: str) -> Iterator[str]:
    """Sentences, and the parts of 'when X, Y, or Z' lists, of a description."""
    for sentence in _SENTENCES.split(description.replace("\n", " ")):
        sentence = sentence.strip()
        if not sentence:
            continue
        yield sentence
        lead = re.match(
            r"^(.*?\b(?:when|use for|used for|useful for))\s+(.*)$", sentence, re.IGNORECASE
        )
        if lead:
            parts = re.split(r",\s*(?:or\s+|and\s+)?|;\s*|\s+or\s+(?=\w+ing\b)", lead.group(2))
            if len(parts) > 1:
                for part in parts:
                    if len(part.split()) >= 3:
                        yield f"{lead.group(1)} {part}"


def queries_from_description(skill: TrainSkill) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for number, clause in enumerate(description_clauses(skill.description)):
        result = to_request(clause, f"{skill.id}:d{number}")
        if result:
            found.append((result[0], "desc-" + result[1]))
    for number, term in enumerate(quoted_terms(skill.description)):
        template = _pick(NP_TEMPLATES, f"{skill.id}:t{number}")
        found.append((template.format(x=term), "desc-trigger-term"))
    return found


def queries_from_body(skill: TrainSkill) -> list[tuple[str, str]]:
    """When-to-use items, quoted example requests, imperative headings, task steps."""
    when: list[tuple[str, str]] = []
    examples: list[tuple[str, str]] = []
    headings: list[tuple[str, str]] = []
    tasks: list[tuple[str, str]] = []
    in_when = False
    in_code = False
    for number, line in enumerate(skill.body.splitlines()):
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        key = f"{skill.id}:b{number}"
        heading = _HEADING.match(line.strip())
        if heading:
            title = clean(_PREFIX.sub("", clean(heading.group(2))))
            in_when = bool(_WHEN_HEADING.search(title))
            if len(heading.group(1)) >= 2 and not _GENERIC_HEADINGS.match(title):
                vp = verb_phrase(title)
                if (
                    vp
                    and 3 <= len(vp.split()) <= 10
                    and vp.split()[0] not in _AMBIGUOUS_HEADING_VERBS
                ):
                    headings.append(
                        (_pick(VP_TEMPLATES, key).format(x=_lower_first(vp)), "body-heading")
                    )
            continue
        for quoted in _QUOTED.findall(line):
            text = clean(quoted)
            if 4 <= len(text.split()) <= 25 and (
                _EXAMPLE_START.match(text) or verb_phrase(text.lower())
            ):
                examples.append((_cap_words(text), "body-example"))
        item = _ITEM.match(line)
        if item and in_when:
            result = to_request(item.group(1), key)
            if result:
                when.append((result[0], "body-when-" + result[1]))
            continue
        numbered = _NUMBERED.match(line)
        if numbered:
            text = clean(
                numbered.group(1).split(":")[0]
                if ":" in numbered.group(1)[:40]
                else numbered.group(1)
            )
            vp = verb_phrase(text)
            if vp and 3 <= len(vp.split()) <= 14:
                tasks.append((_pick(VP_TEMPLATES, key).format(x=_lower_first(vp)), "body-task"))
    # A fair share from each source: when-to-use and examples first, they read most like prompts.
    ordered: list[tuple[str, str]] = []
    for bucket, share in ((when, 4), (examples, 3), (headings, 2), (tasks, 2)):
        ordered.extend(_spread(bucket, share, skill.id))
    return ordered


def _spread(items: list[tuple[str, str]], count: int, seed: str) -> list[tuple[str, str]]:
    """Up to `count` items spread over the list (not just its head), deterministically."""
    unique = list(dict.fromkeys(items))
    if len(unique) <= count:
        return unique
    step = len(unique) / count
    offset = stable_hash(seed) % max(int(step), 1)
    return [unique[min(int(i * step) + offset, len(unique) - 1)] for i in range(count)]


def mine_queries(skill: TrainSkill) -> list[tuple[str, str]]:
    """Deduplicated, capped (query, rule) pairs for one skill."""
    if skill.body.strip():
        candidates = queries_from_body(skill) + _spread(
            queries_from_description(skill), 3, skill.id
        )
        limit = MAX_QUERIES_BODY
    else:
        candidates = _spread(queries_from_description(skill), MAX_QUERIES_DESCRIPTION, skill.id)
        limit = MAX_QUERIES_DESCRIPTION
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    description = skill.description.lower()
    for query, rule in candidates:
        query = re.sub(r"\s+", " ", query).strip()
        low = query.lower().rstrip("?.!")
        words = low.split()
        if len(words) < 3 or low in seen or (low in description and len(words) > 12):
            continue  # too short, duplicate, or a long verbatim copy of the positive
        seen.add(low)
        out.append((query, rule))
        if len(out) == limit:
            break
    return out


# ----------------------------------------------------------------- libraries and the filter


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


class Named(Protocol):
    """What `HeldBack.reason` reads: a TrainSkill, or the engine's Skill (pools.py)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class HeldBack:
    names: frozenset[str]
    descriptions: frozenset[str]
    markers: tuple[str, ...]

    def reason(self, skill: Named) -> str | None:
        """Why this training skill must be dropped, or None when it is clean."""
        name = _norm(skill.name)
        if name in self.names:
            return f"name {skill.name!r} is a held-back skill's name"
        if _norm(skill.description)[:120] in self.descriptions:
            return "description copies a held-back description"
        haystack = f" {_norm(skill.name)} {_norm(skill.description)} "
        for marker in self.markers:
            if f" {marker} " in haystack:
                return f"names held-back skill {marker!r}"
        return None


def held_back(corpus: Path) -> HeldBack:
    """Names and description openings of every held-back skill, plus the issue's markers."""
    from explorer.engine.discovery.skills import discover

    names: set[str] = set()
    descriptions: set[str] = set()
    markers = {_norm(marker) for marker in HELD_BACK_MARKERS}
    for library in HELD_BACK_LIBRARIES:
        for skill in discover([corpus / library]).skills:
            names.add(_norm(skill.name))
            descriptions.add(_norm(skill.description)[:120])
            if "-" in skill.name and len(skill.name) >= 8:
                markers.add(_norm(skill.name))  # distinctive hyphenated names, e.g. mcp-builder
    return HeldBack(frozenset(names), frozenset(descriptions), tuple(sorted(markers)))


def library_root(corpus: Path, library: str, scratch: Path) -> Path:
    """A directory of SKILL.md files for the library (description-only sets are written out)."""
    source = corpus / library
    jsonl = source / "skills.jsonl"
    if not jsonl.is_file():
        return source
    root = scratch / library
    for number, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        record = json.loads(line)
        name, description = str(record.get("name", "")), str(record.get("description", ""))
        folder = root / f"{number:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = f"---\nname: {json.dumps(name)}\ndescription: {json.dumps(description)}\n---\n"
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return root


# ----------------------------------------------------------------- hard negatives


def mine_groups(
    corpus: Path,
    log: Callable[[str], object] = print,
) -> tuple[list[Group], dict[str, object]]:
    """All groups of both training libraries, in a fixed order, and the mining statistics."""
    import numpy as np

    from explorer.engine.base.config import Config
    from explorer.engine.index.snapshot import build_index
    from explorer.engine.inference.models import load_models
    from explorer.engine.inference.rerank import rerank_document
    from explorer.engine.route.pipeline import decide

    config = Config(reranker="off")
    models = load_models(config)
    if models.embedder is None:
        raise RuntimeError(f"mining needs the packaged dense model: {models.status.dense_error}")
    banned = held_back(corpus)
    groups: list[Group] = []
    stats: dict[str, object] = {"held_back_names": len(banned.names)}
    with tempfile.TemporaryDirectory(prefix="reranker-mining-") as scratch:
        for library in TRAIN_LIBRARIES:
            root = library_root(corpus, library, Path(scratch))
            index = build_index([root], config, models)
            assert index.vectors is not None
            skills = [
                TrainSkill(library, p.id, p.name, p.description, p.body_head, p.body)
                for p in index.skills
            ]
            dropped: dict[str, str] = {}
            keep: list[int] = []
            for position, (parsed, skill) in enumerate(zip(index.skills, skills, strict=True)):
                reason = banned.reason(skill)
                if reason:
                    dropped[parsed.id] = reason
                else:
                    keep.append(position)
            excluded = {i for i, parsed in enumerate(index.skills) if parsed.id in dropped}
            rules: dict[str, int] = {}
            ranks: list[int] = []
            made = 0
            for position in keep:
                parsed, skill = index.skills[position], skills[position]
                split = (
                    "val" if stable_hash(f"{library}/{skill.id}") % 100 < VAL_PERCENT else "train"
                )
                positive = rerank_document(parsed.description, parsed.body_head)
                for query, rule in mine_queries(skill):
                    decision = decide(query, index, config)
                    order = [int(i) for i in decision.channels.hybrid_order[: NEGATIVES_POOL + 1]]
                    rank = order.index(position) + 1 if position in order[:NEGATIVES_POOL] else 0
                    negatives: list[int] = []
                    for other in order:
                        if other == position or other in excluded:
                            continue
                        twin = float(index.vectors[other] @ index.vectors[position])
                        if twin >= 0.92 or index.skills[other].name == parsed.name:
                            continue  # a near-copy of the positive is not a negative
                        negatives.append(other)
                    negatives = negatives[:NEGATIVES_POOL]
                    groups.append(
                        Group(
                            library=library,
                            skill=skill.id,
                            query=query,
                            rule=rule,
                            split=split,
                            positive=positive,
                            negatives=tuple(
                                rerank_document(
                                    index.skills[i].description, index.skills[i].body_head
                                )
                                for i in negatives
                            ),
                            negative_ids=tuple(index.skills[i].id for i in negatives),
                            positive_rank=rank,
                        )
                    )
                    rules[rule] = rules.get(rule, 0) + 1
                    ranks.append(rank)
                    made += 1
            ranks_array = np.array(ranks) if ranks else np.zeros(1)
            stats[library] = {
                "skills": len(index.skills),
                "rejected_files": len(index.rejected),
                "dropped_held_back": len(dropped),
                "dropped_examples": sorted(f"{k}: {v}" for k, v in dropped.items())[:40],
                "skills_with_queries": len({g.skill for g in groups if g.library == library}),
                "groups": made,
                "rules": dict(sorted(rules.items())),
                "hybrid_top1": float(np.mean(ranks_array == 1)),
                "hybrid_in_top12": float(np.mean(ranks_array > 0)),
            }
            log(f"mined {library}: {json.dumps(stats[library])}")
    return groups, stats


def write_groups(groups: Iterable[Group], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for group in groups:
            handle.write(json.dumps(asdict(group), ensure_ascii=False) + "\n")


def read_groups(path: Path) -> list[Group]:
    """Groups written by `write_groups`, plain or gzipped (the committed copy is .gz)."""
    import gzip

    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
    out: list[Group] = []
    for line in text.splitlines():
        record = json.loads(line)
        record["negatives"] = tuple(record["negatives"])
        record["negative_ids"] = tuple(record["negative_ids"])
        out.append(Group(**record))
    return out
