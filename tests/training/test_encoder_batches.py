"""The skill encoder's training data (explorer/training/encoder.py): every request's skill is
a negative for the others in its batch, so no two requests of a batch may share a skill; and
an encoder trained without a wild fold never sees that fold's prompts."""

from __future__ import annotations

import random

from explorer.engine.qa.cases import Case
from explorer.training.encoder import WILD, Library, Pair, batches, wild_pairs


def test_each_pair_once_and_no_skill_twice_in_a_batch() -> None:
    pairs = [Pair(f"request {n}", f"lib/skill-{n % 7}", f"text {n % 7}", ()) for n in range(60)]
    seen: list[Pair] = []
    for batch in batches(pairs, 8, random.Random(13)):
        assert 0 < len(batch) <= 8
        assert len({pair.skill for pair in batch}) == len(batch)
        seen.extend(batch)
    assert sorted(seen, key=lambda pair: pair.query) == sorted(pairs, key=lambda pair: pair.query)


def test_the_order_follows_the_seed() -> None:
    pairs = [Pair(f"request {n}", f"lib/skill-{n}", f"text {n}", ()) for n in range(40)]
    first = [pair.query for batch in batches(pairs, 8, random.Random(13)) for pair in batch]
    again = [pair.query for batch in batches(pairs, 8, random.Random(13)) for pair in batch]
    other = [pair.query for batch in batches(pairs, 8, random.Random(14)) for pair in batch]
    assert first == again and first != other


def test_a_fold_encoder_never_trains_on_its_folds_skills_or_prompts() -> None:
    wild = Library(
        WILD,
        {"plot": "Plots charts.", "mail": "Writes emails.", "deploy": "Deploys services."},
        (
            Case("draw my sales as bars", ("plot",), "should-trigger"),
            Case("email the team", ("mail",), "should-trigger"),
            Case("ship it to prod", ("deploy",), "should-trigger"),
            Case("tell me a joke", (), "negative"),  # nothing to pair it with
            Case("graph this csv", ("plot",), "borderline"),  # observed, never scored
        ),
    )
    fold_of = {"plot": "wild-0", "mail": "wild-1", "deploy": "wild-1"}
    every = wild_pairs(wild, fold_of, None)
    assert [pair.query for pair in every] == [
        "draw my sales as bars",
        "email the team",
        "ship it to prod",
    ]
    assert every[0] == Pair("draw my sales as bars", f"{WILD}/plot", "Plots charts.", ())
    assert [pair.skill for pair in wild_pairs(wild, fold_of, "wild-1")] == [f"{WILD}/plot"]
    assert [pair.skill for pair in wild_pairs(wild, fold_of, "wild-0")] == [
        f"{WILD}/mail",
        f"{WILD}/deploy",
    ]
