"""The package layout: one subpackage per stage, imports running one way, no import cycle (docs/ARCHITECTURE.md).

Every ``import`` and ``from … import`` of every module is read with :mod:`ast`, including the imports inside
functions (a lazy import is still a dependency), and resolved to the module path it names.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import pytest

import llmdisc

PACKAGE = Path(llmdisc.__file__).resolve().parent

SHARED = ("llmdisc", "llmdisc.errors", "llmdisc.paths", "llmdisc.manifest", "llmdisc.parameters",
          "llmdisc.determinism")
"""Modules below every stage: the package's vocabulary (``LABELS``, ``CONDITIONS``, …), errors, paths, manifests,
parameter coercion, the kernels' pinned instruction set."""
ENTRY_POINT = "llmdisc.__main__"
"""``python -m llmdisc``: above everything, like the CLI it starts."""

STAGES = ("data", "synthesis", "discrimination", "scoring", "baselines", "human", "figures", "pipeline", "audit",
          "cli")
"""Subpackages in pipeline order: a module may import its own stage, earlier stages and the shared modules."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


MODULES = _all_modules()


def _resolve(name: str) -> str:
    """The longest prefix of a dotted name that is a module of the package (``a.b.func`` → ``a.b``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in MODULES:
            return candidate
    return name


def imports_of(module: str) -> set[str]:
    """The package modules ``module`` imports, anywhere in its source."""
    path = MODULES[module]
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.split(".")[0] == "llmdisc"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "llmdisc":
                continue
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                found.add(_resolve(f"{target}.{alias.name}"))
    found.discard(module)
    return found


def stage_of(module: str) -> int:
    """-1 for the shared modules, ``len(STAGES)`` for the entry point, else the index of the module's stage."""
    if module in SHARED:
        return -1
    if module == ENTRY_POINT:
        return len(STAGES)
    top = module.split(".")[1]
    if top not in STAGES:
        raise AssertionError(f"{module} is neither shared nor in a stage subpackage; add it to one of {STAGES}")
    return STAGES.index(top)


def test_every_module_belongs_to_a_stage_or_is_shared() -> None:
    for module in MODULES:
        stage_of(module)


def test_the_top_level_holds_only_the_shared_modules() -> None:
    top_modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert top_modules == {"__init__", "__main__", "errors", "paths", "manifest", "parameters", "determinism"}
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subpackages == set(STAGES)


def test_imports_run_from_later_stages_to_earlier_ones() -> None:
    wrong = []
    for module in MODULES:
        for target in imports_of(module):
            if stage_of(target) > stage_of(module):
                wrong.append(f"{module} imports {target}, a later stage")
    assert not wrong, "imports against the stage order:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle() -> None:
    graph = {m: imports_of(m) for m in MODULES}
    # A package's face importing its own submodules is the normal shape, not a cycle: drop edges into a
    # package __init__ from inside that package (`from llmdisc.x.y import …` loads llmdisc.x first).
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not (MODULES[t].name == "__init__.py" and module.startswith(t + "."))}
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state[nxt] == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if state[nxt] == 0:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if state[module] == 0:
            visit(module)


def test_the_checker_sees_a_planted_backward_import(tmp_path: Path) -> None:
    """The direction rule is not vacuous: a data module importing scoring is reported."""
    planted = PACKAGE / "data" / "_planted_backward.py"
    planted.write_text("from llmdisc.scoring.metrics import score_cells\n", encoding="utf-8")
    try:
        MODULES["llmdisc.data._planted_backward"] = planted
        with pytest.raises(AssertionError, match="llmdisc.data._planted_backward imports llmdisc.scoring.metrics, a later stage"):
            test_imports_run_from_later_stages_to_earlier_ones()
    finally:
        MODULES.pop("llmdisc.data._planted_backward", None)
        planted.unlink()


@pytest.mark.parametrize("stage", STAGES)
def test_each_face_documents_and_exports_its_names(stage: str) -> None:
    face = importlib.import_module(f"llmdisc.{stage}")
    assert face.__doc__ and len(face.__doc__.split()) >= 20, f"llmdisc.{stage} needs a docstring of what it reads/writes"
    names = getattr(face, "__all__", None)
    assert names, f"llmdisc.{stage} exports nothing"
    missing = [n for n in names if not hasattr(face, n)]
    assert not missing, f"llmdisc.{stage}.__all__ names {missing}, which it does not define"
    assert len(set(names)) == len(names)


def test_notebooks_import_from_the_faces_only() -> None:
    import json

    root = PACKAGE.parents[1]
    deep = []
    for notebook in sorted((root / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmdisc."):
                    parts = node.module.split(".")
                    if len(parts) > 2 or (parts[1] in STAGES and MODULES[node.module].name != "__init__.py"):
                        deep.append(f"{notebook.name}: from {node.module} import …")
    assert not deep, "notebooks reach past the faces:\n" + "\n".join(deep)


def test_the_architecture_doc_names_every_subpackage_module_and_notebook():
    # docs/ARCHITECTURE.md is the map a reader follows: every stage's modules and every notebook must be on it.
    from llmdisc.paths import project_root

    root = project_root()
    doc = (root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = root / "lib" / "llmdisc"
    missing = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if path.name == "__init__.py" or relative.parts[0] in ("cli",) and len(relative.parts) > 2:
            continue  # the CLI's one-module-per-command and per-benchmark folders are named as folders
        if f"`{path.stem}`" not in doc:
            missing.append(relative.as_posix())
    for folder in sorted(p for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        if f"`{folder.name}/`" not in doc:
            missing.append(folder.name + "/")
    for notebook in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        if notebook.stem[:2] not in doc:
            missing.append(notebook.name)
    assert not missing, f"docs/ARCHITECTURE.md does not name: {', '.join(missing)}; fix: add them to its tables"
