"""The explorer: a Textual app that renders the engine's decisions, live.

Nothing here computes a score: every number comes from `engine.decide()` on the live
index's snapshot.
"""
