"""Benchmarks: labelled routing data over real skill libraries (see benchmarks/data/README.md)."""
