"""``llmdisc bench NAME|all``: speed and memory benchmarks that print figures."""

from __future__ import annotations

import argparse
from types import ModuleType

import llmdisc.cli.benchmarks
from llmdisc.cli.main import submodules


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="run speed/memory benchmarks and print their figures")
    inner = parser.add_subparsers(dest="bench", metavar="NAME")
    benchmarks = {module.NAME: module for module in submodules(llmdisc.cli.benchmarks)}
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
