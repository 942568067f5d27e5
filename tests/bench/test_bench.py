"""The bench's own plumbing: synthetic libraries, result shape and report. Never timings."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from explorer.bench.cold_open import bench_cold_open
from explorer.bench.hook_cold import bench_hook_cold
from explorer.bench.peak_rss import bench_peak_rss
from explorer.bench.report import format_report
from explorer.bench.run import METRICS, run_bench
from explorer.bench.synthetic import (
    MAX_WORDS,
    MIN_WORDS,
    generate_library,
    synthetic_descriptions,
    synthetic_prompts,
)
from explorer.engine.base.config import Config
from explorer.engine.discovery.skills import discover
from tests.conftest import write_skill


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("SKILL.md")}


def test_generate_library_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    first = _files(generate_library(tmp_path / "a", 40, seed=7))
    second = _files(generate_library(tmp_path / "b", 40, seed=7))
    other = _files(generate_library(tmp_path / "c", 40, seed=8))
    assert len(first) == 40
    assert "skill-00039/SKILL.md" in first
    assert first == second
    assert first != other


def test_generated_skills_parse_with_realistic_descriptions(tmp_path: Path) -> None:
    root = generate_library(tmp_path / "lib", 60, seed=0)
    found = discover([root])
    assert not found.rejected
    assert len(found.skills) == 60
    assert all(not skill.warnings for skill in found.skills)
    ids, descriptions = synthetic_descriptions(60, seed=0)
    assert sorted(ids) == sorted(skill.id for skill in found.skills)
    by_id = dict(zip(ids, descriptions, strict=True))
    for skill in found.skills:
        assert skill.description == by_id[skill.id]
        assert MIN_WORDS <= len(skill.description.split()) <= MAX_WORDS
        assert skill.body
    assert sum("Use when" in text for text in descriptions) == 60


def test_smaller_library_is_a_prefix_of_a_larger_one() -> None:
    assert synthetic_descriptions(10)[1] == synthetic_descriptions(25)[1][:10]


def test_prompts_are_distinct() -> None:
    prompts = synthetic_prompts(300, seed=3, library_size=50)
    assert len(prompts) == len(set(prompts)) == 300


def test_run_bench_decide_warm_shape(tmp_path: Path) -> None:
    result = run_bench(
        None,
        (30,),
        Config(model="bow", reranker="off"),
        repeats=5,
        include={"decide_warm"},
        work_dir=tmp_path,
    )
    json.dumps(result)  # JSON-able
    assert set(result) == {"meta", "metrics"}
    assert list(result["metrics"]) == ["decide_warm@30"]
    row = result["metrics"]["decide_warm@30"]
    for key in ("median_ms", "p95_ms", "target", "target_value", "ratio", "pass", "note"):
        assert key in row
    assert row["metric"] == "decide_warm" and row["size"] == 30 and row["n"] == 5
    assert row["baseline"]["name"] == "embed_query"
    assert isinstance(row["pass"], bool)
    assert "decide_warm" in format_report(result)


def test_run_bench_with_a_skills_dir(tmp_path: Path) -> None:
    library = generate_library(tmp_path / "mine", 12, seed=5)
    result = run_bench(
        str(library),
        (20,),
        Config(model="bow", reranker="off"),
        repeats=3,
        include={"decide_warm"},
        work_dir=tmp_path / "work",
    )
    assert set(result["metrics"]) == {"decide_warm@20", "decide_warm@skills_dir"}
    assert result["metrics"]["decide_warm@skills_dir"]["size"] == 12


def test_unknown_metric_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown metrics"):
        run_bench(None, (10,), Config(model="bow"), include={"nope"}, work_dir=tmp_path)


def test_each_row_shows_its_value_and_target_in_its_own_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A growth ratio reads as a ratio, and the cold index's limit in seconds is set against
    its milliseconds, like the value beside it."""
    from explorer.bench import measure, scale

    ratio = {"metric": "scale_save_rss", "value": 1.15, "unit": "x", **measure.verdict(1.15, 1.1)}
    row = format_report({"meta": {}, "metrics": {"scale_save_rss@20": ratio}}).splitlines()[2]
    assert "1.15 x" in row and "1.10 x" in row and " ms" not in row
    monkeypatch.setattr(measure, "run_child", lambda *_args: measure.ChildRun(18_664.0, 0, "", ""))
    cold = scale.bench_cold_index(tmp_path, tmp_path, 2289, None)
    assert cold["target_value"] == 10_000.0 and abs(cold["ratio"] - 1.8664) < 1e-9
    row = format_report({"meta": {}, "metrics": {"scale_cold_index@2289": cold}}).splitlines()[2]
    assert "18664 ms" in row and "10000 ms" in row and "FAIL" in row


def test_the_scale_bench_times_the_hook_of_every_size_against_one_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook at each size is one series with one floor, run before the saves edit the
    libraries: two floors measured apart in one run differed by up to 15 %."""
    from explorer.bench import bm25_26k, hook_cold, index_build, scale

    calls: list[dict[int, tuple[Path, Path]]] = []
    order: list[str] = []

    def hook(libraries: dict[int, tuple[Path, Path]], work: Path, *, repeats: int) -> dict:
        calls.append(dict(libraries))
        order.append("hook")
        floor = {"median_ms": 100.0}
        return {
            f"hook_cold@{size}": {"median_ms": 100.0 + size, "baseline": floor, "note": "n"}
            for size in libraries
        }

    def save(*_args: object) -> dict:
        order.append("save")
        return {}

    def row(*_args: object) -> dict:
        return {}

    monkeypatch.setattr(hook_cold, "bench_hook_cold", hook)
    monkeypatch.setattr(index_build, "bench_index_build", row)
    monkeypatch.setattr(bm25_26k, "bench_bm25", row)
    monkeypatch.setattr(scale, "find_corpus", lambda: None)
    monkeypatch.setattr(scale, "bench_cold_index", row)
    monkeypatch.setattr(scale, "bench_save", save)
    monkeypatch.setattr(scale, "bench_open", row)
    monkeypatch.setattr(scale, "bench_soak", row)
    monkeypatch.setattr(scale, "bench_ui", lambda *_args: {"keys": {}, "rss": {}})
    monkeypatch.setattr(scale, "bench_lint", row)
    config = Config(model="bow", reranker="off")
    rows = scale.run_scale_bench(config, (6, 9), work_dir=tmp_path)
    assert [sorted(libraries) for libraries in calls] == [[6, 9]]
    assert order == ["hook", "save", "save"]
    assert rows["scale_hook@6"]["pass"] and rows["scale_hook@9"]["pass"]
    assert rows["scale_hook@9"]["ratio"] == pytest.approx(109 / (1.2 * 100))


def test_the_soak_says_where_its_slowest_save_lost_its_time() -> None:
    from explorer.bench.scale import _slowest

    report = {"saves": [150.0, 1606.0, 170.0], "snapshot_ms": [40.0, 1450.0, 45.0]}
    assert _slowest(report) == "slowest, save 2: 1606 ms, its snapshot made after 1450 ms"
    assert _slowest({"saves": [150.0]}) == "no split of the slowest save"


def test_format_report_names_every_metric() -> None:
    metrics = {
        "decide_warm@1000": {
            "metric": "decide_warm",
            "median_ms": 7.5,
            "p95_ms": 9.0,
            "baseline": {"median_ms": 6.0},
            "target": "<= 1.2 x embed + 2 ms",
            "target_value": 9.2,
            "ratio": 0.81,
            "pass": True,
            "note": "n",
        },
        "bm25_26k": {
            "metric": "bm25_26k",
            "median_ms": 1.0,
            "p95_ms": 2.0,
            "target_value": None,
            "ratio": None,
            "pass": False,
            "note": "no bm25s",
        },
        "hook_cold@100": {"metric": "hook_cold", "pass": False, "error": "boom", "note": "boom"},
        "peak_rss_1000": {
            "metric": "peak_rss_1000",
            "value": 250.0,
            "unit": "MB",
            "target_value": 300.0,
            "ratio": 0.83,
            "pass": True,
        },
        "index_build@1000": {
            "metric": "index_build",
            "value": 5.0,
            "unit": "ms/skill",
            "baseline": {"value": 4.5},
            "target_value": 5.6,
            "ratio": 0.89,
            "pass": True,
        },
        "live_save@1000": {
            "metric": "live_save",
            "median_ms": 60.0,
            "p95_ms": 70.0,
            "target_value": 100.0,
            "ratio": 0.6,
            "pass": True,
        },
        "whatif@1000": {
            "metric": "whatif",
            "median_ms": 30.0,
            "p95_ms": 40.0,
            "target_value": 100.0,
            "ratio": 0.3,
            "pass": True,
        },
        "cold_open_warm": {
            "metric": "cold_open",
            "value": 400.0,
            "unit": "ms",
            "target_value": 1000.0,
            "ratio": 0.4,
            "pass": True,
        },
    }
    metrics["bm25_26k_alone"] = {"metric": "bm25_26k", "median_ms": 0.5, "pass": None}
    report = format_report({"meta": {"python": "3.11"}, "metrics": metrics})
    for name in METRICS:
        assert name in report
    assert "PASS" in report and "FAIL" in report and "ERROR" in report
    # Without its optional baseline a row is not judged, neither passed nor failed.
    (alone,) = [line for line in report.splitlines() if line.startswith("bm25_26k_alone ")]
    assert alone.rstrip().endswith("NOT JUDGED")


def test_run_bench_index_build_embeds_every_skill(tmp_path: Path) -> None:
    result = run_bench(None, (24,), Config(model="bow"), include={"index_build"}, work_dir=tmp_path)
    row = result["metrics"]["index_build@24"]
    assert row["unit"] == "ms/skill" and row["size"] == 24
    assert row["note"].startswith("24/24 embedded")
    again = run_bench(None, (24,), Config(model="bow"), include={"index_build"}, work_dir=tmp_path)
    assert again["metrics"]["index_build@24"]["note"].startswith("24/24 embedded")


def test_the_build_floor_embeds_with_every_model_the_build_embeds_with(tmp_path: Path) -> None:
    """Under the learned preset a build embeds each skill twice (MiniLM, the multilingual
    encoder); a floor of MiniLM alone would charge the second model to the build."""
    from explorer.bench.index_build import bench_index_build
    from explorer.engine.inference.cache import EmbeddingCache
    from explorer.engine.inference.embed import BowEmbedder
    from explorer.engine.inference.models import assemble_models

    class Counting(BowEmbedder):
        texts = 0

        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            Counting.texts += len(texts)
            return super().embed_documents(texts)

    library = tmp_path / "skills"
    for number in range(12):
        write_skill(library, f"skill-{number}", f"Handle task number {number} for the team.")
    models = assemble_models(BowEmbedder(), multilingual=Counting())
    cache = EmbeddingCache(tmp_path / "cache")
    learned = bench_index_build(library, Config(preset="learned"), models, cache)
    # 32 to load it; then the build and the floor each embed the 12 skills' texts.
    assert Counting.texts == 32 + 12 + 12
    assert "multilingual" in learned["baseline"]["name"]
    other = bench_index_build(library, Config(preset="reference"), models, cache)
    assert Counting.texts == 32 + 12 + 12 and "multilingual" not in other["baseline"]["name"]


@pytest.mark.slow  # real saves or a child process: seconds
def test_live_save_measures_real_saves(tmp_path: Path) -> None:
    config = Config(model="bow", reranker="off", watch_max_delay_ms=100.0)
    result = run_bench(None, (20,), config, include={"live_save"}, work_dir=tmp_path)
    row = result["metrics"]["live_save@20"]
    assert "error" not in row, row
    assert row["n"] == 30 and 0 < row["median_ms"] <= row["p95_ms"]
    # An author's saves, apart: none waits out a storm's whole delay (docs/watch.md).
    assert row["median_ms"] < config.watch_max_delay_ms
    assert "live_save@20" in format_report(result)


def test_whatif_times_edits_on_the_generated_library(tmp_path: Path) -> None:
    config = Config(model="bow", reranker="off")
    result = run_bench(None, (20,), config, include={"whatif"}, work_dir=tmp_path)
    row = result["metrics"]["whatif@20"]
    assert "error" not in row, row
    assert row["n"] == 30 and 0 < row["median_ms"] <= row["p95_ms"] and row["size"] == 20
    assert "whatif@20" in format_report(result)
    # The flips: the cases the edit reaches, beside deciding every case.
    cases = result["metrics"]["whatif_cases@20"]
    assert "error" not in cases, cases
    assert cases["n"] == 3 and cases["baseline"]["median_ms"] > 0 and "20 cases" in cases["note"]
    assert "whatif_cases@20" in format_report(result)


# The children are real modules run with `python -m`: each must start, measure and report.


@pytest.mark.slow  # real saves or a child process: seconds
def test_peak_rss_child_reports_every_phase(tmp_path: Path) -> None:
    library = generate_library(tmp_path / "lib", 15, seed=1)
    row = bench_peak_rss(library, Config(model="bow", reranker="off"), tmp_path)
    assert "error" not in row, row
    assert row["size"] == 15 and row["unit"] == "MB"
    assert list(row["phases_mb"]["cold"]) == ["imports", "models", "build", "decides"]
    assert 0 < row["phases_mb"]["cold"]["imports"] <= row["value"]


@pytest.mark.slow  # real saves or a child process: seconds
def test_cold_open_child_times_imports_models_and_index(tmp_path: Path) -> None:
    library = generate_library(tmp_path / "lib", 15, seed=1)
    rows = bench_cold_open(library, Config(model="bow", reranker="off"), tmp_path)
    assert set(rows) == {"cold_open_warm", "cold_open_empty"}, rows
    warm = rows["cold_open_warm"]
    assert warm["size"] == 15 and warm["value"] > 0
    assert "imports" in warm["note"] and "15 embedded" in rows["cold_open_empty"]["note"]


@pytest.mark.slow
def test_hook_cold_runs_the_hook_and_the_bare_onnx_baseline(tmp_path: Path) -> None:
    library = generate_library(tmp_path / "lib", 10, seed=1)
    rows = bench_hook_cold({10: (library, tmp_path / "xdg-cache-10")}, tmp_path, repeats=1)
    row = rows["hook_cold@10"]
    assert "error" not in row, row
    assert row["n"] == 1 and row["baseline"]["n"] == 1
    assert row["baseline"]["name"].startswith("explorer.bench.bare_onnx")
    # The hook's default configuration loads the packaged cross-encoder and the multilingual
    # encoder: so does its floor.
    assert "the dense model and the cross-encoder" in row["baseline"]["name"]
    assert "multilingual encoder" in row["baseline"]["name"]


def test_the_hook_floor_runs_both_models_once(tmp_path: Path) -> None:
    """The floor loads and runs what the hook loads: a pair that is not a model fails it."""
    from explorer.engine.inference import find_reranker, load_multilingual, packaged_minilm
    from explorer.engine.inference.multilingual_table import write_table

    model, tokenizer = packaged_minilm()
    reranker, _note = find_reranker(Config())
    assert reranker is not None
    args = [sys.executable, "-m", "explorer.bench.bare_onnx", str(model), str(tokenizer)]
    stdin = json.dumps({"prompt": "merge two pdf files"})
    both = subprocess.run(
        [*args, *map(str, reranker)], input=stdin, capture_output=True, text=True, timeout=120
    )
    assert both.returncode == 0 and json.loads(both.stdout) == {"ok": True}, both.stderr
    table = tmp_path / "multilingual.table"
    write_table(Path(load_multilingual().model_path), table)
    multilingual = subprocess.run(
        [args[0], *args[1:3], "--multilingual", str(table), *args[3:], *map(str, reranker)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert multilingual.returncode == 0, multilingual.stderr
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    failed = subprocess.run(
        [*args, str(broken), str(reranker[1])], input=stdin, capture_output=True, text=True
    )
    assert failed.returncode != 0
    usage = subprocess.run([*args, str(broken)], input=stdin, capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_children_run_from_compiled_bytecode_outside_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bench child must not compile the package from source on every call (what
    PYTHONDONTWRITEBYTECODE in the caller's environment would make it do): that is no
    cost an installed package pays, and it was a third of the hook's gap to its floor."""
    import subprocess
    import sys

    from explorer.bench import measure

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = measure.child_env(tmp_path / "xdg-cache", tmp_path / "xdg-config")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    prefix = Path(env["PYTHONPYCACHEPREFIX"])
    assert prefix == tmp_path / "pycache"
    code = "import explorer.engine.base.text, sys; print(sys.dont_write_bytecode)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
    assert list(prefix.rglob("text*.pyc"))


def test_an_explorer_in_a_bench_starts_from_the_default_layout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The user's saved layout (a column sorted by, panels) is no part of what a bench
    times: children get a state directory of their own, and so does an explorer made in
    the bench's own process while it runs."""
    from explorer.bench import measure
    from explorer.tui.state import load_state, save_state, state_path

    user = tmp_path / "user-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(user))
    saved = load_state()
    saved.sort_key = "bm25"
    save_state(saved)
    assert load_state().sort_key == "bm25"
    env = measure.child_env(tmp_path / "bench" / "xdg-cache", tmp_path / "bench" / "xdg-config")
    assert env["XDG_STATE_HOME"] == str(tmp_path / "bench" / "xdg-state")
    with measure.own_state(tmp_path / "bench" / "xdg-state"):
        assert load_state().sort_key == "decision"
        assert not state_path().is_relative_to(user)
    assert load_state().sort_key == "bm25"
