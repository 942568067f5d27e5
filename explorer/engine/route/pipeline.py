"""`decide()`: the one cascade (spec §3, §5, §9.1), shared by route, why, hook, eval and the UI.

Stage 1 scores every skill with vectorised channels; the gates then run in the spec's
order, each recorded with its inputs, thresholds and outcome, and every skill ends with
a verdict naming the gate that kept or dropped it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from explorer.engine.base.config import Config
from explorer.engine.index.lexical import MIN_SHARED_TERMS
from explorer.engine.index.snapshot import Index
from explorer.engine.inference.rerank import Agreement, agreement_gate, rerank_document, sigmoid
from explorer.engine.route.decision import (
    BAND_HIGH,
    Channels,
    Decision,
    Gate,
    GateName,
    Injection,
    InjectionMode,
    RelevanceTrace,
    Stage,
    TaskTrace,
    Verdict,
    band,
)
from explorer.engine.route.inject import Pick
from explorer.engine.route.inject import build as build_injection
from explorer.engine.route.matches import Hits
from explorer.engine.route.presets import Tuning, generic_word, resolve
from explorer.engine.route.project import (
    PROJECT_GATE_SLACK,
    code_terms,
    manifest_terms,
    skills_for_terms,
)
from explorer.engine.route.query import Query, prompt_read
from explorer.engine.route.query import file_families as file_families
from explorer.engine.route.query import invoked_names as invoked_names
from explorer.engine.route.relevance import (
    BM25_POOL,
    MULTILINGUAL_POOL,
    CandidateEvidence,
    features,
    load_relevance_model,
)
from explorer.engine.route.session import Session, SessionVerdict
from explorer.engine.route.tasks import task_clauses

LEXICAL_CONFIDENCE = 0.90  # §5.2
COSINE_CONFIDENCE_SPAN = 0.45  # §5.7


def cosine_confidence(score: float, min_similarity: float) -> float:
    """§5.7: 0.5 at the floor, rising linearly over 0.45, capped at 0.99."""
    lift = min(max((score - min_similarity) / COSINE_CONFIDENCE_SPAN, 0.0), 1.0)
    return min(max(0.5 + 0.47 * lift, 0.0), 0.99)


# What a stage returns: the stage, its picks with their confidence, and the verdict of
# every skill it did not decide about.
Outcome = tuple[Stage, list[tuple[int, float]], Verdict]


@dataclass
class _Run:
    """Mutable state of one decide() call; frozen into a Decision at the end."""

    query: Query
    index: Index
    config: Config
    tuning: Tuning
    channels: Channels
    hits: Hits
    project_terms: dict[str, str]
    ledger: Session | None
    timings: dict[str, float]
    gates: list[Gate] = field(default_factory=list)
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    rerank: dict[int, float] = field(default_factory=dict)
    pool: dict[int, str] = field(default_factory=dict)
    relevance: RelevanceTrace | None = None
    tasks: tuple[TaskTrace, ...] = ()


@dataclass
class _StageOne:
    """§3: every channel for every skill, what earned each boost, and what the §9 keyword
    guards removed."""

    channels: Channels
    hits: Hits
    project_terms: dict[str, str]
    query_terms: tuple[str, ...]
    generic: list[str]  # prompt tokens the generic-word guard ignored
    floored: list[int]  # skills whose keyword boost the cosine guard removed


NESTED_IN_GATES = ("multilingual", "rerank")  # timed inside the cascade, each on its own


def _lap(timings: dict[str, float], name: str, started: float) -> float:
    now = time.perf_counter()
    timings[name] = (now - started) * 1000
    return now


def decide(
    prompt: str,
    index: Index,
    config: Config,
    *,
    context: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    ledger: Session | None = None,
    tasks: bool = True,
) -> Decision:
    """Route one prompt: stage 1 channels, then the cascade's gates in order (§5).

    `context` holds the conversation's recent prompts, oldest first: files named there
    count for the file and project channels, as in the reference (src/hook.rs). `cwd` is
    the working directory whose manifests feed the project channel (§3.5); None: none.
    `ledger` is the session's (§10): a skill already in the conversation is held back by
    its own gate, so the trace shows why a skill that won was not sent again.
    `tasks`: under the relevance model, route each clause of a several-task prompt on its
    own too (§9.12); off for the clauses themselves.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    tuning = resolve(config, index.models.status, len(index))
    shown, prompt = prompt, prompt_read(prompt)  # §2.6: the Decision keeps the whole prompt
    context = tuple(prompt_read(turn) for turn in context)
    query = Query.parse(prompt, context)
    one = _stage_one(query, index, config, tuning, cwd, timings)
    clock = time.perf_counter()
    run = _Run(
        query, index, config, tuning, one.channels, one.hits, one.project_terms, ledger, timings
    )
    blank, empty = query.blank, len(index) == 0
    if (
        not blank
        and not empty
        and (tuning.keyword_generic_guard or _guard_shown(tuning, "keyword"))
    ):
        floored = [index.ids[i] for i in one.floored]
        run.gates.append(_keyword_guard_gate(tuning, one.generic, floored))
    if blank or empty:
        stage = Stage.BLANK if blank else Stage.EMPTY
        picked: list[tuple[int, float]] = []
        default_verdict = Verdict.BLANK_PROMPT if blank else Verdict.EMPTY
    else:
        stage, picked, default_verdict = _cascade(run, one.channels, prompt)
    clock = _lap(timings, "gates", clock)
    # The stages the cascade ran on the way are timed apart: the gates' own time is the rest,
    # so the parts add up to the total.
    timings["gates"] -= sum(timings.get(stage, 0.0) for stage in NESTED_IN_GATES)
    if tasks and stage is Stage.RELEVANCE and run.relevance is not None:
        picked = _route_tasks(run, prompt, picked, context, cwd)
        clock = _lap(timings, "tasks", clock)
    if config.force and config.preset != "reference" and stage not in _FORCE_DECIDED:
        picked = _forced(run, one.channels, picked)
    injected, text = _finish(run, picked, prompt, stage)
    _lap(timings, "text", clock)
    timings["total"] = (time.perf_counter() - started) * 1000
    return _decision(run, shown, stage, default_verdict, injected, text, one.query_terms)


def _decision(
    run: _Run,
    prompt: str,
    stage: Stage,
    default_verdict: Verdict,
    injected: tuple[Injection, ...],
    text: str,
    query_terms: tuple[str, ...],
) -> Decision:
    """The run, frozen: what the trace, the JSON schema and every front end read."""
    status, tuning = run.index.models.status, run.tuning
    return Decision(
        prompt=prompt,
        stage=stage,
        injected=injected,
        text=text,
        gates=tuple(run.gates),
        channels=run.channels,
        verdicts=run.verdicts,
        default_verdict=default_verdict,
        rerank=run.rerank,
        pool=run.pool,
        timings_ms=run.timings,
        models={
            "dense": status.dense,
            "dense_error": status.dense_error,
            "reranker": status.reranker,
            "reranker_note": status.reranker_note,
            "calibration": tuning.source,
            "rerank_calibration": status.rerank_calibration.source,
            # §9.14: the multilingual encoder, when this library's index has its vectors
            "multilingual": status.multilingual if run.index.multilingual is not None else None,
        },
        thresholds={
            "min_similarity": tuning.min_similarity,
            "score_margin": tuning.score_margin,
            "rerank_min": tuning.rerank_min,
            "rerank_margin": tuning.rerank_margin,
        },
        tuning=tuning.as_dict(),
        project_terms=run.project_terms,
        hits=run.hits,
        relevance=run.relevance,
        tasks=run.tasks,
        query_terms=query_terms,
        index_version=run.index.version,
    )


def _stage_one(
    query: Query,
    index: Index,
    config: Config,
    tuning: Tuning,
    cwd: str | os.PathLike[str] | None,
    timings: dict[str, float],
) -> _StageOne:
    """§3.1-§3.6 and the §9 fused BM25 channel, each skill at once (numpy)."""
    clock = time.perf_counter()
    cosine, clock = _dense_channel(query.text, index, timings, clock)
    # §5.2 lexical statistics (used by the fast path, the overlap column and the explorer)
    lexical = index.lexical.score_terms(query.terms)
    clock = _lap(timings, "lexical", clock)
    # What matched, named (engine/route/matches.py): recorded where each boost is added.
    hits = Hits(
        config.keyword_boost,
        config.phrase_boost,
        config.file_boost,
        config.project_boost,
        keyword_min_cosine=tuning.keyword_min_cosine,
    )
    keyword, generic, floored = _keyword_channel(query, index, config, tuning, cosine, hits)
    phrase = _phrase_channel(index, config, set(query.terms), hits)
    file = _file_channel(query, index, config, hits)
    project, project_terms = _project_channel(
        query, cwd, index, config, cosine, tuning.min_similarity, hits
    )
    score = cosine + keyword + phrase + file + project  # §3.6 (context channel: 0, §3.5)
    # §9 extension: BM25 as an absolute channel (bm25_norm keeps "perfect match" and "no
    # match" apart in any library); weight 0, the reference, leaves the score untouched.
    bm25_fused = tuning.bm25_weight * lexical.normalised
    if tuning.bm25_weight != 0.0:
        score = score + bm25_fused
    hybrid_order = np.lexsort((index.id_rank, -np.nan_to_num(score, nan=-np.inf)))
    bm25_order = np.lexsort((index.id_rank, -lexical.raw))
    bm25_rank = np.zeros(len(index), dtype=np.int64)
    scored = bm25_order[lexical.raw[bm25_order] > 0]
    bm25_rank[scored] = np.arange(1, len(scored) + 1)
    _lap(timings, "channels", clock)
    channels = Channels(
        ids=index.ids,
        paths=index.paths,
        cosine=cosine,
        keyword=keyword,
        phrase=phrase,
        file=file,
        project=project,
        score=score,
        bm25_fused=bm25_fused,
        bm25=lexical.raw,
        bm25_norm=lexical.normalised,
        bm25_rank=bm25_rank,
        matched_terms=lexical.matched_terms,
        jaccard=lexical.jaccard,
        hybrid_order=hybrid_order,
        bm25_order=bm25_order,
        query_terms=len(lexical.query_terms),
        positions=index.positions,
    )
    return _StageOne(channels, hits, project_terms, lexical.query_terms, generic, floored)


def _dense_channel(
    prompt: str, index: Index, timings: dict[str, float], clock: float
) -> tuple[np.ndarray, float]:
    """§3.1: each skill's cosine to the prompt (0 without a dense model or a prompt)."""
    n = len(index)
    cosine = np.zeros(n, dtype=np.float64)
    embedder = index.models.embedder
    if embedder is not None and index.vectors is not None and n and prompt.strip():
        query = embedder.embed_query(prompt)
        clock = _lap(timings, "embed", clock)
        if query.shape[0] == index.vectors.shape[1]:
            cosine = (index.vectors @ query).astype(np.float64)
            cosine[~np.isfinite(cosine)] = 0.0
    return cosine, _lap(timings, "dense", clock)


def _keyword_channel(
    query: Query, index: Index, config: Config, tuning: Tuning, cosine: np.ndarray, hits: Hits
) -> tuple[np.ndarray, list[str], list[int]]:
    """§3.2: keyword_boost per keyword of the skill the prompt names, after the §9 guards:
    a generic word names no skill, and a name token alone must not lift a skill the prompt
    is not about (keyword_min_cosine). Returns the channel, the generic tokens ignored and
    the skills whose boost the cosine guard removed."""
    keyword = np.zeros(len(index), dtype=np.float64)
    generic: list[str] = []
    for token in sorted(query.keyword_tokens):
        postings = index.keyword_postings.get(token)
        if postings is not None:
            if tuning.keyword_generic_guard and generic_word(token):
                generic.append(token)
                hits.generic[token] = postings
                continue
            np.add.at(keyword, postings, 1.0)  # a skill listed twice counts twice
            hits.keywords[token] = postings
    keyword *= config.keyword_boost
    floored: list[int] = []
    if tuning.keyword_min_cosine > 0:
        below = (keyword > 0) & (cosine < tuning.keyword_min_cosine)
        floored = [int(i) for i in np.flatnonzero(below)]
        keyword[below] = 0.0
        hits.floored = frozenset(floored)
    return keyword, generic, floored


def _phrase_channel(index: Index, config: Config, query_set: set[str], hits: Hits) -> np.ndarray:
    """§3.3: phrase_boost per trigger phrase whose every token is in the prompt."""
    phrase = np.zeros(len(index), dtype=np.float64)
    for token in query_set:
        for position, tokens in index.phrase_table.get(token, ()):
            if all(part in query_set for part in tokens):
                phrase[position] += 1.0
                hits.phrases.append((position, tokens))
    return phrase * config.phrase_boost


def _file_channel(query: Query, index: Index, config: Config, hits: Hits) -> np.ndarray:
    """§3.4: file_boost for the skill of each document family the prompt names a file of."""
    file = np.zeros(len(index), dtype=np.float64)
    for family, name in query.families.items():
        named = index.positions.get(family)
        if named is not None:
            file[named] = config.file_boost
            hits.files.append((name, family, named))
    return file


def _project_channel(
    query: Query,
    cwd: str | os.PathLike[str] | None,
    index: Index,
    config: Config,
    cosine: np.ndarray,
    min_similarity: float,
    hits: Hits,
) -> tuple[np.ndarray, dict[str, str]]:
    """§3.5: project_boost for a skill of the working directory's ecosystem (its manifests,
    the code files named) that is already close to the prompt (reference: src/rank.rs)."""
    n = len(index)
    project = np.zeros(n, dtype=np.float64)
    project_terms: dict[str, str] = {}
    if config.project_boost > 0 and n:
        terms = manifest_terms(cwd) + code_terms(query.extensions)
        gate = min_similarity - PROJECT_GATE_SLACK
        for position, term in skills_for_terms(terms, index.ecosystem_postings).items():
            if cosine[position] >= gate:
                project[position] = config.project_boost
                project_terms[index.ids[position]] = term
                hits.projects[position] = term
    return project, project_terms


def _keyword_guard_gate(tuning: Tuning, generic: list[str], floored: list[str]) -> Gate:
    """§9 guards on the keyword channel (only when one is on), so `why` says what they removed."""
    return Gate(
        name=GateName.KEYWORD_GUARD,
        section="9",
        passed=not generic and not floored,
        inputs={"generic_tokens": generic, "below_cosine": floored},
        thresholds={
            "keyword_generic_guard": tuning.keyword_generic_guard,
            "keyword_min_cosine": tuning.keyword_min_cosine,
            **_origin(tuning, "keyword_min_cosine"),
        },
        note="keyword boosts removed by the §9 guards" if generic or floored else "",
    )


def _guard_shown(tuning: Tuning, which: str) -> bool:
    """A §9 cosine guard is traced when it is on, or when the preset has it but this dense
    model does not (presets.resolve_guards), so the trace says why it is off."""
    key = f"{which}_min_cosine"
    return bool(getattr(tuning, key) > 0 or tuning.origin(key).startswith("off"))


def _origin(tuning: Tuning, key: str) -> dict[str, str]:
    origin = tuning.origin(key)
    return {f"{key}_from": origin} if origin else {}


def _cascade(run: _Run, c: Channels, prompt: str) -> Outcome:
    """§5.1-§5.5 (or §9.12's relevance model); returns the stage, the picks with their
    confidence, and the default verdict."""
    decided = _relevance_or_gates(run, c, prompt)
    if decided is not None:
        return decided
    confident = _confident_winner(run, c)
    fast = _lexical_fast_path(run, c, confident)
    if fast is not None:
        return fast
    return _recall_floor_then_rerank(run, c, prompt, confident)


def _relevance_or_gates(run: _Run, c: Channels, prompt: str) -> Outcome | None:
    """§9.12: the learned preset's relevance model decides when it can; None leaves the
    decision to the §5 gates, with a gate that says why."""
    if run.tuning.relevance_off:
        run.gates.append(
            Gate(
                name=GateName.RELEVANCE,
                section="9.12",
                passed=False,
                skipped=True,
                note=run.tuning.relevance_off,
            )
        )
    if not run.tuning.relevance:
        return None
    try:
        return _relevance_stage(run, c, prompt)
    except (OSError, ValueError) as error:  # the model file missing or malformed
        run.relevance = None
        run.pool.clear()
        run.rerank.clear()
        run.gates.append(
            Gate(
                name=GateName.RELEVANCE,
                section="9.12",
                passed=False,
                inputs={"error": str(error)},
                note=f"relevance model unusable ({error}); the §5 gates decide",
            )
        )
        return None


# Where `force` needs no second look: the cosine stage applies it itself (§5.5), and a
# blank prompt or an empty library has nothing to force.
_FORCE_DECIDED = frozenset({Stage.COSINE, Stage.BLANK, Stage.EMPTY})


def _forced(run: _Run, c: Channels, picked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """§9.17: a forced skill with a keyword hit joins the picks whatever stage decided (the
    reference forces in the cosine stage alone, which the relevance model never reaches,
    so the config's `force` did nothing there). After the stage's own picks: max_skills
    keeps those first."""
    have = {position for position, _ in picked}
    forced = [
        position
        for skill_id in sorted(set(run.config.force))  # a name given twice is forced once
        if (position := run.index.positions.get(skill_id)) is not None
        and position not in have
        and c.keyword[position] > 0
    ]
    run.gates.append(
        Gate(
            name=GateName.FORCE,
            section="9.17",
            passed=bool(forced),
            inputs={"forced": [c.ids[i] for i in forced]},
            thresholds={"force": sorted(run.config.force)},
            note="forced skills need a keyword hit; they join what the stage picked",
        )
    )
    confidence = run.tuning.min_similarity
    return [*picked, *((i, cosine_confidence(float(c.score[i]), confidence)) for i in forced)]


def _confident_winner(run: _Run, c: Channels) -> bool:
    """§5.1: a clear winner on cosines (not hybrid scores) skips the fast path and rerank."""
    config, n = run.config, len(c.ids)
    top_two = np.sort(np.partition(c.cosine, n - 2)[n - 2 :])[::-1] if n > 1 else c.cosine
    c1 = float(top_two[0])
    c2 = float(top_two[1]) if n > 1 else 0.0
    confident = c1 >= config.high_conf and c1 - c2 >= config.clear_gap
    run.gates.append(
        Gate(
            name=GateName.CONFIDENT_WINNER,
            section="5.1",
            passed=confident,
            inputs={"c1": c1, "c2": c2, "gap": c1 - c2, "top": c.ids[int(np.argmax(c.cosine))]},
            thresholds={"high_conf": config.high_conf, "clear_gap": config.clear_gap},
            note="skips the lexical fast path and rerank" if confident else "",
        )
    )
    return confident


def _lexical_fast_path(run: _Run, c: Channels, confident: bool) -> Outcome | None:
    """§5.2: BM25's winner, far enough ahead, decides alone (None: it does not)."""
    tuning, ids, n = run.tuning, c.ids, len(c.ids)
    top_i = int(c.bm25_order[0])
    second_i = int(c.bm25_order[1]) if n > 1 else None
    top_bm25 = float(c.bm25[top_i])
    second_bm25 = float(c.bm25[second_i]) if second_i is not None else None
    shared = int(c.matched_terms[top_i])
    top_cosine = float(c.cosine[top_i])
    inputs = {
        "top": ids[top_i],
        "top_bm25": top_bm25,
        "second": ids[second_i] if second_i is not None else None,
        "second_bm25": second_bm25,
        "gap": top_bm25 - second_bm25 if second_bm25 is not None else None,
        "shared_terms": shared,
    }
    thresholds: dict[str, Any] = {
        "lexical_min": tuning.lexical_min,
        "lexical_margin": tuning.lexical_margin,
        "min_shared_terms": MIN_SHARED_TERMS,
    }
    if _guard_shown(tuning, "lexical"):  # §9 guard, not shown under the reference
        inputs["top_cosine"] = top_cosine
        thresholds["lexical_min_cosine"] = tuning.lexical_min_cosine
        thresholds.update(_origin(tuning, "lexical_min_cosine"))
    # §9.9: a reranker calibrated to decide without the fast path turns it off.
    reranker_decides = tuning.fast_path_off
    if confident or tuning.lexical_min <= 0 or reranker_decides:
        note = (
            "confident winner"
            if confident
            else "off (lexical_min = 0)"
            if tuning.lexical_min <= 0
            else f"off: the reranker decides ({reranker_decides})"
        )
        run.gates.append(
            Gate(
                name=GateName.LEXICAL_DOMINANCE,
                section="5.2",
                passed=False,
                skipped=True,
                inputs=inputs,
                thresholds=thresholds,
                note=note,
            )
        )
        return None
    fires = (
        top_bm25 >= tuning.lexical_min
        and second_bm25 is not None
        and top_bm25 - second_bm25 >= tuning.lexical_margin
        and shared >= MIN_SHARED_TERMS
        and top_cosine >= tuning.lexical_min_cosine
    )
    run.gates.append(
        Gate(
            name=GateName.LEXICAL_DOMINANCE,
            section="5.2",
            passed=fires,
            inputs=inputs,
            thresholds=thresholds,
        )
    )
    if fires:
        return Stage.LEXICAL, [(top_i, LEXICAL_CONFIDENCE)], Verdict.LEXICAL_DOMINANCE
    return None


def _recall_floor_then_rerank(run: _Run, c: Channels, prompt: str, confident: bool) -> Outcome:
    """§5.3: nothing relevant, or a clear winner, leaves the cosine stage to decide; an
    ambiguous prompt goes to the reranker (§5.4), and a reranker that cannot score it
    leaves it to the cosine stage too, never to silence (reference: src/rerank.rs)."""
    config = run.config
    top_h = int(c.hybrid_order[0])
    top_score = float(c.score[top_h])
    reranker = run.index.models.reranker
    # §9: a reranker calibrated to judge weaker candidates (its own floor) sees them.
    recall_floor = run.tuning.recall_floor
    relevant = top_score >= recall_floor
    run.gates.append(
        Gate(
            name=GateName.RECALL_FLOOR,
            section="5.3",
            passed=relevant,
            inputs={"top": c.ids[top_h], "top_score": top_score},
            thresholds={"recall_floor": recall_floor},
            note="" if relevant else "nothing relevant: rerank skipped",
        )
    )
    ambiguous = relevant and not confident
    failure = ""
    if ambiguous and reranker is not None:
        if config.rerank_top_k <= 0:
            failure = "rerank_top_k = 0: no candidates, so the cosine stage decides"
        else:
            try:
                return _rerank_stage(run, c, prompt)
            except Exception as error:  # onnxruntime and tokenizers raise their own types
                run.pool.clear()
                run.rerank.clear()
                failure = (
                    f"reranker failed ({type(error).__name__}: {error}); the cosine stage decides"
                )
    if failure:
        run.gates.append(
            Gate(
                name=GateName.RERANKER,
                section="5.4",
                passed=False,
                inputs={"available": True, "ambiguous": True, "error": failure},
                thresholds={"rerank_top_k": config.rerank_top_k},
                note=failure,
            )
        )
        return _cosine_stage(run, c)
    run.gates.append(
        Gate(
            name=GateName.RERANKER,
            section="5.4",
            passed=False,
            skipped=True,
            inputs={"available": reranker is not None, "ambiguous": ambiguous},
            note=run.index.models.status.reranker_note
            if reranker is None
            else ("not ambiguous: cosine stage decides"),
        )
    )
    return _cosine_stage(run, c)


def _score_candidates(run: _Run, prompt: str, candidates: list[int]) -> None:
    """§5.4: the reranker's logit for each candidate, into run.rerank."""
    index = run.index
    reranker = index.models.reranker
    assert reranker is not None
    documents = [
        rerank_document(index.skills[i].description, index.skills[i].body_head) for i in candidates
    ]
    logits = reranker.score(prompt, documents)
    run.rerank.update(zip(candidates, (float(value) for value in logits), strict=True))


def _relevance_stage(run: _Run, c: Channels, prompt: str) -> Outcome:
    """§9.12: the candidates' features, the relevance model's probability for each, and at
    most two picks: the best at p >= threshold, the next at p >= second_threshold."""
    model = load_relevance_model()
    threshold = model.threshold_in_force(run.config.relevance_threshold, len(run.index))
    second_bar = model.thresholds_for(len(run.index))[1]
    multilingual = _multilingual_channel(run, prompt)
    candidates = _relevance_pool(run, c, multilingual)
    _relevance_logits(run, c, prompt, candidates, multilingual=multilingual is not None)
    matrix = features(run.query, _evidence(run, c, candidates, multilingual))
    contributions = model.contributions(matrix)
    probabilities = model.probability(matrix, contributions)
    order = sorted(
        range(len(candidates)),
        key=lambda r: (-probabilities[r], run.index.id_rank[candidates[r]]),
    )
    trace = RelevanceTrace(
        candidates=tuple(candidates),
        features=model.features,
        values=matrix,
        contributions=contributions,
        bias=model.bias,
        probabilities=probabilities,
        threshold=threshold,
        second_threshold=max(second_bar, threshold),
        model=model.name,
        form=model.form,
        ranked=tuple(order),
        room_of=model.room,
    )
    run.relevance = trace
    best = order[0]
    picks = [best] if probabilities[best] >= trace.threshold else []
    second = order[1] if picks and len(order) > 1 else None
    if second is not None and probabilities[second] >= trace.second_threshold:
        picks.append(second)
    for row in order:
        if row in picks:
            continue
        above = probabilities[row] >= trace.threshold and row == second
        run.verdicts[candidates[row]] = Verdict.SECOND_SKILL if above else Verdict.RELEVANCE
    _relevance_gates(run, c, trace, best, second, picks)
    return (
        Stage.RELEVANCE,
        [(candidates[row], float(probabilities[row])) for row in picks],
        Verdict.RERANK_TOP_K,
    )


def _multilingual_channel(run: _Run, prompt: str) -> np.ndarray | None:
    """§9.14: each skill's multilingual cosine to the prompt; None without the vectors."""
    index = run.index
    embedder = index.models.multilingual
    if embedder is None or index.multilingual is None or not prompt.strip():
        return None
    started = time.perf_counter()
    query = embedder.embed_query(prompt)
    if query.shape[0] != index.multilingual.shape[1]:
        return None
    cosine = (index.multilingual @ query).astype(np.float64)
    cosine[~np.isfinite(cosine)] = 0.0
    run.timings["multilingual"] = (time.perf_counter() - started) * 1000
    return cosine


def _relevance_pool(run: _Run, c: Channels, multilingual: np.ndarray | None) -> list[int]:
    """§9.12's candidates: the hybrid top rerank_top_k, BM25's top BM25_POOL, and the
    multilingual cosine's top MULTILINGUAL_POOL (§9.14)."""
    for position in c.hybrid_order[: max(run.config.rerank_top_k, 1)]:
        run.pool[int(position)] = "dense"
    for position in c.bm25_order[:BM25_POOL]:
        if c.bm25[position] > 0:
            run.pool[int(position)] = "both" if int(position) in run.pool else "bm25"
    if multilingual is not None:
        order = np.lexsort((run.index.id_rank, -multilingual))
        for position in order[:MULTILINGUAL_POOL]:
            run.pool.setdefault(int(position), "multilingual")
    return list(run.pool)


def _relevance_logits(
    run: _Run, c: Channels, prompt: str, candidates: list[int], *, multilingual: bool
) -> None:
    """The reranker's logits, a feature of the relevance model; a reranker that fails
    leaves the model to decide without them, and its gate says why. The gate names the
    pools the candidates came from (the multilingual one only when its encoder ran)."""
    reranker = run.index.models.reranker
    if reranker is None:
        return
    started = time.perf_counter()
    failure = ""
    try:
        _score_candidates(run, prompt, candidates)
    except Exception as error:  # onnxruntime and tokenizers raise their own types
        run.rerank.clear()
        failure = f"reranker failed ({type(error).__name__}: {error}); decided without it"
    run.timings["rerank"] = (time.perf_counter() - started) * 1000
    run.gates.append(
        Gate(
            name=GateName.RERANKER,
            section="5.4",
            passed=not failure,
            inputs={"candidates": [c.ids[i] for i in candidates], "model": reranker.name},
            thresholds={
                "rerank_top_k": run.config.rerank_top_k,
                "bm25_pool": BM25_POOL,
                **({"multilingual_pool": MULTILINGUAL_POOL} if multilingual else {}),
            },
            note=failure,
        )
    )


def _relevance_gates(
    run: _Run,
    c: Channels,
    trace: RelevanceTrace,
    best: int,
    second: int | None,
    picks: list[int],
) -> None:
    """§9.12's two gates: the best candidate's probability, and the second skill's."""
    candidates, probabilities = trace.candidates, trace.probabilities
    run.gates.append(
        Gate(
            name=GateName.RELEVANCE,
            section="9.12",
            passed=bool(picks),
            inputs={
                "best": c.ids[candidates[best]],
                "p": float(probabilities[best]),
                "drivers": trace.drivers(best),
                "candidates": len(candidates),
            },
            thresholds={"threshold": trace.threshold},
            note=f"model: {trace.model}"
            + ("" if run.config.relevance_threshold is None else "; threshold pinned"),
        )
    )
    run.gates.append(
        Gate(
            name=GateName.SECOND_SKILL,
            section="9.12",
            passed=len(picks) > 1,
            skipped=second is None,
            inputs={}
            if second is None
            else {
                "next": c.ids[candidates[second]],
                "p": float(probabilities[second]),
                "drivers": trace.drivers(second),
            },
            thresholds={"second_threshold": trace.second_threshold},
        )
    )


def _route_tasks(
    run: _Run,
    prompt: str,
    picked: list[tuple[int, float]],
    context: Sequence[str],
    cwd: str | os.PathLike[str] | None,
) -> list[tuple[int, float]]:
    """§9.12 "Several tasks in one prompt": each clause routed on its own by the same model;
    a clause's best skill at p >= threshold joins the picks after the whole prompt's."""
    clauses = task_clauses(prompt)
    if not clauses:
        return picked
    index, threshold = run.index, run.relevance.threshold if run.relevance else 1.0
    chosen = {position for position, _ in picked}
    out = list(picked)
    traces = []
    for clause in clauses:
        trace = decide(clause, index, run.config, context=context, cwd=cwd, tasks=False).relevance
        if trace is None or not trace.candidates:
            traces.append(TaskTrace(clause, None, 0.0, "", False, trace))
            continue
        row = min(
            range(len(trace.candidates)),
            key=lambda r: (-trace.probabilities[r], index.id_rank[trace.candidates[r]]),
        )
        position, p = trace.candidates[row], float(trace.probabilities[row])
        added = p >= threshold and position not in chosen
        if added:
            chosen.add(position)
            out.append((position, p))
            run.verdicts.pop(position, None)
        traces.append(TaskTrace(clause, index.ids[position], p, trace.drivers(row), added, trace))
    run.tasks = tuple(traces)
    run.gates.append(
        Gate(
            name=GateName.TASKS,
            section="9.12",
            passed=any(task.added for task in traces),
            inputs={
                "tasks": [f"{task.clause!r} -> {task.best} p={task.p:.2f}" for task in traces],
                "added": [task.best for task in traces if task.added],
            },
            thresholds={"threshold": threshold},
        )
    )
    return out


def _evidence(
    run: _Run, c: Channels, candidates: list[int], multilingual: np.ndarray | None
) -> CandidateEvidence:
    """What the channels measured for the candidates, as the relevance model reads it."""
    index, hits = run.index, run.hits
    at = np.asarray(candidates, dtype=np.int64)
    keyword_hits = np.zeros(len(candidates))
    phrase_hits = np.zeros(len(candidates))
    row_of = {position: row for row, position in enumerate(candidates)}
    for postings in hits.keywords.values():
        for position in postings.tolist():
            if position in row_of:
                keyword_hits[row_of[position]] += 1
    for position, _tokens in hits.phrases:
        if position in row_of:
            phrase_hits[row_of[position]] += 1
    cosine = c.cosine
    cosine_rank = np.array([1 + int(np.count_nonzero(cosine > cosine[i])) for i in at])
    skills = [index.skills[i] for i in candidates]
    query_terms = run.query.terms
    return CandidateEvidence(
        cosine=cosine[at],
        cosine_rank=cosine_rank,
        bm25_norm=c.bm25_norm[at],
        bm25_rank=c.bm25_rank[at],
        overlap=c.jaccard[at],
        shared_terms=c.matched_terms[at].astype(np.float64),
        keyword_hits=keyword_hits,
        phrase_hits=phrase_hits,
        file_hits=c.file[at],
        logits=(np.array([run.rerank[i] for i in candidates]) if run.rerank else None),
        descriptions=[skill.description for skill in skills],
        texts=[f"{skill.id} {skill.description} {skill.body_head}" for skill in skills],
        query_terms=query_terms,
        idf={term: index.lexical.idf(term) for term in query_terms},
        library_size=len(index),
        multilingual=None if multilingual is None else multilingual[at],
        multilingual_rank=(
            None
            if multilingual is None
            else np.array([1 + int(np.count_nonzero(multilingual > multilingual[i])) for i in at])
        ),
    )


def _rerank_stage(run: _Run, c: Channels, prompt: str) -> Outcome:
    """§5.4 (+§9.1 union): cross-encode the candidates, then the agreement gate."""
    config, index = run.config, run.index
    reranker = index.models.reranker
    assert reranker is not None
    started = time.perf_counter()
    candidates = _rerank_pool(run, c)
    _score_candidates(run, prompt, candidates)
    run.timings["rerank"] = (time.perf_counter() - started) * 1000
    run.gates.append(
        Gate(
            name=GateName.RERANKER,
            section="5.4",
            passed=True,
            inputs={
                "candidates": [c.ids[i] for i in candidates],
                "model": reranker.name,
                "strategy": config.candidate_strategy,
            },
            thresholds={"rerank_top_k": config.rerank_top_k},
        )
    )
    agreement = agreement_gate(
        candidates,
        c.score,
        run.rerank,
        min_similarity=run.tuning.min_similarity,
        rerank_min=run.tuning.rerank_min,
        rerank_margin=run.tuning.rerank_margin,
        floor=run.tuning.agreement_floor,
    )
    _agreement_gates(run, c, agreement)
    for position in candidates:
        if position not in agreement.eligible:
            run.verdicts[position] = Verdict.AGREEMENT_FLOOR
        elif run.rerank[position] < run.tuning.rerank_min:
            run.verdicts[position] = Verdict.RERANK_MIN
        elif position not in agreement.passed:
            run.verdicts[position] = Verdict.RERANK_MARGIN
    picked = sorted(agreement.passed, key=lambda i: (-run.rerank[i], index.id_rank[i]))
    return Stage.RERANK, [(i, sigmoid(run.rerank[i])) for i in picked], Verdict.RERANK_TOP_K


def _rerank_pool(run: _Run, c: Channels) -> list[int]:
    """§5.4's candidates: the hybrid top rerank_top_k, and under the §9.1 union strategy
    BM25's top rerank_top_k too."""
    k = max(run.config.rerank_top_k, 0)
    for position in (int(i) for i in c.hybrid_order[:k]):
        run.pool[position] = "dense"
    if run.config.candidate_strategy == "union":
        for position in (int(i) for i in c.bm25_order[:k] if c.bm25[i] > 0):
            run.pool[position] = "both" if position in run.pool else "bm25"
    return list(run.pool)


def _agreement_gates(run: _Run, c: Channels, agreement: Agreement) -> None:
    """§5.4's three gates over the reranked candidates: the eligibility floor, rerank_min
    and rerank_margin."""
    tuning = run.tuning
    own_floor = tuning.rerank_floor  # §9: a model's own (None, and always under the reference)
    run.gates.append(
        Gate(
            name=GateName.AGREEMENT_FLOOR,
            section="5.4",
            passed=bool(agreement.eligible),
            inputs={"eligible": [c.ids[i] for i in agreement.eligible]},
            thresholds={"floor": agreement.floor, "min_similarity": tuning.min_similarity},
            note="eligible = candidates with hybrid score >= floor"
            + (
                ""
                if own_floor is None
                else f" (the reranker's own: {run.index.models.status.rerank_calibration.source})"
            ),
        )
    )
    above_min = [i for i in agreement.eligible if run.rerank[i] >= tuning.rerank_min]
    run.gates.append(
        Gate(
            name=GateName.RERANK_MIN,
            section="5.4",
            passed=bool(above_min),
            # With no candidate left to judge, the gate before it decided: skipped, so the
            # trace and "last failed gate" name the one that emptied the pool.
            skipped=not agreement.eligible,
            inputs={"best": agreement.best, "kept": [c.ids[i] for i in above_min]},
            thresholds={"rerank_min": tuning.rerank_min},
            note=f"gate: {tuning.rerank_source}",
        )
    )
    run.gates.append(
        Gate(
            name=GateName.RERANK_MARGIN,
            section="5.4",
            passed=bool(agreement.passed),
            skipped=not above_min,
            inputs={"best": agreement.best, "kept": [c.ids[i] for i in agreement.passed]},
            thresholds={
                "rerank_margin": tuning.rerank_margin,
                "cutoff": None if agreement.best is None else agreement.best - tuning.rerank_margin,
            },
        )
    )


def _cosine_stage(run: _Run, c: Channels) -> Outcome:
    """§5.5: the hybrid score against the floor and the margin below the top; force rescues."""
    config = run.config
    top = float(c.score[c.hybrid_order[0]])
    cutoff = top - run.tuning.score_margin
    force = set(config.force)
    # Only skills over the floor, or forced, need a look: the rest keep the default verdict.
    forced_mask = np.zeros(len(c.ids), dtype=bool)
    for skill_id in force:
        position = run.index.positions.get(skill_id)
        if position is not None and c.keyword[position] > 0:
            forced_mask[position] = True
    over_floor = c.score >= run.tuning.min_similarity
    ordered = c.hybrid_order[(over_floor | forced_mask)[c.hybrid_order]]
    kept: list[int] = []
    forced: list[str] = []
    for position in (int(i) for i in ordered):
        if forced_mask[position]:
            kept.append(position)
            forced.append(c.ids[position])
        elif c.score[position] < cutoff:
            run.verdicts[position] = Verdict.SCORE_MARGIN
        else:
            kept.append(position)
    above_floor = [c.ids[i] for i in ordered if over_floor[i]]
    run.gates.append(
        Gate(
            name=GateName.MIN_SIMILARITY,
            section="5.5",
            passed=bool(above_floor),
            inputs={"top_score": top, "above": above_floor},
            thresholds={"min_similarity": run.tuning.min_similarity},
        )
    )
    run.gates.append(
        Gate(
            name=GateName.SCORE_MARGIN,
            section="5.5",
            passed=bool(kept),
            inputs={"top_score": top, "kept": [c.ids[i] for i in kept]},
            thresholds={"score_margin": run.tuning.score_margin, "cutoff": cutoff},
        )
    )
    run.gates.append(
        Gate(
            name=GateName.FORCE,
            section="5.5",
            passed=bool(forced),
            skipped=not force,
            inputs={"forced": forced},
            thresholds={"force": sorted(force)},
            note="forced skills need a keyword hit",
        )
    )
    picked = [(i, cosine_confidence(float(c.score[i]), run.tuning.min_similarity)) for i in kept]
    return Stage.COSINE, picked, Verdict.MIN_SIMILARITY


def _finish(
    run: _Run, picked: list[tuple[int, float]], prompt: str, stage: Stage
) -> tuple[tuple[Injection, ...], str]:
    """§5.6-§5.7: drop invoked and denied skills, cap, budget the text, choose body or not."""
    if stage in (Stage.BLANK, Stage.EMPTY):
        return (), ""
    survivors = _drop_and_cap(run, picked, prompt)
    # §5.7: a lone, near-certain pick is escalated to its full body in directive mode;
    # inject_mode = "body" injects every pick's body (reference: src/hook.rs inject_mode).
    config = run.config
    lone = len(survivors) == 1 and survivors[0][1] >= config.body_inject_min
    body = config.inject_mode == "body" or lone
    run.gates.append(
        Gate(
            name=GateName.BODY_INJECT,
            section="5.7",
            passed=body,
            skipped=not survivors,
            inputs={
                "picks": len(survivors),
                "confidence": survivors[0][1] if len(survivors) == 1 else None,
                "inject_mode": config.inject_mode,
            },
            thresholds={"body_inject_min": config.body_inject_min},
        )
    )
    return _inject(run, survivors, body)


def _drop_and_cap(
    run: _Run, picked: list[tuple[int, float]], prompt: str
) -> list[tuple[int, float]]:
    """§5.6 and §10: the picks left once invoked, denied and already-loaded skills are
    dropped and the rest capped at max_skills, each drop recorded by its gate."""
    config, skills = run.config, run.index.skills
    invoked = run.query.invoked
    deny = set(config.deny)
    survivors: list[tuple[int, float]] = []
    dropped_invoked, dropped_denied, capped = [], [], []
    held: dict[str, str] = {}  # skill id -> the ledger's reason (§10)
    for position, confidence in picked:
        skill_id = skills[position].id
        session_verdict = (
            run.ledger.verdict(skill_id, confidence, BAND_HIGH) if run.ledger else None
        )
        if skill_id in invoked:
            run.verdicts[position] = Verdict.INVOKED
            dropped_invoked.append(skill_id)
        elif skill_id in deny:
            run.verdicts[position] = Verdict.DENY
            dropped_denied.append(skill_id)
        elif session_verdict in (SessionVerdict.LOADED, SessionVerdict.ALREADY):
            # Before the cap, as in the reference (src/hook.rs): a skill held back frees
            # its slot for the next pick.
            run.verdicts[position] = Verdict.SESSION_LEDGER
            held[skill_id] = str(session_verdict)
        elif len(survivors) >= config.max_skills:
            run.verdicts[position] = Verdict.MAX_SKILLS
            capped.append(skill_id)
        else:
            survivors.append((position, confidence))
    gates = run.gates
    gates.append(
        Gate(
            name=GateName.INVOKED,
            section="5.6",
            passed=not dropped_invoked,
            skipped=not invoked,
            inputs={"invoked": sorted(invoked), "dropped": dropped_invoked},
        )
    )
    gates.append(
        Gate(
            name=GateName.DENY,
            section="5.6",
            passed=not dropped_denied,
            skipped=not deny,
            inputs={"dropped": dropped_denied},
            thresholds={"deny": sorted(deny)},
        )
    )
    if run.ledger is not None:
        gates.append(
            Gate(
                name=GateName.SESSION_LEDGER,
                section="10",
                passed=not held,
                inputs={"held": held, "in_session": sorted(run.ledger.loaded)},
                thresholds={"resend_at_confidence": BAND_HIGH},
            )
        )
    gates.append(
        Gate(
            name=GateName.MAX_SKILLS,
            section="5.6",
            passed=not capped,
            inputs={"dropped": capped},
            thresholds={"max_skills": config.max_skills},
        )
    )
    return survivors


def _inject(
    run: _Run, survivors: list[tuple[int, float]], body: bool
) -> tuple[tuple[Injection, ...], str]:
    """§5.6: the injected text within char_budget; a pick it cannot hold is dropped."""
    config, skills, channels = run.config, run.index.skills, run.channels
    picks = [
        Pick(
            position,
            skills[position],
            confidence,
            body,
            file_evidence=bool(channels.file[position] > 0),
            project_term=run.project_terms.get(skills[position].id),
        )
        for position, confidence in survivors
    ]
    built = build_injection(picks, config)
    injected: list[Injection] = []
    for pick in built.kept:
        run.verdicts[pick.position] = Verdict.INJECT
        injected.append(
            Injection(
                pick.skill.id,
                pick.confidence,
                band(pick.confidence),
                InjectionMode.BODY if pick.body else InjectionMode.DESCRIPTION,
                pick.skill.path,
            )
        )
    over_budget = []
    for pick in built.dropped:
        run.verdicts[pick.position] = Verdict.CHAR_BUDGET
        over_budget.append(pick.skill.id)
    run.gates.append(
        Gate(
            name=GateName.CHAR_BUDGET,
            section="5.6",
            passed=not over_budget,
            inputs={"chars": built.used, "dropped": over_budget},
            thresholds={"char_budget": config.char_budget},
            note="bytes, header not counted (reference format)"
            if config.inject_format == "reference"
            else "",
        )
    )
    return tuple(injected), built.text
