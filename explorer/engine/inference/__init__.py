"""The models and what they compute: the dense embedder, the cross-encoder,
where model files come from, and the cache of vectors and parsed skills.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Attribution": "rerank",
    "Reading": "rerank",
    "EmbeddingCache": "cache",
    "LogitMemo": "models",
    "MultilingualUnavailable": "multilingual",
    "ModelStatus": "models",
    "Models": "models",
    "TableRows": "multilingual_table",
    "assemble_models": "models",
    "cpu_count": "embed",
    "find_reranker": "models",
    "load_models": "models",
    "load_multilingual": "multilingual",
    "numpy_encoder": "multilingual_table",
    "packaged_encoder": "models",
    "packaged_minilm": "models",
    "rerank_document": "rerank",
    "sentence_attribution": "rerank",
    "write_table": "multilingual_table",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.inference.cache import EmbeddingCache as EmbeddingCache
    from explorer.engine.inference.embed import cpu_count as cpu_count
    from explorer.engine.inference.models import LogitMemo as LogitMemo
    from explorer.engine.inference.models import Models as Models
    from explorer.engine.inference.models import ModelStatus as ModelStatus
    from explorer.engine.inference.models import assemble_models as assemble_models
    from explorer.engine.inference.models import find_reranker as find_reranker
    from explorer.engine.inference.models import load_models as load_models
    from explorer.engine.inference.models import packaged_encoder as packaged_encoder
    from explorer.engine.inference.models import packaged_minilm as packaged_minilm
    from explorer.engine.inference.multilingual import (
        MultilingualUnavailable as MultilingualUnavailable,
    )
    from explorer.engine.inference.multilingual import load_multilingual as load_multilingual
    from explorer.engine.inference.multilingual_table import TableRows as TableRows
    from explorer.engine.inference.multilingual_table import numpy_encoder as numpy_encoder
    from explorer.engine.inference.multilingual_table import write_table as write_table
    from explorer.engine.inference.rerank import Attribution as Attribution
    from explorer.engine.inference.rerank import Reading as Reading
    from explorer.engine.inference.rerank import rerank_document as rerank_document
    from explorer.engine.inference.rerank import sentence_attribution as sentence_attribution
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
