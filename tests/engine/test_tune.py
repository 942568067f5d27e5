"""The description tuner (explorer/engine/author/tune.py) on a small library, bag-of-words model:
a missed positive becomes a FIX, a steal is reported and ranked below, the split is
stable, and the same input gives the same answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.author.rewrite import read_skill_text
from explorer.engine.author.tune import (
    MAX_DESCRIPTION,
    Effect,
    Flip,
    Part,
    Probe,
    TuneResult,
    _flip,
    _shift,
    cases_for,
    rank_key,
    split_cases,
    tune,
    typed_case,
)
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.qa.cases import Case
from explorer.engine.route.pipeline import decide
from tests.conftest import write_skill

CONFIG = Config(model="bow", reranker="off")
SKILL = "invoice-maker"
LIBRARY = {
    SKILL: "Create invoices for clients with line items, tax and due dates.",
    "timesheet": "Log time entries in a weekly timesheet.",
    "pdf": "Extract text and tables from PDF files, merge and split PDF documents, fill forms.",
    "docker-helper": "Shrink Docker images, write multi-stage Dockerfiles and speed up builds.",
    "git-commit-writer": "Write clear git commit messages from the staged diff.",
    "changelog-generator": "Generate release notes and a CHANGELOG from git commit history.",
}
# The description says "invoice" and "client"; half of its users say "bill" and "customer".
OWN = [
    ("create an invoice for my client with tax", True),
    ("invoice the client for line items due next week", True),
    ("bill my customer for the consulting hours", True),
    ("bill the customer for last month of consulting", True),
    ("I need to bill a customer for design work", True),
    ("bill customer hours consulting retainer", True),
    ("write a git commit message", False),
    ("merge these pdf files", False),
    ("shrink my docker image", False),
]
STEAL_TARGET = "bill hours"  # the timesheet's, in the words the edit adds
SIBLING = ["log time entries for the week", "log my consulting hours in the timesheet"]


def _index(root: Path) -> Index:
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    return build_index([root], CONFIG, assemble_models(BowEmbedder()))


def _run(root: Path, cases: list[Case]) -> TuneResult:
    index = _index(root)
    original = read_skill_text(str(root / SKILL / "SKILL.md"))
    return tune(index, CONFIG, SKILL, cases, original)


def _trigger_evals(path: Path) -> list[Case]:
    path.write_text(json.dumps([{"query": q, "should_trigger": t} for q, t in OWN]))
    return list(cases_for(path, SKILL).cases)


def _with_siblings(path: Path) -> list[Case]:
    rows = [(prompt, [SKILL] if wanted else []) for prompt, wanted in OWN if wanted]
    rows += [(prompt, ["timesheet"]) for prompt in (*SIBLING, STEAL_TARGET)]
    rows += [(prompt, []) for prompt, wanted in OWN if not wanted]
    path.write_text(
        "".join(
            f'[[case]]\nprompt = "{prompt}"\nexpect = {json.dumps(expect)}\n'
            f'kind = "{"direct" if expect else "negative"}"\n\n'
            for prompt, expect in rows
        )
    )
    return list(cases_for(path, SKILL).cases)


def test_a_missed_positive_becomes_a_fix(tmp_path: Path) -> None:
    result = _run(tmp_path / "skills", _trigger_evals(tmp_path / "evals.json"))
    assert result.candidates, result.notes
    best = result.candidates[0]
    fixed = {flip.case.prompt for flip in best.flips if flip.effect is Effect.FIX}
    assert any("bill" in prompt for prompt in fixed)
    assert best.breaks == 0 and best.steals == 0
    assert "bill" in best.description and best.description.startswith(LIBRARY[SKILL])
    assert len(best.description) <= MAX_DESCRIPTION and "<" not in best.description
    # The flip is what the router decides on the edited library.
    root = tmp_path / "edited"
    write_skill(root, SKILL, best.description)
    for name, description in LIBRARY.items():
        if name != SKILL:
            write_skill(root, name, description)
    edited = build_index([root], CONFIG, assemble_models(BowEmbedder()))
    for prompt in fixed:
        assert SKILL in decide(prompt, edited, CONFIG).injected_ids
    # The held-out part decides: this one gains there, without stealing.
    assert best.part_net(Part.HELD_OUT) > 0
    assert result.recommended == 0
    # Where it moved: the skill's BM25 gained the added words on the fixed prompts.
    assert "bill" in best.shift.terms and best.shift.bm25 > 0


def test_a_steal_is_reported_and_ranked_below(tmp_path: Path) -> None:
    result = _run(tmp_path / "skills", _with_siblings(tmp_path / "cases.toml"))
    stealers = [candidate for candidate in result.candidates if candidate.steals]
    clean = [candidate for candidate in result.candidates if not candidate.steals]
    assert stealers and clean
    stolen = {
        flip.case.prompt
        for candidate in stealers
        for flip in candidate.flips
        if flip.effect is Effect.STEAL
    }
    assert stolen == {STEAL_TARGET}
    assert all(
        flip.part is Part.OTHER and flip.case.expect == ("timesheet",)
        for candidate in stealers
        for flip in candidate.flips
        if flip.effect is Effect.STEAL
    )
    # Ranked below every clean candidate, even with as many fixes as the best of them.
    last_clean = max(result.candidates.index(candidate) for candidate in clean)
    first_stealer = min(result.candidates.index(candidate) for candidate in stealers)
    assert last_clean < first_stealer
    assert max(candidate.fixes for candidate in stealers) >= max(c.fixes for c in clean)
    assert result.recommended is None or not result.candidates[result.recommended].steals
    assert list(result.candidates) == sorted(result.candidates, key=rank_key)


def test_the_tallies_count_the_should_trigger_cases_apart(tmp_path: Path) -> None:
    """ "held-out 4/8" was a skill that took none of its 4 prompts and passed its 4
    should-not ones: the tallies say the should-trigger share too."""
    cases = _trigger_evals(tmp_path / "evals.json")
    result = _run(tmp_path / "skills", cases)
    for tally, part in (
        (result.tuning, result.split.tuning),
        (result.held_out, result.split.held_out),
    ):
        assert tally.wanted == sum(case.positive for case in part) > 0
        assert tally.wanted < tally.total and 0 <= tally.wanted_passed <= tally.passed
    assert result.candidates[0].held_out.wanted_passed > result.held_out.wanted_passed


def test_a_description_over_the_limit_with_nothing_to_drop_says_to_shorten_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "skills"
    _index(root)  # the library's files
    long = " ".join(f"Use it when the user asks to bill client number {n}." for n in range(25))
    write_skill(root, SKILL, long)
    index = build_index([root], CONFIG, assemble_models(BowEmbedder()))
    text = read_skill_text(str(root / SKILL / "SKILL.md"))
    result = tune(index, CONFIG, SKILL, _trigger_evals(tmp_path / "evals.json"), text)
    assert len(long) > MAX_DESCRIPTION and result.evaluated == 0
    assert any(note.startswith("no edit was tried: none shortens") for note in result.notes)


def test_the_same_input_gives_the_same_answer(tmp_path: Path) -> None:
    first = _run(tmp_path / "one", _with_siblings(tmp_path / "cases.toml")).to_dict()
    second = _run(tmp_path / "two", _with_siblings(tmp_path / "cases.toml")).to_dict()
    for data in (first, second):
        data.pop("path")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_cases_are_decided_on_every_core_with_the_answer_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit's cases are decided at once, one on each core, on the kept "tune" threads;
    the answer is the one a single thread gives."""
    import threading

    from explorer.engine.author import tune as module
    from explorer.engine.base import threads

    seen: set[str] = set()
    real = module.decide

    def spy(*args: object, **kwargs: object) -> object:
        seen.add(threading.current_thread().name)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "decide", spy)
    answers, names = {}, {}
    for workers in ("1", "3"):
        monkeypatch.setenv(threads.THREADS_VARIABLE, workers)
        seen.clear()
        data = _run(tmp_path / workers, _with_siblings(tmp_path / "cases.toml")).to_dict()
        data.pop("path")
        answers[workers], names[workers] = json.dumps(data, sort_keys=True), set(seen)
    assert answers["1"] == answers["3"]
    assert names["1"] == {threading.current_thread().name}
    assert any(name.startswith("tune") for name in names["3"]), names["3"]


def test_the_split_is_stable_and_keeps_both_kinds_on_both_sides(tmp_path: Path) -> None:
    cases = _trigger_evals(tmp_path / "evals.json")
    split = split_cases(cases, SKILL)
    assert split == split_cases(list(reversed(cases)), SKILL)  # the file's order is no input
    for part in (split.tuning, split.held_out):
        assert any(case.positive for case in part) and any(not case.positive for case in part)
    assert len(split.tuning) + len(split.held_out) == len(cases) and not split.others
    assert {c.prompt for c in split.tuning}.isdisjoint(c.prompt for c in split.held_out)


def test_the_authors_own_split_is_kept_when_every_case_has_one(tmp_path: Path) -> None:
    """skill-creator's train/validation lists (or TOML's split): the author chose what to
    hold out, so tune holds that out; a set only partly split is split by the hash."""
    import dataclasses

    cases = _trigger_evals(tmp_path / "evals.json")
    tagged = [
        dataclasses.replace(case, split="validation" if number % 3 == 0 else "train")
        for number, case in enumerate(cases)
    ]
    split = split_cases(tagged, SKILL)
    assert split.from_file
    assert list(split.tuning) == [case for case in tagged if case.split == "train"]
    assert list(split.held_out) == [case for case in tagged if case.split == "validation"]
    partly = [dataclasses.replace(tagged[0], split=None), *tagged[1:]]
    assert not split_cases(partly, SKILL).from_file
    # No should-trigger prompt held out: nothing could gain, so the hash splits them.
    negatives_held = [
        dataclasses.replace(case, split="validation" if not case.positive else "train")
        for case in cases
    ]
    assert not split_cases(negatives_held, SKILL).from_file
    index = _index(tmp_path / "skills")
    text = read_skill_text(index.skills[index.positions[SKILL]].path)
    noted = tune(index, Config(), SKILL, negatives_held, text).notes
    assert any("the file's train/validation split is not used" in note for note in noted)
    assert not any(
        "split is not used" in note for note in tune(index, Config(), SKILL, tagged, text).notes
    )
    only_train = [dataclasses.replace(case, split="train") for case in cases]
    hashed, plain = split_cases(only_train, SKILL), split_cases(cases, SKILL)  # none held out
    assert not hashed.from_file
    assert [c.prompt for c in hashed.held_out] == [c.prompt for c in plain.held_out]


def test_cases_about_other_skills_only_say_what_the_file_needs(tmp_path: Path) -> None:
    """An author who asks for suggestions with no case of this skill learns what to add,
    not only that there is nothing to tune on."""
    others = [Case(prompt, ("timesheet",), "direct") for prompt in SIBLING]
    result = _run(tmp_path / "skills", others)
    assert not result.candidates and result.notes[0] == (
        f"no case is about {SKILL}: nothing to tune on; the cases file needs prompts that "
        "should trigger it and prompts that should not (docs/cli.md, Cases files)"
    )


def test_the_prompt_typed_is_a_case_only_when_the_skill_misses_it_and_the_file_has_none() -> None:
    """The explorer's ctrl+t asks "why not mine?" of the prompt typed: it joins the cases as a
    should-trigger case of the skill, unless the skill takes it already or the file labels
    that prompt itself (the file's label wins)."""
    cases = [Case("bill my customer", (SKILL,), "direct")]
    typed = typed_case("invoice a customer in euros", SKILL, cases, injected=False)
    assert typed is not None and typed.expect == (SKILL,) and typed.positive
    assert typed_case("invoice a customer in euros", SKILL, cases, injected=True) is None
    assert typed_case("bill my customer", SKILL, cases, injected=False) is None
    assert typed_case(" bill  my customer\n", SKILL, cases, injected=False) is None
    assert typed_case("  ", SKILL, cases, injected=False) is None


def test_a_case_that_must_be_fixed_is_tuned_on_never_held_out(tmp_path: Path) -> None:
    """With no cases file, the prompt typed alone is tuned on: edits that make the skill
    take it are proposed and scored, none recommended (nothing is held out to check them)."""
    index = _index(tmp_path / "skills")
    original = read_skill_text(str(tmp_path / "skills" / SKILL / "SKILL.md"))
    typed = typed_case("bill my customer for consulting", SKILL, [], injected=False)
    assert typed is not None
    result = tune(index, CONFIG, SKILL, [], original, must_fix=(typed,))
    assert result.split.tuning == (typed,) and result.split.held_out == ()
    assert result.notes[0] == (
        'the prompt typed is a should-trigger case, tuned on and never held out: "bill my '
        'customer for consulting"'
    )
    assert result.notes[1].startswith(f"every case is one {SKILL} should take: nothing checks")
    best = result.candidates[0]
    assert [flip.case for flip in best.flips if flip.effect is Effect.FIX] == [typed]
    assert result.recommended is None


def test_an_unknown_skill_is_refused(tmp_path: Path) -> None:
    index = _index(tmp_path / "skills")
    with pytest.raises(KeyError):
        tune(index, CONFIG, "nope", [], "")


def test_the_index_it_is_given_is_not_touched(tmp_path: Path) -> None:
    index = _index(tmp_path / "skills")
    prompts = [prompt for prompt, _ in OWN]
    before = [decide(prompt, index, CONFIG).injected_ids for prompt in prompts]
    description = index.skills[index.positions[SKILL]].description
    original = read_skill_text(str(tmp_path / "skills" / SKILL / "SKILL.md"))
    result = tune(index, CONFIG, SKILL, _trigger_evals(tmp_path / "evals.json"), original)
    assert result.candidates
    assert index.skills[index.positions[SKILL]].description == description
    assert [decide(prompt, index, CONFIG).injected_ids for prompt in prompts] == before
    assert read_skill_text(str(tmp_path / "skills" / SKILL / "SKILL.md")) == original


def test_remembered_logits_are_the_cross_encoders_own(tmp_path: Path, warm_cache_dir: Path) -> None:
    """The run-long memo of (prompt, document) logits changes no decision."""
    from explorer.engine.author.tune import remembering
    from explorer.engine.inference.cache import EmbeddingCache
    from explorer.engine.inference.models import load_models

    config = Config(model="bow", reranker="packaged", lexical_min=0)  # stage 2 for most
    models = load_models(config, EmbeddingCache(warm_cache_dir))  # the run's warm session
    if models.reranker is None:
        pytest.skip(models.status.reranker_note)
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    index = build_index([root], config, models)
    remembered = remembering(index)
    assert remembered.models.reranker is not index.models.reranker
    prompts = [prompt for prompt, _ in OWN] + list(LIBRARY.values())
    reranked = 0
    for prompt in prompts * 2:  # the second time from the memo
        plain, memo = decide(prompt, index, config), decide(prompt, remembered, config)
        assert memo.injected_ids == plain.injected_ids
        logits = [(row.id, row.rerank) for row in memo.rows]
        assert logits == [(row.id, row.rerank) for row in plain.rows]
        reranked += any(logit is not None for _, logit in logits)
    assert reranked >= len(prompts)


def test_candidates_rank_stealers_then_lexical_only_gains_last() -> None:
    import dataclasses

    from explorer.engine.author.tune import (
        Candidate,
        Flip,
        Shift,
        Split,
        Tally,
        recommendable,
        shortcomings,
    )

    case = Case(prompt="p", expect=(SKILL,), kind="direct")
    other = Case(prompt="q", expect=("timesheet",), kind="direct")

    def flip(effect: Effect, part: Part, target: Case = case) -> Flip:
        return Flip(target, part, effect, 0.0, 0.0, None, None, (), (), ("x", "x"), None)

    def candidate(name: str, flips: list[Flip], dense: int) -> Candidate:
        return Candidate(
            name, (name,), (), Tally(0, 0), Tally(0, 0), tuple(flips), dense, 0,
            Shift(0.0, 0.0, None, None, ()), "",
        )  # fmt: skip

    big_steal = candidate("a", [flip(Effect.FIX, Part.HELD_OUT)] * 3 + [
        flip(Effect.STEAL, Part.OTHER, other)], dense=3)  # fmt: skip
    lexical = candidate("b", [flip(Effect.FIX, Part.HELD_OUT)] * 2, dense=0)
    small = candidate("c", [flip(Effect.FIX, Part.HELD_OUT)], dense=1)
    tuning_only = candidate("d", [flip(Effect.FIX, Part.TUNING)], dense=1)
    ranked = sorted([big_steal, lexical, tuning_only, small], key=rank_key)
    assert [c.description for c in ranked] == ["c", "d", "b", "a"]
    assert lexical.lexical_only and lexical.survives == 0.0 and small.survives == 1.0
    # A fix that needs the models' move as well as the words is not word matching alone.
    joint = dataclasses.replace(lexical, joint_fixes=1)
    assert not joint.lexical_only and joint.survives == 0.0
    assert sorted([lexical, joint], key=rank_key) == [joint, lexical]
    assert recommendable(small) and not recommendable(lexical) and recommendable(joint)
    assert joint.to_dict()["without_lexical"]["joint_fixes"] == 1
    # Both front ends say it.
    from explorer.cli.commands.tune import tune_text
    from explorer.tui.suggest import candidate_text

    shown = candidate_text(1, joint, False).plain
    assert "; 1 more needs words and models together" in shown and "\n  b\n" in shown
    assert "\n  lexical off: 0 of 2 fixes remain (0%); 1 more needs" in shown
    # Another's case names whose it was: a sibling's, or no skill's.
    nobody = Case(prompt="r", expect=(), kind="negative")
    stealer = candidate(
        "f",
        [
            flip(Effect.FIX, Part.HELD_OUT),
            flip(Effect.STEAL, Part.OTHER, other),
            flip(Effect.STEAL, Part.OTHER, nobody),
        ],
        dense=1,
    )
    shown = candidate_text(1, stealer, False).plain
    # Its steals cancel its one fix: said once, with the counts.
    assert shortcomings(stealer) == ["it steals 2 cases, no fewer than the 1 it fixes"]
    assert "lexical off: 1 of 1 fix remains (100%)" in shown
    released = candidate(
        "g", [flip(Effect.FIX, Part.HELD_OUT), flip(Effect.RELEASE, Part.OTHER, other)], 2
    )
    assert "fixes 2 (1 release)" in candidate_text(1, released, False).plain
    assert "STEAL   other    q  (expects timesheet)" in shown
    assert "STEAL   other    r  (expects no skill)" in shown
    assert "FIX     held-out p\n" in shown  # the skill's own cases say nothing more
    none = Tally(0, 0)
    result = TuneResult(
        skill_id="x", path="x/SKILL.md", original="x", original_text="",
        split=Split((), (), ()), tuning=none, held_out=none, others=none,
        candidates=(joint,), recommended=None, evaluated=1, seconds=0.0,
    )  # fmt: skip
    assert any("1 more needs the new words and the models" in line for line in tune_text(result))
    assert "seed 'skill-explorer/tune'" in tune_text(result)[1]
    near = dataclasses.replace(result, others=Tally(19, 22), others_total=40)
    assert "; 22 other cases near the skill, 19 of them passing (of 40;" in tune_text(near)[2]
    from explorer.tui.suggest import summary_text  # the explorer says it the same way

    assert "; 22 other cases near the skill, 19 of them passing\n" in summary_text(near).plain
    own_split = dataclasses.replace(result, split=Split((), (), (), from_file=True))
    assert "(the file's split: train tuned on, validation held out)" in tune_text(own_split)[1]
    assert "; fixes 2 (1 release), breaks 0" in "\n".join(
        tune_text(dataclasses.replace(result, candidates=(released,)))
    )
    # A held-out fix paid for with as many of the tuning part's cases is no gain.
    even = candidate("e", [flip(Effect.FIX, Part.HELD_OUT), flip(Effect.BREAK, Part.TUNING)], 1)
    assert shortcomings(even) == ["it breaks 1 case, no fewer than the 1 it fixes"]
    # With no held-out case at all, that, not "no gain", is what keeps it back.
    assert shortcomings(tuning_only)[0].startswith("no held-out case to check it on")
    checked = dataclasses.replace(tuning_only, held_out=Tally(1, 2))
    assert shortcomings(checked)[0] == "no gain on the held-out cases"
    # Dropping the author's text to make room, and breaking a case it served, is no edit
    # to recommend however much it fixes (pickaxe lost its "access denied" prompt).
    fixes = [flip(Effect.FIX, Part.HELD_OUT)] * 3
    room = dataclasses.replace(
        candidate("h", [*fixes, flip(Effect.BREAK, Part.TUNING)], 3),
        steps=('add "pdf" (dropping "Covers building …")',),
    )
    assert shortcomings(room) == ["it drops some of the author's text and breaks 1 case"]
    assert recommendable(dataclasses.replace(room, flips=tuple(fixes)))


def test_edits_keep_the_spec_and_read_cleanly() -> None:
    from explorer.engine.author.tune import _covering, _keeps_spec, _without

    short = "Create invoices for clients."
    assert _keeps_spec(short, short + " Use it for bills.")
    assert not _keeps_spec(short, "x" * (MAX_DESCRIPTION + 1))
    assert not _keeps_spec(short, short + " Use it for <bills>.")
    long = "y " * 600  # over the limit already: only shorter edits
    assert _keeps_spec(long, long[:-10]) and not _keeps_spec(long, long + "z")
    assert _covering(short, ["bills"]) == short + " Use it for bills."
    assert _covering(short + " Use it for bills.", ["hours", "bills"]) == (
        short + " Use it for bills and hours."
    )
    assert _without("Query transaction status, or transactions (all).", "transaction") == (
        "Query status, or (all)."
    )


def test_a_trigger_eval_file_is_read_by_its_content_too(tmp_path: Path) -> None:
    path = tmp_path / "evals"  # no suffix
    path.write_text(json.dumps({"evals": [{"prompt": "bill a customer", "should_trigger": True}]}))
    (case,) = cases_for(path, SKILL).cases
    assert case.expect == (SKILL,)


def test_a_set_over_several_skills_keeps_the_others_items_for_the_steal_check(
    tmp_path: Path,
) -> None:
    """Items that name other skills were left out with a warning to use TOML: they are
    the confusable prompts the steal check needs."""
    path = tmp_path / "evals.json"
    items = [
        {"skill": SKILL, "prompt": "bill a customer", "should_trigger": True},
        {"skill": SKILL, "prompt": "log my hours", "should_trigger": False},
        {"skill": "timesheet", "prompt": "log my hours", "should_trigger": True},
    ]
    path.write_text(json.dumps({"cases": items}))
    read = cases_for(path, SKILL)
    assert [(case.expect, case.reject) for case in read.cases] == [
        ((SKILL,), ()),
        ((), (SKILL,)),
        (("timesheet",), ()),
    ]
    assert not any("left out" in warning for warning in read.warnings)
    # A set about the skill alone is read as before, for the skill asked for.
    path.write_text(json.dumps({"cases": items[:2]}))
    assert len(cases_for(path, SKILL).cases) == 2


def test_other_cases_skipped_by_the_filter_would_not_flip(tmp_path: Path) -> None:
    """Only the other cases an edit can reach are routed again; routing every one of them
    on each finalist's library gives the same outcomes."""
    from explorer.engine.author.rewrite import edit_description
    from explorer.engine.author.whatif import patched_index

    root = tmp_path / "skills"
    index = _index(root)
    path = str(root / SKILL / "SKILL.md")
    original = read_skill_text(path)
    cases = _with_siblings(tmp_path / "cases.toml")
    cases += [Case(prompt=text, expect=(name,), kind="direct") for name, text in LIBRARY.items()]
    cases.append(  # a conversation's earlier turn: always routed again
        Case(prompt="log time", expect=("timesheet",), kind="direct", context=("bill it",))
    )
    result = tune(index, CONFIG, SKILL, cases, original)
    assert result.candidates
    others = result.split.others
    for candidate in result.candidates:
        edit = edit_description(path, original, candidate.description)
        assert edit.skill is not None
        patched = patched_index(index, edit.skill, CONFIG)
        flipped = {flip.case.prompt for flip in candidate.flips if flip.part is Part.OTHER}
        for case in others:
            before = decide(case.prompt, index, CONFIG, context=case.context).injected_ids
            after = decide(case.prompt, patched, CONFIG, context=case.context).injected_ids
            assert (before != after) == (case.prompt in flipped), case.prompt


def test_additions_are_tried_at_the_start_too(tmp_path: Path) -> None:
    """The packaged cross-encoder reads the first few dozen word pieces of a description:
    each addition is also proposed as an opening sentence."""
    from explorer.engine.author.tune import _covering, _leading

    text = "Create invoices. Use it for tax."
    assert _covering(text, ["bill"]) == "Create invoices. Use it for tax and bill."
    assert _covering(text, ["bill"], front=True) == (
        "Use it for bill. Create invoices. Use it for tax."
    )
    assert _covering("Use it for bill. Create invoices.", ["customer"], front=True) == (
        "Use it for bill and customer. Create invoices."
    )
    assert _leading(text, "Use when asked about bills.").startswith("Use when asked about bills.")
    result = _run(tmp_path / "skills", _trigger_evals(tmp_path / "evals.json"))
    steps = [step for candidate in result.candidates for step in candidate.steps]
    assert any(step.endswith(" first") or step.startswith("first:") for step in steps) or (
        result.evaluated >= 2
    )


def test_lexical_off_keeps_the_words_at_the_old_description(tmp_path: Path) -> None:
    """With the lexical channels off, BM25 and every word-reading feature see the old
    description, the dense vector the new one."""
    from explorer.engine.author.rewrite import edit_description
    from explorer.engine.author.tune import _Tuner
    from explorer.engine.author.whatif import patched_index

    root = tmp_path / "skills"
    index = _index(root)
    path = str(root / SKILL / "SKILL.md")
    original = read_skill_text(path)
    tuner = _Tuner(index, CONFIG, SKILL, split_cases([], SKILL), original)
    new = LIBRARY[SKILL] + " Use it for bill and customer."
    edit = edit_description(path, original, new)
    assert edit.skill is not None
    patched = patched_index(index, edit.skill, CONFIG)
    held = tuner.lexical_held(patched)
    prompt = "bill my customer"
    position = index.positions[SKILL]
    assert held.skills[position].description == LIBRARY[SKILL]
    assert held.lexical is index.lexical
    assert patched.vectors is not None and held.vectors is patched.vectors
    plain, off, on = (decide(prompt, i, CONFIG).row(SKILL) for i in (index, held, patched))
    assert off.bm25 == plain.bm25 < on.bm25
    assert off.cosine == pytest.approx(on.cosine) and on.cosine > plain.cosine
    # The converse: the new words, the models at the old description.
    words = tuner.models_held(patched)
    assert words.lexical is patched.lexical and words.vectors is index.vectors
    alone = decide(prompt, words, CONFIG).row(SKILL)
    assert alone.bm25 == on.bm25 and alone.cosine == pytest.approx(plain.cosine)


def test_trimming_keeps_the_first_sentence_and_exclusions_and_leading_moves_one() -> None:
    from explorer.engine.author.tune import _leads, _trimmed

    worth = {"invoic": 3.0, "bill": 2.0}
    text = (
        "Create invoices for clients. Do not use for payroll. Bill customers for hours. "
        "A long sentence about nothing in particular that anyone asks."
    )
    first = "Create invoices for clients."
    trimmed = _trimmed(text, len(text) - 10, worth, first)
    assert trimmed is not None
    kept, gone = trimmed
    assert kept.startswith("Create invoices for clients.") and "Do not use for payroll." in kept
    assert "nothing in particular" not in kept and gone.startswith("A long sentence")
    assert _trimmed("One sentence only.", 5, worth, "One sentence only.") is None
    # A sentence that says when to use the skill is a trigger: never the one dropped.
    told = f"{first} Bill customers for hours. Also use it when a folder has those files."
    kept, gone = _trimmed(told, len(told) - 10, worth, first) or ("", "")
    assert (
        kept == f"{first} Also use it when a folder has those files."
        and gone == "Bill customers for hours."
    )
    # An edit that put a sentence before the author's first: the author's still stays.
    led = "Use it for bills. Create invoices for clients. A dull line nobody asks about."
    kept, gone = _trimmed(led, len(led) - 5, worth, first) or ("", "")
    assert kept == "Use it for bills. Create invoices for clients." and gone.startswith("A dull")
    assert _trimmed("Use it for bills. Create invoices for clients.", 20, worth, first) is None
    leads = _leads("A tagline. Bill customers for hours.", {"bill": 2.0, "hour": 1.0})
    assert leads == [
        ('lead with "Bill customers for hours."', "Bill customers for hours. A tagline.")
    ]


def test_an_added_sentence_follows_a_cjk_full_stop_without_another() -> None:
    from explorer.engine.author.tune import _covering

    assert _covering("自动判断最佳步骤组合。", ["PRD"]) == "自动判断最佳步骤组合。 Use it for PRD."
    assert _covering("Merge PDFs", ["forms"]) == "Merge PDFs. Use it for forms."


def test_an_addition_past_the_limit_drops_the_least_useful_sentence() -> None:
    from functools import partial

    from explorer.engine.author.tune import _covering, _fitted

    filler = "Words nobody asks about fill this sentence up. " * 20
    description = "Create invoices for clients. " + filler + "Bill customers for hours."
    words = ["retainer", "subscription"]
    assert len(description) < MAX_DESCRIPTION < len(_covering(description, words))
    step, text = _fitted(
        description,
        "add",
        partial(_covering, words=words),
        {"bill": 2.0},
        "Create invoices for clients.",
    )
    assert step.startswith('add (dropping "Words nobody asks about fill')
    assert len(text) <= MAX_DESCRIPTION and text.endswith("Use it for retainer and subscription.")
    assert text.startswith("Create invoices for clients.") and "Bill customers" in text


def test_with_the_lexical_channels_off_the_reranker_still_reads_the_edit(tmp_path: Path) -> None:
    import dataclasses

    import numpy as np

    from explorer.engine.author.rewrite import edit_description
    from explorer.engine.author.tune import _Tuner
    from explorer.engine.author.whatif import patched_index
    from explorer.engine.inference.rerank import rerank_document

    class Lengths:  # a stand-in cross-encoder: a document's length is its logit
        name = "lengths"

        def score(self, query: str, documents: list[str]) -> np.ndarray:
            return np.array([float(len(document)) for document in documents])

    root = tmp_path / "skills"
    index = _index(root)
    index = dataclasses.replace(
        index,
        models=dataclasses.replace(index.models, reranker=Lengths()),
    )
    path = str(root / SKILL / "SKILL.md")
    original = read_skill_text(path)
    tuner = _Tuner(index, CONFIG, SKILL, split_cases([], SKILL), original)
    new = LIBRARY[SKILL] + " Use it for bill."
    edit = edit_description(path, original, new)
    assert edit.skill is not None
    patched = patched_index(index, edit.skill, CONFIG)
    held = tuner.lexical_held(patched)
    skill = index.skills[index.positions[SKILL]]
    old_doc = rerank_document(skill.description, skill.body_head)
    new_doc = rerank_document(new, skill.body_head)
    other = "another skill's document"
    logits = held.models.reranker.score("prompt", [old_doc, other])  # type: ignore[union-attr]
    assert list(logits) == [len(new_doc), len(other)]
    assert held.models.reranker.name == "lengths"  # type: ignore[union-attr]
    # With the models held instead, the library gives the new text and the old is read.
    words = tuner.models_held(patched)
    logits = words.models.reranker.score("prompt", [new_doc, other])  # type: ignore[union-attr]
    assert list(logits) == [len(old_doc), len(other)]


def _probe_of(passed: bool) -> Probe:
    return Probe((), passed, 0.0, 0.0, None, None, frozenset(), "relevance")


def test_a_fix_made_by_copying_one_prompts_own_words_does_not_count() -> None:
    """The search's score keeps a fix only when the edit would be proposed without that
    prompt: it adds none of the prompt's words, or one another wanted prompt has too."""
    from explorer.engine.author.tune import _general

    cases = [
        Case("bill the customer for hours", (SKILL,), "direct"),  # "customer" is shared
        Case("quote the retainer fee", (SKILL,), "direct"),  # "retainer" is its alone
        Case("invoice a client now", (SKILL,), "direct"),  # fixed with none of its words added
        Case("write a git commit message", (), "negative"),  # broken
    ]
    before = [_probe_of(p) for p in (False, False, False, True)]
    after = [_probe_of(p) for p in (True, True, True, False)]
    support = {"customer": 2, "retainer": 1}
    added = frozenset({"customer", "retainer"})
    edit = "Create invoices. Use it for customer and retainer."
    assert _general(edit, cases, before, after, added, support) == 1 + 0 + 1 - 1
    assert _general(edit, cases, before, after, added, support | {"retainer": 2}) == 2
    # A prompt the edit quotes whole is fixed by the copy: it does not count either.
    quoting = 'Create invoices. Use when the user says "bill the customer for hours".'
    assert _general(quoting, cases, before, after, added, support) == 0 + 0 + 1 - 1


def test_a_word_several_missed_prompts_share_outranks_one_prompts_rarer_word() -> None:
    """A word of one prompt alone weighs half: the shared word is the topic's."""
    from explorer.engine.author.tune import _evidence

    missed = ["bill the customer today", "bill a customer for work", "zebra quarterly ledger"]
    idf = {"bill": 2.0, "customer": 2.0, "zebra": 5.0, "quarterly": 5.0, "ledger": 5.0}
    evidence = _evidence("Create invoices.", missed, [], missed, lambda t: idf.get(t, 1.0))
    ranked = [surface for _, surface in evidence.terms]
    assert ranked.index("zebra") > ranked.index("bill")


def test_the_relevance_margin_counts_toward_the_right_side() -> None:
    """With no case flipped, an edit is still told apart by how far the relevance model
    moved: up on should-trigger prompts, down on the others; no candidate row is 0."""
    from dataclasses import replace

    from explorer.engine.author.tune import _margin

    cases = [
        Case("bill the customer", (SKILL,), "direct"),
        Case("write a git commit message", (), "negative"),
    ]
    before = [replace(_probe_of(False), relevance=0.3), replace(_probe_of(True), relevance=0.2)]
    after = [replace(_probe_of(False), relevance=0.45), _probe_of(True)]
    assert _margin(cases, before, after) == pytest.approx(0.15 + 0.2)
    assert _margin(cases, after, before) == pytest.approx(-0.35)


def test_the_use_sentences_own_words_match_no_prompt() -> None:
    """The sentences an edit adds are made of §2.2 stopwords: only the words they list reach
    BM25, overlap and the relevance model's word features, so a fix is never a template
    word shared with the prompt."""
    from explorer.engine.author.tune import COVERING, QUOTE, USE_FOR, USE_WHEN
    from explorer.engine.base.text import match_tokens

    for template in (USE_FOR, USE_WHEN, COVERING, QUOTE):
        assert match_tokens(template.format("")) == []
        assert match_tokens(template.format("invoices and bills")) == ["invoice", "bill"]


def test_another_languages_exclusion_is_never_trimmed() -> None:
    """An author's "勿用于…" keeps the prompts it names out, as "Do not use for …" does."""
    from explorer.engine.author.tune import _trimmed

    worth = {"plot": 3.0}
    for exclusion in ("勿用于：非生信图表、只要表格不要图。", "Não use para tabelas simples."):
        text = f"Draw plots. {exclusion} Plot styles for papers and plots for talks."
        trimmed = _trimmed(text, len(text) - 10, worth, "Draw plots.")
        assert trimmed is not None and exclusion in trimmed[0], exclusion


def test_words_to_add_are_never_another_languages_function_words_or_fragments() -> None:
    """Portuguese prompts: "pra" and "esse" are rare words to an English library, yet name
    no task; "voc" is a piece of "você", not a word."""
    from explorer.engine.author.tune import _evidence

    missed = [
        "cria um AGENTS.md pra esse repo com protocolo",
        "você pode gerar o protocolo pra esse projeto",
    ]
    evidence = _evidence("Write agent files.", missed, [], missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert "protocolo" in offered
    assert not offered & {"pra", "esse", "voc", "pode"}
    # Chinese has no spaces: a Latin word beside a CJK character is whole.
    chinese = ["给LNP做一个封面", "帮我做LNP的封面图"]
    evidence = _evidence("Design covers.", chinese, [], chinese, lambda _term: 5.0)
    assert "LNP" in {surface for _, surface in evidence.terms}


def test_danish_function_words_are_never_added_nor_removed() -> None:
    """A Danish cooking skill's missed prompts have "gerne" (gladly) and "min" (my), which
    name no task, and its should-not-trigger prompts "de" (they), whose removal would
    leave the author's sentence ungrammatical: none is a word to add or to remove."""
    from explorer.engine.author.tune import _evidence

    description = "Madplan for familien: hvad de skal lave, og hvordan de når det i tide."
    missed = ["jeg vil gerne have en madplan til min familie", "kan du gerne lave min indkøbsliste"]
    wrong = ["hvad skal de se i biografen i aften"]
    evidence = _evidence(description, missed, wrong, missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert "familie" in offered and not offered & {"gerne", "min", "kan", "jeg"}
    assert "de" not in {term for term, _ in evidence.pulling}
    # English words a task may be named by stay offerable, whatever they mean in Danish.
    from explorer.engine.author.languages import FOREIGN_FUNCTION_WORDS

    assert not {"man", "mod", "bare", "din", "dig", "var", "mine", "under"} & (
        FOREIGN_FUNCTION_WORDS
    )


def test_where_words_and_code_literals_are_never_words_to_add() -> None:
    """ "Use it for inside, TRUE and FALSE." for a Structured Text skill: words of where,
    and a code literal, name no task."""
    from explorer.engine.author.tune import _evidence

    missed = ["the flag stays TRUE inside the FB after reset", "set the output FALSE inside a loop"]
    evidence = _evidence("Structured Text help.", missed, [], missed, lambda _term: 5.0)
    offered = {surface.lower() for _, surface in evidence.terms} | {
        word.lower() for word in evidence.shared
    }
    assert "flag" in offered and not offered & {"inside", "true", "false"}


def test_the_assistants_name_and_the_calendar_are_never_words_to_add() -> None:
    """A prompt that asks Claude names who is asked, and one that dates the request names
    when: "Use it for claude." or "Use for april." names no task."""
    from explorer.engine.author.tune import _evidence

    missed = ["ask claude to reconcile the friday ledger", "can codex reconcile my ledger in april"]
    evidence = _evidence("Bookkeeping.", missed, [], missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert {"reconcile", "ledger"} <= offered
    assert not offered & {"claude", "codex", "friday", "april"}  # nor a day or a month
    # Nor how often or how much: "Use it for angles and once." named no task.
    missed = ["review this PR from several angles at once", "review my PR again, several ways"]
    evidence = _evidence("Code review.", missed, [], missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert "angles" in offered and not offered & {"once", "several", "again"}


def test_english_function_words_and_filler_are_never_words_to_add() -> None:
    """ "Use it for across, actual and whether." and "Use it for tomorrow." listed words
    past the router's short stopword list that name no task."""
    from explorer.engine.author.tune import _evidence

    missed = [
        "check whether the invoice totals add up across all tabs tomorrow",
        "actually reconcile the invoice totals across the ledger",
    ]
    evidence = _evidence("Bookkeeping.", missed, [], missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert {"invoice", "totals"} <= offered
    assert not offered & {"whether", "across", "tomorrow", "actually", "always"}
    # Words of motion, degree and rank say how a request goes, not what it asks.
    missed = [
        "We need a capacity plan for Black Friday. Traffic goes ~8x for the second day.",
        "a decent capacity plan: traffic goes up on Black Friday",
    ]
    evidence = _evidence("System design.", missed, [], missed, lambda _term: 5.0)
    offered = {surface for _, surface in evidence.terms} | set(evidence.shared)
    assert {"capacity", "traffic", "Black Friday"} <= offered
    assert not offered & {"goes", "second", "day", "decent", "black"}


def test_terms_are_shown_as_the_prompts_write_them() -> None:
    """The channel line read "terms: traffic, goe, hour": match tokens, not words."""
    from explorer.engine.author.tune import as_written

    prompt = "Traffic goes up for hours on Black Friday"
    assert as_written(("traffic", "goe", "hour", "black", "friday", "zzz"), [prompt]) == (
        "traffic",
        "goes",
        "hours",
        "Black Friday",
        "zzz",
    )


def test_a_compound_or_a_name_is_offered_whole() -> None:
    """ "Use for draft, email or hands." offered half of "all-hands", and "black" half of
    "Black Friday": the word's match token counts, the whole is what an edit says."""
    from explorer.engine.author.tune import Options, _evidence, _proposals, _words

    assert _words("Prep the all-hands deck for Google Sheets.") == [
        ("prep", "prep"),
        ("", ""),
        ("all-hands", "all"),
        ("all-hands", "hand"),
        ("deck", "deck"),
        ("", ""),
        ("Google Sheets", "google"),
        ("Google Sheets", "sheet"),
    ]
    assert [surface for surface, _ in _words("Black Friday traffic")][:1] == ["black"]
    missed = ["draft the pre-commit hook notes", "fix our pre-commit hook config"]
    evidence = _evidence("Git helpers.", missed, [], missed, lambda _term: 5.0)
    assert "pre-commit pre-commit" not in evidence.phrases
    assert "pre-commit hook" in evidence.phrases
    steps = [step for step, _ in _proposals("Git helpers.", evidence, Options(), "Git helpers.")]
    assert not any("pre-commit, pre-commit" in step or "pre-commit and pre-commit" in step
                   for step in steps)  # fmt: skip


def test_prompts_in_chinese_offer_the_phrases_they_share() -> None:
    """The router reads Chinese as character bigrams: the terms two wanted prompts share
    are offered, not the words of asking ("帮我看看") nor a term's particles ("这张")."""
    from explorer.engine.author.tune import _evidence

    wanted = ["帮我看看这张照片的快门设置", "这张照片的快门速度对吗", "我想调一下快门和光圈"]
    evidence = _evidence("Photography tips.", wanted, [], wanted, lambda _term: 5.0)
    assert evidence.shared[0] == "快门"
    assert "照片" in evidence.shared
    assert not {"帮我看看", "这张", "这张照片", "这张照片的", "我想"} & set(evidence.shared)
    team = ["我们团队的培训计划", "帮他们团队写测试"]
    shared = _evidence("Test plans.", team, [], team, lambda _term: 5.0).shared
    assert "团队" in shared and not any(phrase.startswith("们") for phrase in shared)
    assert "快门" not in _evidence("调快门。", wanted, [], wanted, lambda _term: 5.0).shared
    # A word of asking cuts a run as a particle does: "怎么设计" holds "设计", not "么设计".
    how = ["这个系统怎么设计比较好", "微服务应该怎么设计呢"]
    assert _evidence("架构。", how, [], how, lambda _term: 5.0).shared == ("设计",)


def test_a_skill_is_near_a_prompt_in_either_vector_space() -> None:
    """§9.14: the multilingual encoder's nearest skills join the candidates, so a skill an
    edit brings among them reaches the case as one MiniLM's cosine brings there does."""
    from explorer.engine.author.reach import NEAR_MARGIN, Nearest

    class Fixed:
        def embed_query(self, text: str) -> np.ndarray:
            return np.eye(1, 16, 0, dtype=np.float32)[0]

    skills = 2 + NEAR_MARGIN + 4
    rows = np.zeros((skills, 16), dtype=np.float32)
    rows[:, 0] = np.linspace(1.0, 0.0, skills)  # skill i's cosine falls with i
    nearest = Nearest.of("a prompt", Fixed(), rows, pool=2)
    assert [nearest.near(i) for i in range(skills)] == [i < 2 + NEAR_MARGIN for i in range(skills)]
    last = skills - 1
    moved = rows.copy()
    moved[last, 0] = 0.99
    assert not nearest.reaches(rows, last) and nearest.reaches(moved, last)
    assert not Nearest.of("a prompt", None, rows, pool=2).reaches(moved, last)


def test_prompts_are_quoted_whole_the_most_typical_first(tmp_path: Path) -> None:
    """A quoting edit names the tuning part's should-trigger prompts nearest the others
    (by the model's vectors) in a sentence of stopwords; a prompt too long to read as an
    example, or with an angle bracket, is never quoted, and a double quote inside one is
    made single so the quote stays whole."""
    from explorer.engine.author.tune import QUOTE_CHARS, _proposals, quotable, typical_first

    index = _index(tmp_path)
    prompts = [
        "bill the customer for consulting hours",
        "bill my customer for the consulting",
        "zebra stripes on the ledger",
        "bill a customer for consulting work",
        "x" * (QUOTE_CHARS + 1),
        "bill <customer> now",
    ]
    order = typical_first(prompts, index)
    assert order[-1] == "zebra stripes on the ledger"
    assert len(order) == 4 and all("<" not in text and len(text) <= QUOTE_CHARS for text in order)
    assert quotable('say "hi"\n  twice') == "say 'hi' twice"

    from explorer.engine.author.tune import Options, _evidence

    description = LIBRARY[SKILL]
    evidence = _evidence(description, [], [], [], lambda term: 1.0)
    proposals = dict(_proposals(description, evidence, Options(), description, order))
    quoting = [text for step, text in proposals.items() if step.startswith("quote")]
    assert len(quoting) == 3
    assert quoting[0] == f'{description} Use when the user says "{order[0]}".'
    assert quoting[1].endswith(f'says "{order[0]}" or "{order[1]}".')
    # A quoted prompt's own full stop ends the sentence, and what follows is a sentence.
    from explorer.engine.author.tune import _quoting, _sentence, _sentences

    ended = _quoting("Create invoices.", ["Bill the customer."])
    assert ended == 'Create invoices. Use when the user says "Bill the customer."'
    assert _sentences(_sentence(ended, "Use for bills.")) == [
        "Create invoices.",
        'Use when the user says "Bill the customer."',
        "Use for bills.",
    ]
    # A description that quotes prompts already is not given another quoting sentence.
    again = dict(_proposals(quoting[0], evidence, Options(), description, order))
    assert not any(step.startswith("quote") for step in again)
    # An author's own sentence of that shape is not one.
    own = 'Create invoices. Use when the user says "invoice".'
    assert any(
        step.startswith("quote") for step, _ in _proposals(own, evidence, Options(), own, order)
    )


def test_a_quotation_is_never_cut_and_a_joined_word_never_loses_a_piece() -> None:
    """A quoted prompt's own full stop ends no sentence: leading with a sentence, or
    dropping one, keeps every quotation whole. Removing a word leaves "pre-commit" and
    "init.sh" alone. A step names a quoted prompt by its first whole words."""
    from explorer.engine.author.tune import _head, _leads, _sentences, _without

    quoting = 'Set up agents. Use when the user says "no docs. no rules." or "it is a mess."'
    assert _sentences(quoting + " Not for chat.") == [
        "Set up agents.",
        'Use when the user says "no docs. no rules." or "it is a mess."',
        "Not for chat.",
    ]
    worth = {"mess": 5.0, "docs": 5.0, "rules": 5.0}
    for _, text in _leads(quoting, worth):
        assert text.startswith('Use when the user says "no docs.') and text.count('"') == 4
    assert _without("Install pre-commit hooks and pre checks via init.sh.", "pre") == (
        "Install pre-commit hooks and checks via init.sh."
    )
    assert _without("Run init.sh or the init script.", "init") == "Run init.sh or the script."
    assert _head("What GitHub topics, homepage and description") == '"What GitHub topics,…"'
    assert (
        _head("给我一个封面图提示词，要顶刊那种学术风格的感觉就好")
        == '"给我一个封面图提示词，要顶刊那种学术风格的感觉就好"'[:25] + '…"'
    )


def test_an_abbreviation_or_an_aside_ends_no_sentence_and_cjk_keeps_its_spacing() -> None:
    """ "(e.g. a marketing campaign)" was cut at "e.g.", so a trim left "(e.g." dangling
    in the author's exclusion and a lead put "Use for …" inside it; rejoined sentences got
    a space after each "。", inside quoted prompts too."""
    from explorer.engine.author.tune import _joined, _leads, _sentences, _trimmed

    exclusion = (
        "Do NOT use it for planning (e.g. a marketing campaign) or grilling that is not "
        "about a build (e.g. prepping someone for an interview)."
    )
    text = f"Grill a plan. It asks hard questions, i.e. the ones that hurt. {exclusion}"
    assert _sentences(text) == [
        "Grill a plan.",
        "It asks hard questions, i.e. the ones that hurt.",
        exclusion,
    ]
    worth = {"interview": 9.0, "grill": 1.0}
    trimmed = _trimmed(text, len(text) - 5, worth, "Grill a plan.")
    assert trimmed is not None and trimmed[0] == f"Grill a plan. {exclusion}"
    assert all(exclusion in moved for _, moved in _leads(text, worth))
    chinese = '核查说法。优先原始论文。Use when the user says "请核查这一说法。 好吗？"'
    assert _joined(_sentences(chinese)) == chinese
    assert [moved for _, moved in _leads(chinese, {"原始": 5.0})] == [
        '优先原始论文。核查说法。Use when the user says "请核查这一说法。 好吗？"'
    ]


def _moved(effect: Effect, part: Part, expect: tuple[str, ...], relevance: float) -> Flip:
    return Flip(
        case=Case("a prompt", expect, "positive" if expect else "negative"),
        part=part,
        effect=effect,
        cosine=relevance / 2,
        bm25=0.0,
        rerank=None,
        relevance=relevance,
        terms_gained=(),
        terms_lost=(),
        stages=("relevance", "relevance"),
        rerank_after=None,
    )


def test_the_channels_are_averaged_over_the_cases_it_now_takes_not_its_releases() -> None:
    """A release lowers the skill's p on another's case; averaged with the fix it read as
    no move at all."""
    fix = _moved(Effect.FIX, Part.TUNING, (SKILL,), 0.4)
    release = _moved(Effect.RELEASE, Part.OTHER, ("pdf",), -0.4)
    shift = _shift([fix, release])
    assert shift.over_fixes and shift.relevance == pytest.approx(0.4)
    assert shift.cosine == pytest.approx(0.2)
    alone = _shift([release])  # nothing taken: every flip, and it says so
    assert not alone.over_fixes and alone.relevance == pytest.approx(-0.4)


def _routed(injected: tuple[str, ...], passed: bool) -> Probe:
    return Probe(injected, passed, 0.0, 0.0, None, None, frozenset(), "relevance")


def test_a_steal_whose_own_skill_keeps_the_case_says_the_two_share_it() -> None:
    """The eval still passes such a case (its skill is injected), so the what-if shows no
    flip for it: the steal says why."""
    case = Case("log my hours", ("timesheet",), "direct")
    before = _routed(("timesheet",), True)
    shared = _flip(case, Part.OTHER, SKILL, before, _routed(("timesheet", SKILL), True))
    taken = _flip(case, Part.OTHER, SKILL, before, _routed((SKILL,), False))
    assert shared is not None and shared.effect is Effect.STEAL and shared.beside
    assert taken is not None and taken.effect is Effect.STEAL and not taken.beside
    assert shared.to_dict()["beside"] is True


def test_a_candidate_whose_extra_steps_win_nothing_is_left_out() -> None:
    """good-repo's run listed its quote, then the quote with "demo", "sidebar" or
    "correctly" added: each fixing the same three prompts. A longer edit stays when its
    extra step wins a case, or loses one fewer."""
    from explorer.engine.author.tune import (
        Candidate,
        Flip,
        Shift,
        Tally,
        _without_idle_steps,
    )

    first, second, third = (Case(prompt=p, expect=(SKILL,), kind="direct") for p in "xyz")

    def flip(target: Case, effect: Effect = Effect.FIX) -> Flip:
        return Flip(target, Part.TUNING, effect, 0.0, 0.0, None, None, (), (), ("x", "x"), None)

    def candidate(steps: tuple[str, ...], flips: list[Flip]) -> Candidate:
        return Candidate(
            " ".join(steps), steps, (), Tally(0, 0), Tally(0, 0), tuple(flips), len(flips), 0,
            Shift(0.0, 0.0, None, None, ()), "",
        )  # fmt: skip

    quote = candidate(("quote",), [flip(first), flip(second)])
    padded = candidate(("quote", 'add "demo"'), [flip(first), flip(second)])
    fewer = candidate(("quote", 'add "sidebar"'), [flip(first)])
    wins_more = candidate(("quote", 'add "invoice"'), [flip(first), flip(second), flip(third)])
    other_idea = candidate(("trim",), [flip(first)])
    kept = _without_idle_steps([quote, padded, fewer, wins_more, other_idea])
    assert kept == [quote, wins_more, other_idea]
    # One that breaks a case the shorter breaks too, and fixes nothing more: idle.
    breaking = candidate(("quote",), [flip(first), flip(third, Effect.BREAK)])
    unbroken = candidate(("quote", "drop"), [flip(first)])
    assert _without_idle_steps([breaking, unbroken]) == [breaking, unbroken]
    still_broken = candidate(("quote", "drop"), [flip(first), flip(third, Effect.BREAK)])
    assert _without_idle_steps([breaking, still_broken]) == [breaking]
