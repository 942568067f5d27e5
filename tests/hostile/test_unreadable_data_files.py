"""Config, cases and manifest files that no parser reads whole: bytes that are not UTF-8,
nesting deeper than the parsers recurse, numbers longer than Python converts.

Each is refused with its path and reason, as a syntax error is: tomllib and json raise
UnicodeDecodeError, RecursionError or ValueError for these, not their own error classes,
and every command ended in a traceback (the hook skipped its prompt for a config file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.engine.base.config import ConfigError, load_config, parse_assignment, read_toml
from explorer.engine.qa.cases import CaseError, load_cases
from explorer.engine.qa.libraries import LibraryError, read_manifest

DEEP_TOML = b"a = " + b"[" * 5_000 + b"]" * 5_000 + b"\n"
NOT_UTF8_TOML = b"max_skills = 2\n\xff = 1\n"
LONG_TOML = b"max_skills = " + b"9" * 5_000 + b"\n"
TOML_FILES = [
    (NOT_UTF8_TOML, r"not UTF-8 text \(byte 15\)"),
    (DEEP_TOML, "nested too deeply"),
    (LONG_TOML, "4300 digits"),
]
TOML_IDS = ["not-utf8", "deep", "long-number"]


@pytest.mark.parametrize(("data", "reason"), TOML_FILES, ids=TOML_IDS)
def test_a_config_file(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=reason) as raised:
        read_toml(path)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize(("data", "reason"), TOML_FILES, ids=TOML_IDS)
def test_a_libraries_manifest(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "libraries.toml"
    path.write_bytes(data)
    with pytest.raises(LibraryError, match=reason) as raised:
        read_manifest(path)
    assert str(path) in str(raised.value)


ITEM = '{"query": "extract the tables of this pdf", "should_trigger": true'


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("deep.toml", "[[case]]\nprompt = " + "[" * 3_000 + "]" * 3_000, "nested too deeply"),
        ("long.toml", "[[case]]\nprompt = " + "9" * 5_000, "4300 digits"),
        ("deep.json", "[" * 3_000 + "]" * 3_000, "nested too deeply"),
        ("sets.json", '{"a": ' * 600 + ITEM + "}" + "}" * 600, "nested too deeply"),
        ("long.json", f"[{ITEM}, " + '"n": ' + "9" * 5_000 + "}]", "4300 digits"),
    ],
    ids=lambda value: (
        value if isinstance(value, str) and value.endswith((".toml", ".json")) else ""
    ),
)
def test_a_cases_file(tmp_path: Path, name: str, text: str, reason: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseError, match=reason) as raised:
        load_cases(path, skill="pdf" if name.endswith(".json") else None)
    assert str(path) in str(raised.value)


def test_a_set_value_too_long_to_convert_is_taken_as_text() -> None:
    """`--set` reads a value as TOML, else as text: then its type check names the key."""
    key, value = parse_assignment("max_skills=" + "9" * 5_000)
    assert (key, value) == ("max_skills", "9" * 5_000)
    with pytest.raises(ConfigError, match="max_skills"):
        load_config(None, [f"{key}={value}"], use_ski_config=False)
