"""``llmdisc`` command line: one sub-command per stage, discovered from :mod:`llmdisc.cli.commands`.

Each module there defines ``add_parser(subparsers)``, which registers its sub-command with a ``func(args) ->
exit status``. The kernels' instruction set is pinned (:func:`llmdisc.determinism.pinned_kernels`) before any
command module is imported, so that NumPy and torch load at it.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Sequence

import llmdisc
import llmdisc.cli.commands
from llmdisc.determinism import pinned_kernels
from llmdisc.errors import LlmdiscError


def submodules(package: ModuleType) -> list[ModuleType]:
    """The modules of ``package`` whose names do not start with ``_``, imported, in name order."""
    return [importlib.import_module(f"{package.__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
            if not info.name.startswith("_")]


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every discovered sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="llmdisc", description="LLM-as-a-Discriminator: ask LLMs whether table samples are REAL or "
        "SYNTHETIC, and turn the answers into a privacy signal for a synthetic-data release.")
    parser.add_argument("--version", action="version", version=f"llmdisc {llmdisc.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in submodules(llmdisc.cli.commands):
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (errors of llmdisc print one clear line, status 2)."""
    try:
        with pinned_kernels():
            return _run(argv)
    except LlmdiscError as exc:  # only an unknown $LLMDISC_KERNEL_PINS gets here: _run reports its own errors
        print(f"llmdisc: error: {exc}", file=sys.stderr)
        return 2


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        status = args.func(args)
    except LlmdiscError as exc:
        print(f"llmdisc {args.command}: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_status", 2))
    except KeyboardInterrupt:
        print("interrupted; finished work is kept and a re-run resumes", file=sys.stderr)
        return 130
    return int(status or 0)
