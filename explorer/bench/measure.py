"""What every benchmark shares: statistics, verdict rows, and running a child process.

Imports here are standard-library only (numpy loads when first needed): the modules
that run as children import this one before their own clock starts.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import explorer

SUBPROCESS_TIMEOUT = 180.0


def ms(seconds: float) -> float:
    return seconds * 1000.0


def stats(samples_ms: Sequence[float]) -> dict[str, float]:
    """Median, p95 and count of a series of milliseconds."""
    import numpy as np

    return {
        "median_ms": float(statistics.median(samples_ms)),
        "p95_ms": float(np.percentile(np.asarray(samples_ms, dtype=np.float64), 95)),
        "n": len(samples_ms),
    }


def verdict(measured: float, target: float) -> dict[str, Any]:
    """The row fields that judge a measurement against its target (ratio <= 1 passes)."""
    ratio = measured / target if target > 0 else float("inf")
    return {"target_value": target, "ratio": ratio, "pass": bool(ratio <= 1.0)}


def error_row(metric: str, message: str, **extra: Any) -> dict[str, Any]:
    """A row for a metric that could not be measured: it fails, and says why."""
    return {"metric": metric, "pass": False, "error": message, "note": message, **extra}


def timed(function: Callable[[], Any]) -> float:
    """Milliseconds one call of `function` takes."""
    started = time.perf_counter()
    function()
    return ms(time.perf_counter() - started)


def peak_mb() -> float:
    """This process's resident high-water mark in MB (VmHWM on Linux, else ru_maxrss)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def package_parent() -> Path:
    """The directory `explorer` is imported from: a checkout, or site-packages of a wheel."""
    return Path(explorer.__file__).resolve().parent.parent


def child_env(cache_home: Path, config_home: Path) -> dict[str, str]:
    """A child that imports this same package, caches under `cache_home`, reads no user
    config and no user state (an explorer would take the user's sorted column: at 26,000
    rows, a sort at every keystroke).

    Children run from compiled bytecode, as an installed package does (pip compiles it at
    install): with PYTHONDONTWRITEBYTECODE set, as on some CI and agent machines, every
    hook call would otherwise compile the ~40 modules it imports from source (about
    0.1 s, more than the routing itself), which is no cost a user pays. The bytecode goes
    to a `pycache` folder beside `cache_home`, never into the source tree.
    """
    env = dict(os.environ)
    root = str(package_parent())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    env["XDG_CACHE_HOME"] = str(cache_home)
    env["XDG_CONFIG_HOME"] = str(config_home)
    env["XDG_STATE_HOME"] = str(Path(cache_home).parent / "xdg-state")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(cache_home).parent / "pycache")
    return env


@contextmanager
def own_state(directory: Path) -> Iterator[None]:
    """$XDG_STATE_HOME at `directory` while the block runs: an explorer made in this
    process then starts from the default layout, not from the one the user left."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(directory)
    try:
        yield
    finally:
        if before is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = before


@dataclass
class ChildRun:
    """One finished child: wall time from spawn to exit, exit code and output."""

    ms: float
    returncode: int
    stdout: str
    stderr: str


def run_child(
    args: Sequence[str], stdin: str, env: dict[str, str], cwd: Path, timeout: float
) -> ChildRun:
    """Run a child to completion; a timeout is a failed run (returncode -1), not an exception."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            list(args),
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ChildRun(ms(time.perf_counter() - started), -1, "", f"timed out after {timeout:g} s")
    return ChildRun(ms(time.perf_counter() - started), done.returncode, done.stdout, done.stderr)


def last_json_line(text: str) -> Any:
    """The report a child printed last (anything before it is ignored)."""
    import json

    return json.loads(text.strip().splitlines()[-1])


def package_version(module: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # not installed
        return None
