"""`skill-explorer tune`: the report, --json, and --apply writing only the description."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.cli.commands.tune import _flip_line
from explorer.engine.author.tune import Effect, Part
from tests.conftest import SAMPLE_SKILLS, write_skill
from tests.engine.test_tune import LIBRARY, OWN, SKILL, _moved

Capture = pytest.CaptureFixture[str]
# Everything around the description must survive an --apply byte for byte.
HEADER = "---\n# an author's comment\nname: {name}\nlicense: MIT\n"
FOOTER = "metadata:\n  owner: someone  # kept\n---\n# {name}\n\nSteps.\r\nA CRLF line.\n"


def _library(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    text = (
        HEADER.format(name=SKILL) + f"description: {LIBRARY[SKILL]}\n" + FOOTER.format(name=SKILL)
    )
    (root / SKILL / "SKILL.md").write_bytes(text.encode("utf-8"))
    evals = tmp_path / "evals.json"
    evals.write_text(json.dumps({"evals": [{"prompt": q, "should_trigger": t} for q, t in OWN]}))
    common = ["--skills", str(root), "--set", "model=bow", "--set", "reranker=off"]
    return root, evals, [*common, "--cache-dir", str(tmp_path / "cache")]


def _run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_report_names_fixes_and_the_recommendation(capsys: Capture, tmp_path: Path) -> None:
    _, evals, common = _library(tmp_path)
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), *common)
    assert code == 0
    assert "#1 RECOMMENDED" in out
    assert "FIX " in out and "held-out" in out and "{+" in out
    assert "with the lexical channels off" in out and "channels moved" in out


def test_json_is_the_same_twice(capsys: Capture, tmp_path: Path) -> None:
    _, evals, common = _library(tmp_path)
    outputs = []
    for _ in range(2):
        code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), "--json", *common)
        assert code == 0
        outputs.append(out)
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    assert data["schema"] == "skill-explorer/tune@1" and data["recommended"] == 1
    assert data["candidates"][0]["flips"][0]["effect"] in ("fix", "release")


def test_apply_writes_only_the_description(capsys: Capture, tmp_path: Path) -> None:
    root, evals, common = _library(tmp_path)
    path = root / SKILL / "SKILL.md"
    before = path.read_bytes()
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), "--json", *common)
    chosen = json.loads(out)["candidates"][0]["description"]
    code, out, err = _run(capsys, "tune", SKILL, "--cases", str(evals), "--apply", "1", *common)
    assert code == 0, err
    assert f"wrote candidate 1 into {path}" in out
    assert "--apply N" not in out  # done: no hint to do it
    after = path.read_bytes()
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=False)) if a != b]
    assert len(old_lines) == len(new_lines) and len(changed) == 1
    assert new_lines[changed[0]].decode() == f"description: {chosen}\n"
    others = {name: (root / name / "SKILL.md").read_bytes() for name in LIBRARY if name != SKILL}
    # Tuning again starts from the new description: the same files, another answer.
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), "--json", *common)
    assert json.loads(out)["description"] == chosen
    assert others == {name: (root / name / "SKILL.md").read_bytes() for name in others}


def test_bad_input_is_a_usage_error(capsys: Capture, tmp_path: Path) -> None:
    _, evals, common = _library(tmp_path)
    code, _, err = _run(capsys, "tune", "invoice-makr", "--cases", str(evals), *common)
    assert code == 2 and "did you mean 'invoice-maker'" in err
    before = (tmp_path / "skills" / SKILL / "SKILL.md").read_bytes()
    code, out, err = _run(capsys, "tune", SKILL, "--cases", str(evals), "--apply", "99", *common)
    # The search is not thrown away: its candidates are shown, and nothing is written.
    assert code == 2 and "no candidate 99" in err and "nothing was written" in err
    assert "#1" in out and (tmp_path / "skills" / SKILL / "SKILL.md").read_bytes() == before
    code, _, err = _run(capsys, "tune", SKILL, "--cases", str(tmp_path / "none.json"), *common)
    assert code == 2 and "cannot read" in err
    empty = tmp_path / "empty.toml"
    empty.write_text("# no cases yet\n", encoding="utf-8")
    code, _, err = _run(capsys, "tune", SKILL, "--cases", str(empty), *common)
    assert code == 2 and f"{empty}: no cases" in err
    others = tmp_path / "others.tsv"  # cases, but none about the skill: nothing to tune on
    others.write_text("pdf\tdirect\tmerge two pdf files\n", encoding="utf-8")
    code, out, err = _run(capsys, "tune", SKILL, "--cases", str(others), *common)
    assert code == 2 and out == ""
    assert f"{others}: no case is about {SKILL}: tune needs prompts it should take" in err


def test_control_characters_in_prompts_and_descriptions_are_shown_not_sent(
    capsys: Capture, tmp_path: Path
) -> None:
    root, evals, common = _library(tmp_path)
    title = "\x1b]0;owned\x07"
    cases = [{"query": q + (f" {title}" if t else ""), "should_trigger": t} for q, t in OWN]
    evals.write_text(json.dumps(cases))
    code, out, err = _run(capsys, "tune", SKILL, "--cases", str(evals), *common)
    assert code == 0 and "FIX" in out
    assert "\x1b" not in out + err and "\x07" not in out + err
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), "--json", *common)
    assert out.isascii() and "\x1b" not in out
    # A description YAML cannot hold is not rewritten; the reason is shown, not sent.
    write_skill(root, SKILL, LIBRARY[SKILL] + f" {title}")
    code, out, err = _run(capsys, "tune", SKILL, "--cases", str(evals), *common)
    assert code == 0 and "not scored:" in out
    assert "\x1b" not in out + err and "\x07" not in out + err


def _passing_evals(tmp_path: Path, prompts: list[str]) -> Path:
    """Trigger evals of SKILL whose should-trigger prompts all pass already (they say the
    one-sentence description's own words), one in the tuning part and one held out."""
    evals = tmp_path / "passing.json"
    evals.write_text(json.dumps([{"query": q, "should_trigger": True} for q in prompts]))
    return evals


def test_counts_and_notes_read_as_sentences(capsys: Capture, tmp_path: Path) -> None:
    """One edit is 'scored 1 description' and 'the one edit scored fixed no case', and a
    tuning part that passes whole says what is still tried: with nothing missed and one
    sentence to the description, the only edit is quoting the tuning part's prompt."""
    _, _, common = _library(tmp_path)
    prompts = ["create an invoice for my client with tax", "invoice the client for line items"]
    evals = _passing_evals(tmp_path, prompts)
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), *common)
    assert code == 0 and "before: tuning 1/1, held-out 1/1" in out
    assert "scored 1 description in" in out
    assert "note: the one edit scored fixed no case of the tuning part" in out
    assert "passes already, so no missed prompt offers words; edits that raise" in out


def test_a_skill_with_nothing_to_try_says_so(capsys: Capture, tmp_path: Path) -> None:
    """The same with prompts too long to quote: 'scored 0 descriptions' sat beside 'edits
    that raise the margin are still tried'."""
    _, _, common = _library(tmp_path)
    long = "create an invoice for my client with line items, tax and due dates; " * 3
    evals = _passing_evals(tmp_path, [long, long.upper()])
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(evals), *common)
    assert code == 0 and "before: tuning 1/1, held-out 1/1" in out
    assert "scored 0 descriptions in" in out
    assert "offers words, none can be quoted, and the description has nothing to trim" in out
    assert "still tried" not in out


def test_a_sibling_s_lost_case_shows_the_p_that_lost_it(capsys: Capture) -> None:
    """A line about another skill's case gives that skill's p before and after against its
    bar, not only the edited skill's own move: here changelog-generator's edits pull a
    regex-builder case below the bar it had cleared."""
    cases, skills = SAMPLE_SKILLS / "cases.toml", str(SAMPLE_SKILLS)
    code, out, _ = _run(
        capsys, "tune", "changelog-generator", "--cases", str(cases), "--skills", skills
    )
    assert code == 0
    line = next(line for line in out.splitlines() if "(expects regex-builder)" in line)
    moved = r"regex-builder p (\d\.\d{3}) -> (\d\.\d{3}) \(bar (\d\.\d\d)\)"
    found = re.search(moved, line)
    assert found is not None, line
    was, now, bar = (float(value) for value in found.groups())
    assert was >= bar > now


def test_only_another_skill_s_flip_names_the_skill_it_expects(capsys: Capture) -> None:
    """A case about the tuned skill itself names no other skill's p; one about another
    names that skill, and its bar."""
    cases, skills = SAMPLE_SKILLS / "cases.toml", str(SAMPLE_SKILLS)
    argv = ("tune", "changelog-generator", "--cases", str(cases), "--skills", skills, "--json")
    code, out, _ = _run(capsys, *argv)
    flips = [flip for candidate in json.loads(out)["candidates"] for flip in candidate["flips"]]
    parts = {flip["part"] for flip in flips}
    assert code == 0 and "other" in parts and parts - {"other"}  # both kinds are checked
    for flip in flips:
        other = flip["part"] == "other"
        assert (flip["expected"] is not None) is (other and bool(flip["expect"])), flip
        assert (flip["bar"] is not None) is (flip["expected"] is not None), flip


def test_applying_a_candidate_it_would_not_recommend_says_why(
    capsys: Capture, tmp_path: Path
) -> None:
    """--apply writes a candidate tune would not recommend (the author chose it) and says
    on stderr what keeps it from being recommended."""
    from tests.engine.test_tune import _with_siblings

    root, _, common = _library(tmp_path)
    cases = tmp_path / "cases.toml"
    _with_siblings(cases)
    code, out, _ = _run(capsys, "tune", SKILL, "--cases", str(cases), "--json", *common)
    candidates = json.loads(out)["candidates"]
    stealer = next(number for number, c in enumerate(candidates, 1) if c["steals"])
    clean = json.loads(out)["recommended"]
    assert clean is not None
    code, out, err = _run(
        capsys, "tune", SKILL, "--cases", str(cases), "--apply", str(stealer), *common
    )
    assert code == 0 and f"wrote candidate {stealer}" in out
    # The one written is the one listed: another's diff above "wrote" would read as written.
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("#")]
    assert listed == [f"#{stealer}"] and len(candidates) > 1
    steals = candidates[stealer - 1]["steals"]
    assert f"caution: candidate {stealer} is not one to recommend" in err
    assert f"it steals {steals} case" in err
    (root / SKILL / "SKILL.md").write_text(
        f"---\nname: {SKILL}\ndescription: {LIBRARY[SKILL]}\n---\n", encoding="utf-8"
    )
    code, out, err = _run(
        capsys, "tune", SKILL, "--cases", str(cases), "--apply", str(clean), *common
    )
    assert code == 0 and f"wrote candidate {clean}" in out and "caution" not in err


def test_a_shared_steal_says_the_case_s_own_skill_keeps_it() -> None:
    stolen = _moved(Effect.STEAL, Part.OTHER, ("timesheet",), 0.3)
    flip = dataclasses.replace(stolen, beside=True)
    assert "(expects timesheet; shared: timesheet still injected, this skill beside it)" in (
        _flip_line(flip)
    )
    alone = _flip_line(dataclasses.replace(flip, beside=False))
    assert "(expects timesheet)" in alone and "shared" not in alone


def test_a_fix_a_task_made_names_the_task_and_its_p() -> None:
    """p +0.015 on the whole prompt cannot cross a bar of 0.59: the fix was one clause of
    the prompt routed alone, at p 0.64, and the line said only "decided by relevance"."""
    fixed = dataclasses.replace(
        _moved(Effect.FIX, Part.TUNING, (SKILL,), 0.015),
        task=("its components/onboarding/WelcomeModal.tsx, next 15 app router", 0.64),
    )
    line = _flip_line(fixed)
    assert line.endswith(
        "; decided by relevance, for its task 'its components/onboarding/WelcomeModal.…' at p 0.64]"
    )
    assert "for its task" not in _flip_line(dataclasses.replace(fixed, task=None))
