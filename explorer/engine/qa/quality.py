"""Routing quality per library: recall, false-inject rate, top-1 and recall@k, by split.

Used by `eval --by-library`, `bench --only quality` and the committed-baseline test, so
the three can never disagree about what a figure means. Every number comes from
`evaluate()`, i.e. from the one cascade.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import Index
from explorer.engine.qa.evaluate import EvalReport, Rates, evaluate
from explorer.engine.qa.libraries import LibraryCases

SCHEMA = "skill-explorer/quality@1"
SPLITS = ("train", "validation")
TOLERANCE = 0.02  # the committed baseline may lose this much recall before the test fails


@dataclass(frozen=True)
class LibraryQuality:
    """One library, one split, one config."""

    library: str
    skills: int
    split: str
    rates: Rates
    by_kind: dict[str, float | None]
    report: EvalReport

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "skills": self.skills,
            "split": self.split,
            **self.rates.by_library(),
            "by_kind": self.by_kind,
        }


def by_library(
    libraries: Sequence[tuple[LibraryCases, Index]],
    config: Config,
    splits: Sequence[str] = ("validation",),
    *,
    label: str = "",
    progress: Callable[[str], None] | None = None,
) -> list[LibraryQuality]:
    """Route every case of the chosen splits of every library; one figure set each.
    `progress` hears of each library and split as its routing starts (minutes, all told)."""
    results: list[LibraryQuality] = []
    for cases, index in libraries:
        for split in splits:
            subset = cases.train if split == "train" else cases.validation
            if not subset:
                continue
            if progress is not None:
                progress(
                    f"{cases.spec.name}: routing {len(subset):,} {split} cases over "
                    f"{len(index):,} skills"
                )
            report = evaluate(subset, index, config, label=label or cases.spec.name)
            results.append(
                LibraryQuality(
                    cases.spec.name,
                    len(index),
                    split,
                    Rates.from_report(report),
                    {kind: value.rate for kind, value in report.by_kind.items()},
                    report,
                )
            )
    return results


def quality_dict(results: Sequence[LibraryQuality], config: Config) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "preset": config.preset,
        "libraries": [result.to_dict() for result in results],
    }


def regressions(
    measured: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float = TOLERANCE
) -> list[str]:
    """What fell more than `tolerance` below (recall) or rose above (false injects) the
    committed figures; a library or split missing from the run is a regression too.
    Both arguments are `quality_dict` forms (the JSON `bench --only quality` writes)."""
    found: list[str] = []
    have = {(entry["library"], entry["split"]): entry for entry in measured.get("libraries", [])}
    for entry in baseline.get("libraries", []):
        key = (entry["library"], entry["split"])
        now = have.get(key)
        if now is None:
            found.append(f"{key[0]} ({key[1]}): not measured")
            continue
        recall, committed = now.get("recall"), entry.get("recall")
        if committed is not None and (recall or 0.0) < committed - tolerance:
            found.append(
                f"{key[0]} ({key[1]}): recall {recall or 0.0:.3f} < committed "
                f"{committed:.3f} - {tolerance}"
            )
        fir, committed = now.get("false_inject_rate"), entry.get("false_inject_rate")
        if committed is not None and (fir or 0.0) > committed + tolerance:
            found.append(
                f"{key[0]} ({key[1]}): false-inject rate {fir:.3f} > "
                f"committed {committed:.3f} + {tolerance}"
            )
    return found


def read_baseline(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data
