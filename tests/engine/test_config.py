"""Config defaults (the reference's values) and the layering of every source."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from explorer.engine.base.config import (
    FIELD_NAMES,
    PROJECT_CONFIG_NAME,
    Config,
    ConfigError,
    apply,
    coerce,
    load_config,
    parse_assignment,
    read_toml,
    to_toml,
    user_config_path,
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """An isolated HOME, XDG_CONFIG_HOME and working directory: no real config is ever read."""
    home = tmp_path / "home"
    xdg = tmp_path / "xdg"
    project = tmp_path / "project"
    for directory in (home, xdg, project):
        directory.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.chdir(project)
    return {"home": home, "xdg": xdg, "project": project, "tmp": tmp_path}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user_file(env: dict[str, Path]) -> Path:
    return env["xdg"] / "skill-explorer" / "config.toml"


def ski_file(env: dict[str, Path]) -> Path:
    return env["home"] / ".config" / "ski" / "config.toml"


# defaults --------------------------------------------------------------------------------

REFERENCE_DEFAULTS = {
    "min_similarity": None,  # None = follow the model's calibration (§4)
    "score_margin": None,
    "high_conf": 2.0,
    "clear_gap": 0.12,
    "lexical_min": None,  # None = the preset's value: 0.0 / 0.0 under preset reference
    "lexical_margin": None,
    "recall_floor": 0.5,
    "rerank_top_k": 12,
    "rerank_min": None,  # None = follow the cross-encoder's own gate (models.RERANK_CALIBRATION)
    "rerank_margin": None,
    "keyword_boost": 0.15,
    "phrase_boost": 0.2,
    "file_boost": 0.3,
    "max_skills": 2,
    "char_budget": 6000,
    "body_inject_min": 0.92,
    "force": [],
    "deny": [],
    "candidate_strategy": "dense",
    "bm25_index_name_keywords": False,
    "bm25_k1": 1.2,
    "bm25_b": 0.75,
}


@pytest.mark.parametrize(("name", "value"), REFERENCE_DEFAULTS.items())
def test_defaults_are_the_reference_values(name: str, value: object) -> None:
    actual = getattr(Config(), name)
    assert actual == value
    assert type(actual) is type(value)


def test_list_defaults_are_not_shared() -> None:
    first, second = Config(), Config()
    first.force.append("x")
    assert second.force == []


def test_load_config_without_any_file_gives_defaults(env: dict[str, Path]) -> None:
    loaded = load_config()
    assert loaded.config == Config()
    assert loaded.sources == {}
    assert loaded.warnings == ()
    assert loaded.files == ()


# layering --------------------------------------------------------------------------------


def test_user_config_path_follows_xdg_and_home(
    env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert user_config_path() == env["xdg"] / "skill-explorer" / "config.toml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert user_config_path() == env["home"] / ".config" / "skill-explorer" / "config.toml"


def test_layering_order(env: dict[str, Path]) -> None:
    user = write(
        user_file(env),
        "max_skills = 3\nclear_gap = 0.2\nrerank_top_k = 20\nfile_boost = 0.5\n"
        "keyword_boost = 0.4\n",
    )
    project = write(
        env["project"] / PROJECT_CONFIG_NAME,
        "clear_gap = 0.3\nrerank_top_k = 30\nfile_boost = 0.6\nphrase_boost = 0.5\n",
    )
    explicit = write(env["tmp"] / "explicit.toml", "rerank_top_k = 40\nfile_boost = 0.7\n")
    loaded = load_config(explicit, ["file_boost=0.8"], cwd=env["project"])
    config = loaded.config
    assert config.max_skills == 3  # user only
    assert config.keyword_boost == 0.4  # user only
    assert config.clear_gap == 0.3  # project beats user
    assert config.phrase_boost == 0.5  # project only
    assert config.rerank_top_k == 40  # --config beats project
    assert config.file_boost == 0.8  # --set beats everything
    assert config.char_budget == 6000  # untouched default
    assert loaded.sources == {
        "max_skills": str(user),
        "keyword_boost": str(user),
        "clear_gap": str(project),
        "phrase_boost": str(project),
        "rerank_top_k": str(explicit),
        "file_boost": "--set",
    }
    assert loaded.files == (str(user), str(project), str(explicit))
    assert loaded.pinned("clear_gap") and not loaded.pinned("char_budget")
    # Without the project file (what the explorer's F2 gives a field it clears there): the
    # layers under it and over it, as if the file held none of its lines.
    below = load_config(explicit, ["file_boost=0.8"], cwd=env["project"], project=False)
    assert below.config.clear_gap == 0.2 and below.config.phrase_boost == Config().phrase_boost
    assert below.config.rerank_top_k == 40 and below.config.file_boost == 0.8
    assert below.sources["clear_gap"] == str(user) and "phrase_boost" not in below.sources
    assert below.files == (str(user), str(explicit))


def test_project_file_is_read_from_cwd_argument(env: dict[str, Path]) -> None:
    other = env["tmp"] / "other-project"
    write(other / PROJECT_CONFIG_NAME, "max_skills = 5\n")
    write(env["project"] / PROJECT_CONFIG_NAME, "max_skills = 4\n")
    assert load_config(cwd=other).config.max_skills == 5
    assert load_config().config.max_skills == 4  # defaults to the process's cwd


def test_ski_config_by_default_and_lowest(env: dict[str, Path], monkeypatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(env["home"] / ".config"))
    ski = write(ski_file(env), "min_similarity = 0.7\nmax_skills = 1\n")
    user = write(env["home"] / ".config" / "skill-explorer" / "config.toml", "max_skills = 3\n")
    assert load_config(use_ski_config=False).config.min_similarity is None
    loaded = load_config()
    assert loaded.config.min_similarity == 0.7
    assert loaded.config.max_skills == 3  # our user file beats the reference's file
    assert loaded.sources == {"min_similarity": str(ski), "max_skills": str(user)}
    assert loaded.files == (str(ski), str(user))


def test_sections_are_read_flat(env: dict[str, Path]) -> None:
    write(user_file(env), "[routing]\nmin_similarity = 0.6\n[rerank]\nrerank_min = -1.0\n")
    loaded = load_config()
    assert loaded.config.min_similarity == 0.6
    assert loaded.config.rerank_min == -1.0
    assert loaded.warnings == ()


def test_value_equal_to_default_is_still_recorded_as_pinned(env: dict[str, Path]) -> None:
    user = write(user_file(env), "max_skills = 2\n")
    loaded = load_config()
    assert loaded.sources == {"max_skills": str(user)}


# warnings and errors --------------------------------------------------------------------


def test_unknown_key_warns_naming_the_key(env: dict[str, Path]) -> None:
    user = write(user_file(env), "max_skils = 3\n[extra]\nfoo = 1\n")
    loaded = load_config()
    assert loaded.config == Config()
    assert len(loaded.warnings) == 2
    assert "'max_skils'" in loaded.warnings[0] and str(user) in loaded.warnings[0]
    assert "'extra.foo'" in loaded.warnings[1]


@pytest.mark.parametrize(
    ("line", "key", "expected"),
    [
        ('max_skills = "two"', "max_skills", "an integer"),
        ("max_skills = 2.5", "max_skills", "an integer"),
        ("max_skills = true", "max_skills", "an integer"),
        ('clear_gap = "wide"', "clear_gap", "a number"),
        ("clear_gap = false", "clear_gap", "a number"),
        ('min_similarity = "auto"', "min_similarity", "a number"),
        ('bm25_index_name_keywords = "yes"', "bm25_index_name_keywords", "true or false"),
        ("model = 3", "model", "a string"),
        ('candidate_strategy = "both"', "candidate_strategy", "'dense' | 'union'"),
        ("force = [1, 2]", "force", "a list of strings"),
        ("deny = 5", "deny", "a list of strings"),
        ("rerank_top_k = { a = 1 }", "rerank_top_k", "an integer"),
    ],
)
def test_bad_value_names_key_file_and_type(
    env: dict[str, Path], line: str, key: str, expected: str
) -> None:
    path = write(user_file(env), line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config()
    message = str(caught.value)
    assert key in message
    assert str(path) in message
    assert f"expected {expected}" in message


def test_invalid_toml_names_the_file(env: dict[str, Path]) -> None:
    path = write(env["project"] / PROJECT_CONFIG_NAME, "max_skills = = 3\n")
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(path) in str(caught.value)
    assert "invalid TOML" in str(caught.value)


def test_missing_explicit_config_file_is_an_error(env: dict[str, Path]) -> None:
    missing = env["tmp"] / "missing.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(missing)
    assert str(missing) in str(caught.value)


def test_ints_are_accepted_for_float_fields_and_become_floats(env: dict[str, Path]) -> None:
    write(user_file(env), "high_conf = 1\nmin_similarity = 0\n")
    config = load_config().config
    assert config.high_conf == 1.0 and type(config.high_conf) is float
    assert config.min_similarity == 0.0 and type(config.min_similarity) is float


def test_a_single_string_becomes_a_list(env: dict[str, Path]) -> None:
    write(user_file(env), 'force = "pdf"\ndeny = ["docx", "pptx"]\n')
    config = load_config().config
    assert config.force == ["pdf"]
    assert config.deny == ["docx", "pptx"]


def test_coerce_unknown_key() -> None:
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        coerce("nope", 1, "somewhere")


# --set ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_skills=3", ("max_skills", 3)),
        ("clear_gap = 0.25", ("clear_gap", 0.25)),
        ("rerank_min=-1.5", ("rerank_min", -1.5)),
        ("bm25_index_name_keywords=true", ("bm25_index_name_keywords", True)),
        ('force=["pdf", "xlsx"]', ("force", ["pdf", "xlsx"])),
        ('model="bge-small"', ("model", "bge-small")),
        ("candidate_strategy=union", ("candidate_strategy", "union")),  # bare string
        ("model_path=/opt/models/m.onnx", ("model_path", "/opt/models/m.onnx")),
        ("query_prefix=query: ", ("query_prefix", "query:")),
        ("cache_dir=", ("cache_dir", "")),
        ("a=b=c", ("a", "b=c")),
    ],
)
def test_parse_assignment(text: str, expected: tuple[str, object]) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["max_skills", "=3", "", "  =x"])
def test_parse_assignment_needs_key_and_equals(text: str) -> None:
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_assignment(text)


def test_set_values_are_typed_and_recorded(env: dict[str, Path]) -> None:
    loaded = load_config(
        assignments=[
            "max_skills=4",
            "clear_gap=0.2",
            "candidate_strategy=union",
            'deny=["a", "b"]',
            "force=pdf",
        ]
    )
    config = loaded.config
    assert config.max_skills == 4
    assert config.clear_gap == 0.2
    assert config.candidate_strategy == "union"
    assert config.deny == ["a", "b"]
    assert config.force == ["pdf"]
    assert set(loaded.sources.values()) == {"--set"}
    assert set(loaded.sources) == {"max_skills", "clear_gap", "candidate_strategy", "deny", "force"}


def test_later_set_wins(env: dict[str, Path]) -> None:
    assert load_config(assignments=["max_skills=4", "max_skills=5"]).config.max_skills == 5


def test_set_unknown_key_is_an_error(env: dict[str, Path]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(assignments=["max_skils=3"])
    message = str(caught.value)
    assert "'max_skils'" in message
    assert "max_skills" in message.split("known keys:")[1]  # lists the known keys


def test_set_bad_value_names_key_and_type(env: dict[str, Path]) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(assignments=["max_skills=many"])
    message = str(caught.value)
    assert message.startswith("--set")
    assert "max_skills" in message and "expected an integer" in message


# to_toml round trip ----------------------------------------------------------------------


def edited_config() -> Config:
    return Config().replace(
        model="minilm",
        min_similarity=0.61,
        rerank_min=-1.25,
        clear_gap=0.1,
        max_skills=3,
        force=["pdf", 'odd "quoted" name'],
        deny=[],
        candidate_strategy="union",
        bm25_index_name_keywords=True,
        preset="reference",
        bm25_weight=0.4,
        floor_log_slope=0.01,
        keyword_generic_guard=True,
        keyword_min_cosine=0.2,
        lexical_min_cosine=0.25,
        lexical_min=4.0,
        lexical_margin=1.5,
        relevance_threshold=0.4,
        dense_body_chars=120,
        query_prefix='Represent this sentence: "x" \\ y',
        roots=["~/skills", "/opt/skills"],
    )


def test_to_toml_round_trips_every_field(tmp_path: Path) -> None:
    config = edited_config()
    path = write(tmp_path / "saved.toml", to_toml(config))
    warnings: list[str] = []
    restored, sources = apply(Config(), read_toml(path), str(path), warnings)
    assert restored == config
    assert warnings == []
    # every field is written except the ones left at None (TOML has no null)
    assert set(sources) == set(FIELD_NAMES) - {"score_margin", "rerank_margin"}


def test_to_toml_only_selected_fields(tmp_path: Path) -> None:
    config = edited_config()
    text = to_toml(config, ["max_skills", "force"])
    assert text == 'max_skills = 3\nforce = ["pdf", "odd \\"quoted\\" name"]\n'
    path = write(tmp_path / "partial.toml", text)
    restored, sources = apply(Config(), read_toml(path), str(path), [])
    assert restored == Config().replace(max_skills=3, force=config.force)
    assert sources == {"max_skills": str(path), "force": str(path)}


def test_to_toml_skips_none_and_round_trips_defaults(tmp_path: Path) -> None:
    text = to_toml(Config())
    assert "min_similarity" not in text
    path = write(tmp_path / "defaults.toml", text)
    restored, _ = apply(Config(), read_toml(path), str(path), [])
    assert restored == Config()


def test_saved_file_is_read_back_by_load_config(env: dict[str, Path]) -> None:
    config = edited_config()
    write(env["project"] / PROJECT_CONFIG_NAME, to_toml(config))
    assert load_config().config == config


def test_to_toml_round_trips_control_characters(tmp_path: Path) -> None:
    config = Config().replace(query_prefix="Instruct: find the skill\nQuery: ")
    path = write(tmp_path / "saved.toml", to_toml(config, ["query_prefix"]))
    restored, _ = apply(Config(), read_toml(path), str(path), [])
    assert restored == config


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().max_skills = 3  # type: ignore[misc]


# numbers: one check for files, --set and the editor (ranges.py) --------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("watch_debounce_ms = nan", "watch_debounce_ms = nan is not a finite number"),
        ("watch_max_delay_ms = inf", "watch_max_delay_ms = inf is not a finite number"),
        ("project_boost = -inf", "project_boost = -inf is not a finite number"),  # no range
        ("max_skills = 0", "max_skills = 0 is out of range: 1 to 100"),
        ("[routing]\nbm25_b = 5", "bm25_b = 5 is out of range: 0 to 1"),
        ("[routing]\nbm25_b = 1e300", "bm25_b = 1e+300 is out of range: 0 to 1"),
    ],
)
def test_a_config_file_refuses_unusable_numbers_naming_key_and_file(
    env: dict[str, Path], text: str, message: str
) -> None:
    path = write(env["project"] / PROJECT_CONFIG_NAME, text + "\n")
    with pytest.raises(ConfigError) as raised:
        load_config(use_ski_config=False)
    assert str(raised.value) == f"{path}: {message}"
    loaded = load_config(use_ski_config=False, strict=False)  # the hook: the key is skipped
    assert loaded.config == Config()
    assert f"{path}: {message}; this key is ignored, the file's others apply" in loaded.warnings


def test_the_hook_skips_a_bad_key_and_keeps_the_rest_of_its_file(env: dict[str, Path]) -> None:
    """Under the hook a bad value skips its own key: the file's deny list still applies
    (skipping the whole file would inject a skill the user denied). A file TOML cannot
    read is skipped whole."""
    path = write(
        env["project"] / PROJECT_CONFIG_NAME,
        'max_skills = "two"\ndeny = ["pdf"]\n[routing]\nbm25_b = 5\n',
    )
    loaded = load_config(use_ski_config=False, strict=False)
    assert loaded.config.deny == ["pdf"] and loaded.config.max_skills == Config().max_skills
    assert loaded.sources["deny"] == str(path) and "max_skills" not in loaded.sources
    skipped = [
        warning for warning in loaded.warnings if warning.endswith("the file's others apply")
    ]
    assert [warning.split(": ")[1].split(" =")[0] for warning in skipped] == [
        "max_skills",
        "bm25_b",
    ]
    write(path, 'deny = ["pdf"\n')
    loaded = load_config(use_ski_config=False, strict=False)
    assert loaded.config.deny != ["pdf"] and loaded.warnings[-1].endswith("; this file is ignored")


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("max_skills=0", "--set: max_skills = 0 is out of range: 1 to 100"),
        ("watch_debounce_ms=nan", "--set: watch_debounce_ms = nan is not a finite number"),
        ("score_margin=inf", "--set: score_margin = inf is not a finite number"),
    ],
)
def test_set_refuses_what_the_editor_refuses(
    env: dict[str, Path], assignment: str, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(assignments=[assignment], use_ski_config=False)
    assert str(raised.value) == message
    name, value = parse_assignment(assignment)
    with pytest.raises(ConfigError) as edited:  # F2 reads a typed value the same way
        coerce(name, value, "editor")
    assert str(edited.value) == message.replace("--set", "editor")
    # The hook: that --set is skipped with a warning and the others still apply, so a
    # typo in the hook's settings line never silences the router.
    loaded = load_config(
        assignments=[assignment, "max_length=64", "nokey=1"], use_ski_config=False, strict=False
    )
    assert loaded.config == Config(max_length=64)
    assert loaded.warnings[0] == f"{message}; this --set is ignored"
    assert loaded.warnings[1].startswith("--set: unknown key 'nokey'")


def test_rerank_top_k_zero_is_usable(env: dict[str, Path]) -> None:
    """0 leaves the decision to the cosine stage (tests/parity/test_gates.py)."""
    assert (
        load_config(assignments=["rerank_top_k=0"], use_ski_config=False).config.rerank_top_k == 0
    )


def test_the_reference_config_keeps_the_default_for_an_unusable_number(
    env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference reads any number: one it cannot use costs that key, not the file."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(env["home"] / ".config"))
    path = write(ski_file(env), "max_skills = 0\nrerank_min = nan\nmin_similarity = 0.4\n")
    loaded = load_config()
    assert loaded.config.max_skills == Config().max_skills
    assert loaded.config.rerank_min == Config().rerank_min and loaded.config.min_similarity == 0.4
    assert f"{path}: max_skills = 0 is out of range: 1 to 100; the default is kept" in (
        loaded.warnings
    )
    assert f"{path}: rerank_min = nan is not a finite number; the default is kept" in (
        loaded.warnings
    )
