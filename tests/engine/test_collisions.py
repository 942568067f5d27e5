"""The collision map (explorer/engine/author/collisions.py) and `lint --collisions`: two skills
whose descriptions say the same things are the heaviest pair, with the words they share
and the cases that flip between them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.engine.author.collisions import collision_map, contests, sentences
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.qa.cases import Case
from explorer.engine.route.pipeline import decide
from tests.conftest import write_skill

CONFIG = Config(model="bow", reranker="off")
LIBRARY = {
    "pdf": "Extract text and tables from PDF files. Merge and split PDF documents.",
    "pdf-tables": "Extract tables from PDF files into spreadsheets. Reads scanned PDF tables.",
    "docker": "Shrink Docker images and speed up container builds.",
    "git-commit": "Write clear git commit messages from the staged diff.",
}
CASES = [
    Case(prompt="extract the tables from this pdf file", expect=("pdf",), kind="direct"),
    Case(prompt="merge two pdf documents", expect=("pdf",), kind="direct"),
    Case(prompt="shrink my docker image", expect=("docker",), kind="direct"),
]


def _index(root: Path) -> Index:
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    return build_index([root], CONFIG, assemble_models(BowEmbedder()))


def test_sentences_are_the_descriptions_own_with_enough_words() -> None:
    assert sentences("Merge PDFs. Extract tables from PDF files. Split PDF documents too.") == [
        "Extract tables from PDF files.",
        "Split PDF documents too.",
    ]
    assert sentences("One. Two words.") == []


def test_the_pair_that_shares_its_words_ranks_first(tmp_path: Path) -> None:
    index = _index(tmp_path / "skills")
    found = collision_map(index, CONFIG, CASES)
    assert found.cases == 3 and found.sentences >= len(LIBRARY)
    assert found.prompts == found.cases + found.sentences
    top = found.collisions[0]
    assert (top.a, top.b) == ("pdf", "pdf-tables")
    assert {"tabl", "pdf"} & set(top.shared) or {"tables", "pdf"} & set(top.shared)
    assert [c.weight for c in found.collisions] == sorted(
        (c.weight for c in found.collisions), reverse=True
    )
    # A flip is a case of one that the other takes, as decide() says.
    for contest in top.flips:
        injected = decide(contest.prompt, index, CONFIG).injected_ids
        assert contest.rival in injected and contest.expected not in injected
    data = found.to_dict()
    assert data["schema"] == "skill-explorer/collisions@1"
    assert data["collisions"][0]["skills"] == ["pdf", "pdf-tables"]


def test_contests_name_takes_and_shares(tmp_path: Path) -> None:
    index = _index(tmp_path / "skills")
    decision = decide("extract tables from pdf files", index, CONFIG)
    got = contests(decision, ("docker",))
    assert all(kind == "take" and skill == "docker" for skill, _, kind in got)
    assert {rival for _, rival, _ in got} == set(decision.injected_ids)


@pytest.mark.slow
def test_lint_collisions_prints_the_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from explorer.cli import main

    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    cases = tmp_path / "cases.toml"
    cases.write_text(
        "".join(
            f'[[case]]\nprompt = "{c.prompt}"\nexpect = ["{c.expect[0]}"]\nkind = "direct"\n'
            for c in CASES
        )
    )
    args = [
        "lint",
        "--collisions",
        "--skills",
        str(root),
        "--set",
        "model=bow",
        "--set",
        "reranker=off",
    ]
    assert main([*args, "--cases", str(cases)]) == 0
    out = capsys.readouterr().out
    assert "#1 pdf <> pdf-tables" in out and "shared words:" in out
    assert "expect no skill" not in out
    # What a pair's counts ("1 taken, 0 shared, 3 near misses") and weight mean, once.
    legend = next(line for line in out.splitlines() if line.startswith("(for a prompt"))
    assert legend.startswith("(for a prompt one skill should win: taken, the other was injected")
    assert legend.endswith("weight = taken x 1 + shared x 0.5 + near misses x 0.25)")
    # A case that expects no skill is not routed (two skills after one prompt make a
    # collision), and the count says so rather than reading as cases lost.
    with cases.open("a", encoding="utf-8") as more:
        more.write('[[case]]\nprompt = "bake bread"\nexpect = []\nkind = "negative"\n')
    assert main([*args, "--cases", str(cases)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert f"({len(CASES)} cases, " in head and "; not the 1 case that expects no skill)" in head
    assert main([*args, "--json", "--top", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["collisions"]) == 1 and data["collisions"][0]["skills"] == ["pdf", "pdf-tables"]


def test_a_pair_with_only_near_misses_shows_one() -> None:
    """ "1 near miss; shared words: (none)" hid the prompt: a cross-reference sentence
    ("see schema-markup") reads as one at once."""
    from explorer.engine.author.collisions import Collision, Contest
    from explorer.qa_report import collision_lines

    sentence = "For adding structured data, see schema-markup."
    near = Contest(sentence, "sentence", expected="seo-audit", rival="helm-charts", kind="near")
    lines = collision_lines(Collision("helm-charts", "seo-audit", [near]), 1)
    assert lines[-1] == f"    a sentence of seo-audit's, helm-charts came close: {sentence!r}"


def test_a_word_one_description_names_only_to_exclude_it_is_not_shared(tmp_path: Path) -> None:
    """Shared words are what both skills claim: "not for Playwright" claims nothing."""
    from explorer.engine.author.collisions import _shared

    root = tmp_path / "skills"
    write_skill(root, "browser-tests", "Write Playwright browser tests for web apps.")
    write_skill(
        root, "selenium-suites", "Build Selenium browser suites for web apps. Not for Playwright."
    )
    index = build_index([root], CONFIG, assemble_models(BowEmbedder()))
    shared = _shared(index, "browser-tests", "selenium-suites")
    assert "browser" in shared and "playwright" not in shared


def test_words_in_other_scripts_are_shared_too(tmp_path: Path) -> None:
    """Two Chinese descriptions that say 用户要求 and 不要用于 alike were "(none: the dense
    channel alone)": the router reads those scripts as bigrams, and the map shows the runs
    both hold, whole; a word of a spaced script outside ASCII is shared as a word."""
    from explorer.engine.author.collisions import _shared

    root = tmp_path / "skills"
    write_skill(root, "code-review", "在用户要求审查代码时使用。不要用于修复。Análisis estático.")
    write_skill(root, "diagnose", "用户要求修复缺陷时使用，不要用于审查。Análisis de fallos.")
    index = build_index([root], CONFIG, assemble_models(BowEmbedder()))
    shared = _shared(index, "code-review", "diagnose")
    assert shared[0] == "análisis"
    assert set(shared[1:]) == {"用户要求", "不要用于", "时使用", "审查", "修复"}


@pytest.mark.slow  # the default preset's models, where p is what decides
def test_a_rival_the_model_put_ahead_of_a_missed_skill_is_a_near_miss(
    warm_cache_dir: Path,
) -> None:
    """Nothing injected, and changelog-generator (p 0.44) ahead of kubernetes-debugger
    (p 0.33) for a request of the latter: the pair competes for the prompt, though no
    skill took it, so it is a near miss."""
    from explorer.engine.index.opening import open_engine, open_library
    from tests.conftest import SAMPLE_SKILLS

    config = Config()
    index = open_library([SAMPLE_SKILLS], config, engine=open_engine(config, warm_cache_dir))
    prompt = (
        "after we deployed the new version to staging the api containers restart over "
        "and over and the rollout never finishes"
    )
    decision = decide(prompt, index, config)
    mine = decision.row("kubernetes-debugger").relevance
    rival = decision.row("changelog-generator").relevance
    assert decision.injected_ids == () and mine is not None and rival is not None
    assert rival > mine
    assert contests(decision, ("kubernetes-debugger",)) == [
        ("kubernetes-debugger", "changelog-generator", "near")
    ]
    # A skill ahead of every rival, nothing injected: no one held it down.
    ahead = decide("plot revenue by quarter", index, config)
    assert ahead.injected_ids == () and contests(ahead, ("data-chart-maker",)) == []
