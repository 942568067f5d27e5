"""The reranker's second stage lists: what each kind of wild prompt teaches, and never a
prompt or a skill of the fold it is held out from."""

from __future__ import annotations

import random

import numpy as np

from explorer.engine.qa.cases import Case
from explorer.training.relevance import Labelled
from explorer.training.reranker_wild import (
    UNSERVED_LIST,
    WildCorpus,
    WildSkill,
    wild_examples,
)

SKILLS = tuple(
    WildSkill(f"skill-{n}", f"skill-{n}", "wild-0" if n < 6 else "wild-1", f"document {n}")
    for n in range(9)
)


def _prompt(
    text: str, expect: tuple[str, ...], reject: tuple[str, ...], kind: str, fold: str
) -> Labelled:
    case = Case(text, expect, "positive" if expect else "negative", reject=reject)
    return Labelled(case, kind, fold)


PROMPTS = (
    _prompt("wanted of 2", ("skill-2",), (), "author", "wild-0"),
    _prompt("not for 3", (), ("skill-3",), "author-negative", "wild-0"),
    _prompt("nobody's", (), (), "negative", "wild-0"),
    _prompt("wanted of 7", ("skill-7",), (), "author", "wild-1"),
)


def _corpus() -> WildCorpus:
    # Each prompt is nearest the skills in order 0, 1, 2 ... but for its own.
    cosines = np.tile(np.linspace(1.0, 0.1, len(SKILLS)), (len(PROMPTS), 1))
    return WildCorpus(SKILLS, PROMPTS, cosines)


def test_each_kind_of_prompt_makes_its_own_list() -> None:
    lists = {e.query: e for e in wild_examples(_corpus(), None, random.Random(1))}
    wanted = lists["wanted of 2"]
    assert wanted.documents[0] == "document 2" and wanted.labels[0] == 1.0
    assert wanted.documents[1:3] == ("document 0", "document 1")  # the two nearest others
    assert "document 2" not in wanted.documents[1:] and set(wanted.labels[1:]) == {0.0}
    # An author's no: that author's skill alone, since another may rightly take it.
    assert lists["not for 3"].documents == ("document 3",) and lists["not for 3"].labels == (0.0,)
    unserved = lists["nobody's"]
    assert len(unserved.documents) == UNSERVED_LIST and set(unserved.labels) == {0.0}


def test_a_held_out_fold_gives_no_prompt_and_no_skill() -> None:
    lists = wild_examples(_corpus(), "wild-1", random.Random(1))
    assert "wanted of 7" not in {e.query for e in lists}
    held = {skill.document for skill in SKILLS if skill.fold == "wild-1"}
    assert all(not held & set(e.documents) for e in lists)
    again = wild_examples(_corpus(), "wild-1", random.Random(1))
    assert again == lists  # seeded: the same lists every run
