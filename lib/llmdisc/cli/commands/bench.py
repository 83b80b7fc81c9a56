"""``llmdisc bench NAME|all``: speed and memory benchmarks that print figures."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from types import ModuleType

import llmdisc.cli.benchmarks


def _benchmarks() -> dict[str, ModuleType]:
    found = {}
    for info in sorted(pkgutil.iter_modules(llmdisc.cli.benchmarks.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"llmdisc.cli.benchmarks.{info.name}")
        found[module.NAME] = module
    return found


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``bench``."""
    parser = subparsers.add_parser("bench", help="run speed/memory benchmarks and print their figures")
    inner = parser.add_subparsers(dest="bench", metavar="NAME")
    benchmarks = _benchmarks()
    for name, module in benchmarks.items():
        sub = inner.add_parser(name, help=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(func=module.run)
    every = inner.add_parser("all", help="run every benchmark with its defaults")
    every.set_defaults(func=lambda args: _run_all(benchmarks))
    parser.set_defaults(func=lambda args: parser.print_help() or 0)


def _run_all(benchmarks: dict[str, ModuleType]) -> int:
    status = 0
    for name, module in benchmarks.items():
        if not getattr(module, "IN_ALL", True):  # a measurement of minutes per dataset, run on its own
            continue
        print(f"\n=== bench {name} ===", flush=True)
        sub = argparse.ArgumentParser()
        module.add_arguments(sub)
        status |= int(module.run(sub.parse_args([])) or 0)
    return status
