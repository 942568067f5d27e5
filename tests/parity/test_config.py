"""Parity of defaults and model choice with the reference router (spec §4, §5.2, §6).

Behaviour read from the reference's source (skill-inject 0.9.0), cited per case; it is
AGPL, so nothing here is copied from it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from explorer.cli.commands.hook import run_hook
from explorer.engine.base.config import Config, load_config
from explorer.engine.discovery.roots import resolve_roots
from explorer.engine.discovery.skills import Skill, parse_skill
from explorer.engine.index.snapshot import Index, build_index
from explorer.engine.inference.embed import BowEmbedder
from explorer.engine.inference.models import CALIBRATION, assemble_models, load_models
from explorer.engine.route.inject import (
    FILE_EVIDENCE,
    REFERENCE_BODY_HEADER,
    REFERENCE_DIRECTIVE_HEADER,
    VERB_HARD,
    VERB_HARD_HIGH,
    VERB_SOFT,
    Pick,
)
from explorer.engine.route.inject import build as build_injection
from explorer.engine.route.presets import resolve
from tests.conftest import write_skill
from tests.parity.helpers import route


def test_lexical_margin_defaults_to_zero(bow_index) -> None:
    """reference: src/config.rs base(): lexical_min 0.0 (off) and lexical_margin 0.0; the
    preset reference resolves the unset fields to exactly that."""
    tuning = resolve(Config(preset="reference"), bow_index.models.status, len(bow_index))
    assert (tuning.lexical_min, tuning.lexical_margin) == (0.0, 0.0)


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-q"])
def test_minilm_by_its_reference_name_keeps_the_reference_calibration(name: str) -> None:
    """reference: src/embed/fast.rs gives every dense model it knows (bge-small, bge-base,
    all-MiniLM-L6-v2 and its quantised -q) min_similarity 0.64 and score_margin 0.12."""
    calibration = CALIBRATION[name]
    assert (calibration.min_similarity, calibration.score_margin) == (0.64, 0.12)


def test_the_packaged_minilm_keeps_its_own_measured_knee() -> None:
    """Ours, not the reference's: the packaged int8 MiniLM has its own measured knee
    (docs/calibration.md)."""
    calibration = CALIBRATION["minilm"]
    assert (calibration.min_similarity, calibration.score_margin) == (0.52, 0.12)


def test_an_unknown_model_id_falls_back_to_bag_of_words_with_a_warning(tmp_path: Path) -> None:
    """reference: src/embed/mod.rs build() uses the bag-of-words embedder for any model id
    it does not recognise (with the bag-of-words calibration, 0.30 / 0.15)."""
    models = load_models(Config(model="e5-large-v2", reranker="off"))
    assert isinstance(models.embedder, BowEmbedder)
    assert models.status.dense == "bow"
    calibration = models.status.calibration
    assert (calibration.min_similarity, calibration.score_margin) == (0.30, 0.15)
    assert any(
        "e5-large-v2" in warning and "bag-of-words" in warning for warning in models.warnings
    )


def test_a_known_model_that_is_missing_still_says_where_it_looked(tmp_path: Path) -> None:
    """Differs on purpose: the reference would download bge-small; we never reach the
    network, so a known model that is not on disk turns the cosine channel off instead."""
    models = load_models(Config(model="bge-small-en-v1.5", ski_models_dir=str(tmp_path)))
    assert models.embedder is None and str(tmp_path) in (models.status.dense_error or "")


# injection options (reference: src/inject.rs, src/hook.rs) -------------------------------

PDF = "Merge split and extract tables from pdf files and documents."
XLSX = "Spreadsheet formulas clean csv data and workbook report tables."


def _inject_index(tmp_path: Path) -> Index:
    root = tmp_path / "skills"
    write_skill(root, "pdf", PDF, body="# PDF\n\nUse pypdf to merge.")
    write_skill(root, "xlsx", XLSX, body="# XLSX\n\nUse openpyxl.")
    return build_index([root], Config(), assemble_models(BowEmbedder()))


BOTH = "extract tables from pdf files and csv data workbook report.pdf"


def test_the_reference_format_lays_out_directive_blocks(tmp_path: Path) -> None:
    """reference: src/inject.rs: header, blank line, one `- SkillRecommendation(`name`):
    description — verb` block per pick, blocks separated by a blank line; a fired file
    channel adds `[matched because …]` (src/hook.rs evidence)."""
    index = _inject_index(tmp_path)
    config = Config(inject_format="reference", min_similarity=0.1, score_margin=1.0)
    decision = route(BOTH, index, config)
    assert decision.injected_ids == ("pdf", "xlsx")
    header, first, second = decision.text.split("\n\n")
    assert header == REFERENCE_DIRECTIVE_HEADER
    assert first == (
        f"- SkillRecommendation(`pdf`): {PDF} [matched because {FILE_EVIDENCE}] — {VERB_SOFT}"
    )
    assert second == f"- SkillRecommendation(`xlsx`): {XLSX} — {VERB_SOFT}"


@pytest.mark.parametrize(
    ("strength", "confidence", "verb"),
    [
        ("auto", 0.95, VERB_SOFT),  # auto is soft for Claude Code (src/hook.rs)
        ("soft", 0.40, VERB_SOFT),  # soft never weakens with the band
        ("hard", 0.85, VERB_HARD_HIGH),
        ("hard", 0.70, VERB_HARD),
    ],
)
def test_directive_strength_sets_the_verb(strength: str, confidence: float, verb: str) -> None:
    """reference: src/inject.rs directive_block: Hard + High band -> the imperative,
    Hard otherwise -> the firm verb, Soft -> one firm verb at every band."""
    skill = parse_skill("/v/pdf/SKILL.md", f"---\nname: pdf\ndescription: {PDF}\n---\n".encode())
    assert isinstance(skill, Skill)
    built = build_injection(
        [Pick(0, skill, confidence, body=False)],
        Config(inject_format="reference", directive_strength=strength),
    )
    assert built.text.endswith(f" — {verb}")


def test_inject_mode_body_injects_every_body(tmp_path: Path) -> None:
    """reference: src/hook.rs inject_mode: an explicit `body` inlines every pick as a
    `<skill name="…">` block under the body header."""
    index = _inject_index(tmp_path)
    config = Config(
        inject_format="reference", inject_mode="body", min_similarity=0.1, score_margin=1.0
    )
    decision = route(BOTH, index, config)
    assert [item.mode for item in decision.injected] == ["body", "body"]
    assert decision.text == (
        f"{REFERENCE_BODY_HEADER}\n\n"
        '<skill name="pdf">\n# PDF\n\nUse pypdf to merge.\n</skill>\n\n'
        '<skill name="xlsx">\n# XLSX\n\nUse openpyxl.\n</skill>'
    )
    ours = route(BOTH, index, config.replace(inject_format="explorer"))
    assert "Use pypdf to merge." in ours.text and "Use openpyxl." in ours.text


def test_the_reference_budget_counts_bytes_and_stops_at_the_first_overflow() -> None:
    """reference: src/inject.rs build: a block is added while `used + block.len()` (bytes)
    fits char_budget; the first block always goes in; the loop stops at the first that
    does not fit, so a smaller later block is not tried."""

    def skill(name: str, description: str) -> Skill:
        text = f"---\nname: {name}\ndescription: {description}\n---\n"
        parsed = parse_skill(f"/v/{name}/SKILL.md", text.encode())
        assert isinstance(parsed, Skill)
        return parsed

    big = skill("big", "é" * 100)  # 200 bytes of description
    mid = skill("mid", "m" * 150)
    small = skill("small", "s")
    picks = [Pick(0, big, 0.9, False), Pick(1, mid, 0.9, False), Pick(2, small, 0.9, False)]
    built = build_injection(picks, Config(inject_format="reference", char_budget=250))
    assert [pick.skill.id for pick in built.kept] == ["big"]
    assert [pick.skill.id for pick in built.dropped] == ["mid", "small"]
    lone = build_injection(picks[:1], Config(inject_format="reference", char_budget=10))
    assert [pick.skill.id for pick in lone.kept] == ["big"]


# the reference's config.toml and roots (reference: src/config.rs, src/paths.rs) -------


@pytest.fixture
def ski_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.chdir(tmp_path)
    (xdg / "ski").mkdir(parents=True)
    return xdg / "ski" / "config.toml"


def test_the_reference_config_is_read_by_default(ski_home: Path) -> None:
    """reference: src/paths.rs config_path = $XDG_CONFIG_HOME/ski/config.toml."""
    ski_home.write_text("max_skills = 4\nrerank_min = -1.1\ndeny = ['noisy']\n")
    loaded = load_config()
    assert (loaded.config.max_skills, loaded.config.rerank_min) == (4, -1.1)
    assert loaded.config.deny == ["noisy"] and loaded.files == (str(ski_home),)
    assert load_config(use_ski_config=False).config.max_skills == 2


@pytest.mark.parametrize("text", ["this is not = = toml", 'max_skills = "nope"\nrerank_min = 1.0'])
def test_a_broken_reference_config_is_ignored_whole_with_a_warning(
    ski_home: Path, text: str
) -> None:
    """reference: src/config.rs FileConfig::load: a file that does not parse (bad TOML, or
    a value of the wrong type) is ignored as a whole, with a warning on stderr."""
    ski_home.write_text(text)
    loaded = load_config()
    assert loaded.config == Config()
    (warning,) = loaded.warnings
    assert str(ski_home) in warning and "ignored" in warning


def test_a_bad_inject_mode_keeps_the_default_and_the_rest_applies(ski_home: Path) -> None:
    """reference: src/config.rs: an unknown inject_mode / directive_strength string is
    ignored field by field; `directive_strength = "HARD"` is read case-insensitively."""
    ski_home.write_text('inject_mode = "nonsense"\ndirective_strength = "HARD"\nmax_skills = 3\n')
    loaded = load_config()
    assert (loaded.config.inject_mode, loaded.config.directive_strength) == ("directive", "hard")
    assert loaded.config.max_skills == 3
    assert any("inject_mode" in warning for warning in loaded.warnings)


def test_reference_only_keys_are_understood_and_unknown_ones_ignored(ski_home: Path) -> None:
    """reference: src/config.rs reads context_depth and telemetry (both ours too, §10),
    context_weight and vague_lo/hi (a dense blend this engine has no part of) and ignores
    unknown keys."""
    ski_home.write_text(
        "context_depth = 2\ntelemetry = true\ncontext_weight = 0.2\nbogus_key = 1\n"
        "project_boost = 0.0\n"
    )
    loaded = load_config()
    assert loaded.warnings == ()
    assert loaded.config.project_boost == 0.0
    assert (loaded.config.context_depth, loaded.config.telemetry) == (2, True)
    noted = " ".join(loaded.notes)
    assert "context_weight" in noted and "bogus_key" not in noted


def test_roots_follow_the_reference_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reference: src/config.rs host_roots: SKI_ROOTS (colon-separated) wins over the
    file's roots; with nothing set, ~/.claude/skills, ~/.claude/plugins, ./.claude/skills."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / ".claude" / "plugins").mkdir(parents=True)
    (tmp_path / "proj" / ".claude" / "skills").mkdir(parents=True)
    found = resolve_roots([], [], cwd=tmp_path / "proj")
    assert found.source == "defaults"
    assert found.roots == (
        str(home / ".claude" / "plugins"),
        str(tmp_path / "proj" / ".claude" / "skills"),
    )
    assert found.looked[0] == str(home / ".claude" / "skills")
    assert resolve_roots([], ["/from/config"]).roots == ("/from/config",)
    monkeypatch.setenv("SKI_ROOTS", "/a::/b")
    assert resolve_roots([], ["/from/config"]).roots == ("/a", "/b")
    monkeypatch.setenv("SKILL_EXPLORER_ROOTS", "/ours")
    assert resolve_roots([], []).roots == ("/ours",)
    assert resolve_roots(["/cli"], []).roots == ("/cli",)


def test_the_hook_keeps_routing_past_a_broken_reference_config(
    ski_home: Path, tmp_path: Path
) -> None:
    ski_home.write_text("max_skills = [")
    root = tmp_path / "skills"
    write_skill(root, "pdf", PDF)
    out, err = io.StringIO(), io.StringIO()
    payload = json.dumps({"prompt": PDF.lower()})
    run_hook(io.StringIO(payload), out, err, cli_roots=[str(root)], assignments=["model=bow"])
    assert "pdf" in out.getvalue()
    assert str(ski_home) in err.getvalue()
