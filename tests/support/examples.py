"""How many examples a property test tries: all of them when the slow tests are selected
too (.ci/checks, `-m ""`), a quarter in the default selection, which must stay fast.

tests/conftest.py sets SKILL_EXPLORER_TESTS_THOROUGH from the run's -m expression before
any test module is imported, so the decorators below it read the right value.
"""

from __future__ import annotations

import os

THOROUGH_ENV = "SKILL_EXPLORER_TESTS_THOROUGH"


def examples(full: int) -> int:
    """`full` examples in a thorough run, else a quarter of them (at least 25)."""
    if os.environ.get(THOROUGH_ENV) == "1":
        return full
    return max(25, full // 4)
