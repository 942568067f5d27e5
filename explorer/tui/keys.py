"""The explorer's keys, in one table: the app's bindings, the command palette and F1's help
are all made from it, so a key added here is in all three.

Keys that no focused widget takes for itself: the prompt (an Input) owns ctrl+a/e/k/u/w/x/
c/v/d and the arrows, the table and the panels own the arrows and page keys;
tests/tui/test_keys_and_layout.py presses every one of these from every focusable widget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import App
from textual.binding import Binding

from explorer.engine.author import COLLISION_WEIGHTS, NEAR_P
from explorer.terminal import visible

# (key, action, description: the footer's and the palette's name, tooltip: the palette's
# and F1's help, id: what a keymap remaps)
KEYS: tuple[tuple[str, str, str, str, str], ...] = (
    ("f1", "help", "Help", "every key and symbol explained", "help"),
    ("f2", "thresholds", "Thresholds", "every config field, applied as you type", "thresholds"),
    ("f3", "errors", "Problems", "rejected files, warnings, lint", "errors"),
    ("f4", "panels", "Panels", "the tabs, the decision, or both below the table", "panels"),
    (
        "ctrl+n",
        "next_tab",
        "Next tab",
        "Terms, Skill, Cases, then History (with a telemetry log)",
        "next-tab",
    ),
    ("f5", "reindex", "Re-index", "walk the roots again and rebuild the snapshot", "reindex"),
    ("ctrl+f", "filter", "Filter", "the table, fuzzy over id and description", "filter"),
    ("ctrl+g", "go_to", "Go to skill", "jump to a skill's row and keep it highlighted", "go-to"),
    ("ctrl+t", "pin", "Pin prompt", "compare it with the prompt being typed", "pin"),
    ("ctrl+o", "open_in_editor", "Edit skill", "its SKILL.md in $EDITOR", "open-in-editor"),
    ("ctrl+y", "copy_json", "Copy JSON", "the decision, as `route --json` prints it", "copy-json"),
    ("ctrl+r", "export_markdown", "Export MD", "the explanation, to a file", "export-markdown"),
    ("f6", "cycle_sort", "Sort", "by the next column (or click a header)", "sort"),
    ("f7", "whatif", "What-if", "edit the description, see scores and flips", "whatif"),
    ("f8", "compare", "Compare", "a ranking diff: pinned prompt or last snapshot", "compare"),
    (
        "ctrl+l",
        "collisions",
        "Collisions",
        "skills that compete for the same prompts",
        "collisions",
    ),
    ("f9", "maximise", "Maximise panel", "the decision panel fills the screen", "maximise"),
    ("f10", "panel_size", "Panel size", "cycle the bottom panels' height", "panel-size"),
    (
        "ctrl+s",
        "screenshot",
        "Screenshot",
        "an SVG of this screen, to this directory",
        "screenshot",
    ),
    ("ctrl+q", "quit", "Quit", "leave the explorer", "quit"),
)
HELP_NOTES = (
    "In the prompt: up/down and page up/down move the table's cursor while you type; "
    "alt+up/alt+down (or ctrl+up/ctrl+down) walk the prompt history (prompts sent with "
    "enter, or cleared after standing two seconds).\nIn the table: / "
    "filters, esc returns to the prompt, home follows the top row again; click a header to "
    "sort.\nTyping in the table, the tabs or a panel goes to the prompt (a panel's own "
    "keys, such as space in the decision panel, stay its own).\nThe highlighted skill "
    "stays highlighted as the prompt changes (▸ marks it); back on the top row, the top row "
    "is followed. ctrl+p opens the command palette (toggle "
    "columns, sort, compare with the pinned prompt, …).\nIn the editors (f2 thresholds, f7 "
    "what-if): f4 or ctrl+s saves, esc closes; ctrl+s takes a screenshot on the main "
    "screen only. In the what-if, ctrl+t suggests edits (tune, on the cases and on the "
    "prompt typed when the skill misses it; ctrl+t pins a prompt on the main screen only) "
    "and ctrl+o opens $EDITOR; in the suggestions, enter loads one into the editor and tab "
    "reaches notes that do not fit. The footer shows the keys that fit, most used first; "
    "this page lists them all.\n"
    'Remap any key by id in the config: keymap = { reindex = "ctrl+b" }.\n\n'
    "Rows: the injected first; then, where the relevance model decided, its other "
    "candidates by p (the closest to its bar first); then the rest by hybrid score.\n"
    "Columns: hybrid = cos + kw + ph + file (§3), then + proj where a working directory's "
    "ecosystem boosts the skill (§3.5) and + the fused BM25 channel under a preset that has "
    "one; bm25 raw (normalised) #rank; rerank "
    "logit (sigmoid), — when not reranked, off without a model; overlap matched/query "
    "terms and Jaccard.\nVerdict: INJECT, or the gate that dropped the skill.\nWhile the "
    "dense model loads, cos, hybrid and the verdict show … and the why column says so "
    "(only BM25 and overlap are final until then).\nThe column of the number that decided "
    "the highlighted row (p, rerank, bm25 or hybrid) always stays on screen; why shortens "
    "first, and the decision panel gives the whole sentence.\n"
)
HELP_HEADERS = ("key", "command", "id (keymap)", "what it does")
# Every symbol the explorer draws, and what it means (tests/tui/test_explanations.py
# checks that the table's symbols are all here).
SYMBOLS: tuple[tuple[str, str], ...] = (
    ("INJECT", "injected; any other verdict is the gate that dropped the skill"),
    (
        "(body)",
        "after inject in the decision panel: the skill's SKILL.md body is injected; "
        "(description): its path and description",
    ),
    (
        "p",
        "the relevance model's probability (learned preset): inject at p ≥ its bar; "
        "<.01: under a hundredth",
    ),
    ("moved most", "the contribution (log-odds) that moved p most, e.g. bm25 lead+1.5"),
    (
        "task",
        "in p and moved most: injected for one task of a prompt that asks for several, "
        "routed alone (its p is that task's; the decision panel's tasks gate lists each)",
    ),
    (
        "closest",
        "in why, with nothing injected: the skill the relevance model came closest to "
        "injecting, and the contributions that raised it most",
    ),
    (
        "room",
        "in the decision panel, for a skill under the bar: the channels with the most "
        "headroom, each with the p it would give at its strongest and s, what it would add "
        "to the log-odds; cos, bm25, rerank, ml cos (the multilingual cosine), hits "
        "(keyword, phrase and file boosts), other scripts, exclusions",
    ),
    ("Δ inject", "what the deciding number lacks to pass its gate: +0.041 (hybrid)"),
    ("ℓ", "a reranker logit, in Δ inject: +0.60ℓ; p and bm25 gaps say their unit"),
    (
        "▲ ▼",
        "in hybrid: up or down since the last re-index (new: not there before); after a "
        "header: the sort column, ▼ best first, ▲ reversed",
    ),
    ("A→Z Z→A", "after skill: the table sorted by name, and which way"),
    ("▸", "before the rank: the skill the cursor follows from prompt to prompt"),
    ("↑ INJECT", "after why: the injected skill, scrolled off above (home shows it)"),
    ("σ", "the sigmoid of the reranker's logit (rerank column)"),
    ("J", "Jaccard overlap of the prompt's and the description's terms"),
    ("#", "a row's place in the decision's order; in bm25, its BM25 rank"),
    ("—", "not reranked, or no candidate of the relevance model; off: no reranker"),
    (
        "…",
        "pending: the dense model loading, the cases running again (after recall in the "
        "status bar); or a text cut here (F9 shows it whole)",
    ),
    ("✗ rejected", "a SKILL.md that did not parse: F3 says why"),
    (
        "⚠",
        "before a name: its SKILL.md has a warning yet routes (invalid YAML the line reader "
        "recovered, say): F3 and the Skill tab say what",
    ),
    (
        "BROKE FIXED",
        "a case that fails, or passes, since the last re-index or edit that changed one "
        "(Cases tab); ✗7 ✓17 in the status bar when it is short of room",
    ),
    (
        "taken shared near",
        "in the collision map (ctrl+l): prompts one skill of a pair lost to the other, "
        f"shared with it (both injected), or nearly lost (the other's p at least {NEAR_P:g}, "
        "behind it, or ahead of it with nothing injected); a pair's weight adds them as "
        + ", ".join(f"{COLLISION_WEIGHTS[kind]:g}" for kind in ("take", "share"))
        + f" and {COLLISION_WEIGHTS['near']:g}",
    ),
    (
        "host value",
        "in the Cases tab: recall less 0.15 x the false-inject rate, one number for a "
        "router's worth to its host (as the reference's eval scores it)",
    ),
    ("✓ ✗ ·", "a gate in the decision panel: passed, failed, skipped"),
    (
        "RECOMMENDED",
        "a suggested edit (ctrl+t in the what-if) that tune would keep: a gain on the "
        "held-out cases and over all of them, no steal, no new false injection, and more "
        "than word matching",
    ),
    ("LEXICAL ONLY", "a suggestion whose every fix the new words alone made"),
    ("FIX BREAK", "a case a suggestion makes pass, or fail: the skill's own, or another's"),
    (
        "STEAL RELEASE",
        "another skill's (or no skill's) case the suggested edit makes this skill take, or "
        "let go; a release counts among the fixes; 'shared': that skill keeps the case and "
        "this one is injected beside it",
    ),
    (
        "lexical off",
        "how many of a suggestion's fixes remain with the words read at the old description "
        "and the models at the new; 'need words and models together': fixes that neither "
        "makes alone",
    ),
)


def _reserved() -> dict[str, str]:
    """Keys a remap must not take, and whose they are: the command palette's, focus moves,
    and the prompt's own (an Input, focused while typing, binds them before the app)."""
    from textual.widgets import Input

    taken = {App.COMMAND_PALETTE_BINDING: "the command palette"}
    taken |= {"tab": "focus moves", "shift+tab": "focus moves", "ctrl+c": "copy"}
    for binding in Input.BINDINGS:
        if isinstance(binding, Binding):
            for key in binding.key.split(","):
                taken.setdefault(key.strip(), f"the prompt ({binding.description.lower()})")
    return taken


def prompt_editing_keys() -> dict[str, str]:
    """The prompt's deleting keys and their actions (backspace, ctrl+u, ctrl+w, …): typed
    while the table or a panel has the focus, they edit the prompt as letters type into
    it. Only these: cut, paste, select-all and cursor moves belong to where the focus is
    (a cut of nothing would empty the clipboard)."""
    from textual.widgets import Input

    keys: dict[str, str] = {}
    for binding in Input.BINDINGS:
        if isinstance(binding, Binding) and binding.action.startswith("delete_"):
            for key in binding.key.split(","):
                keys[key.strip()] = binding.action
    return keys


def _keys(value: str) -> list[str]:
    """A keymap value's keys as Textual compares them: comma-separated, lower case."""
    return [key.strip().lower() for key in value.split(",") if key.strip()]


def checked_keymap(
    keymap: dict[str, str], elsewhere: Collection[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """The config's remaps that can apply, and a sentence for each that cannot.

    Textual applies a keymap silently: an unknown id does nothing, and a key that two
    bindings share reaches only one of them, so a remap onto a taken key (`reindex =
    "ctrl+r"`, which exports Markdown) would lose a command without a word. A remap of
    the main screen's keys (KEYS) is kept only when its keys are nobody else's once every
    kept remap is in effect; two bindings may swap keys. The ids of other screens'
    bindings (`elsewhere`: the editors', the pages') are passed on as they are."""
    defaults = {id: key for key, _, _, _, id in KEYS}
    problems: list[str] = []
    kept: dict[str, str] = {}
    for id, value in keymap.items():
        if id not in defaults and id not in elsewhere:
            problems.append(f"keymap: no key has the id {id!r} (F1 lists the main screen's)")
        elif not _keys(value):
            problems.append(f"keymap: {id} = {value!r} names no key")
        else:
            kept[id] = ",".join(_keys(value))
    reserved = _reserved()
    while True:
        holder = dict(reserved)
        unmoved = [(id, key) for id, key in defaults.items() if id not in kept]
        moved = [(id, key) for id, key in kept.items() if id in defaults]
        for id, key in [*unmoved, *moved]:
            for one in _keys(key):
                holder.setdefault(one, id)
        clash = next(
            ((id, one) for id, key in moved for one in _keys(key) if holder[one] != id), None
        )
        if clash is None:
            return kept, problems
        id, taken = clash
        problems.append(
            f"keymap: {id} = {kept.pop(id)!r} not applied: {taken} already belongs to "
            f"{holder[taken]}; {id} stays on {defaults[id]}"
        )


def binding_ids(module_prefix: str = "explorer.tui") -> set[str]:
    """The ids of every binding the explorer's screens and widgets declare (a keymap may
    remap any of them), read from the classes loaded under `module_prefix`."""
    from textual.dom import DOMNode

    found: set[str] = set()
    classes: list[type] = [DOMNode]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        if cls.__module__.startswith(module_prefix):
            declared = cls.__dict__.get("BINDINGS", ())
            found |= {b.id for b in declared if isinstance(b, Binding) and b.id}
    return found


# F1 over the screens that open above the main one: a modal screen's bindings end the
# chain, so the app's F1 would not reach it. The app's own binding, with its id, so a
# keymap remap of help moves it too.
HELP_BINDING = next(
    Binding(key, "app.help", description, tooltip=tooltip, id=id)
    for key, action, description, tooltip, id in KEYS
    if id == "help"
)


def bindings_of(
    keys: tuple[tuple[str, str, str, str, str], ...],
) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The table as Textual bindings (typed as App.BINDINGS is)."""
    return [
        Binding(key, action, description, tooltip=tooltip, id=id)
        for key, action, description, tooltip, id in keys
    ]


def bindings(app: App[Any]) -> list[Binding]:
    """The app's own bindings, each with the key in effect (the config's keymap remaps by
    id): what the palette and F1 list."""
    found = []
    for binding in app.BINDINGS:
        if isinstance(binding, Binding):
            key = app._keymap.get(binding.id or "", binding.key)
            found.append(dataclasses.replace(binding, key=key))
    return found


def help_text(app: App[Any], notes: str) -> Group:
    """F1: every key, from the bindings, then `notes` (what no binding says), then every
    symbol. Tables, so a description that wraps on a narrow screen stays in its column."""
    keys = Table.grid(padding=(0, 2))
    for style in ("bold", "", "dim"):  # key, command, id (keymap): never wrapped
        keys.add_column(style=style, no_wrap=True)
    keys.add_column(ratio=1)  # what it does: wraps under itself
    keys.add_row(*(Text(label, style="dim") for label in HELP_HEADERS))
    for binding in bindings(app):
        cells = (visible(binding.key), binding.description, binding.id or "", binding.tooltip)
        keys.add_row(*(Text(cell or "") for cell in cells))
    symbols = Table.grid(padding=(0, 2), pad_edge=True)
    symbols.add_column(style="bold", no_wrap=True)
    symbols.add_column(ratio=1)
    for symbol, meaning in SYMBOLS:
        symbols.add_row(Text(symbol), Text(meaning))
    return Group(
        Text("Type a prompt; every skill is scored as you type.\n"),
        keys,
        Text(f"\n{notes}"),
        Text("Symbols", style="bold"),
        symbols,
    )


def apply_keymap(app: App[Any], keymap: dict[str, str]) -> None:
    """The config's keymap, as far as it can apply; a warning for each remap that cannot."""
    kept, problems = checked_keymap(keymap, binding_ids())
    app.set_keymap(kept)
    for problem in problems:
        app.notify(problem, severity="warning", timeout=10)
