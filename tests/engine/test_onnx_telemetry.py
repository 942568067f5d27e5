"""Loading the models writes only into the product's own directories.

onnxruntime's telemetry (1.30 on, Linux and macOS) creates a device id and an event store
under $XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime when it is imported, unless it
is turned off first. A fresh process, with every home in a temporary directory and the
variable that turns it off unset, loads the default models and routes one prompt; every
file that appears must be under the cache, state or config directory of skill-explorer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, SAMPLE_SKILLS

CHILD = f"""
import json
from explorer.engine.config import Config
from explorer.engine.library import open_engine, open_library
from explorer.engine.paths import cache_dir, config_dir, state_dir
from explorer.engine.pipeline import decide

engine = open_engine(Config())
index = open_library([{str(SAMPLE_SKILLS)!r}], Config(), engine=engine)
decision = decide("merge these pdf files", index, Config())
status = engine.models.status
print(json.dumps({{
    "ours": [str(cache_dir()), str(state_dir()), str(config_dir())],
    "dense": status.dense, "reranker": status.reranker, "injected": decision.injected_ids,
}}))
"""


def test_loading_the_models_writes_nothing_outside_our_directories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {
        **{key: value for key, value in os.environ.items() if key != "ORT_DISABLE_TELEMETRY"},
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TMPDIR": str(tmp_path / "tmp"),
        "PYTHONPATH": str(REPO),
    }
    (tmp_path / "tmp").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path / "tmp",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["dense"] and result["reranker"], result  # the models did load
    ours = [Path(directory) for directory in result["ours"]]
    written = sorted(path for path in tmp_path.rglob("*") if path.is_file())
    assert written, "the cache should hold the vectors"
    outside = [str(path) for path in written if not any(path.is_relative_to(d) for d in ours)]
    assert outside == []
