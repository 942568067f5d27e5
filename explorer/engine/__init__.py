"""The routing engine: every number returned as data, nothing printed, no front end
imported.

Its rooms, lowest layer first (each imports only the rooms before it; host and qa
are siblings): base, discovery, inference, index, route, host, qa, author. Front ends
import the names below from here, and any other from a room's package
(`explorer.engine.qa`); tests/test_architecture.py holds both rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from explorer.engine._lazy import lazy_exports

# public name -> the module of this package that defines it ("<module>": the module itself)
_EXPORTS: dict[str, str] = {
    "Config": "base.config",
    "ConfigError": "base.config",
    "Decision": "route.decision",
    "Index": "index.snapshot",
    "LiveIndex": "index.live",
    "LoadedConfig": "base.config",
    "Verdict": "route.decision",
    "answer_hook": "host.hook",
    "calibrate": "qa.calibrate",
    "decide": "route.pipeline",
    "evaluate": "qa.evaluate",
    "lint": "author.lint",
    "load_config": "base.config",
    "open_engine": "index.opening",
    "open_library": "index.opening",
    "tune": "author.tune",
}
__all__ = sorted(_EXPORTS)
if TYPE_CHECKING:
    from explorer.engine.author.lint import lint as lint
    from explorer.engine.author.tune import tune as tune
    from explorer.engine.base.config import Config as Config
    from explorer.engine.base.config import ConfigError as ConfigError
    from explorer.engine.base.config import LoadedConfig as LoadedConfig
    from explorer.engine.base.config import load_config as load_config
    from explorer.engine.host.hook import answer_hook as answer_hook
    from explorer.engine.index.live import LiveIndex as LiveIndex
    from explorer.engine.index.opening import open_engine as open_engine
    from explorer.engine.index.opening import open_library as open_library
    from explorer.engine.index.snapshot import Index as Index
    from explorer.engine.qa.calibrate import calibrate as calibrate
    from explorer.engine.qa.evaluate import evaluate as evaluate
    from explorer.engine.route.decision import Decision as Decision
    from explorer.engine.route.decision import Verdict as Verdict
    from explorer.engine.route.pipeline import decide as decide
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
