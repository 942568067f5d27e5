"""Parity of the hybrid score's channels with the reference router (spec §3.4-§3.5).

Behaviour read from the reference's source (skill-inject 0.9.0), cited per case; it is
AGPL, so nothing here is copied from it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.cli.commands.hook import run_hook
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import assemble_models
from explorer.engine.route.pipeline import file_families
from explorer.engine.route.project import code_terms, manifest_terms, skills_for_terms
from tests.conftest import write_skill
from tests.parity.helpers import route


@pytest.mark.parametrize(
    ("prompt", "families"),
    [
        ("merge report.pdf", ["pdf"]),
        ("a.key.pdf please", ["pdf"]),  # the last dot segment decides
        ("data.csv.gz is huge", []),  # a gzip file, not a spreadsheet
        ("look at budget.xlsx, then stop.", ["xlsx"]),  # ',' splits; '.' is trimmed
        ("is it sales.XLSX?", ["xlsx"]),  # trailing '?' trimmed, extension lower-cased
        ("open (deck.pptx) and 'memo.docx'", ["pptx", "docx"]),  # quotes and brackets split
        ("see `notes.pages`", ["docx"]),  # backticks split
        ("the .pdf format", []),  # nothing before the dot: not a file
        ("a pdf about pdfs", []),
        ("keynote talk.key", ["pptx"]),
        ("budget.ods and memo.rtf", ["xlsx", "docx"]),
        ("report.pdf] in brackets", []),  # ']' is not a separator: the extension is "pdf]"
        ("v1.2/report.pdf", ["pdf"]),  # a path: the last dot decides
    ],
)
def test_file_extensions_follow_the_reference(prompt: str, families: list[str]) -> None:
    """reference: src/context.rs file_tokens: split at whitespace and `"'()`,`, trim
    trailing `.:;!?`, take what follows the last dot (lower-cased) when something precedes
    it; ext_skill maps pdf / xlsx xls xlsm csv tsv ods numbers / docx doc rtf odt pages /
    pptx ppt odp key."""
    assert file_families(prompt) == families


def test_a_file_named_in_a_recent_turn_counts(tmp_path: Path) -> None:
    """reference: src/hook.rs scans the recent turns and the prompt together for files."""
    assert file_families("clean it up", context=["attached sales.xlsx"]) == ["xlsx"]
    root = tmp_path / "skills"
    write_skill(root, "xlsx", "Spreadsheet formulas and workbook data.")
    write_skill(root, "pdf", "Merge pdf files.")
    index = build_index([root], Config(preset="reference"), assemble_models(BowEmbedder()))
    decision = route("clean it up", index, context=["attached sales.xlsx"])
    assert decision.row("xlsx").file == pytest.approx(0.3)
    assert decision.row("pdf").file == 0.0


# §3.5 the project channel ---------------------------------------------------------------


def test_manifests_in_the_working_directory_and_its_ancestors(tmp_path: Path) -> None:
    """reference: src/context.rs project_terms: each known manifest in cwd and up to five
    ancestors adds its terms, most specific first, de-duplicated."""
    (tmp_path / "uv.lock").write_text("version = 1\n")
    nested = tmp_path / "src" / "inner"
    nested.mkdir(parents=True)
    assert manifest_terms(tmp_path) == ["uv", "python"]
    assert manifest_terms(nested) == ["uv", "python"]
    (nested / "Cargo.toml").write_text("[package]\n")
    assert manifest_terms(nested) == ["rust", "cargo", "uv", "python"]
    assert manifest_terms(None) == [] and manifest_terms("") == []
    assert manifest_terms(tmp_path / "no" / "such" / "dir") == ["uv", "python"]


def test_the_walk_stops_after_six_directories(tmp_path: Path) -> None:
    """reference: src/context.rs PROJECT_WALK_LEVELS = 6 (cwd and five ancestors)."""
    (tmp_path / "go.mod").write_text("module x\n")
    five_down = tmp_path.joinpath("a", "b", "c", "d", "e")
    five_down.mkdir(parents=True)
    assert manifest_terms(five_down) == ["go", "golang"]
    assert manifest_terms(five_down / "f") == []


def test_code_files_named_in_the_conversation_add_terms() -> None:
    """reference: src/context.rs code_terms: code-file extensions map to ecosystems."""
    assert code_terms(["py", "rs", "pdf", "tsx"]) == ["python", "rust", "typescript"]


def _project_index(tmp_path: Path) -> Index:
    root = tmp_path / "skills"
    write_skill(root, "uv-development", "Bootstrap and manage projects and dependencies.")
    (root / "uv-development" / "SKILL.md").write_text(
        "---\nname: uv-development\n"
        "description: Bootstrap and manage projects and dependencies.\n"
        "keywords: [uv, python]\n---\nBody.\n"
    )
    write_skill(root, "rusty-style", "Idiomatic Rust patterns and error handling.")
    write_skill(root, "git-attribution", "Credit AI assistance in commits.")
    return build_index([root], Config(preset="reference"), assemble_models(BowEmbedder()))


def test_terms_resolve_against_keywords_and_description(tmp_path: Path) -> None:
    """reference: src/context.rs skills_for_terms: a skill matches the first term found
    among its keywords' tokens or its description's match tokens."""
    index = _project_index(tmp_path)
    matched = skills_for_terms(["uv", "python", "rust"], index.ecosystem_postings)
    by_id = {index.skills[position].id: term for position, term in matched.items()}
    assert by_id == {"uv-development": "uv", "rusty-style": "rust"}


PROMPT = "add that dependency to the projects"


def test_the_boost_applies_within_the_slack_below_the_floor(tmp_path: Path) -> None:
    """reference: src/rank.rs: project_boost (0.15) when the skill's own cosine is at least
    min_similarity - 0.06 (PROJECT_GATE_SLACK)."""
    index = _project_index(tmp_path)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "uv.lock").write_text("")
    cosine = route(PROMPT, index).row("uv-development").cosine
    near = Config(preset="reference", min_similarity=cosine + 0.05)
    lifted = route(PROMPT, index, near, cwd=tmp_path / "work")
    assert lifted.row("uv-development").project == pytest.approx(0.15)
    assert lifted.row("uv-development").score == pytest.approx(
        lifted.row("uv-development").cosine + 0.15 + lifted.row("uv-development").keyword
    )
    assert lifted.injected_ids == ("uv-development",)
    assert lifted.project_terms == {"uv-development": "uv"}
    far = Config(preset="reference", min_similarity=cosine + 0.07)
    assert route(PROMPT, index, far, cwd=tmp_path / "work").row("uv-development").project == 0.0
    assert route(PROMPT, index, near).row("uv-development").project == 0.0  # no cwd
    off = near.replace(project_boost=0.0)
    assert route(PROMPT, index, off, cwd=tmp_path / "work").row("uv-development").project == 0.0


def test_a_code_file_in_the_prompt_feeds_the_project_channel(tmp_path: Path) -> None:
    index = _project_index(tmp_path)
    cosine = route("tidy handler.rs patterns", index).row("rusty-style").cosine
    decision = route(
        "tidy handler.rs patterns", index, Config(preset="reference", min_similarity=cosine)
    )
    assert decision.row("rusty-style").project == pytest.approx(0.15)
    assert (
        Config(preset="reference").project_boost == 0.15
    )  # on by default, as in the reference (src/config.rs)


def test_the_hook_reads_cwd_from_stdin(tmp_path: Path) -> None:
    """reference: src/hook.rs takes `cwd` from the hook event for the project channel."""
    _project_index(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "uv.lock").write_text("")
    index = _project_index(tmp_path)
    cosine = route(PROMPT, index).row("uv-development").cosine
    pin = [f"min_similarity={cosine + 0.05}", "model=bow", "reranker=off", "preset=reference"]

    def hook(cwd: str | None) -> str:
        payload = {"prompt": PROMPT, "session_id": "s", **({"cwd": cwd} if cwd else {})}
        out = io.StringIO()
        run_hook(
            io.StringIO(json.dumps(payload)),
            out,
            io.StringIO(),
            cli_roots=[str(tmp_path / "skills")],
            assignments=pin,
            cache_dir=str(tmp_path / "cache"),
        )
        return out.getvalue()

    assert "uv-development" in hook(str(work))
    assert hook(None) == ""


def test_route_and_why_take_cwd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`route`/`why --cwd DIR` give the project channel the directory the hook gets."""
    index = _project_index(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "uv.lock").write_text("")
    cosine = route(PROMPT, index).row("uv-development").cosine
    common = ["--skills", str(tmp_path / "skills"), "--set", "model=bow", "--no-ski-config"]
    common += ["--set", "preset=reference"]
    common += ["--set", f"min_similarity={cosine + 0.05}", "--cache-dir", str(tmp_path / "c")]
    assert main(["route", PROMPT, "--json", "--cwd", str(work), *common]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [item["id"] for item in data["injected"]] == ["uv-development"]
    assert data["project_terms"] == {"uv-development": "uv"}
    assert main(["route", PROMPT, "--json", *common]) == 0
    assert json.loads(capsys.readouterr().out)["injected"] == []
    assert main(["why", PROMPT, "--cwd", str(work), *common]) == 0
    assert "proj" in capsys.readouterr().out
