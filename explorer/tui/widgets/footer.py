"""The key footer, without the work nobody sees.

Textual's Footer rebuilds its keys whenever its screen's bindings change, and opening
F2 or F3 moves the focus off the main screen, which changes them: ~20 keys rebuilt and
styled under an opaque screen, a third of F2's opening time at 2,300 skills. While
another screen is on top this footer skips that; the focus coming back on close changes
the bindings again, and it rebuilds then.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class QuietFooter(Footer):
    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and self.app.screen is not self.screen:
            self._bindings_ready = True
            return  # hidden under another screen: rebuilt when the focus returns
        super().bindings_changed(screen)
