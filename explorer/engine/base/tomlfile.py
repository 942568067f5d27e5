"""Saving config fields into a TOML file that a person wrote, changing nothing else.

The explorer's threshold editor and `calibrate --write` save a few fields. The file may
hold comments, sections, keys of a newer version and values from other tools: all of it
stays byte for byte (tomlkit keeps the document's own text). A field already in the file
is changed where it is, inside its section if that is where it was read from
(`[routing] min_similarity` reads as `min_similarity`); a new one is added at the top
level. A file that does not parse is never overwritten. The write is atomic.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from explorer.engine.base.config import ConfigError, toml_item, toml_value
from explorer.engine.base.files import write_atomically


def update_toml(
    path: str | os.PathLike[str], changes: Mapping[str, Any], *, header: str = ""
) -> list[str]:
    """Set each field (None: remove it) in the file; returns what was written, as text.

    `header` starts a file that did not exist (a comment saying where it came from). When
    nothing changes (every field to remove is absent) the file is not written, nor made.
    """
    target = Path(path)
    try:
        original = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        original = ""
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{target}: cannot read ({error}); not overwritten") from error
    try:
        document = tomlkit.parse(original)
    except TOMLKitError as error:
        raise ConfigError(f"{target}: invalid TOML ({error}); not overwritten") from error
    written: list[str] = []
    for name, value in changes.items():
        holder = _holder(document, name)
        if value is None:
            if holder is not None:
                del holder[name]
                written.append(f"{name} removed")
            continue
        (holder if holder is not None else document)[name] = toml_item(value)
        written.append(f"{name} = {toml_value(value)}")
    if not written:
        return written
    text = tomlkit.dumps(document)
    if not original and header:
        text = header + text
    try:
        write_atomically(target, text)
    except OSError as error:
        raise ConfigError(f"{target}: cannot write ({error.strerror or error})") from error
    return written


def _holder(document: Container | Table, name: str) -> Container | Table | None:
    """The table that holds `name` as a value: the top level first, then sections."""
    if name in document and not isinstance(document[name], Table):
        return document
    for value in document.values():
        if isinstance(value, Table):
            found = _holder(value, name)
            if found is not None:
                return found
    if name in document:
        return document  # a [name] table (keymap): replaced as a whole
    return None
