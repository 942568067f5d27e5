"""The History tab: how the hook did in real sessions, and which logged prompts the current
library and thresholds would now decide differently (re-run on every re-index and edit).

It reads the opt-in telemetry log (`--history FILE`, default the state directory's
telemetry.jsonl when it exists); the replay needs the prompt text, kept only with
`telemetry_prompts = true`. Prompts and skill ids are shown literally (explorer.terminal).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.engine.host import Replay, UsageReport
from explorer.terminal import plain, visible

VERDICT_STYLE = {"better": "bold green", "worse": "bold red", "changed": "bold yellow"}
MAX_SKILL_ROWS = 30
MAX_CHANGES = 200


def history_text(report: UsageReport, replay: Replay | None, source: str) -> Text:
    """The usage counts per skill, then the prompts whose injection would change."""
    out = Text()
    out.append(f"{report.turns} prompts logged", style="bold")
    out.append(f" ({report.turns_with_injection} with an injection)")
    out.append_text(plain(f"  {source}", style="dim"))
    out.append("\n\n")
    out.append(
        f"{'skill':<28} {'injected':>8} {'loaded':>7} {'body':>5} {'ignored':>8} {'near':>5} "
        f"{'never':>6}\n",
        style="bold",
    )
    by_use = sorted(
        report.skills.items(), key=lambda item: (-item[1].injected - item[1].near_miss, item[0])
    )
    for skill_id, usage in [*by_use[:MAX_SKILL_ROWS], ("total", report.totals())]:
        name = visible(skill_id)
        name = name if len(name) <= 28 else name[:27] + "…"
        out.append(
            f"{name:<28} {usage.injected:>8} {usage.loaded_after_injection:>7} "
            f"{usage.body_given:>5} {usage.ignored:>8} {usage.near_miss:>5} "
            f"{usage.never_surfaced:>6}\n",
            style="bold" if skill_id == "total" else "",
        )
    if len(by_use) > MAX_SKILL_ROWS:
        out.append(f"… and {len(by_use) - MAX_SKILL_ROWS} more skills\n", style="dim")
    out.append(
        "loaded: after injection · body: injected whole, nothing to load · near: ranked ≤ "
        "3, not injected, loaded anyway · never: loaded, never ranked\n",
        style="dim",
    )
    if replay is None:
        return out
    out.append("\nreplayed ", style="bold")
    out.append(f"{replay.replayed} prompts against this library and these thresholds")
    if replay.without_text:
        out.append(
            f" ({replay.without_text} logged without their text: telemetry_prompts = true "
            "keeps it)",
            style="dim",
        )
    out.append("\n")
    if not replay.changes:
        out.append("no logged prompt would inject differently\n", style="dim")
        return out
    counts = replay.counts()
    out.append(
        f"{len(replay.changes)} would inject differently: "
        f"{counts['better']} better, {counts['worse']} worse, {counts['changed']} changed\n"
    )
    for change in replay.changes[:MAX_CHANGES]:
        out.append(f"  {change.verdict.upper():<8}", style=VERDICT_STYLE[change.verdict])
        out.append_text(plain(" ".join(change.prompt.split())[:70]))
        out.append("\n")
        before = ", ".join(change.before) or "nothing"
        after = ", ".join(change.after) or "nothing"
        loaded = ", ".join(change.loaded) or "nothing"
        out.append(visible(f"      {before} → {after}   model loaded: {loaded}\n"), style="dim")
    if len(replay.changes) > MAX_CHANGES:
        out.append(f"… and {len(replay.changes) - MAX_CHANGES} more\n", style="dim")
    return out


class HistoryPanel(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static("Reading the telemetry log…", id="history-body")

    def show(self, report: UsageReport, replay: Replay | None, source: str) -> None:
        self.query_one("#history-body", Static).update(history_text(report, replay, source))

    def message(self, text: str) -> None:
        self.query_one("#history-body", Static).update(plain(text))
