"""``pip install`` of the project gives a working ``llmdisc audit`` (issue 25, item 4): every third-party
distribution the audit can import is declared in ``pyproject.toml``'s ``[project] dependencies``.

What the audit can import is read from the source with :mod:`ast`, module-level *and* lazy (inside a function)
imports alike, following names: every module of ``llmdisc.audit`` and the CLI's entry (``llmdisc.cli``,
``llmdisc.cli.main``, the ``audit`` command) with all their functions; of the other commands, what
``llmdisc.cli.main.build_parser`` runs on every command line (their module-level code and ``add_parser``).
From there a module reached runs its module-level imports, and a function or class reached (named in code
reached, directly or as ``module.name``; a handler given to argparse's ``set_defaults(func=...)`` runs for its
own command only) runs the imports in its body; a string naming an ``llmdisc`` module (the provider registry's
lazy imports) reaches all of that module. Imports under ``if TYPE_CHECKING`` or guarded by an
``except ImportError`` that falls back (does not raise) are optional by construction and left out. Each
top-level module is mapped to its distribution with :func:`importlib.metadata.packages_distributions` (a
namespace package such as ``google`` to the distribution holding the subpackage imported); the standard
library and ``llmdisc`` are left out.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from llmdisc.paths import project_root

ROOT = project_root()
LIB = ROOT / "lib"
CLI_ENTRY = ("llmdisc.cli", "llmdisc.cli.main", "llmdisc.cli.commands", "llmdisc.cli.commands.audit")
PARSER_FUNCTIONS = ("add_parser",)
"""Functions of the other commands that run on every command line (``build_parser``)."""
_MODULE_STRING = re.compile(r"^llmdisc(\.\w+)+$")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_import_guard(node: ast.AST) -> bool:
    """A ``try`` whose ``except ImportError`` falls back (an optional import); one that raises (a clearer
    message for a missing requirement) guards a required import."""
    if not isinstance(node, ast.Try):
        return False
    handlers = [h for h in node.handlers if h.type is not None
                and re.search(r"\b(ImportError|ModuleNotFoundError)\b", ast.unparse(h.type))]
    return bool(handlers) and not any(isinstance(n, ast.Raise) for h in handlers for n in ast.walk(h))


@dataclass
class Scope:
    """What one piece of code (a module's top level, or one function or class) imports and refers to."""

    imports: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    """``(module, names)``: ``import m`` gives ``(m, ())``, ``from m import a, b`` gives ``(m, (a, b))``."""
    bindings: dict[str, str] = field(default_factory=dict)
    """Local name -> the module it is bound to (``import a.b as x``, ``from a import b`` when b is a module)."""
    names: set[str] = field(default_factory=set)
    attributes: set[tuple[str, str]] = field(default_factory=set)
    strings: set[str] = field(default_factory=set)


class Source:
    """One ``llmdisc`` module: its top-level definitions and the scopes of its code."""

    def __init__(self, path: Path) -> None:
        self.name, self.is_package = _module_name(path), path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.defs = {n.name: n for n in tree.body
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        self.top = self.scope([n for n in tree.body if n not in self.defs.values()])

    def _absolute(self, node: ast.ImportFrom) -> str:
        base = node.module or ""
        if not node.level:
            return base
        package = self.name.split(".") if self.is_package else self.name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        return ".".join(package + ([base] if base else []))

    def scope(self, nodes: list[ast.AST]) -> Scope:
        """Everything ``nodes`` import and refer to, optional imports left out."""
        out = Scope()

        def visit(node: ast.AST) -> None:
            if _is_import_guard(node):
                for part in node.handlers + node.orelse + node.finalbody:  # type: ignore[attr-defined]
                    visit(part)
                return
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                return
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.imports.append((alias.name, ()))
                    out.bindings[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                module = self._absolute(node)
                out.imports.append((module, tuple(a.name for a in node.names)))
                for alias in node.names:
                    out.bindings[alias.asname or alias.name] = f"{module}.{alias.name}"
            elif isinstance(node, ast.Name):
                out.names.add(node.id)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "set_defaults"):  # argparse's func=handler runs for its command only
                for part in [node.func, *node.args, *(k.value for k in node.keywords if k.arg != "func")]:
                    visit(part)
                return
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                out.attributes.add((node.value.id, node.attr))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.match(node.value):
                out.strings.add(node.value)
            for child in ast.iter_child_nodes(node):
                visit(child)

        for node in nodes:
            visit(node)
        return out


class Reach:
    """The closure of what the audit can run (module docstring), and the third-party modules it imports."""

    def __init__(self) -> None:
        self.sources = {_module_name(p): Source(p) for p in (LIB / "llmdisc").rglob("*.py")}
        self.scopes = {name: src.top for name, src in self.sources.items()}
        self.seen: set[tuple[str, str | None]] = set()
        self.third_party: dict[str, set[str]] = {}
        self.queue: list[tuple[str, str | None]] = []

    def add(self, module: str, symbol: str | None = None) -> None:
        """Reach ``module`` (its top level) or one of its top-level names."""
        if module not in self.sources:
            if module.rsplit(".", 1)[0] in self.sources and symbol is None:  # ``from pkg import name`` as a.b
                module, symbol = module.rsplit(".", 1)
            else:
                return
        if (module, symbol) not in self.seen:
            self.seen.add((module, symbol))
            self.queue.append((module, symbol))

    def _import(self, module: str, names: tuple[str, ...], by: str) -> None:
        top = module.split(".")[0]
        if top != "llmdisc":
            if top not in sys.stdlib_module_names and top != "__future__":
                for full in [module] + [f"{module}.{name}" for name in names]:  # google.genai: a namespace
                    self.third_party.setdefault(full, set()).add(by)
            return
        parts = module.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b as well
            self.add(".".join(parts[:i]))
        for name in names:  # a name imported runs nothing until it is used (``_follow``); a submodule runs
            if f"{module}.{name}" in self.sources:
                self.add(f"{module}.{name}")

    def _follow(self, source: Source, scope: Scope) -> None:
        for module, names in scope.imports:
            self._import(module, names, source.name)
        bindings = {**source.top.bindings, **scope.bindings}
        for name in scope.names:
            if name in source.defs:
                self.add(source.name, name)
            elif name in bindings:
                target = bindings[name]
                if target not in self.sources and "." in target:
                    self.add(*target.rsplit(".", 1))
        for base, attr in scope.attributes:
            target = bindings.get(base)
            if target in self.sources:
                self.add(f"{target}.{attr}") if f"{target}.{attr}" in self.sources else self.add(target, attr)
        for module in scope.strings:
            if module in self.sources:
                self.add(module)
                for name in self.sources[module].defs:
                    self.add(module, name)

    def run(self) -> dict[str, set[str]]:
        """Third-party module (as imported, and ``module.name`` of ``from module import name``) -> the
        ``llmdisc`` modules that import it."""
        while self.queue:
            module, symbol = self.queue.pop()
            source = self.sources[module]
            if symbol is None:
                self._follow(source, source.top)
            elif symbol in source.defs:
                self._follow(source, source.scope([source.defs[symbol]]))
            elif symbol in source.top.bindings:  # a name re-exported from another module
                target = source.top.bindings[symbol]
                if target in self.sources:
                    self.add(target)
                elif "." in target:
                    self.add(*target.rsplit(".", 1))
        return self.third_party


def audit_imports() -> dict[str, set[str]]:
    """Third-party module (dotted, as imported) -> the ``llmdisc`` modules that import it, over everything
    the audit can reach (module docstring)."""
    reach = Reach()
    for name, source in reach.sources.items():
        if name == "llmdisc.audit" or name.startswith("llmdisc.audit.") or name in CLI_ENTRY:
            reach.add(name)
            for symbol in source.defs:
                reach.add(name, symbol)
        elif name.startswith("llmdisc.cli.commands."):
            reach.add(name)
            for symbol in PARSER_FUNCTIONS:
                reach.add(name, symbol)
    return reach.run()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_dependencies() -> set[str]:
    """The distribution names of ``[project] dependencies`` (canonical form)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_canonical(re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0]) for spec in project.get("dependencies", [])}


def test_the_scan_follows_lazy_imports_and_names_and_skips_optional_ones() -> None:
    report = Source(LIB / "llmdisc" / "audit" / "report.py")
    assert "matplotlib" not in {m for m, _ in report.top.imports}  # imported inside a function only ...
    assert ("matplotlib.pyplot", ()) in report.scope([report.defs["_png"]]).imports  # ... there
    imports = audit_imports()
    tops = {m.split(".")[0] for m in imports}
    assert {"pandas", "numpy", "matplotlib", "sklearn"} <= tops
    assert "llmdisc.audit.report" in imports["matplotlib.pyplot"]
    # reached through the C2ST instrument's lazy import of llmdisc.baselines.c2st
    assert any("llmdisc.baselines.c2st" in v for m, v in imports.items() if m.startswith("sklearn"))
    # the providers, imported by the registry from strings, and their SDKs (imported lazily)
    assert {"openai", "ollama", "google.genai"} <= set(imports)
    # lazy imports in functions the audit never reaches are not counted (the compendium's SDV fits, notebooks)
    assert not tops & {"sdv", "papermill", "nbformat", "folktables"}
    needed, _ = audit_distributions()
    assert "google-genai" in needed and "protobuf" not in needed  # the namespace package resolved


def _provides(distribution: str, dotted: str) -> bool:
    """Whether ``distribution``'s installed files hold the (sub)package or module ``dotted``."""
    path = dotted.replace(".", "/")
    return any(str(f).startswith(path + "/") or str(f) == path + ".py"
               for f in importlib.metadata.files(distribution) or [])


def audit_distributions() -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """``(needed, unknown)``: canonical distribution name -> the ``llmdisc`` modules that import it; and the
    top-level modules no installed distribution provides -> their importers. A namespace package shared by
    several distributions (``google``) counts only those that provide the subpackage imported."""
    distributions = importlib.metadata.packages_distributions()
    needed: dict[str, set[str]] = {}
    unknown: dict[str, list[str]] = {}
    imports = audit_imports()
    for top in sorted({m.split(".")[0] for m in imports}):
        dists = distributions.get(top)
        importers = set().union(*(v for m, v in imports.items() if m.split(".")[0] == top))
        if not dists:
            unknown[top] = sorted(importers)
            continue
        if len(set(dists)) > 1:
            subs = {".".join(m.split(".")[:2]) for m in imports if m.count(".") >= 1 and m.split(".")[0] == top}
            chosen = [d for d in set(dists) if any(_provides(d, sub) for sub in subs)]
            dists = chosen or dists
        for dist in dists:
            needed.setdefault(_canonical(dist), set()).update(importers)
    return needed, unknown


def test_every_distribution_the_audit_imports_is_declared_in_pyproject() -> None:
    needed, unknown = audit_distributions()
    assert unknown == {}, f"modules the audit imports that no installed distribution provides: {unknown}"
    declared = declared_dependencies()
    missing = {d: sorted(m)[:3] for d, m in sorted(needed.items()) if d not in declared}
    print("distributions the audit imports:", ", ".join(sorted(needed)))
    assert missing == {}, (
        "distributions the audit imports but pyproject.toml's [project] dependencies do not declare "
        f"(distribution: some importers): {missing}; fix: add each with a version range")
