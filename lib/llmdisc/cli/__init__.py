"""The ``llmdisc`` command line: one sub-command per module of ``cli/commands/``, benchmarks in ``cli/benchmarks/``.

It sits above every stage and may import any of them; nothing imports it. ``llmdisc --help`` lists the
sub-commands; ``llmdisc bench`` the benchmarks (each prints its figures).
"""

from llmdisc.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
