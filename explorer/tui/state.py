"""What the explorer's layout was when it closed: sort, hidden columns, panel size, maximised.

A small JSON file in the platform state directory (engine/paths.py), one per user. It is
a convenience, never a requirement: a missing, unreadable, corrupt or foreign file gives
the defaults, a field of the wrong type is dropped alone, and a failed write is ignored.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from explorer.engine.files import write_atomically
from explorer.engine.paths import state_dir

FILE_NAME = "explorer-ui.json"
PANEL_SIZES = (45, 60, 30)  # % of the height below the table; F10 cycles them


@dataclass
class UIState:
    sort_key: str = "decision"
    sort_reverse: bool = False
    hidden: list[str] = field(default_factory=list)  # column keys the user turned off
    panel_size: int = PANEL_SIZES[0]
    maximised: bool = False


def state_path() -> Path:
    return state_dir() / FILE_NAME


def load_state(path: Path | None = None) -> UIState:
    """The saved state; anything unusable in it falls back to the default, field by field."""
    try:
        data = json.loads((path or state_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return UIState()
    if not isinstance(data, dict):
        return UIState()
    state = UIState()
    for spec in fields(UIState):
        value: Any = data.get(spec.name)
        default = getattr(state, spec.name)
        if isinstance(default, list):
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                setattr(state, spec.name, value)
        elif type(value) is type(default):
            setattr(state, spec.name, value)
    if state.panel_size not in PANEL_SIZES:
        state.panel_size = PANEL_SIZES[0]
    return state


def save_state(state: UIState, path: Path | None = None) -> None:
    """Write the state; an unwritable state directory only means it is not remembered."""
    target = path or state_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, json.dumps(asdict(state), indent=2) + "\n")
    except OSError:
        pass
