"""What the decision on screen becomes outside the app: JSON on the clipboard (ctrl+y), a
Markdown explanation (ctrl+r) and an SVG picture (ctrl+s).

While the dense model loads, the decision on screen is the lexical-only one: its JSON and
its report would quote thresholds the router will not use, so they wait and say so.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from explorer.report import markdown_report
from explorer.terminal import visible
from explorer.tui.history import write_new_file

if TYPE_CHECKING:
    from textual.app import App

    from explorer.tui.app import ExplorerApp
    from explorer.tui.state import ExplorerState


def still_loading(app: App[None], state: ExplorerState, what: str) -> bool:
    """Say so, and do nothing, while the models load."""
    if state.still_loading():
        app.notify(f"dense model loading: {what} once it is ready", severity="warning")
        return True
    return False


def copy_decision(app: ExplorerApp) -> None:
    state = app.state
    if still_loading(app, state, "copy the decision") or state.decision is None:
        return
    app.copy_to_clipboard(state.decision.to_json())
    app.notify("decision JSON copied to the clipboard")


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
    app.notify(visible(f"explanation written to {path}"), markup=False)


def screenshot(app: App[None], filename: str | None = None, path: str | None = None) -> None:
    """Textual's screenshot, but into the working directory, with a notice."""
    try:
        saved = app.save_screenshot(filename, path=path or os.getcwd())
    except OSError as error:
        app.notify(visible(f"cannot save a screenshot: {error}"), severity="error", markup=False)
        return
    app.notify(visible(f"screenshot saved to {saved}"), markup=False)
