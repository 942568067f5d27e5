"""Benchmarks (`skill-explorer bench`): is the program as fast and as small as its targets?

One module per benchmark; `run` chooses and orders them, `report` prints the table.
Children run real functions of these modules (`python -m explorer.bench.peak_rss`), so
this package's own import stays empty: a child measures what it imports itself.
"""
