"""What the decision on screen becomes outside the app: JSON on the clipboard (ctrl+y; a
file, when the clipboard cannot take it), a Markdown explanation (ctrl+r: the top rows,
each with its reason, and the highlighted skill) and an SVG picture (ctrl+s).

While the dense model loads, the decision on screen is the lexical-only one: its JSON and
its report would quote thresholds the router will not use, so they wait and say so.
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

from explorer.report import markdown_report
from explorer.terminal import visible
from explorer.tui.health import short_path
from explorer.tui.history import write_new_file

COPY_LIMIT = 100_000  # bytes: above this, a copy through the terminal is dropped
NO_CLIPBOARD_TERMS = frozenset({"", "dumb", "linux"})

if TYPE_CHECKING:
    from pathlib import Path

    from textual.app import App

    from explorer.tui.app import ExplorerApp
    from explorer.tui.state import ExplorerState


def still_loading(
    app: App[None], state: ExplorerState, what: str, *, decision: bool = True
) -> bool:
    """Say so, and do nothing, while the models load: until the decision on screen is made
    with them too, or, with `decision=False` (a view of the snapshot alone), until the
    snapshot has them."""
    if state.still_loading() if decision else state.models_loading():
        app.notify(f"dense model loading: {what} once it is ready", severity="warning")
        return True
    return False


def no_clipboard_reason(size: int) -> str:
    """Why a copy would never reach the clipboard, or "": the terminal carries a copy to
    the system clipboard (OSC 52), and most cap what they carry (tmux, many emulators at
    about 100 KB) or carry nothing (the Linux console, a dumb terminal)."""
    if size > COPY_LIMIT:
        return f"{size_text(size)} is more than a terminal passes to the clipboard"
    term = os.environ.get("TERM", "")
    if term in NO_CLIPBOARD_TERMS:
        return f"this terminal (TERM={term or 'unset'}) has no clipboard"
    if os.environ.get("TMUX"):
        setting = tmux_set_clipboard()
        if setting and setting != "on":
            return f"tmux (set-clipboard {setting}) passes no program's copy to the clipboard"
    return ""


def tmux_set_clipboard() -> str:
    """tmux's set-clipboard option, or "" when tmux does not answer. Only "on" lets a
    program's OSC 52 copy through; tmux's default, "external", drops it, so a copy made
    inside tmux would be announced and never arrive."""
    try:
        answer = subprocess.run(
            ["tmux", "show-options", "-gv", "set-clipboard"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return answer.stdout.strip() if answer.returncode == 0 else ""


def size_text(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 1e6 else f"{size / 1e3:.1f} KB"


def copy_decision(app: ExplorerApp) -> None:
    """ctrl+y: the decision JSON to the clipboard, or, when it cannot get there, to a file
    (and the notice says where, and why)."""
    state = app.state
    if still_loading(app, state, "copy the decision") or state.decision is None:
        return
    text = state.decision.to_json()
    size = len(text.encode("utf-8"))
    reason = no_clipboard_reason(size)
    if not reason:
        app.copy_to_clipboard(text)
        app.notify(f"decision JSON ({size_text(size)}) copied to the clipboard")
        return
    try:
        path = write_new_file("skill-explorer-decision", ".json", text)
    except OSError as error:
        app.notify(visible(f"cannot copy or write: {error}"), severity="error", markup=False)
        return
    app.notify(
        visible(f"{reason}: decision JSON written to {short_path(path)}"), markup=False, timeout=10
    )


def export_markdown(app: ExplorerApp) -> None:
    state = app.state
    if state.decision is None or state.snapshot is None or still_loading(app, state, "export"):
        return
    text = markdown_report(state.decision, state.snapshot, state.highlighted)
    try:
        path = write_new_file("skill-explorer-why", ".md", text)
    except OSError as error:
        app.notify(visible(f"cannot export: {error}"), severity="error", markup=False)
        return
    app.notify(visible(f"explanation written to {short_path(path)}"), markup=False)


def screenshot(app: App[None], filename: str | None = None, path: str | None = None) -> None:
    """Textual's screenshot, into the working directory, named as the other exports are
    (skill-explorer-screenshot-<time>.svg, never over a file), with a notice."""
    try:
        if filename is None and path is None:
            saved: str | Path = write_new_file(
                "skill-explorer-screenshot", ".svg", app.export_screenshot()
            )
        else:
            saved = app.save_screenshot(filename, path=path or os.getcwd())
    except OSError as error:
        app.notify(visible(f"cannot save a screenshot: {error}"), severity="error", markup=False)
        return
    app.notify(visible(f"screenshot saved to {short_path(saved)}"), markup=False)
