"""A new process importing the explorer app: what a user waits for before the first frame.

Run as `python -m explorer.bench.app_import`; prints the milliseconds the import took.
"""

from __future__ import annotations

import importlib
import time


def import_app_ms() -> float:
    started = time.perf_counter()
    importlib.import_module("explorer.tui.app")
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    print(import_app_ms())
