"""An input whose own editing keys act in the order they were typed."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input

# The keys of Input's own bindings: its editing keys. Not the bindings it inherits from
# its scrolling base (up, down, page up, page down), which the screens around an input
# use to move through a list while the input keeps the focus.
EDITING_KEYS = frozenset(
    key.strip()
    for binding in Input.BINDINGS
    for key in (binding.key if isinstance(binding, Binding) else binding[0]).split(",")
)


class EagerInput(Input):
    """An input whose own editing bindings act when the key arrives. Textual runs a
    widget's bindings once the key has bubbled up to the app, and the keys behind it in
    the same burst (a paste, a script, a fast typist while a decision runs) reach the input
    first: ctrl+u then "abc" in one write cleared the "abc", and "ab", left, "c" gave "abc"."""

    async def _on_key(self, event: events.Key) -> None:
        bindings = self._bindings.key_to_bindings.get(event.key)
        if bindings and event.key in EDITING_KEYS:
            event.stop()
            event.prevent_default()
            await self.run_action(bindings[0].action)
            return
        await super()._on_key(event)
