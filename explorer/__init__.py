"""Skill Explorer: see why an agent skill triggers, or why it does not."""

from explorer.engine.base.threads import cap_blas

cap_blas()  # before anything imports numpy: see explorer/engine/base/threads.py

__version__ = "0.1.0"
