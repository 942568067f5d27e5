"""Offline training of the packaged reranker. Never imported at run time.

`python -m explorer.training.reranker` mines query/skill pairs from the training libraries
(`mining`), fine-tunes a small cross-encoder with torch, and exports it to int8 ONNX. Torch
and transformers come from the `train` extra; the runtime needs neither.
"""
