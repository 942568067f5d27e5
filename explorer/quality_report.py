"""Plain-text and Markdown renderings of the multi-library calibration and quality figures.

The Markdown form is what docs/calibration.md's generated report is pasted from,
so a person can regenerate them with one command and diff the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from explorer.engine.qa import MultiCalibration, Rates

PRESET_KEYS = (
    "bm25_weight",
    "min_similarity",
    "floor_log_slope",
    "score_margin",
    "keyword_generic_guard",
    "keyword_min_cosine",
    "lexical_min",
    "lexical_margin",
    "lexical_min_cosine",
)


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def rows_markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def rows_text(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [
        max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        pairs = zip(cells, widths, strict=True)
        return "  ".join(cell.ljust(width) for cell, width in pairs).rstrip()

    return [line(headers), line(["-" * width for width in widths]), *(line(row) for row in rows)]


def _share(part: int, whole: int) -> str:
    return "—" if not whole else f"{part / whole:.2f} ({part}/{whole})"


def rates_cells(rates: Rates) -> list[str]:
    """recall, false injects on plain negatives, on near-misses, top-1, recall@k."""
    return [
        f"{_num(rates.recall)} ({rates.hits}/{rates.positives})",
        _share(rates.plain_false_injects, rates.plain_negatives),
        _share(rates.near_miss_injects, rates.near_misses),
        _num(rates.top1),
        _num(rates.recall_at_k),
    ]


RATES_HEADERS = ["recall", "false-inject", "near-miss inject", "top-1", "recall@k"]


def _sections(report: MultiCalibration) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, headers, rows, note) for each table of the report."""
    recommended = [[key, _value(report.recommended[key])] for key in PRESET_KEYS]
    names = [library.name for library in report.libraries]
    fusion_rows = []
    for summary in report.structures:
        values = summary.values
        if values["keyword_generic_guard"] or values["keyword_min_cosine"]:
            continue  # guards: shown in the guard table
        fusion_rows.append(
            [
                f"fused, bm25_weight {values['bm25_weight']:g}"
                if values["bm25_weight"]
                else "reference channels (bm25_weight 0)",
                *(_num(summary.top1.get(name)) for name in names),
                _num(summary.best_macro_recall),
            ]
        )
    rrf = report.rrf
    fusion_rows.append(
        [
            f"reciprocal-rank fusion (k {rrf['k']})",
            *(_num(rrf["top1"].get(name)) for name in names),
            _num(rrf["best_macro_recall"]),
        ]
    )
    weight = report.recommended["bm25_weight"]
    guard_rows = [
        [
            _value(summary.values["keyword_generic_guard"]),
            _value(summary.values["keyword_min_cosine"]),
            _num(summary.best_macro_recall),
        ]
        for summary in report.structures
        if summary.values["bm25_weight"] == weight
    ]
    library_rows = []
    for library in report.libraries:
        for split, by_label in (("train", library.train), ("validation", library.validation)):
            for label, rates in by_label.items():
                library_rows.append(
                    [library.name, str(library.skills), split, label, *rates_cells(rates)]
                )
    knee_rows = [
        [
            library.name,
            str(library.skills),
            f"{library.floor:.3f}",
            _num(library.best_constant_floor, 3),
        ]
        for library in report.libraries
    ]
    frontier_rows = [
        [
            f"{point['budget']:.2f}",
            f"{point['near_miss_budget']:.2f}",
            _num(point["macro_recall"]),
            *(_num(point.get("recall", {}).get(name)) for name in names),
            ""
            if point["macro_recall"] is None
            else f"w {point['values']['bm25_weight']:g}, floor "
            f"{point['values']['min_similarity']:.2f}"
            f"{point['values']['floor_log_slope']:+g}·ln(N/200), margin "
            f"{point['values']['score_margin']:g}",
        ]
        for point in report.frontier
    ]
    budget = report.budget
    return [
        (
            "Recommended values (preset calibrated)",
            ["option", "value"],
            recommended,
            f"Chosen on train only. Objective: {report.objective}; budget {budget.negatives:g} "
            f"on plain negatives and {budget.near_misses:g} on near-misses, scope "
            f"{budget.scope}.",
        ),
        (
            "Fusion on train: stage-1 top-1 per library, and the best mean recall within the "
            "false-inject budget",
            ["stage-1 score", *names, "best mean recall"],
            fusion_rows,
            "Guards off. The RRF row ranks by 1/(60+dense rank)+1/(60+BM25 rank) and gates on "
            "its top value; it is a diagnostic, not an option.",
        ),
        (
            "The recall / false-inject frontier on train (best point per pair of budgets)",
            ["negatives", "near-misses", "mean recall", *names, "at"],
            frontier_rows,
            "Each row allows those train false-inject rates on plain negatives and on "
            f"near-misses; only the {budget.negatives:g} / {budget.near_misses:g} row is the "
            "recommendation.",
        ),
        (
            f"Guards on train at bm25_weight {weight:g} (best mean recall within the budget)",
            ["keyword_generic_guard", "keyword_min_cosine", "best mean recall"],
            guard_rows,
            "The fast-path guard (lexical_min_cosine) is swept with the fast path itself.",
        ),
        (
            "Per library: the floor in force and each library's own train knee",
            ["library", "N", "floor in force", "own best constant floor"],
            knee_rows,
            "floor in force = min_similarity + floor_log_slope x ln(N/200). The own knee is "
            "the middle of the best floors for that library alone (same structure and margin).",
        ),
        (
            "Per library and split: reference preset vs the recommendation",
            ["library", "N", "split", "config", *RATES_HEADERS],
            library_rows,
            "Validation cases were never seen while choosing.",
        ),
    ]


def calibration_text(report: MultiCalibration) -> str:
    lines = [
        f"calibration over {len(report.libraries)} libraries, model {report.model}, "
        f"{report.grid_size} grid points, {report.decide_calls} decide() calls, "
        f"{report.seconds:.1f} s",
        f"check: {report.verify_note}",
    ]
    for title, headers, rows, note in _sections(report):
        lines += ["", title + ":", *rows_text(headers, rows)]
        if note:
            lines.append(f"  ({note})")
    for library in report.libraries:
        lines += [f"warning: {warning}" for warning in library.warnings]
    return "\n".join(lines)


def calibration_markdown(report: MultiCalibration) -> str:
    lines = [
        f"Generated by `skill-explorer calibrate --manifest ... --markdown` (model "
        f"{report.model}, {report.grid_size:,} grid points, {report.decide_calls:,} "
        f"decide() calls). {report.verify_note.capitalize()}.",
    ]
    for title, headers, rows, note in _sections(report):
        lines += ["", f"**{title}**", "", *rows_markdown(headers, rows)]
        if note:
            lines += ["", note]
    return "\n".join(lines) + "\n"


def toml_values(report: MultiCalibration) -> str:
    """The recommendation as a config layer (e.g. to pin it, or to review a new preset)."""
    lines = ["# skill-explorer calibrate (several libraries): chosen on their train splits"]
    lines += [f"{key} = {_value(report.recommended[key]).lower()}" for key in PRESET_KEYS]
    return "\n".join(lines) + "\n"


def quality_text(data: dict[str, Any], *, benchmarks: bool = False) -> str:
    """The per-library table, then the baseline's verdict; `benchmarks`: the libraries are
    the benchmark manifest's, which the learned preset's model was trained on."""
    headers = ["library", "N", "split", *RATES_HEADERS]
    rows = []
    for entry in data["libraries"]:

        def num(key: str, entry: dict[str, Any] = entry) -> str:
            value = entry.get(key)
            return "—" if value is None else f"{value:.2f}"

        near, near_injects = entry.get("near_misses", 0), entry.get("near_miss_injects", 0)
        rows.append(
            [
                entry["library"],
                str(entry["skills"]),
                entry["split"],
                f"{num('recall')} ({entry['hits']}/{entry['positives']})",
                _share(entry["false_injects"] - near_injects, entry["negatives"] - near),
                _share(near_injects, near),
                num("top1"),
                num("recall_at_k"),
            ]
        )
    lines = [f"routing quality, preset {data['preset']}:", *rows_text(headers, rows)]
    baseline = data.get("baseline")
    if baseline:
        found = baseline["regressions"]
        verdict = "PASS" if not found else "FAIL"
        lines.append(f"baseline {baseline['path']}: {verdict}")
        lines += [f"  {problem}" for problem in found]
    if data["preset"] == "learned" and benchmarks:
        # The relevance model was trained on every benchmark prompt: these figures pin it
        # against regressions; what it does on libraries it never saw is measured apart.
        lines.append(
            "the learned preset's model was trained on these libraries: a regression pin, not "
            "its quality; leave-library-out figures: docs/quality.md"
        )
    return "\n".join(lines)
