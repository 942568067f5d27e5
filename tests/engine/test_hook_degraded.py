"""The hook when part of its world is missing (explorer/engine/host/hook.py): an event it does
not answer, a session ledger it cannot open. It never blocks the prompt: it says why in
its debug lines and routes without what is missing."""

from __future__ import annotations

import json
from pathlib import Path

from explorer.engine.host.hook import answer_hook
from tests.conftest import SAMPLE_SKILLS

BOW = ("model=bow", "reranker=off")


def test_an_unknown_event_is_answered_with_silence_and_a_reason() -> None:
    answer = answer_hook(json.dumps({"hook_event_name": "Bogus", "prompt": "merge pdf"}))
    assert answer.payload is None
    assert answer.debug == ("event 'Bogus' is not one the hook answers",)


def test_a_ledger_that_cannot_be_opened_is_skipped_and_the_prompt_routed(
    tmp_path: Path, warm_cache_dir: Path
) -> None:
    state = tmp_path / "state"
    state.write_text("a file where the state directory should be")
    payload = {"session_id": "s1", "prompt": "merge these two report.pdf files into one"}
    answer = answer_hook(
        json.dumps(payload),
        cli_roots=[str(SAMPLE_SKILLS)],
        assignments=BOW,
        use_ski_config=False,
        cache_dir=str(warm_cache_dir),
        state_dir=state,
    )
    assert any(line.startswith("session ledger skipped: ") for line in answer.debug), answer.debug
    assert answer.payload is not None
    assert "pdf" in answer.payload["hookSpecificOutput"]["additionalContext"]
