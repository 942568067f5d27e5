"""Reading TOML a person wrote, with every way it can fail said in words.

tomllib raises its own error for a syntax error, but UnicodeDecodeError for bytes that
are not UTF-8, RecursionError for nesting deeper than it recurses, and ValueError for an
integer of more digits than Python converts: no caller expects those, and each ended in
a traceback. Config files, `--set` values, cases files and manifests read through here.
"""

from __future__ import annotations

import tomllib
from typing import Any


class TomlUnreadable(ValueError):
    """Why a TOML text cannot be read, in words (the caller adds whose text it is)."""


def read_toml_text(data: bytes | str) -> dict[str, Any]:
    """The TOML document in `data`; TomlUnreadable when tomllib cannot read it."""
    try:
        return tomllib.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except UnicodeDecodeError as error:
        raise TomlUnreadable(f"not UTF-8 text (byte {error.start}); TOML is UTF-8") from error
    except tomllib.TOMLDecodeError as error:
        raise TomlUnreadable(f"invalid TOML: {error}") from error
    except RecursionError as error:  # tomllib recurses once per level of nesting
        raise TomlUnreadable("invalid TOML: nested too deeply") from error
    except ValueError as error:  # an integer of more digits than Python converts
        raise TomlUnreadable(f"invalid TOML: {str(error).split(':')[0]}") from error
