"""The routing engine: the reference cascade with every number returned as data.

Nothing in this package imports the UI or prints; consumers render what it returns.
"""
