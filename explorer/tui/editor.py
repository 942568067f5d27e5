"""The user's editor ($VISUAL, else $EDITOR, else vi), run with the terminal handed over.

The explorer opens it on a skill's file and the what-if screen on a description (ctrl+o in
both): one place reads the setting, and a bad one or a missing editor is a message, never a
crash.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

from textual.app import App

from explorer.terminal import visible

Notify = Callable[..., None]  # App.notify or Screen.notify


def open_in_editor(app: App[Any], notify: Notify, path: str, *, name_file: bool = False) -> bool:
    """Run the editor on `path` until it exits; False, after a message, when it could not.

    `name_file`: a missing editor's message names `path` (to open by hand) and stays 10 s.
    """
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as error:
        notify(visible(f"cannot read $EDITOR {editor!r}: {error}"), severity="error", markup=False)
        return False
    if not command or shutil.which(command[0]) is None:
        notify(
            visible(
                f"editor {editor!r} not found: set $VISUAL or $EDITOR"
                + (f" (file: {path})" if name_file else "")
            ),
            severity="error",
            markup=False,
            timeout=10 if name_file else None,
        )
        return False
    try:
        with app.suspend():
            subprocess.run([*command, path], check=False)
    except Exception as error:  # no terminal to hand over (a pipe, a test) or a dead editor
        notify(
            visible(f"cannot run {editor!r}: {error}"), severity="error", timeout=10, markup=False
        )
        return False
    return True
