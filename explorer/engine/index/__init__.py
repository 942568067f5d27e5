"""One library as an index: BM25 statistics, the immutable snapshot, the
persisted store, the live index with its watcher and incremental patches, and the
sequence that opens them (cache, models, index).

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Engine": "opening",
    "Explain": "lexical",
    "IndexChange": "live",
    "LexicalIndex": "lexical",
    "StoreDamaged": "store",
    "build_index": "snapshot",
    "builds_multilingual": "snapshot",
    "dense_text": "snapshot",
    "index_skills": "snapshot",
    "multilingual_text": "snapshot",
    "open_cache": "opening",
    "open_index": "store",
    "phrase_tokens": "snapshot",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.index.lexical import Explain as Explain
    from explorer.engine.index.lexical import LexicalIndex as LexicalIndex
    from explorer.engine.index.live import IndexChange as IndexChange
    from explorer.engine.index.opening import Engine as Engine
    from explorer.engine.index.opening import open_cache as open_cache
    from explorer.engine.index.snapshot import build_index as build_index
    from explorer.engine.index.snapshot import builds_multilingual as builds_multilingual
    from explorer.engine.index.snapshot import dense_text as dense_text
    from explorer.engine.index.snapshot import index_skills as index_skills
    from explorer.engine.index.snapshot import multilingual_text as multilingual_text
    from explorer.engine.index.snapshot import phrase_tokens as phrase_tokens
    from explorer.engine.index.store import StoreDamaged as StoreDamaged
    from explorer.engine.index.store import open_index as open_index
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
