"""Lint: every rule with an example that trips it and one that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.author.lint import (
    DESCRIPTION_MAX,
    ERROR,
    INFO,
    LISTING_ENTRY_MAX,
    NAMES_SHOWN,
    UNKNOWN_KEYS_LISTED,
    WARNING,
    Finding,
    has_errors,
    lint,
)
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from tests.conftest import SAMPLE_SKILLS, write_skill

GOOD = "Merges and splits PDF files. Use when the user needs pages combined or separated."


def raw_skill(root: Path, directory: str, frontmatter: str, body: str = "# Body\n") -> Path:
    """A SKILL.md with the frontmatter exactly as given (to plant any problem)."""
    path = root / directory / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}", encoding="utf-8")
    return path


def rules(findings: list[Finding], path: Path | None = None) -> set[str]:
    return {f.rule for f in findings if path is None or f.path == str(path)}


def only(findings: list[Finding], rule: str) -> list[Finding]:
    return [finding for finding in findings if finding.rule == rule]


def test_a_clean_skill_has_no_spec_or_retrieval_findings(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "pdf-merger", GOOD, license="MIT", compatibility="any host")
    findings = lint([tmp_path])
    assert [f for f in findings if f.severity != INFO] == []
    assert rules(findings) == {"claude-code/listing-budget"}  # the headroom, as info
    assert not has_errors(findings)
    assert str(path).endswith("pdf-merger/SKILL.md")


@pytest.mark.parametrize(
    ("directory", "name", "rule", "fragment"),
    [
        ("a" * 65, "a" * 65, "spec/name-length", "65 characters"),
        ("My_Skill", "My_Skill", "spec/name-charset", "(found 'M' 'S' '_')"),
        ("-pdf", "-pdf", "spec/name-hyphens", "no leading or trailing hyphen"),
        ("pdf-", "pdf-", "spec/name-hyphens", "no leading or trailing hyphen"),
        ("pdf--tools", "pdf--tools", "spec/name-hyphens", "no '--'"),
        ("pdf-tools", "pdf-merger", "spec/name-directory", "directory name 'pdf-tools'"),
        ("claude-pdf", "claude-pdf", "spec/reserved-word", "reserved word 'claude'"),
        ("anthropic-x", "anthropic-x", "spec/reserved-word", "reserved word 'anthropic'"),
        ("pdf-a<b>", "pdf-a<b>", "spec/xml-tags", "name contains '<' or '>'"),
    ],
)
def test_name_rules(tmp_path: Path, directory: str, name: str, rule: str, fragment: str) -> None:
    raw_skill(tmp_path, directory, f"name: '{name}'\ndescription: {GOOD}")
    (finding,) = only(lint([tmp_path]), rule)
    assert finding.severity == ERROR and fragment in finding.message and finding.line == 2


def test_names_at_the_limits_pass(tmp_path: Path) -> None:
    for name in ("a" * 64, "a", "pdf-2-go"):
        raw_skill(tmp_path, name, f"name: {name}\ndescription: {GOOD}")
    assert not rules(lint([tmp_path])) & {
        "spec/name-length",
        "spec/name-charset",
        "spec/name-hyphens",
        "spec/name-directory",
        "spec/reserved-word",
    }


def test_description_length_counts_code_points(tmp_path: Path) -> None:
    fits = "Use when " + "é" * (DESCRIPTION_MAX - len("Use when "))
    write_skill(tmp_path, "fits", fits)
    write_skill(tmp_path, "too-long", fits + "é")
    (finding,) = only(lint([tmp_path]), "spec/description-length")
    assert finding.path.endswith("too-long/SKILL.md") and "1,025 characters" in finding.message
    assert finding.severity == ERROR and finding.line == 3


def test_xml_tags_in_the_description(tmp_path: Path) -> None:
    write_skill(tmp_path, "tagged", "Use when the user pastes <html> pages.")
    write_skill(tmp_path, "plain", "Use when the user pastes html pages, a -> b.")
    findings = only(lint([tmp_path]), "spec/xml-tags")
    assert [f.path.split("/")[-2] for f in findings] == ["plain", "tagged"]  # '>' counts too


def test_unknown_keys_and_claude_code_mode(tmp_path: Path) -> None:
    raw_skill(
        tmp_path,
        "pdf",
        f"name: pdf\ndescription: {GOOD}\nversion: 2\nwhen_to_use: merging\nmodel: haiku",
    )
    default = only(lint([tmp_path]), "spec/unknown-key")
    assert [(f.message.split("'")[1], f.line) for f in default] == [
        ("version", 4),
        ("when_to_use", 5),
        ("model", 6),
    ]
    assert "lint with --claude-code" in default[1].message
    assert "--claude-code" not in default[0].message
    assert default[0].message.endswith(
        "; the spec's place for other fields is metadata, a map of strings "
        '(metadata: {version: "…"})'
    )
    with_claude = only(lint([tmp_path], claude_code=True), "spec/unknown-key")
    assert [f.message.split("'")[1] for f in with_claude] == ["version"]


def test_many_unknown_keys_are_counted_past_the_first_few(tmp_path: Path) -> None:
    """A frontmatter of 10,000 keys made 5,000 lines of lint."""
    extra = "\n".join(f"k{number}: v" for number in range(UNKNOWN_KEYS_LISTED + 7))
    raw_skill(tmp_path, "pdf", f"name: pdf\ndescription: {GOOD}\n{extra}")
    found = only(lint([tmp_path]), "spec/unknown-key")
    assert len(found) == UNKNOWN_KEYS_LISTED + 1
    assert found[-1].message == (
        f"7 more frontmatter keys are not in the spec, from 'k{UNKNOWN_KEYS_LISTED}' on"
    )
    assert found[-1].line == 4 + UNKNOWN_KEYS_LISTED
    # A Claude Code key among the rest still says how to lint for it.
    raw_skill(tmp_path, "pdf", f"name: pdf\ndescription: {GOOD}\n{extra}\nmodel: haiku")
    last = only(lint([tmp_path]), "spec/unknown-key")[-1]
    assert last.message.endswith("('model': Claude Code's, lint with --claude-code)")


def test_a_key_set_twice_and_a_blank_description_are_errors(tmp_path: Path) -> None:
    """A strict YAML reader rejects duplicate keys (the others keep the last); a blank
    description was only 'too few terms'."""
    raw_skill(tmp_path, "twice", f"name: twice\ndescription: {GOOD}\ndescription: Other.")
    raw_skill(tmp_path, "blank", "name: blank\ndescription: '   '")
    raw_skill(tmp_path, "fine", f"name: fine\ndescription: {GOOD}")
    findings = lint([tmp_path])
    (duplicate,) = only(findings, "spec/duplicate-key")
    assert duplicate.severity == ERROR and duplicate.line == 4
    assert "twice/SKILL.md" in duplicate.path and "set 2 times (lines 3, 4)" in duplicate.message
    (blank,) = only(findings, "spec/description-blank")
    assert "blank/SKILL.md" in blank.path and blank.severity == ERROR and blank.line == 3
    said = {f.rule for f in findings if "blank/SKILL.md" in f.path and f.severity != INFO}
    assert said == {"spec/description-blank"}  # not also "0 distinct terms (none)"


def test_a_link_the_walk_does_not_follow_is_a_warning(tmp_path: Path) -> None:
    """Every skill routes; the link is named, as a warning, not as a broken SKILL.md."""
    write_skill(tmp_path, "pdf", GOOD)
    (tmp_path / "pdf" / "top").symlink_to("/", target_is_directory=True)
    findings = lint([tmp_path])
    (link,) = only(findings, "discovery/not-walked")
    assert link.severity == WARNING and link.path == str(tmp_path / "pdf" / "top")
    assert "parse/rejected" not in rules(findings) and not has_errors(findings)


def test_router_keywords_are_accepted_but_named(tmp_path: Path) -> None:
    raw_skill(tmp_path, "regex", f"name: regex\ndescription: {GOOD}\nkeywords: [regex, grep]")
    raw_skill(tmp_path, "plain", f"name: plain\ndescription: {GOOD}")
    findings = lint([tmp_path])
    assert "spec/unknown-key" not in rules(findings)
    (finding,) = only(findings, "router/extension-keys")
    assert finding.severity == INFO and "regex/SKILL.md" in finding.path and finding.line == 4


@pytest.mark.parametrize(
    ("extra", "rule"),
    [
        ("compatibility: ''", "spec/compatibility"),
        (f"compatibility: {'x' * 501}", "spec/compatibility"),
        ("compatibility: [a, b]", "spec/compatibility"),
        ("metadata: [a, b]", "spec/metadata"),
        ("metadata:\n  version: 2", "spec/metadata"),
        ("license: 3", "spec/field-type"),
        ("allowed-tools: {a: b}", "spec/field-type"),
    ],
)
def test_optional_field_types(tmp_path: Path, extra: str, rule: str) -> None:
    raw_skill(tmp_path, "pdf", f"name: pdf\ndescription: {GOOD}\n{extra}")
    (finding,) = only(lint([tmp_path]), rule)
    assert finding.severity == ERROR and finding.line == 4


def test_optional_fields_of_the_right_type_pass(tmp_path: Path) -> None:
    raw_skill(
        tmp_path,
        "pdf",
        f"name: pdf\ndescription: {GOOD}\ncompatibility: {'x' * 500}\n"
        "metadata:\n  version: '2'\nlicense: MIT\nallowed-tools: [Read, Bash]",
    )
    assert [f for f in lint([tmp_path]) if f.severity == ERROR] == []


def test_parse_problems_surface_as_findings(tmp_path: Path) -> None:
    raw_skill(
        tmp_path,
        "notes",
        "name: notes\ndescription: Turns calls into notes: who, what. Use when asked.",
    )
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "SKILL.md").write_text("no frontmatter here\n", encoding="utf-8")
    raw_skill(tmp_path, "odd", f"name: odd\ndescription: {GOOD}\nkeywords: {{a: b}}")
    findings = lint([tmp_path])
    (invalid,) = only(findings, "parse/invalid-yaml")
    assert invalid.severity == ERROR and invalid.line == 3 and "still routes" in invalid.message
    (rejected,) = only(findings, "parse/rejected")
    assert rejected.severity == ERROR and "no frontmatter" in rejected.message
    (warning,) = only(findings, "parse/warning")
    assert warning.severity == WARNING and "'keywords' should be a list" in warning.message
    assert has_errors(findings)


def test_trigger_language(tmp_path: Path) -> None:
    for name, description in {
        "a": "Merges PDF files and splits them into pages and sections. Use when asked.",
        "b": "Merges PDF files and splits them into pages. Use this skill for page work.",
        "c": "Merges PDF files and splits them into pages, whenever the user has a PDF.",
        "d": "Merges PDF files. Triggers on merge, split, combine and pages of documents.",
        "vague": "Merges PDF files and splits them into pages and sections and chapters.",
    }.items():
        write_skill(tmp_path, name, description)
    findings = only(lint([tmp_path]), "retrieval/no-trigger-language")
    assert [(f.path.split("/")[-2], f.severity, f.line) for f in findings] == [
        ("vague", WARNING, 3)
    ]


def test_trigger_language_in_other_languages_and_in_when_to_use(tmp_path: Path) -> None:
    """A description that says when to use the skill in Danish, Dutch, Swedish or Chinese,
    or in the passive ("should be used when"), says it (these are descriptions of public
    skills); a when_to_use field that says it
    is named, since a router reading the description alone never sees it."""
    for name, description in {
        "da": "Madplanlægning og opskrifter. Brug den hver gang brugeren vil lave mad.",
        "nl": "Vertaalt SRT-ondertitels. Gebruik bij verzoeken om ondertitels te vertalen.",
        "sv": "Skriver kalkyler och budgetar. Använd när användaren planerar en budget.",
        "zh": "维护个人知识库 wiki。触发词：wiki、知识库、笔记整理。",
        "de": "Prüft SPS-Programme auf Fehler. Verwende diesen Skill, wenn ein Baustein hängt.",
        "es": "Redacta contratos de alquiler. Úsala cuando el usuario pida un contrato.",
        "en": "Formats manuscripts. This skill should be used when preparing a submission.",
    }.items():
        write_skill(tmp_path, name, description)
    write_skill(
        tmp_path,
        "plc",
        "Writes and reviews PLC programs in ladder logic and structured text.",
        when_to_use='"Use when the user asks about PLC ladder rungs or Structured Text."',
    )
    write_skill(tmp_path, "usa", "Sales tax rules of the USA for online shops and invoices.")
    # What a tool is used for is what it does, not when to use the skill.
    write_skill(tmp_path, "used", "A Python library used for parsing PDF files and tables.")
    found = only(lint([tmp_path]), "retrieval/no-trigger-language")
    assert sorted(f.path.split("/")[-2] for f in found) == ["plc", "usa", "used"]
    (finding,) = [f for f in found if "/plc/" in f.path]
    assert "its when_to_use field does" in finding.message


def test_short_descriptions(tmp_path: Path) -> None:
    write_skill(tmp_path, "helper", "Helps with various tasks and makes work easier.")
    write_skill(tmp_path, "pdf", GOOD)
    (finding,) = only(lint([tmp_path]), "retrieval/short-description")
    assert "helper" in finding.path and "6 distinct terms" in finding.message


def test_a_description_in_another_script_is_short_only_for_bm25(tmp_path: Path) -> None:
    """A Chinese description of 90 characters read "4 distinct terms; too few for BM25 or
    an embedding": the embedding reads it whole. The finding says what BM25 cannot read."""
    write_skill(
        tmp_path,
        "code-review",
        "审查代码变更，找出缺陷、安全问题和可读性问题。当用户提交 PR 或 diff 并请求 review 时使用，"
        "也适用于检查 commit 的风格和测试覆盖率。",
    )
    (finding,) = only(lint([tmp_path]), "retrieval/short-description")
    assert "BM25 reads ASCII words only" in finding.message
    assert "embedding to match" not in finding.message


def test_keywords_that_can_never_match(tmp_path: Path) -> None:
    raw_skill(
        tmp_path,
        "ci-fixer",
        f"name: ci-fixer\ndescription: {GOOD}\n"
        "keywords: [gha, workflows, ci]\naliases: ['github ci', next.js, glass]",
    )
    findings = only(lint([tmp_path]), "retrieval/dead-keyword")
    assert [(f.message.split("'")[1], f.line) for f in findings] == [
        ("github ci", 5),
        ("next.js", 5),
    ]
    assert "tokenizes to 'github', 'ci'" in findings[0].message
    # 'workflows' is singularised on both sides (§2.5) and matches; 'glass' stays whole.


def test_keywords_that_match_the_same_word_are_info(tmp_path: Path) -> None:
    raw_skill(
        tmp_path,
        "plots",
        f"name: plots\ndescription: {GOOD}\nkeywords: [chart, charts, plot]",
    )
    (finding,) = only(lint([tmp_path]), "retrieval/double-keyword")
    assert finding.severity == INFO and finding.line == 4
    assert "'charts'" in finding.message and "'chart'" in finding.message


def test_near_duplicates_dense_and_lexical(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf-merger", GOOD)
    write_skill(tmp_path, "pdf-joiner", GOOD.replace("Merges", "Joins"))
    write_skill(tmp_path, "regex", "Writes regular expressions. Use when a pattern fails to match.")
    index = build_index([tmp_path], Config(model="bow"), assemble_models(BowEmbedder()))
    findings = only(lint([tmp_path], index=index), "retrieval/near-duplicate")
    assert sorted(f.path.split("/")[-2] for f in findings) == ["pdf-joiner", "pdf-merger"]
    # The dense cosine is the router's: the description and the body's opening (§9.13).
    assert "(dense cosine 0.84, BM25 cross-scores 0.74 / 0.74)" in findings[0].message
    # Raising the dense threshold leaves the BM25 cross-scores to find them.
    strict = only(lint([tmp_path], index=index, near_duplicate=0.999), "retrieval/near-duplicate")
    assert len(strict) == 2
    # Without a dense model: BM25 only, and said so.
    lexical = only(lint([tmp_path]), "retrieval/near-duplicate")
    assert [f.severity for f in lexical].count(INFO) == 1 and len(lexical) == 3


def test_distinct_descriptions_are_not_near_duplicates(tmp_path: Path) -> None:
    write_skill(tmp_path, "pdf-merger", GOOD)
    write_skill(tmp_path, "regex", "Writes regular expressions. Use when a pattern fails to match.")
    index = build_index([tmp_path], Config(model="bow"), assemble_models(BowEmbedder()))
    assert only(lint([tmp_path], index=index), "retrieval/near-duplicate") == []


def test_generic_terms(tmp_path: Path) -> None:
    shared = "Use when files, code or data need work."
    for number, topic in enumerate(("pdf", "csv", "sql", "css", "git", "yaml", "json")):
        unique = f"{topic}one {topic}two {topic}three"  # 3 rare terms of 8: not generic
        write_skill(tmp_path, f"skill-{number}", f"{shared} {unique}.")
    write_skill(tmp_path, "generic", shared)
    findings = only(lint([tmp_path]), "retrieval/generic-terms")
    assert [f.path.split("/")[-2] for f in findings] == ["generic"]
    assert "of the 8 skills" in findings[0].message
    assert findings[0].message.endswith("; none of them sets it apart")  # not "only none"
    # Below 8 skills document frequencies say nothing, so the rule stays quiet.
    (tmp_path / "skill-0" / "SKILL.md").unlink()
    assert only(lint([tmp_path]), "retrieval/generic-terms") == []


def test_listing_budget_overflow_names_the_tail(tmp_path: Path) -> None:
    for name in ("alpha", "beta", "gamma", "delta"):
        write_skill(tmp_path, name, GOOD)
    within = only(lint([tmp_path]), "claude-code/listing-budget")
    assert [f.severity for f in within] == [INFO] and "of a 8,000-character budget" in within[
        0
    ].message
    # Each entry is `- name: description` (~90 characters); 5,000 tokens give 200 characters.
    findings = lint([tmp_path], context_tokens=5_000)
    (summary,) = only(findings, "claude-code/listing-budget")
    assert summary.severity == WARNING and "over the 200-character budget" in summary.message
    assert "assume path order" in summary.message
    name_only = [f.path.split("/")[-2] for f in only(findings, "claude-code/name-only")]
    # Path order: alpha, beta, delta, gamma; alpha and beta keep their descriptions.
    assert name_only == ["delta", "gamma"]
    assert "2 of 4 skills would be listed by name only: delta, gamma." in summary.message


def test_the_listing_budget_finding_names_the_first_few_past_it(tmp_path: Path) -> None:
    """The one finding names the first few skills past the budget and counts the rest:
    each has a name-only finding of its own, and at 26,000 skills the list is that long."""
    for number in range(12):
        write_skill(tmp_path, f"skill-{number:02}", GOOD)
    findings = lint([tmp_path], context_tokens=5_000)
    (summary,) = only(findings, "claude-code/listing-budget")
    past = [f.path.split("/")[-2] for f in only(findings, "claude-code/name-only")]
    assert len(past) > NAMES_SHOWN + 1
    assert (
        f"by name only, the first {NAMES_SHOWN}: {', '.join(past[:NAMES_SHOWN])}, and "
        f"{len(past) - NAMES_SHOWN} more." in summary.message
    )
    assert past[NAMES_SHOWN] not in summary.message


def test_listing_skips_skills_the_model_cannot_invoke(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        write_skill(tmp_path, name, GOOD)
    raw_skill(
        tmp_path, "manual", f"name: manual\ndescription: {GOOD}\ndisable-model-invocation: true"
    )
    names = [
        f.path.split("/")[-2]
        for f in only(lint([tmp_path], context_tokens=5_000), "claude-code/name-only")
    ]
    assert "manual" not in names


def test_entries_over_1536_characters_are_truncated(tmp_path: Path) -> None:
    description = "Use when merging PDF pages. " + "x" * (DESCRIPTION_MAX - 40)
    extra = "y" * (LISTING_ENTRY_MAX - len(description) + 10)
    raw_skill(tmp_path, "long", f"name: long\ndescription: {description}\nwhen_to_use: {extra}")
    raw_skill(tmp_path, "short", f"name: short\ndescription: {description}\nwhen_to_use: short")
    (finding,) = only(lint([tmp_path], claude_code=True), "claude-code/truncated")
    assert "long/SKILL.md" in finding.path and "the last 11 never reach" in finding.message


def test_findings_are_sorted_and_serialisable(tmp_path: Path) -> None:
    raw_skill(tmp_path, "b", "name: wrong\ndescription: Vague.")
    raw_skill(tmp_path, "a", "name: A\ndescription: Vague.")
    findings = lint([tmp_path])
    keys = [(f.path, f.line or 0, f.rule, f.message) for f in findings]
    assert keys == sorted(keys)
    assert findings[0].to_dict().keys() == {"rule", "severity", "path", "message", "line"}
    assert str(findings[0]).startswith(findings[0].path)


def test_generic_name_tokens_say_what_the_boost_does_under_the_active_config(
    tmp_path: Path,
) -> None:
    """§1.4 makes `before-you-build`'s name tokens keywords: "you" matches any prompt."""
    write_skill(tmp_path, "before-you-build", "A checklist to run ahead of a new build.")
    write_skill(tmp_path, "pdf-merger", "Merge PDF files into one document.")

    def generic(config: Config) -> dict[str, tuple[str, str]]:
        found = lint([tmp_path], config=config)
        return {
            f.message.split("'")[1]: (f.severity, f.message)
            for f in found
            if f.rule == "retrieval/generic-name-token"
        }

    reference = generic(Config(preset="reference"))  # no keyword guard at all
    assert set(reference) == {"before", "you"}
    severity, message = reference["you"]
    assert severity == "warning" and "is a stopword" in message
    assert 'adds keyword_boost 0.15 to any prompt containing "you"' in message
    assert "preset 'reference' has no keyword guard" in message
    default = generic(Config(preset="calibrated"))  # a keyword boost needs a cosine floor
    severity, message = default["you"]
    assert severity == "warning" and "preset 'calibrated'" in message
    assert "whose cosine with this skill is at least keyword_min_cosine" in message
    guarded = generic(Config(preset="calibrated", keyword_generic_guard=True))
    severity, message = guarded["you"]
    assert severity == "info" and "earns nothing under the active config" in message
    floored = generic(Config(preset="calibrated", keyword_min_cosine=0.3, keyword_boost=0.2))
    assert "adds keyword_boost 0.2" in floored["before"][1]
    assert "keyword_min_cosine 0.3" in floored["before"][1]
    assert reference["you"][1].endswith("a name of telling words avoids it")


def test_a_keyword_that_tokenizes_to_nothing_is_dead_not_also_generic(tmp_path: Path) -> None:
    """'a' can never match (it tokenizes to nothing), so it is not also said to match every
    prompt with an "a" in it; 'you' does match under the reference's cascade."""
    root = tmp_path / "skills"
    (root / "poster").mkdir(parents=True)
    (root / "poster" / "SKILL.md").write_text(
        "---\nname: poster\ndescription: Draw posters for events.\nkeywords: [a, you]\n---\nb\n",
        encoding="utf-8",
    )
    found = lint([root], config=Config(preset="reference"))
    about = {rule: [f.message for f in found if f.rule == rule] for rule in {f.rule for f in found}}
    assert any("'a' can never match" in m for m in about["retrieval/dead-keyword"])
    generic = about["retrieval/generic-name-token"]
    assert len(generic) == 1 and generic[0].startswith("keyword 'you' is a stopword")
    assert generic[0].endswith("keywords of telling words avoid it")


def test_near_duplicates_capped_per_skill(tmp_path: Path) -> None:
    """A family of 7 variants is 21 pairs: each skill names its 3 closest and counts the
    other 3 in one info finding, instead of 6 warnings (42 findings in all before)."""
    base = "Merges splits rotates stamps and crops PDF files. Use when pages need work."
    for number, word in enumerate(("quickly", "safely", "locally", "gently", "fully", "twice")):
        write_skill(tmp_path, f"pdf-{number}", base.replace("crops", f"crops {word}"))
    write_skill(tmp_path, "pdf-plain", base)
    write_skill(tmp_path, "regex", "Writes regular expressions. Use when a pattern fails to match.")
    index = build_index([tmp_path], Config(model="bow"), assemble_models(BowEmbedder()))
    findings = only(lint([tmp_path], index=index), "retrieval/near-duplicate")
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path.split("/")[-2], []).append(finding)
    assert sorted(by_path) == [f"pdf-{n}" for n in range(6)] + ["pdf-plain"]  # all flagged
    for skill, own in by_path.items():
        assert [f.severity for f in own].count(WARNING) == 3, (skill, own)
        (summary,) = [f for f in own if f.severity == INFO]
        assert f"{skill} has 3 more near-duplicates beyond the 3 closest" in summary.message
    # The 3 named are the closest: pdf-plain's cosines to each variant, highest first.
    assert index.vectors is not None
    ids = [s.id for s in index.skills]
    plain = ids.index("pdf-plain")
    others = [k for k, skill_id in enumerate(ids) if k != plain and skill_id != "regex"]
    cosines = {ids[k]: float(index.vectors[plain] @ index.vectors[k]) for k in others}
    named = set()
    for finding in by_path["pdf-plain"]:
        if finding.severity == WARNING:
            first, rest = finding.message.split(" and ", 1)
            named.add(rest.split(" have ")[0] if first == "pdf-plain" else first)
    assert len(named) == 3
    assert min(cosines[i] for i in named) >= max(c for i, c in cosines.items() if i not in named)
    # Every pair on request.
    every = only(
        lint([tmp_path], index=index, near_duplicate_shown=None), "retrieval/near-duplicate"
    )
    assert len(every) == 42 and {f.severity for f in every} == {WARNING}


def test_every_rule_a_finding_names_is_one_lint_ignore_knows(tmp_path: Path) -> None:
    """`lint --ignore` checks names against RULES, so each rule a finding can carry is in
    it: those lint names itself and those discovery gives a file it reads (the sample
    library has a file of invalid YAML; a frontmatter never closed gives the other)."""
    import re

    from explorer.engine.author import lint as lint_module
    from explorer.engine.author.lint import RULES, unknown_rules
    from explorer.engine.discovery.skills import INVALID_YAML, READING_RULE

    source = Path(lint_module.__file__).read_text(encoding="utf-8")
    assert set(re.findall(r'"([a-z-]+/[a-z0-9-]+)"', source)) <= set(RULES)
    unclosed = tmp_path / "unclosed" / "SKILL.md"  # read to its end by the reference
    unclosed.parent.mkdir()
    unclosed.write_text(f"---\nname: unclosed\ndescription: {GOOD}\n", encoding="utf-8")
    found = {f.rule for f in lint([SAMPLE_SKILLS, tmp_path])}
    assert {INVALID_YAML, READING_RULE} <= found <= set(RULES)
    assert unknown_rules(["spec", "claude-code/name-only", "name-only", "specs"]) == [
        "name-only",
        "specs",
    ]
