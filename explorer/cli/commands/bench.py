"""`bench`: speed and memory against the targets, each beside a same-run baseline."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from explorer.cli.base import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Command, add_common_options, say
from explorer.engine import LoadedConfig

DEFAULT_SIZES = "100,1000"


class BenchCommand(Command):
    name = "bench"
    help = "measure speed and memory against the targets"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--sizes",
            default=DEFAULT_SIZES,
            help="library sizes (default 100,1000; for --only scale, 2289,26000; for --only "
            "ui, 100,1000,2300)",
        )
        parser.add_argument(
            "--repeats", type=int, default=50, help="prompts per timing (default 50)"
        )
        parser.add_argument(
            "--only",
            action="append",
            default=[],
            metavar="METRIC",
            help="run only this metric (repeatable)",
        )
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument(
            "--manifest",
            metavar="FILE",
            help="quality: the benchmark libraries (default benchmarks/libraries.toml)",
        )
        parser.add_argument(
            "--quality-json",
            metavar="FILE",
            default="quality-bench.json",
            help="quality: where to write its figures as JSON (default quality-bench.json)",
        )
        parser.add_argument("--out", metavar="FILE", help="also write the results as JSON here")
        parser.add_argument(
            "--corpus",
            metavar="FILE",
            help="scale: a JSONL corpus of {name, description} (default: the repo's copy "
            "under benchmarks/libraries/, else synthetic descriptions)",
        )
        parser.add_argument(
            "--scale-build-all",
            action="store_true",
            help="scale: also time the cold build above 5,000 skills (many minutes)",
        )
        parser.add_argument("--work-dir", metavar="DIR", help="keep libraries and caches here")
        add_common_options(parser)

    def run(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        from explorer.bench.report import format_report
        from explorer.bench.run import run_bench

        try:
            sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
        except ValueError:
            say(f"--sizes {args.sizes!r}: expected numbers like 100,1000")
            return EXIT_USAGE
        only = set(args.only)
        ui = not only or "ui" in only
        quality = "quality" in only  # needs the benchmark libraries: only when asked for
        scale = "scale" in only
        reranker = "reranker" in only  # stage-2 speed of the reranker the config loads
        engine_metrics = only - {"ui", "quality", "scale", "reranker"}
        result: dict[str, Any] = {"meta": {}, "metrics": {}}
        if quality:
            status = self._quality(args, loaded)
            if only == {"quality"}:
                return status
        if reranker:
            from explorer.bench.reranker import reranker_bench

            row = reranker_bench(loaded.config, args.cache_dir)
            if only == {"reranker"}:
                print(json.dumps(row, indent=2) if args.json else _reranker_text(row))
                return EXIT_FAILED if "error" in row else EXIT_OK
            result["metrics"]["reranker_stage2"] = row
        if scale:
            from pathlib import Path

            from explorer.bench.scale import SCALE_SIZES, run_scale_bench, scale_meta

            began = time.perf_counter()

            result["meta"]["scale_sizes"] = (
                sizes if args.sizes != DEFAULT_SIZES else list(SCALE_SIZES)
            )
            result["metrics"].update(
                run_scale_bench(
                    loaded.config,
                    result["meta"]["scale_sizes"],
                    corpus=args.corpus,
                    work_dir=Path(args.work_dir) if args.work_dir else None,
                    cache_dir=args.cache_dir,
                    build_all=args.scale_build_all,
                )
            )
            result["meta"].update(scale_meta(loaded.config, began))
        if not only or engine_metrics:
            engine = run_bench(
                args.skills[0] if args.skills else None,
                sizes,
                loaded.config,
                repeats=args.repeats,
                include=engine_metrics or None,
            )
            result["meta"].update(engine["meta"])
            result["metrics"].update(engine["metrics"])
        if ui:
            from pathlib import Path

            from explorer.bench.ui import UI_SIZES, run_ui_bench

            ui_sizes = tuple(sizes) if args.sizes != DEFAULT_SIZES or not only else UI_SIZES
            result["metrics"].update(
                run_ui_bench(
                    ui_sizes,
                    loaded.config,
                    corpus=args.corpus,
                    work_dir=Path(args.work_dir) if args.work_dir else None,
                )
            )
        print(json.dumps(result, indent=2) if args.json else format_report(result))
        if args.out:
            with open(args.out, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=2)
        return EXIT_OK

    def _quality(self, args: argparse.Namespace, loaded: LoadedConfig) -> int:
        """Routing quality per benchmark library (validation split), JSON written to a file."""
        from explorer.bench.quality import quality_bench
        from explorer.engine.qa import CaseError, LibraryError
        from explorer.quality_report import quality_text

        try:
            data = quality_bench(loaded.config, args.cache_dir, args.manifest)
        except (LibraryError, CaseError, OSError) as error:
            say(str(error))
            return EXIT_USAGE
        text = json.dumps(data, indent=2)
        with open(args.quality_json, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        print(text if args.json else quality_text(data, benchmarks=args.manifest is None))
        if not args.json:
            print(f"wrote {args.quality_json}")
        regressions = data.get("baseline", {}).get("regressions")
        return EXIT_FAILED if regressions else EXIT_OK


def _reranker_text(row: dict[str, Any]) -> str:
    """`bench --only reranker` for a person: stage 2 beside the same run's query embedding."""
    if "error" in row:
        return str(row["error"])
    verdict = "meets" if row["meets_target"] else "misses"
    return (
        f"reranker {row['reranker']} on {row['library']}: stage 2 on {row['candidates']} "
        f"candidates, median {row['stage2_median_ms']:.2f} ms (p90 {row['stage2_p90_ms']:.2f}) "
        f"over {row['prompts']} prompts; query embedding median "
        f"{row['query_embedding_median_ms']:.2f} ms in the same run (ratio "
        f"{row['ratio_to_embedding']:.2f}); {verdict} the {row['target_ms']:.0f} ms target"
    )
