"""eval reads the reference's TSV corpora (every kind, the context and cwd columns) and
skill-creator's trigger eval sets.

The fixtures in tests/parity/data are ours, written in those formats (reference:
tests/data/README.md and examples/eval.rs for the TSV rules; Anthropic's skill-creator
SKILL.md for the JSON). The reference's own TSV files are AGPL and are not copied here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.qa.cases import OBSERVE_ONLY, CaseError, load_cases, parse_tsv_cases
from explorer.engine.qa.evaluate import evaluate
from tests.conftest import write_skill

DATA = Path(__file__).parent / "data"
LIBRARY = {
    "pdf": "Merge split and extract tables from pdf files and documents.",
    "xlsx": "Spreadsheet formulas, clean csv exports and workbook data.",
    "docker-helper": "Shrink Docker images and write multi-stage Dockerfiles.",
}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    (root / "uv-development").mkdir()
    (root / "uv-development" / "SKILL.md").write_text(
        "---\nname: uv-development\ndescription: Bootstrap and manage projects and "
        "dependencies.\nkeywords: [uv, python]\n---\nBody.\n"
    )
    return root


@pytest.fixture
def tsv(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "uv.lock").write_text("")
    path = tmp_path / "cases.tsv"
    path.write_text((DATA / "reference_format.tsv").read_text().replace("WORKDIR", str(work)))
    return path


def index_of(root: Path) -> Index:
    return build_index([root], Config(preset="reference"), assemble_models(BowEmbedder()))


def test_every_kind_and_column_of_the_reference_format_is_read(tsv: Path) -> None:
    """reference: examples/eval.rs parse_cases: `(none)` is a negative; the 4th column is
    split on `|` into trimmed, non-empty earlier turns; the 5th is the working directory."""
    cases = load_cases(tsv).cases
    kinds = [case.kind for case in cases]
    assert kinds == [
        "direct",
        "task",
        "confusable",
        "negative",
        "borderline",
        "followup",
        "distract",
        "negative",
        "task",
    ]
    followup = cases[5]
    assert followup.context == ("i exported the numbers to sales_q3.xlsx", "thanks")
    assert cases[-1].context == () and cases[-1].cwd.endswith("work")
    assert cases[2].expect == ("pdf", "xlsx")
    assert {"borderline"} == OBSERVE_ONLY


def test_the_context_column_feeds_the_file_channel(tsv: Path, library: Path) -> None:
    """reference: examples/eval.rs scans the earlier turns and the prompt for files."""
    index = index_of(library)
    report = evaluate(load_cases(tsv).cases, index, Config(preset="reference"))
    followup = next(r for r in report.results if r.case.kind == "followup")
    assert followup.passed and followup.injected == ("xlsx",)
    bare = parse_tsv_cases("xlsx\tfollowup\tnow clean it up\n")
    assert not evaluate(bare.cases, index, Config(preset="reference")).results[0].passed


def test_the_cwd_column_feeds_the_project_channel(tsv: Path, library: Path) -> None:
    index = index_of(library)
    case = load_cases(tsv).cases[-1]
    cosine = evaluate([case], index, Config(preset="reference", project_boost=0.0)).results[0]
    assert not cosine.passed
    from explorer.engine.route.pipeline import decide

    floor = (
        decide(case.prompt, index, Config(preset="reference")).row("uv-development").cosine + 0.05
    )
    lifted = evaluate([case], index, Config(preset="reference", min_similarity=floor)).results[0]
    assert lifted.passed


def test_borderline_is_observed_not_counted(tsv: Path, library: Path) -> None:
    """reference: examples/eval.rs leaves `borderline` rows out of recall and the
    false-inject rate; they are still routed and shown by kind."""
    report = evaluate(load_cases(tsv).cases, index_of(library), Config(preset="reference"))
    assert "borderline" in report.by_kind
    counted = [r for r in report.results if not r.case.observe_only]
    assert report.rates.positives + report.rates.negatives == len(counted)
    assert all(not r.case.observe_only for r in report.failures)


def test_a_trigger_eval_set_is_about_one_skill(library: Path) -> None:
    cases = load_cases(DATA / "pdf_trigger_evals.json", skill="pdf").cases
    assert [case.kind for case in cases] == ["should-trigger"] * 2 + ["should-not-trigger"] * 2
    assert cases[0].expect == ("pdf",) and cases[2].reject == ("pdf",) and cases[2].line == 4
    report = evaluate(cases, index_of(library), Config(preset="reference"))
    should_not = report.results[2]  # xlsx may be injected: only pdf must not be
    assert should_not.passed and should_not.injected == ("xlsx",)
    assert report.rates.negatives == 2 and report.rates.positives == 2
    with pytest.raises(CaseError, match="--skill"):
        load_cases(DATA / "pdf_trigger_evals.json")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[{"query": "x"}]', "should_trigger"),
        ('[{"query": "", "should_trigger": true}]', "query"),
        ("{not json", "invalid JSON"),
        ('{"a": 1}', "expected a list"),
    ],
)
def test_a_bad_trigger_eval_set_says_why(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "evals.json"
    path.write_text(text)
    with pytest.raises(CaseError, match=reason):
        load_cases(path, skill="pdf")


def test_eval_prints_a_table_by_kind(
    tsv: Path, library: Path, warm_cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--skills", str(library), "--set", "model=bow", "--no-ski-config"]
    common += ["--cache-dir", str(warm_cache_dir)]  # the reranker's graph, optimised once
    main(["eval", str(tsv), *common])
    out = capsys.readouterr().out
    for kind in ("direct", "task", "followup", "distract", "confusable", "negative"):
        assert f"\n{kind} " in out
    assert "borderline" in out and "observe only" in out
    assert main(
        ["eval", str(DATA / "pdf_trigger_evals.json"), "--skill", "pdf", "--json", *common]
    ) in (0, 1)
    data = json.loads(capsys.readouterr().out)
    assert set(data["by_kind"]) == {"should-trigger", "should-not-trigger"}


def test_both_skill_creator_layouts_read_alike(tmp_path: Path) -> None:
    """skill-creator writes trigger evals as a bare list of {query, should_trigger} and as
    {"skill_name", "evals": [{id, prompt, should_trigger}]}; both are the same cases."""
    listed = tmp_path / "listed.json"
    listed.write_text(
        '[\n  {"query": "merge two pdf files", "should_trigger": true},\n'
        '  {"query": "bake banana bread", "should_trigger": false}\n]\n'
    )
    nested = tmp_path / "nested.json"
    nested.write_text(
        '{\n  "skill_name": "pdf",\n  "evals": [\n'
        '    {"id": 1, "prompt": "merge two pdf files", "should_trigger": true},\n'
        '    {"id": 2, "prompt": "bake banana bread", "should_trigger": false,\n'
        '     "expected_output": "nothing injected", "files": []}\n  ]\n}\n'
    )
    first = load_cases(listed, skill="pdf")
    second = load_cases(nested)  # the skill comes from skill_name
    shape = [(case.prompt, case.expect, case.reject, case.kind) for case in first.cases]
    assert shape == [(case.prompt, case.expect, case.reject, case.kind) for case in second.cases]
    assert shape[0] == ("merge two pdf files", ("pdf",), (), "should-trigger")
    assert [case.line for case in second.cases] == [4, 5]
    assert second.warnings == ()  # skill-creator's own keys are not "ignored" noise
    assert load_cases(nested, skill="xlsx").cases[0].expect == ("xlsx",)  # --skill wins


def test_an_output_eval_set_is_not_a_trigger_eval_set(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text('{"skill_name": "pdf", "evals": [{"id": 1, "prompt": "merge", "files": []}]}')
    with pytest.raises(CaseError, match="an output eval"):
        load_cases(path)


def test_eval_reads_the_nested_layout(tmp_path: Path, library: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            {
                "skill_name": "pdf",
                "evals": [
                    {"id": 1, "prompt": "merge two pdf files", "should_trigger": True},
                    {"id": 2, "prompt": "what is the capital of portugal", "should_trigger": False},
                ],
            }
        )
    )
    report = evaluate(load_cases(path).cases, index_of(library), Config(preset="reference"))
    assert report.rates.positives == 1 and report.rates.negatives == 1


def test_the_eval_command_reads_the_nested_layout_without_skill(
    tmp_path: Path, library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        '{"skill_name": "pdf", "evals": [{"prompt": "merge two pdf files", '
        '"should_trigger": true}]}'
    )
    common = ["--skills", str(library), "--no-ski-config", "--cache-dir", str(tmp_path / "c")]
    main(["eval", str(path), *common, "--set", "model=bow", "--set", "reranker=off", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["by_kind"]["should-trigger"]["cases"] == 1
    assert report["cases"][0]["expect"] == ["pdf"]
