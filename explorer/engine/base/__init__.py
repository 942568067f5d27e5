"""Foundations every layer reads: config fields and layers, their ranges, TOML
writes, the platform's directories, atomic writes, thread counts, text tokens.

Public names, for the front ends; engine modules import modules, not these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "FIELD_NAMES": "config",
    "MODEL_FIELDS": "config",
    "PROJECT_CONFIG_NAME": "config",
    "STOPWORDS": "text",
    "batch_workers": "threads",
    "coerce": "config",
    "clipped": "text",
    "counted": "text",
    "cpu_count": "threads",
    "dense_body_chars": "config",
    "dense_model": "config",
    "full_collections_deferred": "memory",
    "give_back": "memory",
    "hand_back_large_blocks": "memory",
    "match_tokens": "text",
    "model_key": "config",
    "norm_token": "text",
    "did_you_mean": "text",
    "parse_assignment": "config",
    "skipped_error": "config",
    "ski_config_path": "config",
    "paths": "<module>",
    "read_value": "config",
    "state_dir": "paths",
    "toml_value": "config",
    "type_label": "config",
    "update_toml": "tomlfile",
    "user_config_path": "config",
    "user_state_dir": "config",
    "write_atomically": "files",
    "yielding": "turns",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.base import paths as paths
    from explorer.engine.base.config import FIELD_NAMES as FIELD_NAMES
    from explorer.engine.base.config import MODEL_FIELDS as MODEL_FIELDS
    from explorer.engine.base.config import PROJECT_CONFIG_NAME as PROJECT_CONFIG_NAME
    from explorer.engine.base.config import coerce as coerce
    from explorer.engine.base.config import dense_body_chars as dense_body_chars
    from explorer.engine.base.config import dense_model as dense_model
    from explorer.engine.base.config import model_key as model_key
    from explorer.engine.base.config import parse_assignment as parse_assignment
    from explorer.engine.base.config import read_value as read_value
    from explorer.engine.base.config import ski_config_path as ski_config_path
    from explorer.engine.base.config import skipped_error as skipped_error
    from explorer.engine.base.config import toml_value as toml_value
    from explorer.engine.base.config import type_label as type_label
    from explorer.engine.base.config import user_config_path as user_config_path
    from explorer.engine.base.config import user_state_dir as user_state_dir
    from explorer.engine.base.files import write_atomically as write_atomically
    from explorer.engine.base.memory import full_collections_deferred as full_collections_deferred
    from explorer.engine.base.memory import give_back as give_back
    from explorer.engine.base.memory import hand_back_large_blocks as hand_back_large_blocks
    from explorer.engine.base.paths import state_dir as state_dir
    from explorer.engine.base.text import STOPWORDS as STOPWORDS
    from explorer.engine.base.text import clipped as clipped
    from explorer.engine.base.text import counted as counted
    from explorer.engine.base.text import did_you_mean as did_you_mean
    from explorer.engine.base.text import match_tokens as match_tokens
    from explorer.engine.base.text import norm_token as norm_token
    from explorer.engine.base.threads import batch_workers as batch_workers
    from explorer.engine.base.threads import cpu_count as cpu_count
    from explorer.engine.base.tomlfile import update_toml as update_toml
    from explorer.engine.base.turns import yielding as yielding
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
