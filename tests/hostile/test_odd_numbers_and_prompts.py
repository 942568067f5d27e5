"""Odd numbers in every numeric setting, prompts far longer than any model reads, and
prompts with characters no tokenizer takes.

NaN, infinity and minus infinity, in every numeric field, from a config file and from
`--set`: each is refused with the key and the source named (config.coerce, ranges.py), and
the hook, which skips an unusable file instead of failing, routes on as before. A 2 MB
prompt through the hook, with both models, costs a bounded, linear amount more than a
short one (the router reads its two ends, routing.md §2.6, and each model only what it
reads: embed.readable_chars). A lone surrogate (a command line's byte that is not UTF-8, half a
pair in a JSON escape) reaches each model as U+FFFD (text.scrub_surrogates): the tokenizers
refused the whole prompt for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import get_args

import pytest

from explorer.engine.base.config import _HINTS, PROJECT_CONFIG_NAME, ConfigError, load_config
from explorer.engine.host.hook import answer_hook
from tests.conftest import REPO, SAMPLE_SKILLS

NUMERIC = sorted(
    name
    for name, hint in _HINTS.items()
    if hint in (int, float) or set(get_args(hint)) & {int, float}
)
ODD = ("nan", "inf", "-inf")
PROMPT = "merge these two report.pdf files into one"


def test_every_numeric_setting_is_covered() -> None:
    assert len(NUMERIC) >= 28 and {"hook_budget_ms", "watch_debounce_ms"} <= set(NUMERIC)


@pytest.mark.parametrize("value", ODD)
@pytest.mark.parametrize("name", NUMERIC)
def test_set_refuses_odd_numbers_in_every_numeric_setting(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(assignments=[f"{name}={value}"], use_ski_config=False)
    assert str(raised.value).startswith(f"--set: {name} = ")


@pytest.mark.parametrize("value", ODD)
@pytest.mark.parametrize("name", NUMERIC)
def test_a_config_file_with_odd_numbers_is_refused_and_the_hook_skips_the_key(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / PROJECT_CONFIG_NAME
    path.write_text(f"{name} = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(use_ski_config=False)
    assert str(raised.value).startswith(f"{path}: {name} = ")
    skipped = load_config(use_ski_config=False, strict=False)  # as the hook reads it
    assert any(
        warning.endswith("this key is ignored, the file's others apply")
        for warning in skipped.warnings
    )


def test_three_nans_no_longer_stop_all_injection(tmp_path: Path) -> None:
    """The audit's case: three NaN thresholds were accepted and nothing was ever injected.
    Now `--set` refuses them, and a file holding them is skipped by the hook, which routes."""
    config = tmp_path / "odd.toml"
    config.write_text("min_similarity = nan\nrecall_floor = nan\nhigh_conf = nan\n")
    answer = answer_hook(
        json.dumps({"prompt": PROMPT}),
        cli_roots=[str(SAMPLE_SKILLS)],
        config_file=str(config),
        assignments=("model=bow", "reranker=off"),
        use_ski_config=False,
        cache_dir=str(tmp_path / "cache"),
    )
    assert any("not a finite number" in line for line in answer.warnings), answer.warnings
    assert answer.payload is not None
    assert "pdf" in answer.payload["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    "payload",
    [
        json.dumps({"prompt": "merge two report.pdf files \ud83d into one"}),
        "\ufeff" + json.dumps({"prompt": PROMPT}),  # a byte order mark before the JSON
    ],
    ids=["lone-surrogate", "bom"],
)
def test_an_odd_character_in_the_payload_costs_that_character_not_the_prompt(
    tmp_path: Path, warm_cache_dir: Path, payload: str
) -> None:
    """With the default models, each of which tokenizes the prompt (the skill encoder, the
    cross-encoder, the multilingual encoder): the hook answered nothing for either."""
    answer = answer_hook(
        payload,
        cli_roots=[str(SAMPLE_SKILLS)],
        use_ski_config=False,
        cache_dir=str(warm_cache_dir),
        state_dir=tmp_path / "state",
    )
    assert answer.payload is not None, answer.debug
    assert "- pdf (" in answer.payload["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("command", ["route", "why"])
def test_a_prompt_byte_that_is_not_utf8_is_routed_around(
    command: str, tmp_path: Path, warm_cache_dir: Path
) -> None:
    """A Latin-1 terminal's 'é' (0xE9) on the command line: a traceback, exit 1."""
    done = subprocess.run(
        [
            sys.executable.encode(),
            b"-m",
            b"explorer",
            command.encode(),
            b"merge two report.pdf files \xe9 into one",
            b"--skills",
            os.fsencode(SAMPLE_SKILLS),
            b"--cache-dir",
            os.fsencode(warm_cache_dir),
            b"--no-ski-config",
        ],
        capture_output=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"inject pdf" in done.stdout or b"injected: pdf" in done.stdout, done.stdout


PEAK = """
import resource, subprocess, sys, time
started = time.monotonic()
done = subprocess.run(sys.argv[1:], input=sys.stdin.buffer.read(), capture_output=True)
elapsed = time.monotonic() - started
print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
sys.stdout.flush()
sys.stderr.write(done.stdout.decode(errors="replace"))
"""


@pytest.mark.slow
def test_a_2_mb_prompt_costs_a_bounded_linear_amount_more(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """Through the hook with both default models (stage 2 reads the prompt with every
    candidate): a 10 MB prompt was OOM-killed at 23.5 GB, 100 KB took 2.4 GB and 4.7 s."""

    def hook(prompt: str) -> tuple[float, int, str]:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                PEAK,
                sys.executable,
                "-m",
                "explorer",
                "hook",
                "--skills",
                str(SAMPLE_SKILLS),
                "--cache-dir",
                str(warm_cache_dir),
                "--no-ski-config",
            ],
            input=json.dumps({"prompt": prompt}).encode(),
            capture_output=True,
            timeout=300,
            check=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        elapsed, peak_mb = done.stdout.decode().split()
        return float(elapsed), int(peak_mb), done.stderr.decode()

    hook(PROMPT)  # the warm cache and the store, once
    short_s, short_mb, _ = hook(PROMPT)
    started = time.monotonic()
    long_s, long_mb, answer = hook(PROMPT + " and" + " merge the pdf pages" * 100_000)
    assert time.monotonic() - started < 300
    # Bounded: the channels read 100,000 characters of the 2 MB, the models what they read.
    assert long_mb < short_mb + 500, (short_mb, long_mb)
    assert long_s < short_s + 30.0, (short_s, long_s)
    assert "pdf" in answer  # the answer is still the router's
