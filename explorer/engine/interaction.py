"""Stage 2 over interaction features (spec §5.4, §9): a learned reranker.

An alternative to the packaged cross-encoder (docs/rerankers.md): this reranker reads what
stage 1 already measured about each candidate, plus how the prompt's tokens meet the
description's tokens in the packaged MiniLM's own token space, and a small network trained
on the training libraries turns that into one logit per candidate. The agreement gate then
decides on those logits exactly as it does on a cross-encoder's.

Why these features: the hybrid score adds channels with fixed weights, and the gates compare
it with constants; a request that names no skill word ("which genes go up after drug
treatment") and a near-miss that names one ("who founded Spotify") can score alike. Where the
prompt's words land in the description (max-sim of token states), how much of the prompt the
description covers, and how the candidate stands against the rest of the pool separate them
better than the sum does.

Everything here is numpy and onnxruntime: the network is an ONNX graph (`model.onnx`), the
features are computed by `candidate_features`, the same function the training uses.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer.engine.embed import onnx_session, pad_batch
from explorer.engine.text import match_tokens

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

    from explorer.engine.decision import Channels
    from explorer.engine.skills import Skill

# The features, in the order the network reads them. Changing this list changes the model's
# input: the model file records the list it was trained with, and loading checks it.
FEATURE_NAMES: tuple[str, ...] = (
    "cosine",  # §3.1 dense cosine of prompt and description
    "score",  # §3.6 hybrid score
    "score_gap",  # top hybrid score of the pool - this one's
    "cosine_gap",  # best cosine in the pool - this one's
    "rank",  # hybrid rank in the pool, 0 = first, scaled to [0, 1]
    "bm25_log",  # ln(1 + raw BM25)
    "bm25_norm",  # raw BM25 / sum of the query terms' idf (the fused channel's input)
    "bm25_gap",  # best bm25_norm in the pool - this one's
    "coverage",  # query terms found in the description / query terms
    "jaccard",  # §9.4 token-set overlap
    "name_coverage",  # query terms among the skill id's tokens / query terms
    "keyword",  # §3.2 keyword channel (0 or a multiple of keyword_boost)
    "phrase",  # §3.3 phrase channel
    "token_mean",  # mean over the prompt's tokens of cos(token state, description vector)
    "token_top",  # mean of the three best such cosines: where the prompt's key words land
    "token_gap",  # best token_mean in the pool - this one's
    "description_log",  # ln(1 + description match tokens)
    "query_log",  # ln(1 + query terms)
    "library_log",  # ln(library size / 200)
)
QUERY_TOKENS = 64  # a prompt's first tokens read for the token features
LIBRARY_REFERENCE_N = 200


class InteractionModelError(RuntimeError):
    """A model file that is not this reranker's network, or one trained on other features."""


class TokenEncoder:
    """The packaged MiniLM's token states: the sentence encoder's last hidden state, unpooled.

    Mean pooling of these states is the sentence embedding the cosine channel uses; the
    token features read them one by one, so both come from one model and one vocabulary.
    It shares the dense embedder's onnxruntime session (no second copy of the model).
    """

    def __init__(self, session: InferenceSession, tokenizer_path: str | os.PathLike[str]) -> None:
        from tokenizers import Tokenizer

        self.session = session
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=QUERY_TOKENS)
        self._inputs = {item.name for item in session.get_inputs()}
        self._output = session.get_outputs()[0].name

    @classmethod
    def load(
        cls,
        model_path: str | os.PathLike[str],
        tokenizer_path: str | os.PathLike[str],
        *,
        threads: int | None = None,
    ) -> TokenEncoder:
        return cls(onnx_session(str(model_path), threads, None), tokenizer_path)

    def token_states(self, text: str) -> np.ndarray:
        """The text's content tokens' L2-normalised states [tokens, dim] (no [CLS]/[SEP])."""
        encoding = self.tokenizer.encode(text)
        ids, mask, _ = pad_batch([encoding])
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = np.asarray(self.session.run([self._output], feed)[0], dtype=np.float32)
        if hidden.ndim != 3:
            raise InteractionModelError(
                f"the dense model gives no token states (output shape {hidden.shape})"
            )
        keep = [i for i, special in enumerate(encoding.special_tokens_mask) if not special]
        block = hidden[0, keep]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        states: np.ndarray = (block / np.maximum(norms, 1e-9)).astype(np.float32)
        return states


def token_similarities(query: np.ndarray, descriptions: np.ndarray) -> np.ndarray:
    """[k, 2]: per description vector, (mean, mean of the best three) over the prompt's token
    states of their cosine with it.

    Late interaction on the prompt's side only: each prompt token meets the description's
    sentence vector (already in the index), so no description is encoded at query time.
    Where the mean says how much of the prompt the description is about, the best three say
    whether its key words are: "merge these PDFs please" has one word that matters.
    """
    k = descriptions.shape[0]
    out = np.zeros((k, 2), dtype=np.float64)
    if query.shape[0] == 0 or k == 0:
        return out
    sims = descriptions.astype(np.float64) @ query.astype(np.float64).T  # [k, tokens]
    out[:, 0] = sims.mean(axis=1)
    top = np.sort(sims, axis=1)[:, ::-1][:, :3]
    out[:, 1] = top.mean(axis=1)
    return out


def id_tokens(skill_id: str) -> set[str]:
    """A skill id's match tokens: `pdf-to-markdown` -> {pdf, markdown}."""
    return set(match_tokens(skill_id.replace("-", " ").replace("_", " ").replace(":", " ")))


def candidate_features(
    candidates: Sequence[int],
    channels: Channels,
    skills: Sequence[Skill],
    query_terms: Sequence[str],
    token_sims: np.ndarray,
) -> np.ndarray:
    """The [len(candidates), len(FEATURE_NAMES)] float32 matrix the network reads.

    `candidates` are skill indices (the rerank pool, in pool order), `token_sims` the
    [k, 2] of `token_similarities` for them. Pool-relative features (gaps, rank) compare
    each candidate with the pool, so a weak pool and a strong one look different.
    """
    k = len(candidates)
    out = np.zeros((k, len(FEATURE_NAMES)), dtype=np.float32)
    if k == 0:
        return out
    index = np.asarray(candidates, dtype=np.int64)
    c = channels
    cosine = c.cosine[index]
    score = c.score[index]
    bm25 = c.bm25[index]
    bm25_norm = c.bm25_norm[index]
    terms = set(query_terms)
    n_terms = max(len(terms), 1)
    sims = np.asarray(token_sims, dtype=np.float64).reshape(k, 2)
    order = np.argsort(-score, kind="stable")
    rank = np.empty(k, dtype=np.float64)
    rank[order] = np.arange(k)
    n = len(c.ids)
    for row, position in enumerate(index):
        skill = skills[int(position)]
        description = match_tokens(skill.description)
        found = terms & set(description)
        named = terms & id_tokens(skill.id)
        out[row] = (
            cosine[row],
            score[row],
            score.max() - score[row],
            cosine.max() - cosine[row],
            rank[row] / max(k - 1, 1),
            math.log1p(max(float(bm25[row]), 0.0)),
            bm25_norm[row],
            bm25_norm.max() - bm25_norm[row],
            len(found) / n_terms,
            c.jaccard[position],
            len(named) / n_terms,
            c.keyword[position],
            c.phrase[position],
            sims[row, 0],
            sims[row, 1],
            sims[:, 0].max() - sims[row, 0],
            math.log1p(len(description)),
            math.log1p(len(terms)),
            math.log(max(n, 1) / LIBRARY_REFERENCE_N),
        )
    return out


INTERACTION_KIND = "interaction"  # reranker.json's "kind" for this reranker


@dataclass(frozen=True)
class InteractionSettings:
    """`reranker.json` of an interaction model: its name and the features it was trained on."""

    name: str
    features: tuple[str, ...]


def is_interaction_model(model_path: Path) -> bool:
    """Whether `reranker.json` beside the model says it is an interaction reranker."""
    path = model_path.parent / "reranker.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") == INTERACTION_KIND


def read_settings(model_path: Path) -> InteractionSettings:
    path = model_path.parent / "reranker.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        features = tuple(str(item) for item in data["features"])
        return InteractionSettings(str(data["name"]), features)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InteractionModelError(
            f"{path}: not an interaction reranker's settings: {error}"
        ) from error


@dataclass(frozen=True)
class Pool:
    """One stage-2 call: the prompt, the candidates to score and what stage 1 measured of
    them (the channels, the library's skills and vectors, the prompt's BM25 query terms)."""

    prompt: str
    candidates: Sequence[int]
    channels: Channels
    skills: Sequence[Skill]
    vectors: np.ndarray | None  # the index's description vectors; None without a dense model
    query_terms: Sequence[str]


class InteractionReranker:
    """Stage 2 over interaction features: one logit per candidate from a small ONNX network.

    The network (`model.onnx`: input `features` [k, F] float32, output `logit` [k]) holds
    its own feature scaling, so the runtime feeds `candidate_features` as they are.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        encoder: TokenEncoder,
        *,
        threads: int | None = 1,
    ) -> None:
        self.model_path = str(model_path)
        settings = read_settings(Path(model_path))
        if settings.features != FEATURE_NAMES:
            raise InteractionModelError(
                f"{self.model_path}: trained on features {list(settings.features)}, this "
                f"engine computes {list(FEATURE_NAMES)}; retrain it "
                "(python -m explorer.training.interaction)"
            )
        self.name = settings.name
        self.encoder = encoder
        # A network of a few hundred weights: one thread, no graph optimisation cache.
        self.session = onnx_session(self.model_path, threads, None)
        inputs = self.session.get_inputs()
        if [item.name for item in inputs] != ["features"]:
            raise InteractionModelError(f"{self.model_path}: expected one input named 'features'")
        self._output = self.session.get_outputs()[0].name

    def logits(self, features: np.ndarray) -> np.ndarray:
        """The network on a [k, F] feature matrix: [k] float64 logits."""
        if features.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        feed = {"features": np.ascontiguousarray(features, dtype=np.float32)}
        output = np.asarray(self.session.run([self._output], feed)[0], dtype=np.float64)
        return output.reshape(-1)

    def features(self, pool: Pool) -> np.ndarray:
        """The feature matrix for the pool: token features need the index's description vectors."""
        candidates = pool.candidates
        if pool.vectors is None or not candidates:
            sims = np.zeros((len(candidates), 2), dtype=np.float64)
        else:
            query = self.encoder.token_states(pool.prompt)
            sims = token_similarities(query, pool.vectors[np.asarray(candidates, dtype=np.int64)])
        return candidate_features(candidates, pool.channels, pool.skills, pool.query_terms, sims)

    def score_pool(self, pool: Pool) -> np.ndarray:
        """One logit per candidate, in candidate order."""
        return self.logits(self.features(pool))
