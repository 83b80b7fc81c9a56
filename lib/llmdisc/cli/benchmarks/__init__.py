"""Benchmarks run by ``llmdisc bench NAME`` (``make bench`` runs them all).

Each module defines ``NAME`` (str), ``HELP`` (str), ``add_arguments(parser)`` and ``run(args) -> int``;
it prints its figures (medians, ratios, peak memory) rather than asserting on time.
"""
