"""The bench's plain-text report: one row per metric and size, then each row's note."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _fmt(value: float | None, unit: str = "ms") -> str:
    if value is None:
        return "-"
    if unit == "MB":
        return f"{value:.0f} MB"
    if unit == "ms/skill":
        return f"{value:.2f} ms/sk"
    if unit == "x":
        return f"{value:.2f} x"
    return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"


def _baseline_text(row: dict[str, Any]) -> str:
    baseline = row.get("baseline")
    if not baseline:
        return "-"
    if "median_ms" in baseline:
        return _fmt(baseline["median_ms"])
    return _fmt(baseline.get("value"), row.get("unit", "ms"))


def _verdict(passed: bool | None) -> str:
    """None: nothing to judge against (an optional baseline package is not installed)."""
    return "NOT JUDGED" if passed is None else ("PASS" if passed else "FAIL")


def format_report(result: dict[str, Any]) -> str:
    """A plain-text table (one row per metric and size) followed by each row's note."""
    header = ("metric", "median", "p95", "baseline", "target", "ratio", "verdict")
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for key, row in result.get("metrics", {}).items():
        unit = row.get("unit", "ms")
        if "value" in row:
            median, p95 = _fmt(row["value"], unit), "-"
        else:
            median, p95 = _fmt(row.get("median_ms")), _fmt(row.get("p95_ms"))
        target_value = row.get("target_value")
        target = _fmt(target_value, unit) if target_value is not None else "-"
        ratio = row.get("ratio")
        verdict = "ERROR" if "error" in row else _verdict(row.get("pass", False))
        rows.append(
            (
                key,
                median,
                p95,
                _baseline_text(row),
                target,
                f"{ratio:.2f}" if isinstance(ratio, float) else "-",
                verdict,
            )
        )
        notes.append(f"{key}: {row.get('target', '')}; {row.get('note', '')}".strip())
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    out = [line(header), line(["-" * width for width in widths])]
    out.extend(line(cells) for cells in rows)
    meta = result.get("meta", {})
    if meta:
        out.append("")
        out.append(
            f"python {meta.get('python')}, onnxruntime {meta.get('onnxruntime')}, "
            f"{meta.get('cpus')} cpus, model {meta.get('model')}, "
            f"elapsed {meta.get('elapsed_s', 0.0):.1f} s"
        )
    if notes:
        out.append("")
        out.extend(notes)
    return "\n".join(out)
