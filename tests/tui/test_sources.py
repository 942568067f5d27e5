"""F2 says where each value comes from: the preset, a config file layer, the model's
calibration, the reranker's, a `--set`, or an edit made there."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from explorer.engine.base.config import FIELD_NAMES, Config, LoadedConfig, load_config
from explorer.engine.inference.models import CALIBRATION, assemble_models
from explorer.engine.route.relevance import load_relevance_model
from explorer.tui.keys import HELP_NOTES, help_text
from explorer.tui.provenance import field_source
from explorer.tui.screens import FieldList, ThresholdEditor
from explorer.tui.screens.thresholds import saved_text
from explorer.tui.state import ConfigLayers
from tests.tui.test_app import SIZE, enter, library, make_app, page_text
from tests.tui.test_typing_and_saving import _footer_keys

__all__ = ["library"]  # the fixture, shared with test_app


@pytest.fixture
def layered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Config, dict[str, str]]:
    """A project file sets min_similarity; --set sets max_skills; the rest is not set."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user config
    (tmp_path / "skill-explorer.toml").write_text("[routing]\nmin_similarity = 0.4\n")
    monkeypatch.chdir(tmp_path)
    loaded = load_config(assignments=["max_skills=3"], use_ski_config=False)
    return loaded.config, loaded.sources


def test_every_field_says_where_its_value_comes_from(
    layered: tuple[Config, dict[str, str]],
) -> None:
    config, sources = layered
    config = config.replace(preset="calibrated")  # the preset whose values are per model
    status = assemble_models(None).status  # no dense model: bag of words' knee
    label = {
        name: field_source(name, config, baseline=config, sources=sources, status=status).label
        for name in FIELD_NAMES
    }
    assert label["min_similarity"] == "./skill-explorer.toml"
    assert label["max_skills"] == "--set"
    # lexical_min was "(the model's)": it is the preset's 4.0.
    assert label["lexical_min"] == "preset 'calibrated'"
    assert field_source("lexical_min", config, status=status).value == "4"
    assert field_source("lexical_min", config.replace(preset="reference")).value == "0"
    # cosine-valued: the preset's value for the dense model in force, said whose (§9.7.1)
    assert label["keyword_min_cosine"] == "preset 'calibrated' (off: no dense model)"
    assert field_source("keyword_min_cosine", config, status=status).value == "0"
    minilm = dataclasses.replace(status, dense="minilm", calibration=CALIBRATION["minilm"])
    kept = field_source("keyword_min_cosine", config, status=minilm, skills=200)
    assert (kept.value, kept.label) == ("0.6", "preset 'calibrated' (MiniLM's)")
    bow = dataclasses.replace(status, dense="bow", calibration=CALIBRATION["bow"])
    scaled = field_source("lexical_min_cosine", config, status=bow, skills=200)
    assert scaled.label == "preset 'calibrated' (scaled from MiniLM's)"
    assert scaled.value == "0.136364" and "× 0.682" in scaled.note
    assert label["score_margin"].startswith("the model's calibration")
    assert label["rerank_min"].startswith("the reranker's")
    assert label["high_conf"] == "default"
    # None: the relevance model's own threshold, and the note says when the model does not
    # decide (here: no dense model, so the calibrated gates do).
    # The threshold is the one for the library's size.
    learned_config = config.replace(preset="learned")
    shipped = load_relevance_model()
    for skills in (8, 2018):
        learned = field_source("relevance_threshold", learned_config, status=status, skills=skills)
        assert (learned.value, learned.label) == (
            f"{shipped.thresholds_for(skills)[0]:g}",
            f"the model's for {skills:,} skills ({shipped.name})",
        )
        assert learned.note
    assert not any("(the model's)" in text for text in label.values())
    edited = config.replace(lexical_min=0.0)
    assert field_source("lexical_min", edited, baseline=config).label == "edited here"
    assert field_source("lexical_min", edited, baseline=config).value == "0"


@pytest.mark.slow  # test_editing_a_threshold_changes_the_decision keeps F2 in the default run
async def test_the_f2_list_shows_the_source_of_each_value_and_ctrl_s_saves_like_f4(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F2's list says where each value comes from. Then ctrl+s in the editor saves, as f4
    does (its footer says both keys save); on the main screen ctrl+s stays the screenshot,
    as F1 says. One app: the F2 editor (every config field) is the slow part to open."""
    monkeypatch.chdir(tmp_path)  # the editor writes ./skill-explorer.toml; a screenshot, *.svg
    layers = ConfigLayers(LoadedConfig(Config(), {"min_similarity": "--set"}, (), ()))
    app = make_app(library, tmp_path, layers=layers)
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        listing = editor.query_one(FieldList)

        def line(name: str) -> str:
            index = FIELD_NAMES.index(name)
            listing.cursor = index
            listing.scroll_to(y=index, animate=False, immediate=True)
            return "".join(s.text for s in listing.render_line(index - listing.scroll_offset.y))

        # CONFIG: preset "reference", min_similarity 0.3 (from --set, as the app was told)
        assert "--set" in line("min_similarity") and "0.3" in line("min_similarity")
        assert "preset 'reference'" in line("lexical_min")
        assert "(the model's)" not in line("lexical_min")
        assert "the model's calibration (bow)" in line("score_margin")
        # At 120 columns a source of up to 43 cells is whole: the type note gives way.
        labels = {name: editor.source(name).label for name in FIELD_NAMES}
        assert any(29 < len(label) <= 43 for label in labels.values())
        cut = [(name, line(name)) for name, label in labels.items() if label not in line(name)]
        assert all(len(labels[name]) > 43 for name, _ in cut), cut
        editor.edit("lexical_min", "5")
        await pilot.pause()
        assert "edited here" in line("lexical_min")
        # A refused text shows beside the value still in force (it read "edited here").
        editor.edit("lexical_min", "5x")
        await pilot.pause()
        assert "refused; still 5.0" in line("lexical_min")
        editor.edit("lexical_min", "5")
        await pilot.pause()
        # A wide terminal shows every source whole, the type note still beside it.
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        longest = max(FIELD_NAMES, key=lambda name: len(editor.source(name).label))
        assert len(editor.source(longest).label) > 31  # wider than the narrowest column
        assert f"{editor.source(longest).label}  {editor.note(longest)}" in line(longest)
        await pilot.resize_terminal(*SIZE)
        await pilot.pause()

        editor.edit("max_skills", "3")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = (tmp_path / "skill-explorer.toml").read_text(encoding="utf-8")
        assert "max_skills = 3" in saved
        # Not trusted (the test's config directory trusts nothing): the notice says the
        # hook reads the file only once it is.
        notices = [notification.message for notification in app._notifications]
        assert any(n.endswith("the hook once you run `skill-explorer trust` here") for n in notices)
        # The save made the project file: the status bar's layers name it at once.
        assert app.state.layers.text == "config: defaults < ./skill-explorer.toml < --set"
        assert list(tmp_path.glob("*.svg")) == []
        assert "f4/^s" in _footer_keys(editor)  # the footer says both keys save
        # On the main screen ctrl+s stays the screenshot, as F1 says.
        await pilot.press("escape")
        await pilot.press("ctrl+s")
        await pilot.pause()
        (shot,) = tmp_path.glob("*.svg")  # named as the other exports are
        assert shot.name.startswith("skill-explorer-screenshot-") and "<svg" in shot.read_text()
        assert "f4 or ctrl+s saves" in page_text(help_text(app, HELP_NOTES))


async def test_a_field_cleared_in_f2_takes_the_layers_under_the_file_and_leaves_it(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's config says max_skills 3, the project file 4. Cleared in F2, max_skills
    is 3 at once (not the built-in 2) and the editor says where that comes from; saving
    takes the line out of the project file, every other byte kept, rather than pinning
    today's default in it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "skill-explorer" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("max_skills = 3\n", encoding="utf-8")
    project = tmp_path / "skill-explorer.toml"
    project.write_text("# ours\nmax_skills = 4   # four\nclear_gap = 0.3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    loaded = load_config(
        assignments=["model=bow", "reranker=off", "preset=reference"], use_ski_config=False
    )
    below = load_config(
        assignments=["model=bow", "reranker=off", "preset=reference"],
        use_ski_config=False,
        project=False,
    )
    layers = ConfigLayers(loaded, below)
    app = make_app(library, tmp_path, layers=layers)
    app.state.config = app.state.baseline = loaded.config
    async with app.run_test(size=SIZE) as pilot:
        await enter(pilot, app, "merge pdf")
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        assert app.config.max_skills == 4
        editor.edit("max_skills", "")
        await pilot.pause()
        assert app.config.max_skills == 3
        assert editor.placeholder("max_skills") == "blank = xdg/skill-explorer/config.toml 3"
        assert editor.placeholder("clear_gap") == f"blank = default {Config().clear_gap:g}"
        await pilot.press("f4")
        await pilot.pause()
        assert project.read_text(encoding="utf-8") == "# ours\nclear_gap = 0.3\n"
        assert editor.source("max_skills").label == "xdg/skill-explorer/config.toml"
        assert app.state.layers.sources["max_skills"] == str(user)
        # Nothing cleared or edited since: nothing to save, and the file is left alone.
        await pilot.press("f4")
        await pilot.pause()
        assert project.read_text(encoding="utf-8") == "# ours\nclear_gap = 0.3\n"


def test_the_save_notice_says_what_was_set_removed_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = Path("skill-explorer.toml")
    written = ["max_skills = 3", "min_similarity removed"]
    assert saved_text(written, path, {"score_margin": "not a number"}) == (
        "set max_skills = 3 and removed min_similarity (the other layers decide it now) "
        "in ./skill-explorer.toml; not saved, not valid: score_margin"
    )
    assert saved_text(["max_skills = 3"], path, {}) == "set max_skills = 3 in ./skill-explorer.toml"
    # A project the user has not trusted: the hook ignores the file until they do.
    assert saved_text(["max_skills = 3"], path, {}, trusted=False) == (
        "set max_skills = 3 in ./skill-explorer.toml; the explorer uses it now, the hook once "
        "you run `skill-explorer trust` here"
    )
