"""Regenerate the demo pictures of docs/explorer.md: the explorer, driven step by step.

    python docs/demo/make_demo.py             # writes docs/demo/NN-*.svg
    python docs/demo/make_demo.py --out DIR   # somewhere else (tests/test_demo.py does)

It walks docs/explorer.md's "A five-minute demo on `sample_skills/`" with Textual's Pilot,
headless at 120x40, and saves what the app shows after each step through the app's own
screenshot call (the one ctrl+s makes). The pictures depend only on this checkout and its
installed dependencies:

* the default config, as a fresh install has it (the learned preset, the packaged
  reranker), and no user or project config, state, history or cache: HOME's XDG
  directories point into a temporary directory;
* a copy of `sample_skills/` opened by a relative path, so no absolute path is drawn
  (the edit step changes the copy, never the checkout's library); timings are hidden.

Run it after changing what the explorer draws, look at the pictures, and commit them with
the docs/explorer.md text they illustrate. Each step names the text its picture must contain; the
script stops with an error when the app does not show it, and the slow test
tests/test_demo.py runs the script to keep the demo from rotting silently.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SIZE = (120, 40)
TIMEOUT_S = 120.0  # a cold MiniLM load and 25 embeddings on a busy 2-core machine
NUMBER = re.compile(r"[-+]?\d*\.\d+")
# The int8 kernels onnxruntime picks differ between CPUs (AVX2, AVX-512 VNNI) and move a
# logit by a hundredth or two (-4.47 on one machine, -4.48 on another): a number within
# this of the one a step names is that number.
NUMBER_SLACK = 0.03


@dataclass(frozen=True)
class Step:
    file: str  # the SVG's name in the output directory
    caption: str  # the demo's line under the picture
    must_show: tuple[str, ...]  # text the picture must contain (tests/test_demo.py checks it)


STEPS = (
    Step(
        "01-pdf.svg",
        "Step 1: `pdf` injected at p 0.98; the file boost for report.pdf is +0.30.",
        ("merge two report.pdf files into one", "p 0.98 ≥ 0.59", ".45+.15+.00+.30"),
    ),
    Step(
        "02-phrases.svg",
        "Step 2: two quoted trigger phrases give `kubernetes-debugger` +0.40 (+0.20 each).",
        ("kubernetes-debugger", ".72+.00+.40+.00", 'ph: "pod keeps crashing"'),
    ),
    Step(
        "03-near-miss.svg",
        "Step 3: a near miss the default takes: `pdf` at p 0.65, over this library's bar of 0.59.",
        ("when was the PDF format invented", "p 0.65 ≥ 0.59"),
    ),
    Step(
        "04-compare.svg",
        "Step 3, pinned (ctrl+t) and compared (F8) with a real PDF request.",
        ("compare pinned 'when was the PDF format invented'", "+6.19"),
    ),
    Step(
        "05-rerank.svg",
        "Step 4: the reranker decides, and the Skill tab says which sentence held "
        "`git-commit-writer` back.",
        ("git-commit-writer: p 0.27 < 0.59", "logit +1.13 on git-commit-writer", "-1.14"),
    ),
    Step(
        "06-rescue.svg",
        "Step 5: a 0.298 cosine, carried by BM25 12.76: `plaintext-accounting` at p 0.97.",
        ("plaintext-accounting", "p 0.97 ≥ 0.59", "12.76"),
    ),
    Step(
        "07-edit.svg",
        "After saving `xlsx/SKILL.md`: `xlsx` takes the case, and the Cases tab says why.",
        (
            "BROKE",
            "plaintext-accounting lost it: relevance",
            "xlsx took",
            "BROKE 1 recall",
        ),
    ),
)

PROMPTS = {
    "01-pdf.svg": "merge two report.pdf files into one",
    "02-phrases.svg": "my pod keeps crashing and kubectl logs shows nothing",
    "03-near-miss.svg": "when was the PDF format invented",
    "05-rerank.svg": "write release notes from the last 20 commits",
    "06-rescue.svg": (
        "bean-check says ambiguous lot matching for VTI, which booking method should i use"
    ),
}
# The edit of the last step, as docs/explorer.md tells it: a few words of step 5's prompt added to
# the end of xlsx's description.
EDIT_ANCHOR = "needs to tidy columns before analysis."
EDIT_ADDED = (
    " Use when bean-check reports ambiguous lot matching or asks which booking method to use."
)


def svg_text(svg: str) -> str:
    """What an exported SVG shows, as lines of text: Rich draws each run of one style as a
    <text> at (x, y), and leaves a gap for cells with nothing to draw; gaps become spaces."""
    lines: dict[float, list[tuple[float, float, str]]] = {}
    for attributes, body in re.findall(r"<text([^>]*)>(.*?)</text>", svg, flags=re.S):
        found = dict(re.findall(r'(\w+)="([^"]*)"', attributes))
        if "x" not in found or "y" not in found:
            continue
        width = float(found.get("textLength", 0) or 0)
        text = html.unescape(body).replace("\xa0", " ")
        lines.setdefault(float(found["y"]), []).append((float(found["x"]), width, text))
    out = []
    for y in sorted(lines):
        line, end = "", None
        for x, width, text in sorted(lines[y]):
            if end is not None and x > end + 1:
                line += " "
            line += text
            end = x + width
        if line.strip():
            out.append(line.rstrip())
    return "\n".join(out)


class DemoError(RuntimeError):
    """The app did not get where the demo says it goes."""


# -- driving the app ------------------------------------------------------------------------


async def _until(pilot: Any, what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise DemoError(f"the explorer did not get there within {TIMEOUT_S:.0f} s: {what}")
        await pilot.pause(0.05)


def _shown(app: Any, prompt: str) -> bool:
    """The table and the panels all show the decision for `prompt`."""
    decision = app.decision
    return decision is not None and decision.prompt == prompt and app.state.panels_shown is decision


def _key(app: Any, binding_id: str) -> str:
    """The key bound to an action id now (a keymap may have moved it)."""
    for binding in app.BINDINGS:
        if getattr(binding, "id", None) == binding_id:
            return str(getattr(app, "_keymap", {}).get(binding_id, binding.key)).split(",")[0]
    raise DemoError(f"the explorer has no binding {binding_id!r}")


async def _type_prompt(pilot: Any, prompt: str) -> None:
    """Clear the prompt and type `prompt` as a user would, then wait for every panel."""
    from explorer.tui.widgets.prompt_bar import PromptBar

    app = pilot.app
    bar = app.query_one(PromptBar)
    if app.focused is not bar:
        bar.focus()
    await pilot.press("ctrl+u")
    await pilot.press(*prompt)
    await _until(pilot, f"the decision for {prompt!r}", lambda: _shown(app, prompt))


async def _settled(pilot: Any) -> None:
    """Notifications gone, the layout settled: the picture shows the app at rest."""
    pilot.app.clear_notifications()
    await pilot.pause(0.3)


def shows(shown: str, text: str) -> bool:
    """`text` is in `shown`, its numbers each within NUMBER_SLACK."""
    if text in shown:
        return True
    wanted = [float(number) for number in NUMBER.findall(text)]
    pattern = f"({NUMBER.pattern})".join(re.escape(part) for part in NUMBER.split(text))
    for match in re.finditer(pattern, shown):
        found = [float(number) for number in match.groups()]
        if wanted and all(abs(a - b) <= NUMBER_SLACK for a, b in zip(found, wanted, strict=True)):
            return True
    return False


async def _save(pilot: Any, out: Path, step: Step) -> None:
    await _settled(pilot)
    app = pilot.app
    app.save_screenshot(filename=step.file, path=str(out))
    shown = svg_text((out / step.file).read_text(encoding="utf-8"))
    missing = [text for text in step.must_show if not shows(shown, text)]
    if missing:
        raise DemoError(f"{step.file}: the app does not show {missing}")
    print(f"wrote {out / step.file}")


async def _demo(pilot: Any, out: Path, library: Path) -> None:
    from textual.widgets import TabbedContent

    from explorer.tui.compare import CompareView
    from explorer.tui.widgets.prompt_bar import PromptBar
    from explorer.tui.widgets.skills_table import SkillsTable

    app = pilot.app
    app.query_one(PromptBar).cursor_blink = False
    await _until(
        pilot,
        "the library loaded with its dense model",
        lambda: app.live is not None and app.snapshot is app.live.snapshot,
    )
    steps = {step.file: step for step in STEPS}

    # Steps 1-3: type, look.
    for name in ("01-pdf.svg", "02-phrases.svg", "03-near-miss.svg"):
        await _type_prompt(pilot, PROMPTS[name])
        await _save(pilot, out, steps[name])

    # Step 3, continued: pin the near-miss, type a real PDF request, compare the rankings.
    await pilot.press(_key(app, "pin"))
    await _until(pilot, "the prompt pinned", lambda: app.state.pinned_prompt is not None)
    await _type_prompt(pilot, PROMPTS["01-pdf.svg"])
    await pilot.press(_key(app, "compare"))
    view = app.query_one(CompareView)
    await _until(
        pilot,
        "the ranking diff against the pinned prompt",
        lambda: view.diff is not None and view.diff.prompt == PROMPTS["01-pdf.svg"],
    )
    await _save(pilot, out, steps["04-compare.svg"])
    await pilot.press(_key(app, "compare"))  # the table again
    await _until(pilot, "the table again", lambda: not view.display)

    # Step 4: the confusable pair; the runner-up's reason heads the decision panel.
    await _type_prompt(pilot, PROMPTS["05-rerank.svg"])
    await pilot.press("down")
    await _until(
        pilot, "the runner-up highlighted", lambda: app.state.highlighted == "git-commit-writer"
    )
    app.query_one(TabbedContent).active = "skill-tab"  # what each sentence adds to the logit
    attribution = app.query_one("#skill-attribution")
    await _until(
        pilot, "the reranker's attribution", lambda: "each sentence" in str(attribution.render())
    )
    await _save(pilot, out, steps["05-rerank.svg"])
    app.query_one(TabbedContent).active = "terms-tab"
    # The table now follows git-commit-writer from prompt to prompt: home in the table
    # follows the top row again, esc goes back to the prompt.
    table = app.query_one(SkillsTable)
    table.focus()
    await pilot.press("home", "escape")
    await _until(pilot, "the top row followed again", lambda: table.followed is None)

    # Step 5: BM25 carries a skill whose cosine alone is low.
    await _type_prompt(pilot, PROMPTS["06-rescue.svg"])
    await _save(pilot, out, steps["06-rescue.svg"])

    # Then: save an edit of xlsx/SKILL.md "in another window"; the Cases tab shows the flip.
    await _until(pilot, "the cases report", lambda: app.state.cases_report is not None)
    snapshot, report = app.snapshot, app.state.cases_report
    before = app.decision.row("xlsx").score
    path = library / "xlsx" / "SKILL.md"
    text = path.read_text(encoding="utf-8")
    if EDIT_ANCHOR not in text:
        raise DemoError(f"{path}: the description no longer ends with {EDIT_ANCHOR!r}")
    path.write_text(text.replace(EDIT_ANCHOR, EDIT_ANCHOR + EDIT_ADDED, 1), encoding="utf-8")
    await _until(
        pilot,
        "the live index picking up the saved SKILL.md, and the cases re-run",
        lambda: (
            app.snapshot is not snapshot
            and _shown(app, PROMPTS["06-rescue.svg"])
            and app.decision.row("xlsx").score != before
            and app.state.cases_report is not report
        ),
    )
    app.query_one(TabbedContent).active = "cases-tab"
    await _save(pilot, out, steps["07-edit.svg"])


async def _run(out: Path, work: Path) -> None:
    from explorer.engine.base.config import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory

    library = work / "sample_skills"
    shutil.copytree(REPO / "sample_skills", library)
    os.chdir(work)  # the roots and the cases file are drawn relative to here
    app = ExplorerApp(
        ["sample_skills"],
        Config(),  # the default install: the learned preset and the packaged reranker
        cache_dir=str(work / "cache"),
        history=PromptHistory(work / "history.txt"),
        show_timings=False,
        cases_path="sample_skills/cases.toml",
    )
    failure: BaseException | None = None
    async with app.run_test(size=SIZE) as pilot:
        try:
            await _demo(pilot, out, library)
        except BaseException as error:  # leave run_test cleanly, then report
            failure = error
    if failure is not None:
        raise failure


def _isolate(home: Path) -> None:
    """No user config, state, history or cache reaches the pictures."""
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        os.environ[name] = str(home / name.lower())
    for name in list(os.environ):
        if name.startswith("SKILL_EXPLORER_"):
            del os.environ[name]
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent, help="where the SVGs go"
    )
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # a checkout without `pip install -e .`
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="skill-explorer-demo-") as temp:
        _isolate(Path(temp))
        try:
            asyncio.run(_run(out, Path(temp)))
        except DemoError as error:
            print(f"make_demo: {error}", file=sys.stderr)
            return 1
        finally:
            os.chdir(cwd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
