"""The explorer's screens: the main screen, and the ones that open over it (F1 help, F2
thresholds, F3 problems). The what-if editor (F7) is explorer/tui/whatif.py."""

from explorer.tui.screens.main import MainScreen
from explorer.tui.screens.problems import ProblemsScreen
from explorer.tui.screens.text import TextScreen, errors_text
from explorer.tui.screens.thresholds import INDEX_FIELDS, RESTART_FIELDS, FieldList, ThresholdEditor

__all__ = [
    "INDEX_FIELDS",
    "RESTART_FIELDS",
    "FieldList",
    "MainScreen",
    "ProblemsScreen",
    "TextScreen",
    "ThresholdEditor",
    "errors_text",
]
