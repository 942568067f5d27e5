"""eval, calibrate and lint as a user runs them: output, JSON and exit codes."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from explorer.cli import build_parser, main
from tests.conftest import write_skill

LIBRARY = {
    "pdf": "Merge and split PDF files and extract tables from PDF pages. Use when asked.",
    "git-commit-writer": "Write git commit messages from the staged diff. Use when committing.",
    "changelog-generator": "Generate release notes and a changelog from git history. Use when "
    "releasing.",
}
# With bow: two hits, one miss (no shared words), one clean negative, one false injection.
CASES = """\
[[case]]
prompt = "merge and split pdf files"
expect = ["pdf"]
kind = "direct"
split = "train"

[[case]]
prompt = "release notes from git history"
expect = ["changelog-generator"]
kind = "confusable"
split = "train"

[[case]]
prompt = "make my page look nice"
expect = ["git-commit-writer"]
kind = "indirect"
split = "validation"

[[case]]
prompt = "banana bread recipe"
expect = []
kind = "negative"
split = "train"

[[case]]
prompt = "what year was the pdf format invented"
expect = []
kind = "negative"
split = "validation"
"""


Library = tuple[Path, Path, list[str]]  # skills root, cases file, common options
Capture = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def away_from_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ./skill-explorer.toml of the working directory leaks into these runs."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def library(tmp_path: Path) -> Library:
    root = tmp_path / "skills"
    for name, description in LIBRARY.items():
        write_skill(root, name, description)
    cases = tmp_path / "cases.toml"
    cases.write_text(CASES, encoding="utf-8")
    common = ["--skills", str(root), "--set", "model=bow", "--cache-dir", str(tmp_path / "cache")]
    common += ["--set", "preset=reference"]  # figures computed by hand for the reference
    return root, cases, common


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_prints_metrics_failures_and_timings(capsys: Capture, library: Library) -> None:
    _, cases, common = library
    code, out, _ = run(capsys, "eval", str(cases), *common)
    assert code == 0
    assert "5 cases (3 positive, 2 negative) on 3 skills" in out
    assert "recall             0.667  (2/3 positives)" in out
    assert "false-inject rate  0.500  (1/2 negatives)" in out
    assert "host value         0.592" in out  # 2/3 - 0.15 x 0.5
    assert "failures (2):" in out and "min_similarity" in out and "injected pdf" in out
    assert "timings: decide() median" in out


@pytest.mark.parametrize(
    ("flags", "code", "verdict"),
    [
        (["--min-recall", "0.6"], 0, "ok   recall 0.667 (needs >= 0.6)"),
        (["--min-recall", "0.7"], 1, "FAIL recall 0.667 (needs >= 0.7)"),
        (["--max-false-inject", "0.5"], 0, "ok   false_inject_rate 0.500 (needs <= 0.5)"),
        (["--max-false-inject", "0.25"], 1, "FAIL false_inject_rate 0.500"),
        (["--min-host-value", "0.59"], 0, "ok   host_value 0.592"),
        (["--min-host-value", "0.6"], 1, "FAIL host_value 0.592"),
        (["--min-recall", "0.5", "--min-host-value", "0.9"], 1, "ok   recall"),
    ],
)
def test_eval_thresholds_set_the_exit_code(
    capsys: Capture, library: Library, flags: list[str], code: int, verdict: str
) -> None:
    _, cases, common = library
    result, out, _ = run(capsys, "eval", str(cases), *common, *flags)
    assert result == code and verdict in out


def test_eval_json_carries_the_checks(capsys: Capture, library: Library) -> None:
    _, cases, common = library
    code, out, _ = run(capsys, "eval", str(cases), *common, "--json", "--min-recall", "0.9")
    assert code == 1
    data = json.loads(out)
    assert data["schema"] == "skill-explorer/eval@1"
    assert data["metrics"]["hits"] == 2 and len(data["cases"]) == 5
    assert data["checks"] == [
        {"metric": "recall", "limit": 0.9, "at_least": True, "value": 2 / 3, "passed": False}
    ]


def test_eval_reads_the_reference_tsv(capsys: Capture, library: Library, tmp_path: Path) -> None:
    _, _, common = library
    tsv = tmp_path / "cases.tsv"
    tsv.write_text(
        "# id\tkind\tprompt\npdf\tdirect\tmerge and split pdf files\n"
        "(none)\tnegative\tbanana bread recipe\n",
        encoding="utf-8",
    )
    code, out, _ = run(
        capsys, "eval", str(tsv), *common, "--min-recall", "1", "--max-false-inject", "0"
    )
    assert code == 0 and "2 cases (1 positive, 1 negative)" in out


def test_eval_compare_configs_and_libraries(
    capsys: Capture, library: Library, tmp_path: Path
) -> None:
    root, cases, common = library
    strict = tmp_path / "strict.toml"
    strict.write_text("min_similarity = 0.99\n", encoding="utf-8")
    code, out, _ = run(capsys, "eval", str(cases), *common, "--compare-config", str(strict))
    assert code == 0
    assert f"B: skills {root}, config {strict}" in out
    assert "pass -> fail (2):" in out and "fail -> pass (1):" in out  # the false inject is gone
    assert "recall                0.667  0.000  -0.667" in out
    assert "mean Jaccard overlap 0.400 over 5 cases; 3 cases changed" in out
    edited = tmp_path / "edited"
    for name, description in LIBRARY.items():
        write_skill(edited, name, description)
    write_skill(edited, "pdf", "Bake sourdough loaves at home. Use when baking.")
    code, out, _ = run(
        capsys, "eval", str(cases), *common, "--compare-skills", str(edited), "--json"
    )
    data = json.loads(out)
    assert code == 0 and set(data) == {"a", "b", "compare", "checks"}
    assert data["compare"]["changed"] == 2 and data["compare"]["b"] == f"skills {edited}"


def test_eval_takes_the_cases_file_as_tune_does(capsys: Capture, library: Library) -> None:
    """`--cases FILE` as tune and lint --collisions take it; the file once, not twice."""
    _, cases, common = library
    code, out, _ = run(capsys, "eval", "--cases", str(cases), *common, "--json")
    assert code == 0 and json.loads(out)["metrics"]["hits"] == 2
    code, _, err = run(capsys, "eval", str(cases), "--cases", str(cases), *common)
    assert code == 2 and "give the cases file once" in err


def test_eval_usage_errors(capsys: Capture, library: Library, tmp_path: Path) -> None:
    root, cases, common = library
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[case]]\nprompt = "x"\nexpect = ["pdf"]\nkind = "sideways"\n', encoding="utf-8"
    )
    code, _, err = run(capsys, "eval", str(bad), *common)
    assert code == 2 and f"{bad}:1: unknown kind 'sideways'" in err
    code, _, err = run(capsys, "eval", str(tmp_path / "none.toml"), *common)
    assert code == 2 and "cannot read cases file" in err
    code, _, err = run(capsys, "eval", str(cases), "--set", "model=bow")
    assert code == 2 and "no skills root: pass --skills DIR, set roots" in err  # no DIR here
    assert "$SKILL_EXPLORER_ROOTS" in err
    code, _, err = run(capsys, "eval", str(cases), *common, "--compare-config", str(tmp_path / "x"))
    assert code == 2 and "cannot read config file" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "eval", str(cases), "--skills", str(empty), "--set", "model=bow")
    assert code == 1 and "no valid skills" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", str(cases), *common, "--min-recall", "1.5"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["eval", str(cases), *common, "--compare-config", "a", "--compare-skills", str(root)])


def test_unknown_expected_ids_are_warned_about(
    capsys: Capture, library: Library, tmp_path: Path
) -> None:
    _, _, common = library
    cases = tmp_path / "typo.toml"
    cases.write_text(
        '[[case]]\nprompt = "merge pdf"\nexpect = ["pfd"]\nkind = "direct"\n', encoding="utf-8"
    )
    code, out, err = run(capsys, "eval", str(cases), *common)
    said = "expected skill 'pfd' (line 1) (did you mean 'pdf'?) is not in the library"
    assert code == 0 and said in err
    assert "not_in_library" in out and "expected skill 'pfd'" not in out  # said once
    # calibrate recommended thresholds for such cases without a word.
    _, _, err = run(capsys, "calibrate", str(cases), *common)
    assert f"warning: {said}" in err


def _small_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """calibrate's grid cut to a few points: for tests of what it reports and writes."""
    from explorer.engine.qa import calibrate

    small = calibrate.Grid((0.3, 0.5), (0.12,), ((0.0, 2.0), (4.0, 2.0)))
    monkeypatch.setattr(calibrate, "default_grid", lambda *args, **kwargs: small)


@pytest.mark.parametrize(
    "grid", ["small", pytest.param("default", marks=pytest.mark.slow)], ids=str
)
def test_calibrate_reports_and_writes_a_config(
    capsys: Capture, library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grid: str
) -> None:
    """The report and the file it writes; over the default grid (1,680 points) in the slow
    set, over a few points by default."""
    if grid == "small":
        _small_grid(monkeypatch)
    _, cases, common = library
    target = tmp_path / "calibrated.toml"
    code, out, _ = run(capsys, "calibrate", str(cases), *common, "--write", str(target))
    assert code == 0
    assert "split: split from the cases file: 3 train, 2 validation; chosen on train only" in out
    assert "knee (train)" in out and "positives" in out and "negatives" in out
    assert "recommended: min_similarity = " in out and "validation" in out
    assert f"wrote the recommendation to {target}" in out
    written = target.read_text(encoding="utf-8")
    assert written.startswith("# skill-explorer calibrate: chosen on 3 train cases")
    code, out, _ = run(capsys, "eval", str(cases), *common, "--config", str(target), "--json")
    assert code == 0 and json.loads(out)["config"]["lexical_min"] is not None


def test_calibrate_write_never_overwrites_without_force(
    capsys: Capture, library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_grid(monkeypatch)  # what is written, not the sweep
    _, cases, common = library
    target = tmp_path / "mine.toml"
    mine = "# my settings\nmax_skills = 1  # keep\n\n[routing]\nmin_similarity = 0.2\n"
    target.write_text(mine, encoding="utf-8")
    code, out, err = run(capsys, "calibrate", str(cases), *common, "--write", str(target))
    assert code == 2 and "exists" in err and "--force" in err and out == ""
    assert target.read_text(encoding="utf-8") == mine
    code, out, _ = run(capsys, "calibrate", str(cases), *common, "--write", str(target), "--force")
    assert code == 0 and f"to {target}" in out
    written = target.read_text(encoding="utf-8")
    assert written.startswith("# my settings\nmax_skills = 1  # keep\n")  # the rest is kept
    data = tomllib.loads(written)
    assert data["max_skills"] == 1 and data["routing"]["min_similarity"] != 0.2
    assert "lexical_min" in data


def test_calibrate_writes_nothing_its_validation_split_advises_against(
    capsys: Capture, library: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It wrote relevance_threshold = 0.9 while its own caution said to keep the current
    values: a file of worse values is no recommendation."""
    from explorer.engine.qa.calibrate import CalibrationReport

    _small_grid(monkeypatch)
    monkeypatch.setattr(CalibrationReport, "validation_prefers_current", property(lambda _: True))
    _, cases, common = library
    target = tmp_path / "calibrated.toml"
    code, out, err = run(capsys, "calibrate", str(cases), *common, "--write", str(target))
    assert code == 1 and not target.exists()
    assert f"not written to {target}: on the validation split the current values" in err
    assert "best on train:" in out and "wrote the recommendation" not in out


@pytest.mark.slow  # two full sweeps; tests/engine/test_calibrate.py tests the seeded split
def test_calibrate_json_and_the_seeded_split(
    capsys: Capture, library: Library, tmp_path: Path
) -> None:
    _, _, common = library
    unsplit = tmp_path / "unsplit.toml"
    unsplit.write_text(CASES.replace('split = "train"\n', "").replace('split = "validation"\n', ""))
    outputs = []
    for _ in range(2):
        code, out, _ = run(
            capsys, "calibrate", str(unsplit), *common, "--json", "--seed", "3", "--top", "2"
        )
        assert code == 0
        outputs.append(json.loads(out))
    first, second = outputs
    assert "seeded random 2/3-1/3 split per kind (seed 3)" in first["split"]["note"]
    assert first["split"] == second["split"] and first["recommended"] == second["recommended"]
    assert len(first["table"]) == 2


def test_lint_exit_codes_and_output(capsys: Capture, tmp_path: Path, warm_cache_dir: Path) -> None:
    root = tmp_path / "skills"
    write_skill(
        root,
        "pdf",
        "Merges and splits PDF files, extracts tables and fills forms. Use when "
        "pages need combining.",
    )
    # The run's warm cache: the reranker's optimised graph is made once, not per command.
    cache = ["--set", "model=bow", "--cache-dir", str(warm_cache_dir)]
    code, out, _ = run(capsys, "lint", str(root), *cache)
    assert code == 0 and "0 errors, 0 warnings, 1 info in 1 skill" in out
    (root / "claude-helper").mkdir()
    (root / "claude-helper" / "SKILL.md").write_text(
        "---\nname: claude-helper\ndescription: Helps. Use when stuck.\nwhen_to_use: always\n---\n",
        encoding="utf-8",
    )
    code, out, _ = run(capsys, "lint", str(root), *cache)
    assert code == 1
    assert "claude-helper/SKILL.md:2: error: name 'claude-helper' contains the reserved word" in out
    assert "[spec/unknown-key]" in out
    code, out, _ = run(
        capsys, "lint", str(root), *cache, "--claude-code", "--json", "--context-tokens", "3000"
    )
    data = json.loads(out)
    assert code == 1 and data["schema"] == "skill-explorer/lint@1" and data["skills"] == 2
    found = {finding["rule"] for finding in data["findings"]}
    assert "spec/unknown-key" not in found and "claude-code/name-only" in found
    # --ignore leaves out a rule's findings, or a family's; ignored errors do not fail.
    code, out, _ = run(capsys, "lint", str(root), *cache, "--ignore", "spec")
    assert code == 0 and "[spec/" not in out
    assert out.splitlines()[-1].endswith("(2 findings of ignored rules not shown)")
    code, out, _ = run(capsys, "lint", str(root), *cache, "--ignore", "spec/unknown-key")
    assert code == 1 and "[spec/unknown-key]" not in out and "[spec/reserved-word]" in out
    code, _, err = run(capsys, "lint", str(root), *cache, "--ignore", "unknown-key")
    assert code == 2 and "--ignore: no rule unknown-key; the rules: claude-code/" in err
    code, _, err = run(capsys, "lint", str(root), *cache, "--ignore", "spec", "--collisions")
    assert code == 2 and "--ignore names rules; --collisions runs none" in err


def test_lint_usage_error_without_roots(capsys: Capture) -> None:
    code, _, err = run(capsys, "lint", "--set", "model=bow")
    assert code == 2 and "no skills root" in err


@pytest.mark.parametrize("command", ["eval", "calibrate", "lint"])
def test_qa_commands_have_help(command: str, capsys: Capture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--set" in text and "--json" in text


def test_eval_of_the_skills_own_evals_lists_failures_under_their_files(
    capsys: Capture, library: Library
) -> None:
    """Each skill's evals are a file of their own: a failure's line says where only under the
    file it is in, named from the folder the skills share, when one skill's file fails as
    when several do."""
    root, _, common = library
    queries = {
        "pdf": ["merge and split pdf files"],  # passes
        "changelog-generator": ["make it nice", "release notes from git history"],
    }
    for skill, prompts in queries.items():
        (root / skill / "evals").mkdir()
        (root / skill / "evals" / "trigger.json").write_text(
            json.dumps([{"query": query, "should_trigger": True} for query in prompts], indent=2)
        )
    code, out, err = run(capsys, "eval", *common)
    assert code == 0, err
    failures = out[out.index("failures (1):") :].splitlines()
    assert failures[1] == "changelog-generator/evals/trigger.json (1):"
    assert failures[3].split()[0] == "3"  # the line of the query in its file
    (root / "pdf" / "evals" / "trigger.json").write_text(
        json.dumps([{"query": "banana bread recipe", "should_trigger": True}], indent=2)
    )
    code, out, err = run(capsys, "eval", *common)
    failures = out[out.index("failures (2):") :].splitlines()
    assert failures[1] == "changelog-generator/evals/trigger.json (1):"
    assert "pdf/evals/trigger.json (1):" in failures


def test_eval_without_cases_runs_the_skills_own_trigger_evals(
    capsys: Capture, library: Library
) -> None:
    """Skills' repositories keep trigger evals beside SKILL.md; eval finds them, reads each
    for its skill, passes over what is no trigger eval set, and reports per skill."""
    root, _, common = library
    (root / "pdf" / "evals").mkdir()
    (root / "pdf" / "evals" / "trigger-eval.json").write_text(
        json.dumps(
            [
                {"query": "merge and split pdf files", "should_trigger": True},
                {"query": "banana bread recipe", "should_trigger": False},
            ]
        )
    )
    (root / "pdf" / "evals" / "evals.json").write_text(  # skill-creator's output evals
        json.dumps({"skill_name": "pdf", "evals": [{"id": 1, "prompt": "merge", "files": []}]})
    )
    code, out, err = run(capsys, "eval", *common)
    assert code == 0, err
    assert "eval the skills' own trigger evals: 2 cases (1 positive, 1 negative)" in out
    row = next(line for line in out.splitlines() if line.startswith("pdf "))
    assert row.split()[1:] == ["1/1", "1/1"]
    assert "evals.json" in err and "not read as pdf's trigger evals" in err
    code, out, _ = run(capsys, "eval", *common, "--json")
    assert json.loads(out)["by_skill"] == [
        {"skill": "pdf", "should": 1, "triggered": 1, "should_not": 1, "quiet": 1}
    ]
    code, _, err = run(capsys, "eval", *common, "--skill", "changelog-generator")
    assert code == 2 and "'changelog-generator' has no trigger evals of its own" in err


def test_under_the_relevance_model_eval_and_why_lead_with_its_bar(
    capsys: Capture, tmp_path: Path
) -> None:
    """Their headers quoted min_similarity and score_margin, which decide nothing where
    the relevance model does (they serve only where it cannot)."""
    from tests.conftest import SAMPLE_SKILLS

    cases = tmp_path / "cases.toml"
    cases.write_text(
        '[[case]]\nprompt = "merge two report.pdf files"\nexpect = ["pdf"]\nkind = "direct"\n'
    )
    common = ("--skills", str(SAMPLE_SKILLS), "--set", "relevance_threshold=0.4")
    code, out, _ = run(capsys, "eval", str(cases), *common)
    assert code == 0 and "; the relevance model injects at p ≥ 0.40; preset learned" in out
    assert "min_similarity" not in out.splitlines()[1]
    _, out, _ = run(capsys, "eval", str(cases), *common, "--json")
    assert json.loads(out)["thresholds"]["relevance_threshold"] == 0.4
    _, out, _ = run(capsys, "why", "merge two report.pdf files", *common)
    assert "the relevance model decides over every channel (§9.12) at p ≥ 0.40" in out
    assert "(the cascade's floor, min_similarity 0.44, serves only prompts the relevance " in out
    assert "calibrated knee" not in out  # the floor's provenance: --json, or the cascade's line
