"""The baseline of hook_cold: a bare process that loads the ONNX model and embeds one prompt.

Run as `python -m explorer.bench.bare_onnx MODEL TOKENIZER` with `{"prompt": ...}` on
stdin. It imports only what any embedding process must (numpy, onnxruntime, tokenizers),
so the hook's start-up is judged against the least a process can do.
"""

from __future__ import annotations

import json
import os
import sys


def embed_once(model: str, tokenizer_file: str, prompt: str) -> None:
    """Load the model and tokenizer, then run one inference, as the hook would for a prompt."""
    import numpy as np

    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the engine's quiet_onnxruntime
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(tokenizer_file)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    ids = np.array([tokenizer.encode(prompt).ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in {item.name for item in session.get_inputs()}:
        feed["token_type_ids"] = np.zeros_like(ids)
    session.run(None, feed)


def main(argv: list[str]) -> int:
    model, tokenizer_file = argv
    embed_once(model, tokenizer_file, json.load(sys.stdin)["prompt"])
    print(json.dumps({"ok": True}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
