"""The CLI as a user runs it: real subprocesses for the entry points, in-process for the rest."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.cells import cell_len

from explorer.cli import build_parser, main
from explorer.engine.route.relevance import CHANNELS, FEATURES
from tests.conftest import REPO, SAMPLE_SKILLS

SAMPLES = str(SAMPLE_SKILLS)
# Every sample skill routes, the one with invalid YAML included (it is recovered, §1.3).
SAMPLE_COUNT = sum(1 for _ in SAMPLE_SKILLS.glob("*/SKILL.md"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ctrl_c_ends_a_command_with_130_and_no_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from explorer.cli.commands.route import RouteCommand

    def interrupted(*_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(RouteCommand, "run", interrupted)
    code, out, err = run(capsys, "route", "merge pdf", "--skills", SAMPLES)
    assert (code, out, err) == (130, "", "skill-explorer: interrupted\n")


@pytest.mark.parametrize("wrong", [["--cache-dir"], ["--event", "Bogus"], ["--no-such-flag"]])
def test_a_hook_command_line_that_is_wrong_never_blocks_the_prompt(
    capsys: pytest.CaptureFixture[str], wrong: list[str]
) -> None:
    """A host reads exit 2 from a UserPromptSubmit hook as "block this prompt": a typo in
    the hook's own command line is said on stderr and exits 0, with nothing on stdout."""
    code, out, err = run(capsys, "hook", *wrong)
    assert (code, out) == (0, "") and "error:" in err
    with pytest.raises(SystemExit) as usage:  # any other command: bad usage is exit 2
        main(["route", "--no-such-flag"])
    assert usage.value.code == 2


def test_an_option_a_command_lacks_is_never_read_as_a_longer_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`route --skill pdf` is an error with route's usage, not a second `--skills` root
    (argparse's abbreviations); `why --top 0` is refused."""
    for argv, said in (
        (["route", "merge pdf", "--skills", SAMPLES, "--skill", "pdf"], "unrecognized"),
        (["why", "merge pdf", "--skills", SAMPLES, "--top", "0"], "--top: 0 must be above 0"),
    ):
        with pytest.raises(SystemExit) as usage:
            main(argv)
        err = capsys.readouterr().err
        assert usage.value.code == 2 and said in err, err
        assert err.startswith(f"usage: skill-explorer {argv[0]} ")


def test_a_cwd_that_is_no_directory_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A mistyped --cwd would feed the project channel nothing and say nothing."""
    for command in ("route", "why"):
        with pytest.raises(SystemExit) as usage:
            main([command, "merge pdf", "--skills", SAMPLES, "--cwd", str(tmp_path / "nope")])
        assert usage.value.code == 2
        assert f"--cwd: {tmp_path / 'nope'}: not a directory" in capsys.readouterr().err


def test_watch_takes_a_directory_or_one_skill_md_as_a_root(tmp_path: Path) -> None:
    from explorer.cli.roots import watchable

    skill = tmp_path / "pdf" / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text("---\nname: pdf\ndescription: Merge PDF files.\n---\n")
    assert watchable([str(skill)]) and watchable([str(tmp_path)])
    assert watchable([str(tmp_path / "nope"), str(tmp_path)])
    assert not watchable([str(tmp_path / "nope")])


def test_watch_on_roots_none_of_which_exists_stops_with_a_usage_error(tmp_path: Path) -> None:
    """Watching a path that is not there would wait forever on nothing (a subprocess, so
    that a watch that keeps running fails here instead of hanging the run)."""
    missing = tmp_path / "nope"
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "watch", str(missing), "--set", "model=bow"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    said = f"skill-explorer: nothing to watch: no such file or directory: {missing}\n"
    assert done.stderr == said


def test_the_explorer_on_roots_none_of_which_exists_stops_with_a_usage_error(
    tmp_path: Path, capsys
) -> None:
    """It opened a table whose one row was the missing root, squeezed under the columns."""
    missing = tmp_path / "nope"
    code, out, err = run(capsys, str(missing), "--set", "model=bow")
    assert (code, out) == (2, "")
    assert err == (
        f"skill-explorer: nothing to explore: no such file or directory: {missing} "
        "(skill-explorer DIR opens a skills folder)\n"
    )


def test_route_json_has_the_documented_keys(capsys) -> None:
    code, out, _ = run(capsys, "route", "merge two report.pdf files", "--skills", SAMPLES, "--json")
    assert code == 0
    data = json.loads(out)
    assert {"schema", "prompt", "stage", "injected", "skills", "gates", "timings_ms"} <= set(data)
    assert data["injected"][0]["id"] == "pdf" and 0 < data["injected"][0]["confidence"] <= 1
    row = data["skills"][0]
    assert {"id", "cosine", "score", "bm25", "rerank", "relevance", "verdict"} <= set(row)
    # The default preset's relevance model reads every candidate's logit (§9.12).
    assert isinstance(row["rerank"], float) and 0 < row["relevance"] <= 1
    candidates = data["relevance"]["candidates"]
    assert set(candidates[row["id"]]["contributions"]) == set(candidates[row["id"]]["features"])
    room = candidates[row["id"]]["room"]  # §9.12, "Room": each channel's, largest first
    assert set(room) == set(CHANNELS) and list(room.values()) == sorted(room.values())[::-1]
    assert all({"name", "passed"} <= set(gate) for gate in data["gates"])


def test_route_text_and_invalid_yaml_warning(capsys) -> None:
    code, out, err = run(
        capsys, "route", "write a commit message for my staged diff", "--skills", SAMPLES
    )
    assert code == 0 and "inject git-commit-writer" in out
    assert out.splitlines()[1].endswith("(high, its SKILL.md body injected)")  # not "(high, body)"
    assert "meeting-notes-summarizer/SKILL.md:3: invalid YAML" in err


def test_route_with_nothing_injected_names_the_skill_that_came_closest(capsys) -> None:
    """With nothing injected, route names the skill that nearly took the prompt and the
    number that kept it out (the first row's reason, as why's), so a user need not guess."""
    argv = ("what year was the pdf format invented", "--skills", SAMPLES)
    code, out, _ = run(capsys, "route", *argv, "--json")
    decision = json.loads(out)
    assert code == 0 and decision["injected"] == []
    first = decision["skills"][0]["id"]
    code, out, _ = run(capsys, "route", *argv)
    lines = out.splitlines()
    assert lines[1].startswith("no skill injected")
    assert lines[2].startswith(f"best candidate: {first}: relevance: p ")
    assert lines[3] == "(skill-explorer why PROMPT says what moved each skill)"
    code, out, _ = run(
        capsys, "route", "write a commit message for my staged diff", "--skills", SAMPLES
    )
    assert "best candidate" not in out and "why PROMPT" not in out
    code, out, _ = run(capsys, "route", "  ", "--skills", SAMPLES)  # no skill was scored
    assert code == 0 and "best candidate" not in out


def test_why_explains_a_losing_skill(capsys) -> None:
    code, out, _ = run(
        capsys,
        "why",
        "merge two pdf files",
        "--skills",
        SAMPLES,
        "--skill",
        "xlsx",
        "--top",
        "3",
        "--set",
        "preset=reference",  # the full cascade: the calibrated fast path would decide first
    )
    assert code == 0
    assert "gates, in cascade order:" in out and "recall_floor" in out
    assert "BM25 terms for xlsx" in out and "missing from the description" in out
    assert f"… {SAMPLE_COUNT - 4} more skills" in out  # the first 3, and xlsx below them
    assert "what it adds to the log-odds" not in out  # no relevance model, no such numbers


def test_the_channel_table_fits_an_80_column_terminal_by_leaving_columns_out(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns every cell used to be cut to "0.…". Now whole columns give way, those
    of one value first, and a line says which; a wide page keeps them all."""
    prompt = "make a poster for our jazz night"
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES)
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("hybrid#"))
    end = next(n for n, line in enumerate(lines) if line.startswith("left out"))
    assert code == 0 and all(len(line) <= 80 for line in lines[start : end + 2])
    assert lines[start].split() == [
        "hybrid#",
        "skill",
        "verdict",
        "cos",
        "bm25",
        "rerank",
        "p",
        "overlap",
    ]
    assert not any("…" in line for line in lines[start:end])  # no cell is cut
    # A p under a hundredth reads <.01, as in the explorer: a column of 0.00 read as ties.
    assert "<.01" in [line.split()[-2] for line in lines[start + 1 : end]]
    assert "left out to fit 80 columns: proj, file, ph, fused, kw (all 0.00); jacc," in out
    # The legend says what the kept columns stand for, and no more.
    first = next(n for n, line in enumerate(lines) if line.startswith("columns: hybrid#"))
    legend_text = " ".join(" ".join(lines[first : lines.index("", first)]).split())
    assert "bm25 the BM25 score" in legend_text and "p the relevance" in legend_text
    assert "jacc" not in legend_text and "score =" not in legend_text
    # A reason's numbers are contributions to the log-odds, not the features' values.
    legend = lines.index(next(line for line in lines if line.startswith("why (")))
    assert lines[legend + 1].startswith("  (beside a feature: what it adds to the log-odds s")
    # The four largest shares are named; the rest is one sum, said to be one.
    assert f", the other {len(FEATURES) - 4} features " in out
    monkeypatch.setenv("COLUMNS", "200")
    _, wide, _ = run(capsys, "why", prompt, "--skills", SAMPLES)
    assert "left out" not in wide and " kw " in wide and " jacc" in wide
    # Piped, the legend is one whole line (docs/cli.md), whatever COLUMNS says.
    legend_line = next(line for line in wide.splitlines() if line.startswith("columns: "))
    assert "score = cos" in legend_line and legend_line.endswith(
        "; jacc the Jaccard of the prompt's and the description's terms"
    )


def test_the_failures_of_eval_fit_80_columns_a_case_a_line(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns each prompt wrapped a word a line and skill ids were cut to
    'kubernete…': columns give way now, and the prompt and the gate end in an ellipsis."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "eval", str(SAMPLE_SKILLS / "cases.toml"), "--skills", SAMPLES)
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("failures ("))
    end = next(n for n, line in enumerate(lines) if line.startswith("left out to fit 80"))
    rows = lines[start + 2 : end]
    assert code == 0 and rows and all(cell_len(line) <= 80 for line in lines[start:end])
    assert all(line[:5].strip().isdigit() for line in rows)  # no row wraps onto a second
    assert "kubernetes-debugger#1" in out and "database-schema-designer#1" in out


def test_the_channel_table_lists_the_decisions_order_under_the_hybrid_rank(capsys) -> None:
    """The injected skill comes first, under its rank by hybrid score, 2: the rank that
    --json and eval give it (sql-query-optimizer has the best hybrid score; the relevance
    model decides by p). The rows after it follow p, the model's order, not the hybrid
    rank: data-chart-maker (p 0.0018, 4th by hybrid score) before productivity-helper
    (3rd)."""
    prompt = "write a bean-query report of my grocery spending per month"
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES, "--top", "3")
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("hybrid#"))
    rows = [line.split()[:2] for line in lines[start + 1 : start + 4]]
    assert code == 0 and rows[0] == ["2", "plaintext-accounting"]
    assert rows[1] == ["1", "sql-query-optimizer"] and rows[2] == ["4", "data-chart-maker"]
    _, decision, _ = run(capsys, "route", prompt, "--skills", SAMPLES, "--json")
    ranks = {row["id"]: row["rank"] for row in json.loads(decision)["skills"]}
    assert ranks["sql-query-optimizer"] == 1 and ranks["plaintext-accounting"] == 2


def test_why_says_where_each_skill_under_the_bar_has_room(capsys) -> None:
    """Under the relevance model's section, each candidate kept under the bar gets a room
    line (the channels at their strongest and the p then), and a legend says what it is;
    the injected skill gets none."""
    prompt = "write a bean-query report of my grocery spending per month"
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES, "--top", "3")
    section = out[out.index("relevance model (") :].split("\n\n")[0].splitlines()
    names = [
        line.split(":")[0].strip() for line in section if line.startswith("  ") and ": p " in line
    ]
    rooms = [n for n, line in enumerate(section) if line.startswith("    room: ")]
    assert code == 0 and names[0] == "plaintext-accounting" and len(names) == 3
    assert len(rooms) == 2 and all(section[n - 1].startswith("  ") for n in rooms)
    assert section[1].startswith("  plaintext-accounting") and "room" not in section[2]
    assert re.match(r"    room: \w[\w ]* → p \d\.\d+ \(s \+\d+\.\d\)", section[rooms[0]])
    assert section[-1].startswith("  (room: the p a channel would give, and what it would add")


def test_why_shows_the_skill_that_came_closest_wherever_it_ranks(capsys) -> None:
    """regex-builder is the relevance model's best for a Chinese request (p 0.09, under
    the bar) but 9th by hybrid score: the row that explains the miss is the table's first,
    under its own rank, since the rows follow p."""
    prompt = "帮我写一个正则表达式来匹配邮箱地址"
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES)
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("hybrid#"))
    end = next(n for n, line in enumerate(lines) if line.startswith("… "))
    rows = [line.split()[:2] for line in lines[start + 1 : end]]
    assert code == 0 and "best=regex-builder" in out
    assert rows[0] == ["9", "regex-builder"] and len(rows) == 8, rows
    assert f"… {SAMPLE_COUNT - 8} more skills" in out


def test_with_rerank_top_k_0_the_reason_names_the_one_hybrid_candidate(capsys) -> None:
    """'where the top 0 by hybrid score end': the relevance model's pool still keeps the
    hybrid score's first skill, and the bar is its score."""
    argv = ("why", "merge two pdf files", "--skills", SAMPLES, "--set", "rerank_top_k=0")
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "where the top 0 by" not in out
    assert "where the top 1 by hybrid score end (rerank_top_k)" in out


def test_why_quotes_a_long_prompt_cut(capsys) -> None:
    """A 116 KB paste was echoed whole on why's first line, and each of its thousands of
    terms got a row in three tables and a place in every term list."""
    prompt = "merge these pdf files " + " ".join(f"w{n} line{n}" for n in range(2000))
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES)
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith(f"… ({len(prompt):,} characters)")
    assert len(lines) < 300 and max(len(line) for line in lines) < 600
    assert "(4,003 in all)" in lines[1]  # the query terms
    assert "more terms, none in the description" in out


def test_why_says_how_much_of_a_very_long_prompt_the_router_read(capsys) -> None:
    prompt = "merge these pdf files\n" + "lorem ipsum " * 20_000
    code, out, _ = run(capsys, "why", prompt, "--skills", SAMPLES)
    assert code == 0
    assert out.splitlines()[0].endswith(
        f"… ({len(prompt):,} characters; the router reads its first and last 50,000 (§2.6))"
    )


def test_why_shows_the_head_of_what_the_hook_would_inject_and_text_all_of_it(capsys) -> None:
    """A body injected whole would be most of why's output (200 of 310 lines on a large
    library): by default the lines that name the skill and open its body, and how many
    more; --text prints it all."""
    from explorer.cli.commands.why import INJECTION_SHOWN_LINES

    argv = ("merge two pdf files", "--skills", SAMPLES)
    code, out, _ = run(capsys, "route", *argv, "--json")
    text = json.loads(out)["text"]
    lines = text.splitlines()
    assert code == 0 and len(lines) > INJECTION_SHOWN_LINES + 1  # a body is injected
    code, out, _ = run(capsys, "why", *argv)
    shown = out[out.index("hook would inject") :].splitlines()
    assert shown[0] == f"hook would inject ({len(text):,} characters; --text shows them all):"
    assert shown[1 : INJECTION_SHOWN_LINES + 1] == lines[:INJECTION_SHOWN_LINES]
    assert shown[INJECTION_SHOWN_LINES + 1] == (
        f"[… {len(lines) - INJECTION_SHOWN_LINES} more lines]"
    )
    code, out, _ = run(capsys, "why", *argv, "--text")
    assert code == 0 and text in out


def test_why_says_the_hook_ignores_a_control_payload(capsys) -> None:
    """The hook answers nothing to a system reminder; why said it would inject pdf."""
    code, out, _ = run(capsys, "why", "<system-reminder> merge two pdf files", "--skills", SAMPLES)
    assert code == 0 and "inject pdf" in out  # the router's decision, as route gives it
    code, routed, _ = run(
        capsys, "route", "<system-reminder> merge two pdf files", "--skills", SAMPLES
    )
    assert code == 0 and routed.splitlines()[-1] == (
        "the hook injects nothing for it: it ignores a control payload (§7)"
    )
    assert "hook would inject: nothing (it ignores a control payload, §7)" in out
    assert "Skill router:" not in out


def test_an_unknown_skill_is_a_usage_error_in_every_command_that_takes_one(capsys) -> None:
    """why, eval and lint --collisions say it with the nearest ids and exit 2, as tune
    does (eval routed cases that could never pass, and lint dropped them, exit 0)."""
    for argv in (
        ["why", "x", "--skills", SAMPLES, "--skill", "pdff"],
        ["eval", "--skills", SAMPLES, "--skill", "pdff"],  # the skills' own trigger evals
        ["lint", "--collisions", SAMPLES, "--skill", "pdff"],
    ):
        code, _, err = run(capsys, *argv, "--no-ski-config")
        assert code == 2 and "no skill 'pdff'" in err and "did you mean 'pdf'" in err, argv
    # Compared folded: another case, or the name's spaces written as dashes.
    code, _, err = run(capsys, "why", "x", "--skills", SAMPLES, "--skill", "KUBERNETES DEBUGGER")
    assert code == 2 and "did you mean 'kubernetes-debugger'" in err


def test_a_skill_whose_file_was_skipped_is_named_with_the_reason(capsys, tmp_path: Path) -> None:
    """`--skill release-notes` said "no skill 'release-notes'" of a folder that is there,
    its SKILL.md skipped for an empty description: it says that now."""
    shutil.copytree(SAMPLE_SKILLS / "pdf", tmp_path / "pdf")
    (tmp_path / "release-notes").mkdir()
    (tmp_path / "release-notes" / "SKILL.md").write_text(
        '---\nname: release-notes\ndescription: ""\n---\nbody\n', encoding="utf-8"
    )
    argv = ("why", "x", "--skills", str(tmp_path), "--skill", "release-notes", "--set", "model=bow")
    code, _, err = run(capsys, *argv)
    assert code == 2 and "skill 'release-notes' is not routed: its file was skipped: " in err
    assert "release-notes/SKILL.md: missing or empty 'description'" in err


def test_lint_says_which_cases_it_cannot_use(capsys, tmp_path: Path) -> None:
    """lint --collisions dropped cases about skills the library lacks without a word, and
    lint without --collisions took --cases and ignored it."""
    cases = tmp_path / "cases.toml"
    cases.write_text(
        '[[case]]\nprompt = "merge two pdf files"\nexpect = ["pdf"]\nkind = "direct"\n'
        '[[case]]\nprompt = "map the checkout flow"\nexpect = ["loom"]\nkind = "direct"\n'
        '[[case]]\nprompt = "split a pdf"\nexpect = ["pdf", "loom"]\nkind = "direct"\n'
    )
    code, out, err = run(capsys, "lint", "--collisions", SAMPLES, "--cases", str(cases))
    assert code == 0 and "(2 cases," in out  # one of the two it expects is enough
    assert f"warning: {cases}: 1 case about skills not in this library (loom), left out" in err
    code, _, err = run(capsys, "lint", SAMPLES, "--cases", str(cases))
    assert code == 2 and "--cases and --skill are read by --collisions only" in err
    # The rules report a broken file as a finding; the map has none, so it warns, and
    # without cases it says what they would add.
    code, out, err = run(capsys, "lint", "--collisions", SAMPLES)
    assert code == 0 and "meeting-notes-summarizer/SKILL.md:3: invalid YAML" in err
    assert "--cases FILE routes them too" in out.splitlines()[1]
    # What it routes is counted on stderr as it goes (seconds at a hundred skills).
    routed = [line for line in err.splitlines() if line.startswith("rout")]
    total = routed[0].split()[1]
    assert routed[0] == f"routing {total} prompts" and routed[-1].startswith(f"routed {total}/")


def test_bad_set_value_names_key_and_type(capsys) -> None:
    code, _, err = run(capsys, "route", "x", "--skills", SAMPLES, "--set", "max_skills=two")
    assert code == 2 and "max_skills" in err and "an integer" in err


def test_no_roots_and_empty_roots(capsys, tmp_path: Path) -> None:
    assert run(capsys, "route", "x")[0] == 2
    code, _, err = run(capsys, "route", "x", "--skills", str(tmp_path), "--set", "model=bow")
    assert code == 1 and "no valid skills" in err


def test_index_reports_counts_and_reuses_the_cache(capsys, tmp_path: Path) -> None:
    # The bag-of-words model goes through the cache as MiniLM does, without a cold ONNX load.
    args = ("index", SAMPLES, "--cache-dir", str(tmp_path), "--set", "model=bow")
    code, out, err = run(capsys, *args)
    assert code == 0 and f"indexed {SAMPLE_COUNT} skills" in out
    assert f"{SAMPLE_COUNT} embedded" in out
    # The parse warning on stderr, as every command says it: stdout is the result alone.
    assert "warning" in err and "meeting-notes-summarizer" in err
    assert "meeting-notes-summarizer" not in out
    code, out, _ = run(capsys, *args)
    assert code == 0 and f"0 embedded, {SAMPLE_COUNT} from cache" in out


@pytest.mark.parametrize("command", ["route", "why", "hook", "index", "bench"])
def test_every_command_has_help(command: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    assert "--set" in capsys.readouterr().out


def _subprocess(*args: str, stdin: str = "", env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "explorer", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.mark.slow  # two interpreters start; tests/engine/test_hook.py runs the hook in-process
def test_python_dash_m_and_the_hook_end_to_end(tmp_path: Path) -> None:
    payload = json.dumps(
        {
            "prompt": "my pod keeps crashing, kubectl logs shows nothing",
            "session_id": "x",
            "cwd": str(tmp_path),
        }
    )
    result = _subprocess(
        "hook", "--skills", SAMPLES, stdin=payload, env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "kubernetes-debugger" in context
    broken = _subprocess("hook", "--skills", SAMPLES, stdin="{nope")
    assert (broken.returncode, broken.stdout, broken.stderr) == (0, "", "")


def _lines(stream) -> queue.Queue[str]:  # type: ignore[no-untyped-def]
    """Lines of a child's output, read by a thread: a blocking read never hangs the test."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def _wait_for_line(lines: queue.Queue[str], needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            break
        if needle in line:
            return line
    raise AssertionError(f"no line with {needle!r} within {timeout} s")


def test_watch_prints_one_line_per_reindex(tmp_path: Path, warm_cache_dir: Path) -> None:
    root = tmp_path / "skills"
    (root / "pdf").mkdir(parents=True)
    (root / "pdf" / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Merge PDF files.\n---\nbody\n"
    )
    (root / "broken").mkdir()
    (root / "broken" / "SKILL.md").write_text("no frontmatter\n")  # named on stderr
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "explorer",
            "watch",
            str(root),
            str(tmp_path / "not-yet"),  # named apart: a root made later is never seen
            "--set",
            "model=bow",
            "--cache-dir",
            str(warm_cache_dir),  # the reranker's graph, optimised once for the run
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        lines = _lines(process.stdout)
        first = _wait_for_line(lines, "watching", 60)
        assert first.startswith("v1 1 skill, 2 errors")  # the broken file, the missing root
        assert first.rstrip().endswith(
            f"watching {root}; not found, so not watched: {tmp_path}/not-yet"
        )
        (root / "csv").mkdir()
        (root / "csv" / "SKILL.md").write_text(
            "---\nname: csv\ndescription: Clean CSV files.\n---\nbody\n"
        )
        line = _wait_for_line(lines, "+csv", 30)
        assert line.split()[1:4] == ["+1", "-0", "~0"] and " ms " in line
        # A save the line reader recovers is routed, and says so (as lint's error does).
        (root / "pdf" / "SKILL.md").write_text(
            "---\nname: pdf\ndescription: Merge PDF files: fast.\n---\nbody\n"
        )
        _wait_for_line(lines, "~pdf", 30)
        warning = _wait_for_line(lines, "  warning ", 10)
        assert "pdf/SKILL.md" in warning and "invalid YAML" in warning
        # Errors already named are not named again at each save; a mended file is fixed.
        (root / "broken" / "SKILL.md").write_text(
            "---\nname: broken\ndescription: Mended at last.\n---\nbody\n"
        )
        fixed = _wait_for_line(lines, "  fixed ", 30)
        assert fixed.startswith(f"  fixed {root / 'broken' / 'SKILL.md'} (was: no frontmatter")
        (root / "csv" / "SKILL.md").write_text("---\nname: csv\n---\n")
        error = _wait_for_line(lines, "  error ", 30)
        assert "csv/SKILL.md" in error
        (root / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: Merge.\n---\n")
        _wait_for_line(lines, "~pdf", 30)
        time.sleep(0.5)  # the lines of one re-index are written at once
        after = [lines.get() for _ in range(lines.qsize())]
        assert not [line for line in after if line.startswith("  error ")], after
        # Ctrl-C again while it shuts down (a key held, a process and its group both
        # signalled): a clean stop, not a traceback.
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            process.send_signal(signal.SIGINT)
            time.sleep(0.002)
        # (-2: one came as the interpreter exited, past any handler: still no traceback)
        assert process.wait(10) in (0, -signal.SIGINT)
        err = process.stderr.read()
        assert "Traceback" not in err
        assert f"skipped {root / 'broken' / 'SKILL.md'}: no frontmatter" in err
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(10)


def test_a_damaged_skill_record_costs_one_rebuild_not_the_answer(tmp_path: Path, capsys) -> None:
    """The store's skill records are checked when read (engine/index/store.py): `route`
    meets the damage mid-decision, and answers from a new build all the same."""
    import shutil

    from explorer.engine.index.store import _Reader

    library, cache = tmp_path / "skills", tmp_path / "cache"
    shutil.copytree(SAMPLE_SKILLS, library)
    argv = ["route", "merge two report.pdf files", "--skills", str(library), "--no-ski-config"]
    argv += ["--cache-dir", str(cache), "--set", "model=bow", "--set", "reranker=off"]
    code, first, _ = run(capsys, *argv)
    assert code == 0 and "inject pdf" in first
    (store,) = (cache / "index").glob("*.idx")
    reader = _Reader(store)
    records = reader.header["arrays"]["records.blob"]
    with open(store, "r+b") as handle:  # every record's first byte: whichever is read first
        for start in reader.array("records.offsets")[:-1].tolist():
            handle.seek(reader.start + records["offset"] + start)
            handle.write(b"[")
    del reader
    code, out, err = run(capsys, *argv)
    assert code == 0 and out == first
    assert "records.blob: entry" in err and "the index store is rebuilt" in err
    assert len(list((cache / "index").glob("*.idx"))) == 1  # the new one


def test_every_command_s_help_opens_with_a_sentence_and_every_argument_has_help() -> None:
    """route, why, hook, index, watch, bench, init and doctor had no description; route's
    and why's prompt had no help; history's and trust's opened with raw backticks."""
    import argparse

    from explorer.cli import build_parser
    from explorer.cli.commands import REGISTRY

    for name in REGISTRY:
        parser = build_parser(name)
        (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub = subparsers.choices[name]
        assert sub.description and sub.description[0].isupper(), (name, sub.description)
        assert sub.description.rstrip().endswith("."), (name, sub.description)
        for action in sub._actions:
            assert action.help, (name, action.dest)


def test_a_prompt_of_dash_is_read_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paste longer than one argument may be (Linux stops at 128 KB) comes through stdin;
    an empty stdin is a usage error, not a blank prompt routed."""
    import io

    paste = "merge these pdf files " + "and keep going " * 14_000
    assert len(paste.encode()) > 128 * 1024
    for command in ("route", "why"):
        monkeypatch.setattr("sys.stdin", io.StringIO(paste + "\n"))
        code, out, _ = run(capsys, command, "-", "--skills", SAMPLES, "--json")
        assert code == 0 and json.loads(out)["prompt"] == paste
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    with pytest.raises(SystemExit) as exit_info:
        main(["route", "-", "--skills", SAMPLES])
    assert exit_info.value.code == 2 and "stdin, which was empty" in capsys.readouterr().err


def test_why_says_what_each_column_of_its_table_is(capsys) -> None:
    """Every header the table prints has its own entry in the legend under it: the name
    after a separator (`; p the relevance model's`), not inside another (`overlap`)."""
    import re

    code, out, _ = run(capsys, "why", "merge two pdf files", "--skills", SAMPLES)
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("hybrid#"))
    legend = " ".join(lines[lines.index(header) :]).split("columns: ", 1)[1].split("why (")[0]
    legend = " ".join(legend.split())
    assert code == 0
    for name in [header.split()[0], *header.split()[3:]]:  # skill and verdict need none
        assert re.search(rf"(^|[;,(+=] ){re.escape(name)} ", legend), name


def test_progress_counts_a_run_in_a_log_and_says_nothing_of_an_empty_one() -> None:
    """Off a terminal: a line to start, then lines as it goes and one at the end; a run of
    nothing (a library with no sentence to route) prints nothing, not its header twice."""
    import io

    from explorer.cli.base import Progress

    log = io.StringIO()
    counting = Progress(log, "routing", "routed", "prompts")
    for done in (0, 0):
        counting(done, 0)
    assert log.getvalue() == ""
    for done in range(4):
        counting(done, 3)
    lines = log.getvalue().splitlines()
    assert lines[0] == "routing 3 prompts" and lines[-1].startswith("routed 3/3 (100 %)")
