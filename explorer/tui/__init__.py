"""The explorer: a Textual app that renders the engine's decisions, live.

Nothing here computes a score: every number comes from `engine.decide()` on the live
index's snapshot.
"""

import os

# Textual paces screen updates at 60 frames a second by default, so a result waits up to
# 17 ms for its frame. The explorer repaints on every keystroke, and 120 halves that
# wait. Set here, before Textual is imported. A user's own TEXTUAL_FPS still wins.
os.environ.setdefault("TEXTUAL_FPS", "120")
