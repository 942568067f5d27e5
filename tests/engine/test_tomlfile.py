"""Saving config fields into a TOML file a person wrote: only those fields change."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from explorer.engine.base.config import Config, ConfigError, to_toml, toml_value
from explorer.engine.base.tomlfile import update_toml

WRITTEN = """\
# Project settings for the skill router.
roots = ["~/skills"]   # where our skills live
unknown_future_key = "kept"

[routing]
# tuned by hand on 2026-01-02
min_similarity = 0.4
max_skills = 2   # two at most

[other-tool]
x = 1
"""


def test_only_the_named_fields_change_and_the_rest_is_kept_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "skill-explorer.toml"
    path.write_text(WRITTEN, encoding="utf-8")
    written = update_toml(path, {"min_similarity": 0.55, "char_budget": 4000})
    text = path.read_text(encoding="utf-8")
    assert text == WRITTEN.replace("min_similarity = 0.4", "min_similarity = 0.55").replace(
        'unknown_future_key = "kept"\n', 'unknown_future_key = "kept"\nchar_budget = 4000\n'
    )
    assert written == ["min_similarity = 0.55", "char_budget = 4000"]
    assert tomllib.loads(text)["routing"]["min_similarity"] == 0.55


def test_none_removes_a_field_follow_the_model(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(WRITTEN, encoding="utf-8")
    assert update_toml(path, {"min_similarity": None}) == ["min_similarity removed"]
    text = path.read_text(encoding="utf-8")
    assert "min_similarity" not in text and "# tuned by hand" in text and "two at most" in text


def test_removing_only_absent_fields_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(WRITTEN, encoding="utf-8")
    before = path.stat().st_mtime_ns
    assert update_toml(path, {"rerank_min": None, "char_budget": None}) == []
    assert path.read_text(encoding="utf-8") == WRITTEN and path.stat().st_mtime_ns == before
    missing = tmp_path / "missing.toml"
    assert update_toml(missing, {"max_skills": None}, header="# h\n") == []
    assert not missing.exists()


def test_a_new_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "new.toml"
    update_toml(path, {"deny": ["pdf", 'quote"d'], "keymap": {"quit": "ctrl+c"}}, header="# h\n")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data == {"deny": ["pdf", 'quote"d'], "keymap": {"quit": "ctrl+c"}}
    assert path.read_text(encoding="utf-8").startswith("# h\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_an_unreadable_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("this is = = not toml\n# but it is mine\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not overwritten"):
        update_toml(path, {"max_skills": 3})
    assert path.read_text(encoding="utf-8") == "this is = = not toml\n# but it is mine\n"


def test_the_write_is_atomic_and_keeps_permissions(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(WRITTEN, encoding="utf-8")
    os.chmod(path, 0o600)
    inode = path.stat().st_ino
    update_toml(path, {"max_skills": 3})
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]  # no temporary left


def test_to_toml_and_toml_value_write_valid_toml_for_awkward_values() -> None:
    config = Config(query_prefix='say "hi"\\ \x1b and \u2028', deny=["a\nb"], keymap={"a.b": "c"})
    data = tomllib.loads(to_toml(config, ["query_prefix", "deny", "keymap"]))
    assert data == {"query_prefix": config.query_prefix, "deny": ["a\nb"], "keymap": {"a.b": "c"}}
    assert tomllib.loads(f"v = {toml_value(0.1 + 0.2)}")["v"] == 0.1 + 0.2


def test_a_symlinked_config_is_written_through_to_its_target(tmp_path: Path) -> None:
    """Dotfile managers keep the config in a repository and link it into place: a save
    (F2, `calibrate --write`) updates the file the link points to and keeps the link."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "skill-explorer.toml"
    target.write_text("# mine\nmax_skills = 3\n", encoding="utf-8")
    link = tmp_path / "project" / "skill-explorer.toml"
    link.parent.mkdir()
    os.symlink(os.path.relpath(target, link.parent), link)
    assert update_toml(link, {"max_skills": 4}) == ["max_skills = 4"]
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert target.read_text(encoding="utf-8") == "# mine\nmax_skills = 4\n"
    assert sorted(path.name for path in link.parent.iterdir()) == ["skill-explorer.toml"]
    assert sorted(path.name for path in dotfiles.iterdir()) == ["skill-explorer.toml"]
