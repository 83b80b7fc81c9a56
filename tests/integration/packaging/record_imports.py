"""Run the installed ``llmdisc`` console script and record what it imports (run by a fresh venv's Python).

``python record_imports.py OUT.json ARG ...`` loads the ``llmdisc`` entry point from the installed metadata and
calls it with ``ARG ...``. Meanwhile every import that a module of ``llmdisc`` makes itself (an ``import`` or
``from … import`` statement, or :func:`importlib.import_module`), answered from ``sys.modules`` or not, is
recorded with its importer; at exit ``OUT.json`` holds those, every top-level module loaded by then, the
distribution(s) of each, the installed ``llmdisc``'s ``Requires-Dist`` lines and file, every distribution installed
(with its version) and the exit status.

Standard library only: it runs where only the wheel and its dependencies are installed.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.metadata
import json
import sys

direct: dict[str, set[str]] = {}
"""Top-level module imported by ``llmdisc`` code -> the ``llmdisc`` modules that imported it."""


def _note(name: str, importer: object) -> None:
    if isinstance(importer, str) and (importer == "llmdisc" or importer.startswith("llmdisc.")) and name:
        direct.setdefault(name.split(".")[0], set()).add(importer)


_import = builtins.__import__


def _recording_import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002, ANN001, ANN202
    if level == 0:
        _note(name, (globals or {}).get("__name__"))
    return _import(name, globals, locals, fromlist, level)


_import_module = importlib.import_module


def _recording_import_module(name, package=None):  # noqa: ANN001, ANN202
    if not name.startswith("."):
        _note(name, sys._getframe(1).f_globals.get("__name__"))
    return _import_module(name, package)


def _write(path: str, status: object) -> None:
    distributions = importlib.metadata.packages_distributions()
    loaded = sorted({m.split(".")[0] for m in list(sys.modules)} - set(sys.stdlib_module_names))
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"status": status,
                   "direct": {m: sorted(v) for m, v in sorted(direct.items())},
                   "loaded": loaded,
                   "distributions": {m: sorted(set(distributions.get(m, []))) for m in set(loaded) | set(direct)},
                   "requires": importlib.metadata.requires("llmdisc") or [],
                   "llmdisc_file": getattr(sys.modules.get("llmdisc"), "__file__", None),
                   "installed": {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}},
                  out, indent=1)


def main() -> None:
    path, args = sys.argv[1], sys.argv[2:]
    builtins.__import__ = _recording_import
    importlib.import_module = _recording_import_module
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="llmdisc")
    sys.argv = ["llmdisc", *args]
    status: object = 0
    try:
        status = entry.load()()
    except SystemExit as exc:
        status = exc.code
    finally:
        _write(path, status)
    sys.exit(status)


if __name__ == "__main__":
    main()
