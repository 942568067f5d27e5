"""Spec §1: discovery, parsing, derived fields, and every kind of bad input."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from explorer.engine.discovery.skills import (
    BODY_HEAD_CHARS,
    MAX_DEPTH,
    SKIPPED_DIRS,
    Problem,
    Skill,
    body_head,
    discover,
    find_skill_files,
    lenient_frontmatter,
    load_skill,
    parse_skill,
)


def skill_text(name: str, description: str, extra: str = "", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def write_skill(directory: Path, content: str | bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "SKILL.md"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def parse(content: str | bytes) -> Skill | Problem:
    data = content if isinstance(content, bytes) else content.encode("utf-8")
    return parse_skill("/virtual/SKILL.md", data)


def parse_ok(content: str | bytes) -> Skill:
    result = parse(content)
    assert isinstance(result, Skill), result
    return result


def parse_rejected(content: str | bytes) -> Problem:
    result = parse(content)
    assert isinstance(result, Problem), result
    return result


# §1.2 discovery -------------------------------------------------------------------------


def test_skipped_dirs_are_the_spec_list() -> None:
    spec = ".git target node_modules tests fixtures examples template templates".split()
    assert sorted(SKIPPED_DIRS) == sorted(spec)


@pytest.mark.parametrize(
    "skipped",
    [".git", "node_modules", "tests", "fixtures", "examples", "template", "templates", "target"],
)
def test_skipped_directories_are_not_entered(tmp_path: Path, skipped: str) -> None:
    write_skill(tmp_path / "kept", skill_text("kept", "A kept skill."))
    write_skill(tmp_path / skipped / "hidden", skill_text("hidden", "Must not be found."))
    write_skill(tmp_path / "kept" / skipped, skill_text("hidden2", "Must not be found."))
    discovery = discover([tmp_path])
    assert [skill.id for skill in discovery.skills] == ["kept"]
    assert discovery.rejected == ()


def test_similar_names_are_not_skipped(tmp_path: Path) -> None:
    for name in ("test", "my-tests", "git", "example", "Templates-old"):
        write_skill(tmp_path / name, skill_text(f"s-{name.lower()}", "Found."))
    assert len(discover([tmp_path]).skills) == 5


def nested(root: Path, depth: int) -> Path:
    path = root
    for level in range(1, depth + 1):
        path = path / f"d{level:02d}"
    return path


def test_depth_limit_boundary(tmp_path: Path) -> None:
    # _walk_root: the root is depth 0 and a directory at depth d is entered iff d < MAX_DEPTH,
    # so a SKILL.md in a directory 11 levels below the root is found and 12 levels is not.
    assert MAX_DEPTH == 12
    write_skill(nested(tmp_path / "a", 10), skill_text("at-eleven", "Depth eleven."))
    write_skill(nested(tmp_path / "b", 11), skill_text("at-twelve", "Depth twelve."))
    assert len((nested(tmp_path / "a", 10) / "SKILL.md").relative_to(tmp_path).parts) == 12
    found = [skill.id for skill in discover([tmp_path]).skills]
    assert found == ["at-eleven"]


def test_skill_at_root_and_root_given_as_file(tmp_path: Path) -> None:
    path = write_skill(tmp_path, skill_text("root-skill", "At the root."))
    assert find_skill_files([tmp_path]) == ([str(path)], [])
    assert find_skill_files([path]) == ([str(path)], [])


def test_paths_are_sorted(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid", "beta/inner", "alpha/deeper"):
        write_skill(tmp_path / name, skill_text(name.replace("/", "-"), "Some skill."))
    paths, problems = find_skill_files([tmp_path])
    assert problems == []
    assert paths == sorted(paths)
    assert len(paths) == 5
    ids = [skill.id for skill in discover([tmp_path]).skills]
    assert ids == ["alpha", "alpha-deeper", "beta-inner", "mid", "zeta"]


def test_multiple_roots_are_merged_sorted_and_deduplicated(tmp_path: Path) -> None:
    write_skill(tmp_path / "r2" / "b", skill_text("b", "Second root."))
    write_skill(tmp_path / "r1" / "a", skill_text("a", "First root."))
    paths, _ = find_skill_files([tmp_path / "r2", tmp_path / "r1", tmp_path / "r1"])
    assert paths == sorted(paths)
    assert len(paths) == 2


def test_duplicate_id_first_path_wins(tmp_path: Path) -> None:
    first = write_skill(tmp_path / "aaa", skill_text("dup", "The first one."))
    second = write_skill(tmp_path / "bbb", skill_text("dup", "The second one."))
    discovery = discover([tmp_path])
    assert [(s.id, s.path, s.description) for s in discovery.skills] == [
        ("dup", str(first), "The first one.")
    ]
    assert len(discovery.rejected) == 1
    problem = discovery.rejected[0]
    assert problem.path == str(second)
    assert "duplicate" in problem.message
    assert "'dup'" in problem.message
    assert str(first) in problem.message  # names the winner


def test_symlinked_skill_directory_is_followed(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "real-skill"
    write_skill(outside, skill_text("linked", "Reached through a symlink."))
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    discovery = discover([root])
    assert [(s.id, s.path) for s in discovery.skills] == [("linked", str(root / "link/SKILL.md"))]


def test_symlinked_skill_file_is_read(tmp_path: Path) -> None:
    real = tmp_path / "store" / "real.md"
    real.parent.mkdir()
    real.write_text(skill_text("via-file-link", "A linked file."))
    (tmp_path / "root" / "s").mkdir(parents=True)
    (tmp_path / "root" / "s" / "SKILL.md").symlink_to(real)
    assert [s.id for s in discover([tmp_path / "root"]).skills] == ["via-file-link"]


def test_symlink_loop_does_not_hang(tmp_path: Path) -> None:
    write_skill(tmp_path / "skill", skill_text("looped", "Inside a loop."))
    (tmp_path / "skill" / "loop").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "skill" / "self").symlink_to(tmp_path / "skill", target_is_directory=True)
    start = time.monotonic()
    paths, _ = find_skill_files([tmp_path])
    assert time.monotonic() - start < 5
    # each directory is listed once: without loop protection the skill would be reached
    # again through loop/skill/..., self/..., and so on down to the depth limit
    assert paths == [str(tmp_path / "skill" / "SKILL.md")]
    assert [s.id for s in discover([tmp_path]).skills] == ["looped"]


def test_a_link_to_a_directory_that_holds_it_is_not_followed(tmp_path: Path) -> None:
    """A stray link to `/` in a skills root walked the whole machine (36 s in the hook)
    and injected other people's skills; a link beside the library is still followed."""
    home = tmp_path / "home"
    root = home / "library"
    write_skill(root / "pdf", skill_text("pdf", "Merge PDF files."))
    write_skill(home / "elsewhere" / "other", skill_text("other", "Not in the library."))
    shared = tmp_path / "opt" / "shared" / "linked"
    write_skill(shared, skill_text("linked", "Linked in on purpose."))
    (root / "up").symlink_to(home, target_is_directory=True)
    (root / "pdf" / "top").symlink_to("/", target_is_directory=True)
    (root / "linked").symlink_to(shared, target_is_directory=True)
    # Two links away: a folder linked in on purpose, holding a link to one that holds the
    # library but not that folder.
    (shared / "home").symlink_to(home, target_is_directory=True)
    discovery = discover([root])
    assert [s.id for s in discovery.skills] == ["linked", "pdf"]
    refused = {problem.path: problem.message for problem in discovery.rejected}
    assert set(refused) == {
        str(root / "up"),
        str(root / "pdf" / "top"),
        str(root / "linked" / "home"),
    }
    assert refused[str(root / "up")].startswith(f"a link to {home}, a directory that holds")


def test_skill_reachable_by_several_symlinks_reports_the_sorted_first_path(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "m-real", skill_text("multi", "Reachable several ways."))
    for name in ("a0", "b1", "c2", "d3", "n4", "p5", "x6", "z7"):
        (tmp_path / name).symlink_to(tmp_path / "m-real", target_is_directory=True)
    (skill,) = discover([tmp_path]).skills
    assert skill.path == str(tmp_path / "a0" / "SKILL.md")


# §1.3 reading ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        # the reference folds literal blocks too (src/skill.rs): routing sees one line
        ("|\n  line one\n  line two\n", "line one line two"),
        ("|-\n  line one\n  line two\n", "line one line two"),
        ("|+\n  line one\n  line two\n\n", "line one line two"),
        (">\n  line one\n  line two\n", "line one line two"),
        (">-\n  line one\n  line two\n", "line one line two"),
        (">+\n  line one\n  line two\n", "line one line two"),
    ],
)
def test_block_scalars_are_honoured(scalar: str, expected: str) -> None:
    skill = parse_ok(f"---\nname: block\ndescription: {scalar}---\nBody\n")
    assert skill.description == expected
    assert skill.warnings == ()
    assert not skill.description.startswith(("|", ">"))  # the old reference bug


def test_block_scalar_chomping_is_kept_in_the_frontmatter() -> None:
    skill = parse_ok("---\nname: block\ndescription: |+\n  one\n  two\n\nkeep: 1\n---\n")
    assert skill.frontmatter["description"] == "one\ntwo\n\n"
    skill = parse_ok("---\nname: block\ndescription: >-\n  one\n  two\n---\n")
    assert skill.frontmatter["description"] == "one two"


def test_bom_is_stripped() -> None:
    skill = parse_ok(b"\xef\xbb\xbf" + skill_text("bom", "Has a BOM.").encode())
    assert (skill.name, skill.description) == ("bom", "Has a BOM.")
    assert skill.warnings == ()


def test_crlf_line_endings() -> None:
    text = skill_text(
        "crlf-skill",
        "Windows line endings.",
        extra="keywords:\n  - Alpha\n  - beta\n",
        body="# Title\n\nFirst line.\nSecond line.\n",
    ).replace("\n", "\r\n")
    skill = parse_ok(text)
    assert skill.name == "crlf-skill"
    assert skill.description == "Windows line endings."
    assert skill.keywords == ("alpha", "beta", "crlf", "skill")
    assert skill.body_head == "Title First line. Second line."
    assert "\r" not in skill.body_head


def test_fences_with_trailing_spaces_are_accepted() -> None:
    skill = parse_ok("---  \nname: spaced\ndescription: Fences with spaces.\n--- \nBody\n")
    assert skill.body == "Body"


def test_body_may_contain_further_fences() -> None:
    skill = parse_ok(skill_text("fence", "Body has a rule.", body="before\n---\nafter\n"))
    assert skill.body == "before\n---\nafter"


def test_parse_fields_and_types() -> None:
    skill = parse_ok(
        skill_text(
            "pdf-tools",
            'Merge and split PDF files. Use for "merge pdf files".',
            body="# PDF tools\n\nRun it.\n",
        )
    )
    assert skill.id == skill.name == "pdf-tools"
    assert skill.path == "/virtual/SKILL.md"
    assert skill.directory == "/virtual"
    assert skill.trigger_phrases == ("merge pdf files",)
    assert skill.body == "# PDF tools\n\nRun it."
    assert skill.frontmatter == {
        "name": "pdf-tools",
        "description": 'Merge and split PDF files. Use for "merge pdf files".',
    }


def test_name_and_description_are_trimmed_outside_quotes_only() -> None:
    skill = parse_ok("---\nname:   spaced  \ndescription: '  Padded.  '\n---\n")
    # reference: src/skill.rs trims the line, then drops the quotes; what they hold stays
    assert (skill.id, skill.description) == ("spaced", "  Padded.  ")


# §1.4 derived fields --------------------------------------------------------------------


def test_keywords_from_name_tokens() -> None:
    skill = parse_ok(skill_text("slack-gif-creator", "Make GIFs for Slack."))
    assert skill.keywords == ("slack", "gif", "creator")


def test_keywords_inline_list_aliases_and_lower_case() -> None:
    skill = parse_ok(
        skill_text(
            "sheet_tool",
            "Spreadsheets.",
            extra="keywords: [Google Sheets, CSV, 'Excel']\naliases:\n  - XLSX\n  - csv\n",
        )
    )
    # whole strings lower-cased, repeats kept (src/skill.rs), then new name tokens
    assert skill.keywords == ("google sheets", "csv", "excel", "xlsx", "csv", "sheet", "tool")


def test_keywords_as_a_plain_string() -> None:
    skill = parse_ok(skill_text("kw", "Keywords as string.", extra="keywords: Alpha, Beta\n"))
    assert skill.keywords == ("alpha", "beta", "kw")


def test_keywords_of_the_wrong_type_warn_and_are_ignored() -> None:
    skill = parse_ok(skill_text("kw", "Bad keywords.", extra="keywords:\n  a: 1\n"))
    assert skill.keywords == ("kw",)
    assert len(skill.warnings) == 1
    assert "'keywords' should be a list" in skill.warnings[0].message


def test_body_head() -> None:
    body = (
        "\n# Title\n\n## Sub title\n- bullet one\n* star two\n> quoted\n"
        "   indented text   \n#-*> mixed\nline eight\nline nine\n"
    )
    skill = parse_ok(skill_text("head", "Has a body.", body=body))
    assert skill.body_head == (
        "Title Sub title bullet one star two quoted indented text mixed line eight"
    )


def test_body_head_is_cut_to_600_characters() -> None:
    body = "\n".join(["x" * 100] * 8)
    head = body_head(body)
    assert BODY_HEAD_CHARS == 600
    assert len(head) == 600
    assert head == (" ".join(["x" * 100] * 8))[:600]
    assert body_head("") == ""
    assert body_head("\n\n  \n") == ""


def test_hash_is_stable_and_follows_content() -> None:
    text = skill_text("hashed", "Hash me.")
    first, again = parse_ok(text), parse_ok(text)
    assert first.hash == again.hash
    assert len(first.hash) == 16 and int(first.hash, 16) >= 0  # 64 bits as hex
    assert parse_ok(text + "more body\n").hash != first.hash
    assert parse_ok(text.replace("Hash me.", "Hash me!")).hash != first.hash


def test_hash_is_stable_across_load_and_parse(tmp_path: Path) -> None:
    text = skill_text("hashed", "Hash me.")
    path = write_skill(tmp_path / "s", text)
    loaded = load_skill(str(path))
    assert isinstance(loaded, Skill)
    assert loaded.hash == parse_ok(text).hash


# bad input ------------------------------------------------------------------------------

BAD_INPUTS: list[tuple[str, bytes, str]] = [
    ("empty file", b"", "no frontmatter"),
    ("only whitespace", b"\n\n  \n", "no frontmatter"),
    ("no frontmatter", b"# Just a readme\n\nname: x\n", "no frontmatter"),
    ("fence not on line 1", b"\n---\nname: x\ndescription: y\n---\n", "no frontmatter"),
    ("frontmatter is a list", b"---\n- name\n- description\n---\n", "not a mapping"),
    ("frontmatter is a scalar", b"---\njust text\n---\n", "not a mapping"),
    ("empty frontmatter", b"---\n---\nbody\n", "'name'"),
    ("binary bytes", b"---\nname: bin\x00ary\ndescription: y\n---\n", "binary"),
    ("missing name", b"---\ndescription: y\n---\n", "'name'"),
    ("empty name", b'---\nname: ""\ndescription: y\n---\n', "'name'"),
    ("name under another key", b"---\nmeta:\n  name: x\ndescription: y\n---\n", "'name'"),
    ("missing description", b"---\nname: x\n---\n", "'description'"),
    ("empty description", b"---\nname: x\ndescription:\n---\n", "'description'"),
    ("description only nested", b"---\nname: x\nmeta:\n  description: y\n---\n", "'description'"),
    (
        "template placeholder",
        b"---\nname: x\ndescription: Replace with a description of the skill\n---\n",
        "placeholder",
    ),
    (
        "template placeholder, any case",
        b"---\nname: x\ndescription: '  REPLACE WITH something'\n---\n",
        "placeholder",
    ),
]


@pytest.mark.parametrize(("label", "data", "reason"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_rejected_with_a_reason(label: str, data: bytes, reason: str) -> None:
    problem = parse_rejected(data)
    assert problem.path == "/virtual/SKILL.md"
    assert reason in problem.message
    assert str(problem).startswith("/virtual/SKILL.md")


@pytest.mark.parametrize(("label", "data", "reason"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_does_not_stop_the_other_skills(
    tmp_path: Path, label: str, data: bytes, reason: str
) -> None:
    write_skill(tmp_path / "a-good", skill_text("good-a", "Loads fine."))
    bad = write_skill(tmp_path / "b-bad", data)
    write_skill(tmp_path / "c-good", skill_text("good-c", "Loads fine too."))
    discovery = discover([tmp_path])
    assert [s.id for s in discovery.skills] == ["good-a", "good-c"]
    assert [(p.path, reason in p.message) for p in discovery.rejected] == [(str(bad), True)]


def test_description_that_merely_mentions_replace_with_is_kept() -> None:
    skill = parse_ok(skill_text("sed", "Find and replace with regular expressions."))
    assert skill.description.startswith("Find")


def test_frontmatter_list_problem_points_at_line_2() -> None:
    assert parse_rejected(b"---\n- a\n---\n").line == 2


def test_invalid_yaml_is_recovered_with_a_warning_on_the_right_line() -> None:
    text = (
        "---\n"  # line 1
        "name: colon-skill\n"  # line 2
        "keywords: [alpha]\n"  # line 3
        "description: Use this: when the prompt has a colon\n"  # line 4
        "---\n"
        "Body\n"
    )
    skill = parse_ok(text)
    assert skill.name == "colon-skill"
    assert skill.description == "Use this: when the prompt has a colon"
    assert skill.keywords == ("alpha", "colon", "skill")
    (warning,) = skill.warnings
    assert "invalid YAML" in warning.message
    assert warning.line == 4
    assert str(warning) == f"/virtual/SKILL.md:4: {warning.message}"


@pytest.mark.parametrize(
    ("lines", "line", "said"),
    [
        # YAML notices an open quote only where the frontmatter ends: the line that
        # opened it is the one to fix.
        (['description: "Handle the task.', "name: open-skill"], 2, "a quote opened on this"),
        # An open [list] is noticed on the next line, and said to be in the list.
        (["keywords: [alpha, beta", "name: open-skill"], 3, "in the [list] opened on line 2"),
        # A closed list with a bad item: its own line, and no word of an unclosed list.
        (['keywords: [alpha, "b" c]', "name: open-skill"], 2, "expected ',' or ']'"),
    ],
)
def test_a_yaml_slip_is_placed_on_the_line_to_fix(lines: list[str], line: int, said: str) -> None:
    rest = "" if lines[0].startswith("description") else "description: Handle the task.\n"
    text = "---\n" + "\n".join(lines) + f"\n{rest}license: MIT\n---\nBody\n"
    (warning,) = parse_ok(text).warnings
    assert warning.line == line and said in warning.message, warning
    assert "not closed" not in warning.message or "quote" in said


def test_invalid_yaml_line_counts_the_file_with_bom_and_crlf() -> None:
    text = "\ufeff---\r\nname: x\r\n\r\ndescription: a: b\r\n---\r\n"
    skill = parse_ok(text.encode("utf-8"))
    assert skill.description == "a: b"
    assert skill.warnings[0].line == 4


def test_invalid_yaml_in_discovery_keeps_the_skill(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", "---\nname: s\ndescription: Note: colons\n---\n")
    discovery = discover([tmp_path])
    assert discovery.rejected == ()
    (skill,) = discovery.skills
    assert skill.description == "Note: colons"
    assert "invalid YAML" in skill.warnings[0].message


def test_five_megabyte_file_is_rejected_as_too_large(tmp_path: Path) -> None:
    description = "Convert documents quickly. " * 200_000  # 5.4 MB
    path = write_skill(tmp_path / "big", skill_text("big", description.strip()))
    assert path.stat().st_size > 5_000_000
    discovery = discover([tmp_path])
    assert discovery.skills == ()
    ((rejected),) = discovery.rejected
    assert rejected.path == str(path) and "too large" in rejected.message


def test_a_megabyte_long_line_loads_in_reasonable_time(tmp_path: Path) -> None:
    description = "Convert documents quickly. " * 38_000  # 1.0 MB on one line
    write_skill(tmp_path / "big", skill_text("big", description.strip()))
    start = time.monotonic()
    discovery = discover([tmp_path])
    assert time.monotonic() - start < 20
    (skill,) = discovery.skills
    assert len(skill.description) == len(description.strip())


def test_many_unclosed_straight_quotes_parse_in_linear_time() -> None:
    description = "Tricky " + " 'a" * 4000  # 12 kB: 4000 openers, no closer
    start = time.monotonic()
    parse_ok(skill_text("quotes", description))
    assert time.monotonic() - start < 1.0


def test_non_utf8_bytes_load_with_a_warning() -> None:
    data = b"---\nname: latin\ndescription: Caf\xe9 menus and more\n---\nBody\n"
    skill = parse_ok(data)
    assert skill.description == "Caf\ufffd menus and more"
    (warning,) = skill.warnings
    assert "UTF-8" in warning.message
    assert "replacement" in warning.message


def test_directory_named_skill_md_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "weird" / "SKILL.md").mkdir(parents=True)
    write_skill(tmp_path / "ok", skill_text("ok", "Fine."))
    discovery = discover([tmp_path])
    assert [s.id for s in discovery.skills] == ["ok"]
    (problem,) = discovery.rejected
    assert problem.path == str(tmp_path / "weird" / "SKILL.md")
    assert "directory" in problem.message


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read a chmod 000 file"
)
def test_unreadable_file_is_rejected(tmp_path: Path) -> None:
    write_skill(tmp_path / "ok", skill_text("ok", "Fine."))
    locked = write_skill(tmp_path / "locked", skill_text("locked", "Cannot read."))
    locked.chmod(0)
    try:
        discovery = discover([tmp_path])
    finally:
        locked.chmod(0o644)
    assert [s.id for s in discovery.skills] == ["ok"]
    (problem,) = discovery.rejected
    assert problem.path == str(locked)
    assert "cannot read" in problem.message


def test_dangling_symlink_skill_md_is_rejected(tmp_path: Path) -> None:
    write_skill(tmp_path / "ok", skill_text("ok", "Fine."))
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / "SKILL.md").symlink_to(tmp_path / "nowhere.md")
    discovery = discover([tmp_path])
    assert [s.id for s in discovery.skills] == ["ok"]
    (problem,) = discovery.rejected
    assert problem.path == str(tmp_path / "dangling" / "SKILL.md")
    assert "cannot read" in problem.message


def test_load_skill_of_a_missing_file_returns_a_problem(tmp_path: Path) -> None:
    result = load_skill(str(tmp_path / "absent" / "SKILL.md"))
    assert isinstance(result, Problem)
    assert "cannot read" in result.message


def test_missing_root_is_reported_and_other_roots_load(tmp_path: Path) -> None:
    write_skill(tmp_path / "real" / "s", skill_text("s", "Present."))
    missing = tmp_path / "does-not-exist"
    discovery = discover([missing, tmp_path / "real"])
    assert [s.id for s in discovery.skills] == ["s"]
    (problem,) = discovery.rejected
    assert problem.path == str(missing)
    assert "does not exist" in problem.message


def test_root_that_is_a_plain_file_is_reported(tmp_path: Path) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("hello")
    discovery = discover([plain])
    assert discovery.skills == ()
    assert "is a file, not a directory" in discovery.rejected[0].message


def test_empty_root_list() -> None:
    assert discover([]) == discover(())
    assert discover([]).skills == () and discover([]).rejected == ()


# lenient_frontmatter --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: a\ndescription: Use this: when x\n",
            {"name": "a", "description": "Use this: when x"},
        ),
        ("name: \"quoted\"\ndescription: 'single'\n", {"name": "quoted", "description": "single"}),
        ("description: |\n  line one\n  line two\n", {"description": "line one\nline two"}),
        ("description: |-\n  one\n\n  two\n\n", {"description": "one\n\ntwo"}),
        (
            "description: >-\n  line one\n  line two\nname: b\n",
            {"description": "line one line two", "name": "b"},
        ),
        ("keywords: [a, 'b c', \"d\"]\n", {"keywords": ["a", "b c", "d"]}),
        ("aliases:\n  - one\n  - 'two'\n- three\n", {"aliases": ["one", "two", "three"]}),
        ("description: first\n  continued here\n", {"description": "first continued here"}),
        ("empty:\nname: x\n", {"empty": "", "name": "x"}),
        ("not a key line\n# comment: no\nname: x\n", {"name": "x"}),
        (
            "metadata:\n  author: K-Dense Inc.\n  version: '1.2'\nname: x\n",
            {"metadata": {"author": "K-Dense Inc.", "version": "1.2"}, "name": "x"},
        ),
        ("metadata:\n  a:\n    b: c\n", {"metadata": "a: b: c"}),  # deeper: not guessed
        ("", {}),
    ],
)
def test_lenient_frontmatter(text: str, expected: dict[str, object]) -> None:
    assert lenient_frontmatter(text) == expected


def test_skills_share_one_string_per_distinct_token(tmp_path: Path) -> None:
    """A library's tokens repeat across its descriptions: each distinct one is held once,
    whether the skill was parsed now or decoded from the parse cache."""
    from explorer.engine.discovery.skills import skill_from_record, skill_record

    first, second = (
        parse_skill(
            str(tmp_path / name / "SKILL.md"),
            f"---\nname: {name}\ndescription: Convert spreadsheets {name}\n---\n".encode(),
        )
        for name in ("alpha", "beta")
    )
    assert isinstance(first, Skill) and isinstance(second, Skill)
    decoded = skill_from_record(skill_record(first))
    for other in (second, decoded):
        assert other.description_tokens[0] == "convert"
        assert other.description_tokens[0] is first.description_tokens[0]


@pytest.mark.parametrize(
    "line",
    [
        "when: 2020-13-45",  # an impossible date: ValueError
        "flag: !!bool maybe",  # KeyError
        "size: 0x_",  # ValueError
        "ratio: !!float",  # IndexError
        "at: !!timestamp noon",  # AttributeError
        "count: " + "9" * 5_000,  # beyond Python's digits limit: ValueError
    ],
)
def test_a_value_yaml_cannot_convert_is_a_recovered_warning(tmp_path: Path, line: str) -> None:
    """PyYAML raises its converters' own errors for these, not YAMLError: every command
    failed with a traceback, and the hook went silent for the whole library."""
    path = write_skill(tmp_path / "odd", skill_text("odd", "Merge PDF files", line + "\n"))
    skill = load_skill(str(path))
    assert isinstance(skill, Skill) and skill.description == "Merge PDF files"
    (warning,) = skill.warnings
    assert warning.message.startswith("invalid YAML frontmatter (a value it cannot convert")
    assert warning.message.endswith("recovered by line reader")


def test_a_key_indented_off_column_0_is_named_where_the_file_has_it() -> None:
    """A tab before `description:` makes the whole block invalid YAML, so the rejection
    said only "missing or empty 'description'" beside a description plainly there."""
    from explorer.engine.discovery.skills import Problem, parse_skill

    tabbed = parse_skill("/x/SKILL.md", b"---\nname: three\n\tdescription: tabbed: yes\n---\n")
    assert isinstance(tabbed, Problem)
    assert tabbed.message == (
        "missing or empty 'description'; line 3 holds 'description:' indented, and the "
        "frontmatter's keys start at column 0"
    )
    spaced = parse_skill("/x/SKILL.md", b"---\n  name: x\ndescription: d\n---\n")
    assert isinstance(spaced, Problem) and "line 2 holds 'name:' indented" in spaced.message
    missing = parse_skill("/x/SKILL.md", b"---\nname: x\n---\n")
    assert isinstance(missing, Problem) and missing.message == "missing or empty 'description'"
