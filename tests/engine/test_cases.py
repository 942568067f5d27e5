"""Cases files: the TOML format, the reference router's TSV format, and their error messages."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from explorer.engine.discovery.skills import discover
from explorer.engine.qa.cases import Case, CaseError, load_cases, parse_toml_cases, parse_tsv_cases
from explorer.engine.qa.evaluate import passes
from tests.conftest import SAMPLE_SKILLS

TOML = """\
# a comment
[[case]]
prompt = "merge two pdfs"
expect = ["pdf"]
kind = "direct"
note = "plain"
split = "train"

[[case]]
prompt = "release notes or a commit message"
expect = ["changelog-generator", "git-commit-writer"]
kind = "confusable"

[[case]]  # trailing comment on the header
prompt = "banana bread"
expect = []
kind = "negative"
split = "validation"
"""


def test_toml_cases_keep_every_field_and_their_line() -> None:
    cases = parse_toml_cases(TOML, "c.toml")
    assert cases.warnings == ()
    assert cases.cases == (
        Case("merge two pdfs", ("pdf",), "direct", "plain", "train", "c.toml", 2),
        Case(
            "release notes or a commit message",
            ("changelog-generator", "git-commit-writer"),
            "confusable",
            "",
            None,
            "c.toml",
            9,
        ),
        Case("banana bread", (), "negative", "", "validation", "c.toml", 14),
    )
    assert [case.positive for case in cases.cases] == [True, True, False]
    assert cases.cases[0].where == "c.toml:2"


def test_toml_accepts_a_single_id_as_a_string() -> None:
    text = '[[case]]\nprompt = "x"\nexpect = "pdf"\nkind = "direct"\n'
    assert parse_toml_cases(text).cases[0].expect == ("pdf",)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('prompt = "x"\nexpect = ["a"]\nkind = "obvious"', "c.toml:2: unknown kind 'obvious'"),
        ('expect = ["a"]\nkind = "direct"', "c.toml:2: 'prompt' is missing or empty"),
        ('prompt = "  "\nexpect = ["a"]\nkind = "direct"', "'prompt' is missing or empty"),
        ('prompt = "x"\nkind = "direct"', "c.toml:2: 'expect' is missing"),
        ('prompt = "x"\nexpect = ["a"]', "c.toml:2: 'kind' is missing"),
        ('prompt = "x"\nexpect = [1]\nkind = "direct"', "'expect' must be a list of skill ids"),
        ('prompt = "x"\nexpect = ["a"]\nkind = "negative"', "a negative case expects no skill"),
        ('prompt = "x"\nexpect = []\nkind = "direct"', "a direct case needs at least one"),
        ('prompt = "x"\nexpect = ["a"]\nkind = "direct"\nsplit = "test"', "split = 'test'"),
        ('prompt = "x"\nexpect = ["a"]\nkind = "direct"\nnote = 3', "'note' must be a string"),
    ],
)
def test_toml_rows_that_cannot_be_used_name_file_and_line(body: str, message: str) -> None:
    with pytest.raises(CaseError) as error:
        parse_toml_cases("# header\n[[case]]\n" + body + "\n", "c.toml")
    assert message in str(error.value) and str(error.value).startswith("c.toml:2: ")


def test_toml_syntax_errors_and_a_wrong_shape() -> None:
    with pytest.raises(CaseError, match=r"c\.toml: invalid TOML"):
        parse_toml_cases("[[case]\nprompt = 1", "c.toml")
    with pytest.raises(CaseError, match="array of tables"):
        parse_toml_cases('case = "x"', "c.toml")


def test_toml_warns_about_unknown_keys_and_duplicate_prompts() -> None:
    text = TOML + '\n[[case]]\nprompt = "Merge  two PDFs"\nexpect = ["pdf"]\nkind = "direct"\n'
    text += "weight = 2\n"
    cases = parse_toml_cases(text, "c.toml")
    assert len(cases) == 4
    assert cases.warnings == (
        "c.toml:20: unknown key 'weight' ignored",
        "c.toml:20: duplicate prompt (first at line 2): 'Merge  two PDFs'",
    )


TSV = (
    "# expected-id\tkind\tprompt\n"
    "\n"
    "pdf\tdirect\tmerge two pdfs\n"
    "changelog-generator, git-commit-writer\tconfusable\trelease notes or a commit message\n"
    "(none)\tnegative\tbanana bread\twith a tab inside\r\n"
    "   # an indented comment\n"
)


def test_tsv_cases_follow_the_reference_format() -> None:
    cases = parse_tsv_cases(TSV, "c.tsv")
    assert cases.warnings == ()
    assert [(c.expect, c.kind, c.prompt, c.line, c.split) for c in cases.cases] == [
        (("pdf",), "direct", "merge two pdfs", 3, None),
        (
            ("changelog-generator", "git-commit-writer"),
            "confusable",
            "release notes or a commit message",
            4,
            None,
        ),
        ((), "negative", "banana bread", 5, None),
    ]
    # a 4th column holds earlier turns (reference: examples/eval.rs)
    assert cases.cases[2].context == ("with a tab inside",)


def test_a_tsv_line_of_column_names_above_the_cases_is_skipped() -> None:
    """A spreadsheet's export starts with its column names, which name no kind: skipped
    there, not an error that stops the file. Below the first case such a line is an error,
    as any."""
    header = "expected-id\tkind\tprompt\n"
    cases = parse_tsv_cases(header + TSV, "c.tsv")
    first = cases.cases[0]
    assert (first.prompt, first.line, len(cases.cases)) == ("merge two pdfs", 4, 3)
    with pytest.raises(CaseError, match=r"c\.tsv:2: unknown kind 'Kind'"):
        parse_tsv_cases("pdf\tdirect\tmerge\nid\tKind\tprompt\n", "c.tsv")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("pdf\tmerge two pdfs", "c.tsv:2: expected 3 tab-separated fields"),
        ("pdf direct merge two pdfs", "found 1"),
        ("pdf\tobvious\tmerge", "c.tsv:2: unknown kind 'obvious'"),
        ("(none)\tdirect\tmerge", "c.tsv:2: a direct case needs at least one expected skill id"),
        ("pdf\tnegative\tmerge", "c.tsv:2: a negative case expects no skill, got pdf"),
        ("\tdirect\tmerge", "c.tsv:2: empty expected id"),
        ("pdf,\tdirect\tmerge", "c.tsv:2: empty id in 'pdf,'"),
        ("pdf\tdirect\t  ", "c.tsv:2: empty prompt"),
    ],
)
def test_tsv_bad_rows_name_file_and_line(line: str, message: str) -> None:
    with pytest.raises(CaseError) as error:
        parse_tsv_cases("# first line is a comment\n" + line + "\n", "c.tsv")
    assert message in str(error.value)


def test_tsv_group_comments_name_the_cases_below_them() -> None:
    text = (
        "pdf\tdirect\tmerge two pdfs\n"
        "# group: near-miss\n"
        "(none)\tnegative\twho invented the pdf\n"
        "# a plain comment keeps the group\n"
        "(none)\tnegative\twhat year was pdf made\n"
        "#group:negative\n"
        "(none)\tnegative\tbanana bread\n"
    )
    cases = parse_tsv_cases(text, "c.tsv").cases
    assert [(c.group, c.category, c.near_miss) for c in cases] == [
        ("", "direct", False),
        ("near-miss", "near-miss", True),
        ("near-miss", "near-miss", True),
        ("negative", "negative", False),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# group: trivia\n(none)\tnegative\tx\n", "c.tsv:1: unknown group 'trivia'"),
        ("# group: near-miss\npdf\tdirect\tx\n", "c.tsv:2: a near-miss expects no skill"),
    ],
)
def test_tsv_bad_groups_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(CaseError) as error:
        parse_tsv_cases(text, "c.tsv")
    assert message in str(error.value)


def test_tsv_duplicate_prompts_warn() -> None:
    cases = parse_tsv_cases("pdf\tdirect\tmerge\n(none)\tnegative\tMERGE\n", "c.tsv")
    assert cases.warnings == ("c.tsv:2: duplicate prompt (first at line 1): 'MERGE'",)


def test_load_cases_picks_the_format_from_the_extension_or_the_content(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "a.tsv").write_text(TSV, encoding="utf-8")
    (tmp_path / "a.cases").write_text(TOML, encoding="utf-8")
    (tmp_path / "b.cases").write_text(TSV, encoding="utf-8")
    for name in ("a.toml", "a.tsv", "a.cases", "b.cases"):
        cases = load_cases(tmp_path / name)
        assert len(cases) == 3 and cases.cases[0].source == str(tmp_path / name)
    with pytest.raises(CaseError, match="cannot read cases file"):
        load_cases(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(CaseError, match="not UTF-8"):
        load_cases(tmp_path / "bad.toml")


def test_the_sample_cases_cover_the_sample_library() -> None:
    """The demo library's promises: ~25 skills, >= 90 cases, >= 2 positives per skill,
    about a third negative, every expected id real, both splits used, no duplicates."""
    skills = {skill.id for skill in discover([SAMPLE_SKILLS]).skills}
    cases = load_cases(SAMPLE_SKILLS / "cases.toml")
    assert len(skills) >= 25
    assert len(cases) >= 90 and cases.warnings == ()
    positives = Counter(skill for case in cases.cases for skill in case.expect)
    assert set(positives) <= skills
    assert {skill for skill in skills if positives[skill] < 2} == set()
    negatives = sum(1 for case in cases.cases if not case.positive)
    assert 0.28 <= negatives / len(cases) <= 0.40
    assert {case.kind for case in cases.cases} == {"direct", "indirect", "confusable", "negative"}
    assert {case.split for case in cases.cases} == {"train", "validation"}


# Layouts authors of public skills write their trigger evals in, beside skill-creator's
# two; each is the same two cases for the skill "pdf".
AUTHOR_LAYOUTS = {
    "labelled lists": {
        "skill": "pdf",
        "should_trigger": ["merge two pdf files"],
        "should_not_trigger": ["bake banana bread"],
    },
    "positive and negative": {
        "positive": ["merge two pdf files"],
        "negative": ["bake banana bread"],
    },
    "cases with words": {
        "cases": [
            {"id": "t1", "utterance": "merge two pdf files", "expected": "trigger"},
            {"id": "t2", "input": "bake banana bread", "expected": "do_not_trigger"},
        ]
    },
    "queries with expect": {
        "queries": [
            {"query": "merge two pdf files", "expect": "trigger", "tag": "exact"},
            {"query": "bake banana bread", "expect": "no-trigger", "tag": "far"},
        ]
    },
    "expected skills": [
        {"prompt": "merge two pdf files", "expectedSkills": ["pdf"]},
        {"prompt": "bake banana bread", "expectedSkills": []},
    ],
    "items in labelled lists": {
        "intended_activations": [{"input": "merge two pdf files", "why": "names it"}],
        "near_neighbor": [{"text": "bake banana bread", "family": "cooking"}],
    },
}


@pytest.mark.parametrize("layout", sorted(AUTHOR_LAYOUTS))
def test_the_layouts_authors_write_trigger_evals_in(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "evals.json"
    path.write_text(json.dumps(AUTHOR_LAYOUTS[layout], indent=1), encoding="utf-8")
    read = load_cases(path, skill="pdf")
    shape = [(case.prompt, case.expect, case.reject, case.kind) for case in read.cases]
    assert shape == [
        ("merge two pdf files", ("pdf",), (), "should-trigger"),
        ("bake banana bread", (), ("pdf",), "should-not-trigger"),
    ]
    assert read.warnings == ()
    assert all(case.line for case in read.cases)  # failures point at the author's line


def test_a_should_not_trigger_case_that_names_a_skill_rejects_it() -> None:
    """In TSV and TOML alike, the skill a should-not-trigger case names is the one it must
    not take: it passes when another skill, or none, is injected, and fails when that one
    is (read as an expected skill, it passed only when the skill fired)."""
    tsv = parse_tsv_cases("pdf\tshould-not-trigger\tbake banana bread\n").cases
    toml = parse_toml_cases(
        '[[case]]\nprompt = "bake banana bread"\nexpect = ["pdf"]\nkind = "should-not-trigger"\n'
    ).cases
    for case in (*tsv, *toml):
        assert (case.expect, case.reject, case.positive) == ((), ("pdf",), False)
        assert passes(case, []) and passes(case, ["cooking"])
        assert not passes(case, ["pdf"])


def test_an_author_s_split_is_kept_and_an_unusable_item_is_reported_not_fatal(
    tmp_path: Path,
) -> None:
    path = tmp_path / "evals.json"
    data = {
        "skill_name": "pdf",
        "train": [{"query": "merge two pdf files", "should_trigger": True}],
        "validation": [
            {"query": "split this pdf", "should_trigger": True},
            {"query": "", "attachments": ["scan.pdf"], "should_trigger": True},
            {"query": "which route fits", "expected_trigger": "clarify"},
        ],
    }
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    read = load_cases(path)
    assert [(case.prompt, case.split) for case in read.cases] == [
        ("merge two pdf files", "train"),
        ("split this pdf", "validation"),
    ]
    assert len(read.warnings) == 2
    assert "skipped: no prompt text" in read.warnings[0]
    assert "'expected_trigger' = 'clarify' says neither trigger nor not" in read.warnings[1]
    # Read for another skill than the one it names: most likely the wrong file, said first.
    assert load_cases(path, skill="PDF").warnings == read.warnings  # the same skill
    other = load_cases(path, skill="xlsx")
    assert other.warnings[0] == (
        f"{path}: the file's skill_name is 'pdf', yet its cases are read as those of 'xlsx', "
        "the skill asked for"
    )
    assert [case.expect for case in other.cases] == [("xlsx",), ("xlsx",)]


def test_a_set_over_several_skills_needs_no_skill_id(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            [
                {"prompt": "merge pdfs into a sheet", "expectedSkills": ["pdf", "xlsx"]},
                {"prompt": "bake banana bread", "expectedSkills": []},
            ]
        )
    )
    first, second = load_cases(path).cases
    assert first.expect == ("pdf", "xlsx") and first.kind == "should-trigger"
    assert (second.expect, second.reject, second.kind) == ((), (), "negative")


def test_a_set_over_several_skills_gives_each_item_its_own_skill(tmp_path: Path) -> None:
    """Items naming their skill (per item, or grouped by skill): --skill keeps that skill's
    items and says which were left out; without it, every item is a case of its own skill."""
    per_item = tmp_path / "per-item.json"
    per_item.write_text(
        json.dumps(
            {
                "cases": [
                    {"prompt": "merge two pdf files", "skill": "pdf", "should_trigger": True},
                    {"prompt": "sum column b", "skill": "xlsx", "should_trigger": True},
                    {"prompt": "bake banana bread", "should_trigger": False},
                ]
            }
        )
    )
    grouped = tmp_path / "grouped.json"
    grouped.write_text(
        json.dumps(
            {
                "skills": {
                    "pdf": [{"prompt": "merge two pdf files", "expect": "trigger"}],
                    "xlsx": {"should_trigger": ["sum column b"], "should_not_trigger": ["hi"]},
                }
            }
        )
    )
    mine = load_cases(per_item, skill="pdf")
    assert [(c.prompt, c.expect, c.reject) for c in mine.cases] == [
        ("merge two pdf files", ("pdf",), ()),
        ("bake banana bread", (), ("pdf",)),
    ]
    assert mine.warnings == (f"{per_item}: the items about other skills (xlsx) are left out",)
    every = load_cases(grouped)
    assert [(c.prompt, c.expect, c.reject) for c in every.cases] == [
        ("merge two pdf files", ("pdf",), ()),
        ("sum column b", ("xlsx",), ()),
        ("hi", (), ("xlsx",)),
    ]
    assert [c.prompt for c in load_cases(grouped, skill="xlsx").cases] == ["sum column b", "hi"]


def test_a_list_named_by_its_label_outranks_an_item_s_prose(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            {"should_trigger": [{"input": "review this skill", "expected": "audit its folder"}]}
        )
    )
    (case,) = load_cases(path, skill="skill-maintainer").cases
    assert case.expect == ("skill-maintainer",)


def test_half_a_surrogate_pair_in_a_json_prompt_reads_as_a_replacement_character(
    tmp_path: Path,
) -> None:
    """A cut emoji's escape (`\\ud83d`): tune hashed the prompt as UTF-8 and failed."""
    path = tmp_path / "evals.json"
    path.write_text('[{"query": "merge these pdf files \\ud83d now", "should_trigger": true}]')
    (case,) = load_cases(path, skill="pdf").cases
    assert case.prompt == "merge these pdf files \ufffd now"
    case.prompt.encode("utf-8")
