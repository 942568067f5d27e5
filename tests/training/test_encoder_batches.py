"""The skill encoder's batches (explorer/training/encoder.py): every request's skill is a
negative for the others in its batch, so no two requests of a batch may share a skill."""

from __future__ import annotations

import random

from explorer.training.encoder import Pair, batches


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
