"""The README's demo is what a default install does, and stays so.

Each row of the README's demo table names a prompt, what the default injects (with p, the
relevance model's probability) and the stage that decided. These tests run every row
through the router with the default config on `sample_skills/`, the fast ones through
`decide()` with the default models loaded once, the slow one through `route --json` as a
user types it; then the edit the demo makes to `xlsx/SKILL.md`. A default that changes
what the README says (a preset, a model, a threshold) fails here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from explorer.engine.base.config import Config
from explorer.engine.index.opening import Engine, open_engine, open_library
from explorer.engine.qa.flips import flip_cause
from explorer.engine.route.decision import Decision
from explorer.engine.route.pipeline import decide
from tests.conftest import REPO, SAMPLE_SKILLS

README = REPO / "README.md"
SECTION = "## A five-minute demo"
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)$", re.MULTILINE)
TICKED = re.compile(r"`([^`]+)`")
PROBABILITY = re.compile(r"`([^`]+)`,\s*p\s+(\d\.\d\d)")


@dataclass(frozen=True)
class Claim:
    step: int
    prompt: str
    injected: tuple[str, ...]  # () for "nothing"
    p: dict[str, float]  # skill -> p as the README prints it (two decimals)
    stage: str


def demo_section() -> str:
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, "the README lost its demo"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def claims() -> list[Claim]:
    found = []
    for step, rest in ROW.findall(demo_section()):
        cells = [cell.strip() for cell in rest.split("|")]
        prompt = TICKED.findall(cells[0])[0]
        injects = cells[1]
        p = {skill: float(value) for skill, value in PROBABILITY.findall(injects)}
        injected = () if injects.startswith("nothing") else tuple(TICKED.findall(injects))
        found.append(Claim(int(step), prompt, injected, p, cells[2]))
    return found


def edit_claim() -> tuple[str, str]:
    """The sentence the demo adds to xlsx's description, and the step it is typed at."""
    text = " ".join(demo_section().split())
    added = re.search(r"add `([^`]+)` to the end of the description in `sample_skills/xlsx", text)
    assert added is not None, "the demo's edit step is not where the test looks for it"
    return added.group(1), text


def check(claim: Claim, decision: Decision) -> None:
    where = f"README demo step {claim.step} ({claim.prompt!r})"
    assert decision.injected_ids == claim.injected, (where, decision.injected_ids)
    assert decision.stage == claim.stage, (where, decision.stage)
    for skill, p in claim.p.items():
        got = decision.row(skill).relevance
        assert got is not None and round(got, 2) == p, (where, skill, got)


def test_the_table_has_every_step() -> None:
    assert [claim.step for claim in claims()] == [1, 2, 3, 4, 5]
    assert all(claim.p for claim in claims())  # every row quotes a probability


@pytest.fixture(scope="module")
def engine(warm_cache_dir: Path) -> Engine:
    """The default models, loaded once for this module, on the run's warm cache."""
    return open_engine(Config(), warm_cache_dir)


def test_every_step_injects_what_the_readme_says(engine: Engine) -> None:
    config = Config()  # the default install: nothing set
    index = open_library([str(SAMPLE_SKILLS)], config, engine=engine)
    for claim in claims():
        check(claim, decide(claim.prompt, index, config))


def test_the_check_fails_when_a_default_changes(engine: Engine) -> None:
    """The previous default (the calibrated gates): the README's table no longer holds."""
    config = Config(preset="calibrated")
    index = open_library([str(SAMPLE_SKILLS)], config, engine=engine)
    failed = 0
    for claim in claims():
        try:
            check(claim, decide(claim.prompt, index, config))
        except AssertionError:
            failed += 1
    assert failed == len(claims())


def test_the_edit_breaks_the_case_the_readme_says(engine: Engine, tmp_path: Path) -> None:
    added, text = edit_claim()
    library = tmp_path / "sample_skills"
    shutil.copytree(SAMPLE_SKILLS, library)
    skill = library / "xlsx" / "SKILL.md"
    anchor = "needs to tidy columns before analysis."
    skill.write_text(skill.read_text().replace(anchor, f"{anchor} {added}", 1))
    step5 = claims()[4]
    config = Config()
    decision = decide(step5.prompt, open_library([str(library)], config, engine=engine), config)
    assert decision.injected_ids == ("xlsx",)  # "`xlsx` is injected in its place"
    assert f"`xlsx` is injected in its place (p {decision.row('xlsx').relevance:.2f})" in text
    assert decision.row("xlsx").bm25_rank == 1  # "xlsx takes BM25's first place"
    lost = decision.row(step5.injected[0]).relevance
    assert lost is not None
    assert f"`{step5.injected[0]}` falls to p {lost:.2f}" in text
    # docs/explorer.md's walk-through quotes the Cases tab's cause of that flip.
    before = decide(step5.prompt, open_library([str(SAMPLE_SKILLS)], config, engine=engine), config)
    cause = flip_cause(before, decision).text()
    walk = " ".join((REPO / "docs" / "explorer.md").read_text(encoding="utf-8").split())
    assert cause.startswith("plaintext-accounting lost it: relevance, p 0.97 → 0.40")
    assert f"`{cause}`" in walk, cause


def test_the_walk_quotes_the_reasons_the_table_shows(engine: Engine) -> None:
    """docs/explorer.md quotes the why cell of step 1's winner and of step 4's runner-up."""
    from explorer.engine.route.reasons import reason

    config = Config()
    index = open_library([str(SAMPLE_SKILLS)], config, engine=engine)
    walk = " ".join((REPO / "docs" / "explorer.md").read_text(encoding="utf-8").split())
    steps = claims()
    for step, skill in ((steps[0], "pdf"), (steps[3], "git-commit-writer")):
        decision = decide(step.prompt, index, config)
        said = reason(decision, decision.row(skill)).text
        assert f"`{said}`" in walk, (step.step, said)


@pytest.mark.slow  # a process per prompt, each loading the models: 15-30 s
def test_route_says_it_too(tmp_path: Path) -> None:
    library = ["--skills", str(SAMPLE_SKILLS), "--cache-dir", str(tmp_path / "cache")]
    for claim in claims():
        done = subprocess.run(
            [sys.executable, "-m", "explorer", "route", claim.prompt, "--json", *library],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert tuple(item["id"] for item in data["injected"]) == claim.injected, claim
        assert data["stage"] == claim.stage, claim
        rows = {row["id"]: row for row in data["skills"]}
        for skill, p in claim.p.items():
            assert round(rows[skill]["relevance"], 2) == p, (claim, skill)


def test_the_sample_readme_s_vague_skill_claim(engine: Engine) -> None:
    """sample_skills/README.md: the default takes both productivity-helper cases but not
    the shorter prompt it quotes, at the p it quotes against the bar it quotes."""
    text = " ".join((SAMPLE_SKILLS / "README.md").read_text(encoding="utf-8").split())
    quoted = re.search(r'A prompt like "([^"]+)" barely touches it', text)
    numbers = re.search(r"gives it p (\d\.\d\d) against the bar of (\d\.\d\d)", text)
    assert quoted is not None and numbers is not None, "the claim moved; update this test"
    config = Config()
    index = open_library([str(SAMPLE_SKILLS)], config, engine=engine)
    decision = decide(quoted.group(1), index, config)
    assert "productivity-helper" not in decision.injected_ids
    row = decision.row("productivity-helper")
    assert row.relevance is not None and f"{row.relevance:.2f}" == numbers.group(1)
    assert decision.relevance is not None
    assert f"{decision.relevance.threshold:.2f}" == numbers.group(2)
    cases = re.findall(
        r'prompt = "([^"]+)"\nexpect = \["productivity-helper"\]',
        (SAMPLE_SKILLS / "cases.toml").read_text(encoding="utf-8"),
    )
    assert len(cases) == 2
    for prompt in cases:
        assert "productivity-helper" in decide(prompt, index, config).injected_ids, prompt


def test_the_readme_s_count_of_bundled_negatives_injected(engine: Engine) -> None:
    """README, "How well it routes": `eval` injects on N of the bundled cases' negatives."""
    from explorer.engine.qa.cases import load_cases

    text = " ".join(README.read_text(encoding="utf-8").split())
    claimed = re.search(r"`eval`: (\d+) of (\d+) bundled negatives", text)
    assert claimed is not None, "the claim moved; update this test"
    config = Config()
    index = open_library([str(SAMPLE_SKILLS)], config, engine=engine)
    negatives = [c for c in load_cases(SAMPLE_SKILLS / "cases.toml").cases if not c.expect]
    injected = sum(bool(decide(c.prompt, index, config).injected_ids) for c in negatives)
    assert (injected, len(negatives)) == (int(claimed.group(1)), int(claimed.group(2)))


@pytest.mark.slow  # the wild corpus's 188 skills embedded, then a tuning run: ~15 s
def test_the_readme_s_tune_example_is_what_tune_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's `tune` run, as a user types it: its recommended candidate's lines
    are the ones the command prints today (the default models and relevance model)."""
    from explorer.cli import main

    text = README.read_text(encoding="utf-8")
    section = text.split("## Fix a description, not only explain it", 1)[1].split("\n## ")[0]
    lines = section.split("```", 2)[1].strip("\n").splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("#1"))
    command = " ".join(lines[:first]).replace("\\", " ").split()
    assert command[:3] == ["$", "skill-explorer", "tune"], command
    argv, shown = command[2:], lines[first:]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        code = main([*argv, "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0
    printed = out.split("\n#2", 1)[0].splitlines()
    for line in shown:
        assert line in printed, line
