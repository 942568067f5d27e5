"""Skill Explorer: see why an agent skill triggers, or why it does not."""

__version__ = "0.1.0"
