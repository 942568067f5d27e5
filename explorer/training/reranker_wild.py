"""The reranker trainer's second stage: what the wild trigger-eval corpus's authors wrote.

The first stage learns from two libraries' mined requests; the wild corpus holds what 177
authors wrote for their own skills: prompts that should trigger a skill and, as often,
prompts close to it that should not. Learning from the second kind is learning when no
skill fits, which the relevance model's bars need most (docs/routing.md §9.16).

From the first stage's weights it fine-tunes once without each of the corpus's five folds
of repositories (`<out>/folds/wild-<k>/`: the relevance trainer's `--reranker-run` routes
that fold with it, so its logits stay blind) and once on every fold (`<out>/folds/all/`,
the files that ship). Its lists, each prompt once:

* an author's should-trigger prompt: its skill, the two other skills the packaged skill
  encoder puts nearest, one more of its twelve nearest and one at random (the shape of the
  first stage's mined lists); only the training folds' skills are candidates;
* an author's should-not-trigger prompt: that author's skill alone, labelled 0 (another
  skill may rightly take it, so no other is labelled);
* a prompt no skill of the corpus serves: its four nearest skills, all labelled 0;

and as many of the first stage's own lists as half of those (`--wild-replay`), so that
it keeps what it learnt there.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from explorer.engine.inference.models import WILD_RERANKER
from explorer.training.reranker import (
    Example,
    PairEncoder,
    build_model,
    configure_determinism,
    epoch_examples,
    export,
    train,
)

if TYPE_CHECKING:
    from explorer.training.mining import Group
    from explorer.training.pools import Pool
    from explorer.training.relevance import Labelled

NEAREST = 12  # the pool a should-trigger prompt's third negative is drawn from
UNSERVED_LIST = 4  # the nearest skills a prompt no skill serves is listed with
ALL = "all"  # the fold-less run: the shipped files
FIRST_STAGE = "first-stage"  # `<out>/first-stage/`: the first stage alone, exported

log = logging.getLogger("reranker")


def fold_dir(out: Path, fold: str) -> Path:
    """Where a run (`--out`) keeps the second stage trained without `fold` (ALL: with all)."""
    return out / "folds" / fold


@dataclass(frozen=True)
class WildSkill:
    name: str
    id: str
    fold: str
    document: str  # what the cross-encoder reads (rerank_document)


@dataclass(frozen=True)
class WildCorpus:
    skills: tuple[WildSkill, ...]
    prompts: tuple[Labelled, ...]  # kinds: author, author-negative, negative
    cosines: np.ndarray  # prompts x skills, by the packaged skill encoder

    def position(self) -> dict[str, int]:
        """A skill's row by its name, or by its folder id where no name has taken it."""
        found: dict[str, int] = {}
        for number, skill in enumerate(self.skills):
            found[skill.name] = number
            found.setdefault(skill.id, number)
        return found


def read_wild(wild: Path, cache: Path) -> WildCorpus:
    """The corpus's skills, prompts (as the relevance trainer labels them) and cosines."""
    from explorer.engine.base.config import Config, dense_body_chars
    from explorer.engine.discovery.skills import discover
    from explorer.engine.index.opening import open_engine
    from explorer.engine.index.snapshot import dense_text
    from explorer.engine.inference.rerank import rerank_document
    from explorer.training.relevance import wild_folds, wild_prompts

    found = discover([str(wild / "skills")]).skills
    fold_of, _ = wild_folds(wild)
    config = Config(preset="learned")
    embedder = open_engine(config, str(cache)).models.embedder
    if embedder is None:
        raise SystemExit("the packaged skill encoder did not load")
    skills = tuple(
        WildSkill(
            skill.name,
            skill.id,
            fold_of.get(skill.name, ""),
            rerank_document(skill.description, skill.body_head),
        )
        for skill in found
    )
    prompts = wild_prompts(wild)
    body_chars = dense_body_chars(config)
    vectors = np.asarray(
        embedder.embed_documents([dense_text(skill, body_chars) for skill in found])
    )
    queries = np.asarray([embedder.embed_query(labelled.case.prompt) for labelled in prompts])
    return WildCorpus(skills, prompts, queries @ vectors.T)


def wild_examples(corpus: WildCorpus, held_out: str | None, rng: random.Random) -> list[Example]:
    """One pass over the prompts of every fold but `held_out` (None: every fold)."""
    skills, where = corpus.skills, corpus.position()
    allowed = np.array([skill.fold != held_out for skill in skills])
    allowed_rows = np.flatnonzero(allowed)
    examples: list[Example] = []
    for number, labelled in enumerate(corpus.prompts):
        if labelled.fold == held_out:
            continue
        case = labelled.case
        nearest = [int(row) for row in np.argsort(-corpus.cosines[number]) if allowed[row]]
        right = {where[name] for name in case.expect if name in where}
        if labelled.kind == "author" and right:
            others = [row for row in nearest if row not in right]
            listed = others[:2]
            rest = others[2:NEAREST]
            if rest:
                listed.append(rest[rng.randrange(len(rest))])
            easy = int(allowed_rows[rng.randrange(len(allowed_rows))])
            while easy in right or easy in listed:
                easy = int(allowed_rows[rng.randrange(len(allowed_rows))])
            rows = [min(right), *listed, easy]
            labels = (1.0,) + (0.0,) * (len(rows) - 1)
        elif case.reject and not case.expect:
            rows = [where[name] for name in case.reject if name in where][:1]
            labels = (0.0,) * len(rows)
        elif not case.expect:
            rows = nearest[:UNSERVED_LIST]
            labels = (0.0,) * len(rows)
        else:
            continue
        if rows:
            examples.append(Example(case.prompt, tuple(skills[r].document for r in rows), labels))
    return examples


def stage_schedule(
    corpus: WildCorpus,
    held_out: str | None,
    groups: Sequence[Group],
    pools: Sequence[Pool],
    args: argparse.Namespace,
) -> list[Example]:
    """One stage's lists in a fixed order, seeded on its own."""
    rng = random.Random(args.seed + 1)
    wild = wild_examples(corpus, held_out, rng)
    replay = epoch_examples(
        [group for group in groups if group.split == "train"],
        [pool for pool in pools if pool.split == "train" and pool.documents],
        args,
        rng,
    )
    rng.shuffle(replay)
    schedule = wild + replay[: int(len(wild) * args.wild_replay)]
    rng.shuffle(schedule)
    return schedule


def train_wild_stages(
    first_stage: dict[str, Any],
    base: Path,
    groups: Sequence[Group],
    pools: Sequence[Pool],
    args: argparse.Namespace,
) -> dict[str, object]:
    """Every fold's stage and the shipped one; the shipped files are copied into `--out`."""
    corpus = read_wild(args.wild, args.cache / "embeddings")
    folds = sorted({skill.fold for skill in corpus.skills if skill.fold})
    skills, prompts = len(corpus.skills), len(corpus.prompts)
    log.info("wild stage: %d skills, %d prompts, folds %s", skills, prompts, folds)
    encoder = PairEncoder(base / "tokenizer.json", args.max_length)
    stage_args = argparse.Namespace(**{**vars(args), "lr": args.wild_lr})
    exported: dict[str, object] = {}
    for fold in [*folds, ALL]:
        schedule = stage_schedule(corpus, None if fold == ALL else fold, groups, pools, args)
        stage_args.steps = math.ceil(len(schedule) / args.groups_per_step)
        log.info("wild stage %s: %d lists, %d steps", fold, len(schedule), stage_args.steps)
        configure_determinism(args.seed, args.threads)
        model = build_model(base, args.layers, args.seed)
        model.load_state_dict(first_stage)
        history = train(model, encoder, schedule, stage_args)
        out = fold_dir(args.out, fold)
        out.mkdir(parents=True, exist_ok=True)
        made = export(model, encoder, out, base, args, WILD_RERANKER)
        exported[fold] = {"export": made, "history": history}
    for name in ("model.onnx", "tokenizer.json", "reranker.json"):
        shutil.copyfile(fold_dir(args.out, ALL) / name, args.out / name)
    return exported
