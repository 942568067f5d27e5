"""Loading the models writes only into the product's own directories.

onnxruntime's telemetry (1.30 on, Linux and macOS) creates a device id and an event store
under $XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime when it is imported, unless it
is turned off first. A fresh process, with every home in a temporary directory and the
variable that turns it off unset, loads a model through the product's loader (by default
the packaged cross-encoder alone; in the slow set the default models, which then route one
prompt); every file that appears must be under the cache, state or config directory of
skill-explorer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_SKILLS

# The default models, a library indexed and a prompt routed: everything a first run does.
CHILD = f"""
import json
from explorer.engine.base.config import Config
from explorer.engine.index.opening import open_engine, open_library
from explorer.engine.base.paths import cache_dir, config_dir, state_dir
from explorer.engine.route.pipeline import decide

engine = open_engine(Config())
index = open_library([{str(SAMPLE_SKILLS)!r}], Config(), engine=engine)
decision = decide("merge these pdf files", index, Config())
status = engine.models.status
print(json.dumps({{
    "ours": [str(cache_dir()), str(state_dir()), str(config_dir())],
    "dense": status.dense, "reranker": status.reranker, "injected": decision.injected_ids,
}}))
"""
# Only the packaged cross-encoder, through the loader (its graph optimised into the cache):
# the onnxruntime import and a session, what the telemetry hangs on, at a fraction of the cost.
ONE_SESSION = """
import json
from explorer.engine.base.config import Config
from explorer.engine.index.opening import open_engine
from explorer.engine.base.paths import cache_dir, config_dir, state_dir

engine = open_engine(Config(model="bow", reranker="packaged"))
status = engine.models.status
print(json.dumps({
    "ours": [str(cache_dir()), str(state_dir()), str(config_dir())],
    "dense": status.dense, "reranker": status.reranker,
}))
"""


@pytest.mark.parametrize(
    "child",
    [ONE_SESSION, pytest.param(CHILD, marks=pytest.mark.slow)],
    ids=["one session", "first run"],
)
def test_loading_the_models_writes_nothing_outside_our_directories(
    tmp_path: Path, child: str
) -> None:
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
        [sys.executable, "-c", child],
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
    assert written, "the cache should hold the optimised graph"
    outside = [str(path) for path in written if not any(path.is_relative_to(d) for d in ours)]
    assert outside == []
