"""Explanations an author can act on, through Pilot over the real engine: every flip with its
cause (the Cases tab here; F7's and F8's in test_whatif_compare.py, on the screens those
tests open), the deciding column at every width, exports without escape codes, copy's
fallback to a file, and warnings told from errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Static

from explorer.engine.qa import Flip, FlipCause
from explorer.engine.qa.flips import Shift
from explorer.engine.route.pipeline import decide
from explorer.terminal import render
from explorer.tui.widgets.cases_panel import CasesPanel, with_flips
from tests.conftest import SAMPLE_SKILLS, write_skill
from tests.tui.test_app import enter, make_app, page_text, ready, settle
from tests.tui.test_whatif_compare import library  # noqa: F401

SIZE = (120, 40)


@pytest.mark.slow  # a save, a re-index and the cases re-run
async def test_the_cases_tab_says_who_lost_a_broken_case_and_by_how_much(
    library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    long_prompt = "merge two pdf files into one, " + "keeping the tables of each intact, " * 8
    (library / "cases.toml").write_text(
        f'[[case]]\nprompt = "{long_prompt.strip()}"\nexpect = ["pdf"]\nkind = "direct"\n',
        encoding="utf-8",
    )
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app) and app.state.cases_report is not None)
        before = app.snapshot
        assert app.state.cases_report.rates.recall == 1.0  # type: ignore[union-attr]
        write_skill(library, "pdf", "Bake bread and banana cakes at home.")
        await settle(pilot, lambda: bool(app.state.flip_causes), timeout=90)
        body = render(app.query_one(CasesPanel).query_one("#cases-body", Static).content)
        flat = " ".join(body.split())
        assert f"BROKE {long_prompt.strip()} (direct)" in flat  # the whole prompt, uncut
        (cause,) = app.state.flip_causes.values()
        (lost,) = cause.shifts
        expected = decide(long_prompt.strip(), before, app.config).row("pdf").score
        assert lost.skill == "pdf" and lost.role == "lost" and lost.before == expected
        assert f"pdf lost it: {lost.gate}, hybrid {lost.before:.3f} → {lost.after:.3f}" in flat


def test_a_prompt_is_cut_only_with_an_ellipsis() -> None:
    from explorer.engine.base import clipped
    from explorer.tui.widgets.cases_panel import PROMPT_LIMIT

    whole = "x" * PROMPT_LIMIT
    assert clipped(whole, PROMPT_LIMIT) == whole
    assert clipped(whole + "y", PROMPT_LIMIT) == "x" * (PROMPT_LIMIT - 1) + "…"


@pytest.mark.parametrize(
    ("extra", "deciding"),
    [
        ({"rerank_min": 50.0}, "rerank"),  # every candidate under rerank_min: the logit
        pytest.param(  # the fast path: BM25
            {"lexical_min": 1.0, "lexical_margin": 0.1},
            "bm25",
            # behind test_reasons_rerank.py's lexical fast path test (bm25 decides) and
            # test_widths.py's fit that keeps the deciding column; the app handing the
            # table its deciding column is the rerank case
            marks=pytest.mark.slow,
        ),
    ],
)
async def test_the_deciding_column_shows_at_every_width(
    tmp_path: Path, extra: dict[str, float], deciding: str
) -> None:
    from explorer.engine.base.config import Config
    from explorer.engine.route.reasons import reason
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory
    from explorer.tui.widgets.skills_table import COLUMNS, SkillsTable
    from tests.engine.test_rerank import VOCAB, _rerank_library
    from tests.support.onnx_builders import build_tiny_cross_encoder

    build_tiny_cross_encoder(tmp_path / "ce", VOCAB)
    config = Config(
        model="bow",
        reranker=str(tmp_path / "ce"),
        preset="reference",
        recall_floor=0.1,
        min_similarity=0.2,
        **extra,  # type: ignore[arg-type]
    )
    app = ExplorerApp(
        [str(_rerank_library(tmp_path))],
        config,
        cache_dir=str(tmp_path / "cache"),
        history=PromptHistory(tmp_path / "history.txt"),
    )
    label = dict(COLUMNS)[deciding]
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "pdf invoices totals csv")
        table = app.query_one(SkillsTable)
        await pilot.press("down")  # a skill the gate dropped
        row = app.decision.row(table.current_id())  # type: ignore[union-attr, arg-type]
        assert reason(app.decision, row).column == deciding  # type: ignore[arg-type]
        for width, height in ((200, 50), (120, 40), (80, 24)):
            await pilot.resize_terminal(width, height)
            await settle(pilot, lambda width=width: table.size.width <= width)
            await pilot.pause()
            keys = [key for key, _ in table.columns]
            assert deciding in keys, (width, keys)
            assert label.split()[0] in table.header_text().plain
            cell = table.cell_text(row.id, deciding)
            number = row.rerank if deciding == "rerank" else row.bm25
            assert f"{number:.2f}" in cell  # whole, not cut
            line = table.line_text(table.cursor).plain
            assert len(line.rstrip()) <= table.size.width


def test_help_explains_every_symbol_the_table_draws(library: Path, tmp_path: Path) -> None:  # noqa: F811
    import re

    from explorer.tui.keys import HELP_NOTES, help_text
    from explorer.tui.widgets import skills_table

    page = page_text(help_text(make_app(library, tmp_path), HELP_NOTES))
    source = Path(skills_table.__file__).read_text(encoding="utf-8")
    drawn = set(re.findall(r"[^\x00-\x7f]", source)) - set("§αβ·’“”–")
    words = {"INJECT", "p  moved most", "Δ inject", "rerank σ", "overlap J", "✗", "ℓ"}
    assert drawn and not [symbol for symbol in drawn if symbol not in page], drawn
    assert all(word.split()[-1] in page for word in words)
    # The Cases tab's and the collision map's labels too.
    assert "host value" in page and "taken shared near" in page
    # The rows' order, and the what-if's keys (its ctrl+t is not the main screen's pin).
    flat = " ".join(page.split())
    assert "then, where the relevance model decided, its other candidates by p" in flat
    assert "In the what-if, ctrl+t suggests edits" in flat


def test_help_at_80_columns_wraps_each_description_in_its_own_column(
    library: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """F1 on an 80x24 screen: a long description wraps under itself, not back under the
    key column; a symbol's meaning, under its meaning."""
    from explorer.tui.keys import HELP_NOTES, KEYS, SYMBOLS, help_text

    lines = page_text(help_text(make_app(library, tmp_path), HELP_NOTES), width=80).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("key "))
    table = lines[header + 1 : lines.index("", header)]
    column = lines[header].index("what it does")
    wrapped = [line for line in table if line.split()[0] not in {key for key, *_ in KEYS}]
    assert wrapped and all(line[:column].strip() == "" for line in wrapped), wrapped
    symbols = {symbol for symbol, _ in SYMBOLS}
    width = max(map(len, symbols)) + 4  # two cells of edge and two between the columns
    rows = [line for line in lines[lines.index("Symbols") + 1 :] if line.strip()]
    assert all(line[:width].strip() in symbols | {""} for line in rows), rows
    # The decision panel's "(body)" after an injected skill: each injection mode is said.
    from explorer.engine.route import InjectionMode

    said = " ".join(f"{symbol} {meaning}" for symbol, meaning in SYMBOLS)
    assert all(f"({mode.value})" in said for mode in InjectionMode)
    # The words the panels print beside their numbers, each said: the p cell's "task", the
    # why cell's "closest", the decision panel's room and its channels, the breakdown's proj.
    from explorer.engine.route.relevance import CHANNELS

    assert {"task", "closest", "room"} <= symbols
    assert all(channel in said for channel in CHANNELS) and "+ proj" in HELP_NOTES


@pytest.mark.slow  # tests/engine/test_attribution.py holds the sentence attribution the tab shows
async def test_the_skill_tab_says_what_each_sentence_adds_to_the_logit(tmp_path: Path) -> None:
    from textual.widgets import TabbedContent

    from explorer.engine.base.config import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory
    from explorer.tui.widgets.skill_panel import SkillPanel
    from tests.engine.test_rerank import VOCAB, _rerank_library
    from tests.support.onnx_builders import build_tiny_cross_encoder

    build_tiny_cross_encoder(tmp_path / "ce", VOCAB)
    config = Config(model="bow", reranker=str(tmp_path / "ce"), preset="reference")
    app = ExplorerApp(
        [str(_rerank_library(tmp_path))],
        config,
        cache_dir=str(tmp_path / "cache"),
        history=PromptHistory(tmp_path / "history.txt"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "merge pdf files")
        app.go_to_skill("invoices")
        app.query_one(TabbedContent).active = "skill-tab"
        shown = app.query_one(SkillPanel).query_one("#skill-attribution", Static)
        await settle(pilot, lambda: "each sentence adds" in shown.render().plain)
        text = shown.render().plain
        assert "logit" in text and "Extract totals from pdf invoices and export csv data." in text


# -- an honest status bar, exports and copy -------------------------------------------------


def _status(app) -> str:  # type: ignore[no-untyped-def]
    from explorer.tui.widgets.status_bar import StatusBar

    bar = app.query_one(StatusBar)
    return "".join(segment.text for segment in bar.render_line(0))


@pytest.mark.slow  # test_bad_states_are_said_on_screen keeps the status line in the default run
async def test_the_status_bar_tells_warnings_from_errors_and_names_live_edits(
    library: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from explorer.tui.screens import ThresholdEditor
    from explorer.tui.widgets.skills_table import SkillsTable

    recovered = library / "notes" / "SKILL.md"
    recovered.parent.mkdir()
    recovered.write_text(  # an unquoted ": " breaks the YAML; the line reader recovers it
        "---\nname: notes\ndescription: Turns transcripts into notes: decisions and owners.\n"
        "---\n# Notes\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # the root shown as typed: "skills"
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "turn this transcript into notes")
        assert app.snapshot is not None and len(app.snapshot.warnings) == 1
        # The recovered file routes (a warning), and lint counts its invalid YAML an error,
        # as `skill-explorer lint` does: other hosts reject the file.
        await settle(pilot, lambda: "0 errors 1 warning · lint 1 error (F3)" in _status(app))
        table = app.query_one(SkillsTable)
        assert table.cell_text("notes", "skill") == "⚠ notes"  # the row still routes, marked
        assert table.cell_text("pdf", "skill") == "pdf"
        # A live F2 edit is named, before the last re-index and the config layers.
        await pilot.press("f2")
        editor = app.screen
        assert isinstance(editor, ThresholdEditor)
        editor.edit("min_similarity", "0.5")
        await settle(pilot, lambda: app.config.min_similarity == 0.5)
        await pilot.press("escape")
        await settle(pilot, lambda: "F2: min_similarity" in _status(app))
        # The last re-index stays on a 120-column bar: before the model names.
        version = app.snapshot.version
        write_skill(library, "pdf", "Merge PDF files, saved again.")
        await settle(pilot, lambda: app.snapshot is not None and app.snapshot.version > version)
        await settle(pilot, lambda: "re-indexed +0 -0 ~1" in _status(app))
        from explorer.tui.widgets.status_bar import StatusBar

        whole = str(app.query_one(StatusBar).render())  # the models come last: cut first
        assert whole.index("re-indexed") < whole.index("dense")


@pytest.mark.slow  # tests/hostile/test_terminal_safety.py holds the escaping the exports use
async def test_exports_have_no_escape_codes_and_copy_falls_back_to_a_file(
    library: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Markdown export (ctrl+r) has no escape codes and a why per row. Then copy
    (ctrl+y), for each reason a copy would not arrive, one after another in the same app
    (the reason is read at each ctrl+y): a decision too large, a terminal without a
    clipboard, tmux's default. Each writes the file into the working directory of the
    moment and says where."""
    from explorer.report import EXPORT_TOP
    from explorer.tui import exports

    for number in range(EXPORT_TOP + 3):
        write_skill(library, f"filler-{number:02}", f"Filler skill {number} for merging things.")
    write_skill(library, "hostile", "Merge \x1b[31mred\x1b[0m pdf \x1b]0;title\x07 files.")
    monkeypatch.chdir(tmp_path)
    reasons = {
        "large": "more than a terminal passes",
        "no clipboard": "TERM=linux",
        "tmux": "set-clipboard external",
    }
    app = make_app(library, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "merge two pdf files")
        app.go_to_skill("filler-00")
        await pilot.pause()
        await pilot.press("ctrl+r")
        await settle(pilot, lambda: bool(list(tmp_path.glob("skill-explorer-why-*.md"))))
        (exported,) = tmp_path.glob("skill-explorer-why-*.md")
        text = exported.read_text(encoding="utf-8")
        assert "\x1b" not in text and "\x07" not in text and "␛[31m" in text
        assert "| overlap | why |" in text
        rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
        decision = app.decision
        assert decision is not None
        shown = min(EXPORT_TOP, len(decision.rows))
        assert len(rows) in (shown, shown + 1)  # the top, and the highlighted one after it
        assert any("`filler-00`" in row for row in rows)
        assert f"{len(decision.rows) - len(rows)} more skills not shown" in text
        for why, reason in reasons.items():
            with monkeypatch.context() as patch:
                here = tmp_path / why
                here.mkdir()
                patch.chdir(here)
                patch.delenv("TMUX", raising=False)
                patch.setenv("TERM", "xterm-256color")
                if why == "large":
                    patch.setattr(exports, "COPY_LIMIT", 100)
                elif why == "tmux":  # tmux's default drops a program's OSC 52 copy
                    patch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
                    patch.setattr(exports, "tmux_set_clipboard", lambda: "external")
                else:
                    patch.setenv("TERM", "linux")
                await pilot.press("ctrl+y")
                await settle(pilot, lambda: bool(list(here.glob("skill-explorer-decision-*"))))  # noqa: B023
                (written,) = here.glob("skill-explorer-decision-*.json")
                assert written.read_text(encoding="utf-8") == app.decision.to_json()
                assert app.clipboard == ""  # nothing claimed copied that never arrives
                said = [notice.message for notice in app._notifications]
                assert any(
                    reason in message and f"written to ./{written.name}" in message
                    for message in said
                ), (why, said)


@pytest.mark.slow  # a small-terminal layout, like the SVG snapshots
async def test_at_80x24_one_panel_at_a_time_and_f4_switches(
    library: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from explorer.tui.widgets.decision_panel import DecisionPanel
    from explorer.tui.widgets.footer import KeyCell, QuietFooter
    from explorer.tui.widgets.skills_table import SkillsTable

    monkeypatch.chdir(tmp_path)  # the root as typed: "skills"
    app = make_app(library, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "merge two pdf files")
        await settle(pilot, lambda: app.state.cases_report is not None)
        details, decision = app.query_one("#details"), app.query_one(DecisionPanel)
        assert details.display and details.region.width >= 78 and not decision.region.area
        footer = " ".join(str(key.render()) for key in app.query_one(QuietFooter).query(KeyCell))
        assert "f4" in footer and "Panels" in footer  # the key is in the footer
        await pilot.press("f4")
        await settle(pilot, lambda: decision.region.width >= 78)
        assert not details.region.area
        await pilot.press("f4")
        await settle(pilot, lambda: details.region.width >= 78)
        table = app.query_one(SkillsTable)
        verdicts = {app.decision.row(i).verdict for i in table.ids()}  # type: ignore[union-attr]
        for skill in table.ids():  # whole verdict words, never cut
            shown = table.cell_text(skill, "verdict")
            assert shown in {"INJECT", *verdicts}, shown
        assert "recall" in _status(app)  # the cases mirrored in the status bar
    again = make_app(library, tmp_path)
    async with again.run_test(size=(200, 50)) as pilot:  # wide: both, side by side
        await settle(pilot, lambda: ready(again))
        assert (
            again.query_one("#details").region.area and again.query_one(DecisionPanel).region.area
        )


def test_a_flip_and_its_cause_wrap_under_themselves_not_under_the_marks() -> None:
    """At 60 columns a long prompt and a long cause wrap with a hanging indent, so each
    continuation reads as part of its flip (it used to start at the panel's edge)."""
    prompt = "merge these two quarterly report files into one document for the board"
    flip = Flip(prompt, "direct", "validation", True, False, ("pdf",), ())
    shift = Shift(
        "plaintext-accounting", "took", "relevance", "inject", "relevance", "probability",
        0.25, 0.81, 0.48, moved="p moved by bm25 lead +1.26 → +1.92",
    )  # fmt: skip
    lines = render(
        with_flips(Text("head\n"), [flip], {prompt: FlipCause((shift,))}, Text("\ntail")),
        width=60,
    ).splitlines()
    assert lines[0] == "head" and lines[-2:] == ["", "tail"]
    assert lines[1].startswith("  BROKE  merge these two")
    body = lines[2:-2]
    assert len(body) >= 3 and all(line.startswith(" " * 9) and line[9] != " " for line in body)
    assert with_flips(Text("head\n"), [], {}, Text("tail")).plain == "head\ntail"


def test_the_terms_tab_says_which_words_of_the_prompt_bm25_cannot_read() -> None:
    """A Korean prompt listed only `pdf` as a term, with no word on where the rest went."""
    from explorer.engine.discovery.skills import Skill, load_skill
    from explorer.engine.index import LexicalIndex
    from explorer.tui.widgets.terms_panel import terms_text

    skill = load_skill(str(SAMPLE_SKILLS / "pdf" / "SKILL.md"))
    assert isinstance(skill, Skill)
    lexical = LexicalIndex([skill.description_tokens], [skill.id])
    prompt = "PDF 파일 두 개를 하나로 합쳐 주세요. café"
    explain = lexical.explain(prompt, 0)
    text = terms_text(skill, explain, (), prompt).plain
    assert "no BM25 term (§2.1 reads ASCII words): 파일, 두, 개를, 하나로, 합쳐, 주세요;" in text
    assert "café" not in text.split("no BM25 term")[1].split("\n")[0]  # it gives "caf"
    assert "no BM25 term" not in terms_text(skill, explain, (), "merge pdf").plain
    # A prompt of other scripts alone: one line says where its words went, not two lines
    # that disagree ("no content terms", then the words).
    korean = "파일 두 개를 하나로 합쳐 주세요"
    text = terms_text(skill, lexical.explain(korean, 0), (), korean).plain
    assert "no BM25 term" in text and "no content terms" not in text
    blank = terms_text(skill, lexical.explain("the", 0), (), "the").plain
    assert "the prompt has no content terms" in blank
    # The table's terms are singular forms: the prompt's words it lists otherwise are said.
    plural = "merge the files from postgres"
    text = terms_text(skill, lexical.explain(plural, 0), (), plural).plain
    assert "terms are singular forms (§2.4): files → file, postgres → postgre" in text


async def test_the_terms_tab_gets_the_prompt_it_explains(tmp_path: Path) -> None:
    from explorer.tui.widgets.terms_panel import TermsPanel
    from tests.tui.test_app import shown_for

    root = tmp_path / "skills"
    write_skill(root, "pdf", "Merge, split and extract tables from PDF files.")
    app = make_app(root, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: ready(app))
        await enter(pilot, app, "PDF 파일 합쳐 주세요")
        await settle(pilot, lambda: shown_for(app, "PDF 파일 합쳐 주세요"))
        await pilot.pause(0.2)
        shown = app.query_one(TermsPanel).query_one("#terms-body").render().plain
        assert "no BM25 term (§2.1 reads ASCII words): 파일, 합쳐, 주세요;" in shown


def test_a_p_the_model_all_but_ruled_out_reads_under_a_hundredth() -> None:
    """Candidates listed by p would read 0.00, 0.00, 0.00 …, ties in no order to the eye:
    under a hundredth a p reads <.01, and the rest with two decimals as everywhere."""
    from explorer.engine.route import p_text

    assert [p_text(p) for p in (0.0039, 0.0049, 0.005, 0.09, 0.985)] == [
        "<.01",
        "<.01",
        "0.01",
        "0.09",
        "0.98",
    ]


@pytest.mark.slow  # the default preset's models, where p is what decides
async def test_under_the_relevance_model_the_why_cell_leaves_p_to_its_column(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    """At 80 columns a why cell that opened with "p 0.00 < 0.59: " would repeat the p its
    own column shows and lose what moved p: the cell starts with the drivers, the p column
    says <.01, and the decision panel keeps the whole sentence and the row's room."""
    from explorer.engine.base.config import Config
    from explorer.tui.app import ExplorerApp
    from explorer.tui.history import PromptHistory
    from explorer.tui.widgets.skills_table import SkillsTable

    app = ExplorerApp(
        [str(SAMPLE_SKILLS)],
        Config(),
        cache_dir=str(warm_cache_dir),
        history=PromptHistory(tmp_path / "history.txt"),
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await enter(pilot, app, "write a bean-query report of my grocery spending per month")
        table = app.query_one(SkillsTable)
        decision = app.decision
        assert decision is not None and decision.injected_ids == ("plaintext-accounting",)
        second = decision.rows[1]
        assert table.reason_of(second).text.startswith("p 0.00 < 0.59: ")  # the engine's
        assert table.why_text(second) == table.reason_of(second).text.removeprefix(
            "p 0.00 < 0.59: "
        )
        assert table.cell_text(second.id, "p").startswith("<.01")
        await pilot.press("down")
        await settle(pilot, lambda: table.current_id() == second.id)

        def panel() -> str:
            return render(app.query_one("#decision-reason", Static).content)

        await settle(pilot, lambda: "p 0.00 < 0.59" in panel())
        assert re.search(
            r"room \(a channel at its strongest\): \w[\w ]* → p [\d.]+ \(s \+", panel()
        )
