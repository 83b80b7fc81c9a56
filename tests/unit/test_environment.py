"""The environment definitions agree: environment.yml, requirements*.txt, pyproject, Makefile, CI."""

from __future__ import annotations

import re

import yaml

from llmdisc.paths import project_root

ROOT = project_root()


def _requirements(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert "==" in line, f"{name}: '{line}' is not pinned with =="
        pkg, version = line.split("==", 1)
        pins[pkg.lower().replace("_", "-")] = version
    return pins


def test_every_requirement_is_pinned_and_torch_is_the_cpu_pin():
    pins = _requirements("requirements.txt")
    assert pins["torch"] == "2.13.0"
    for named in ("jupyterlab", "papermill", "pandas", "sdv", "google-genai", "ollama", "matplotlib",
                  "seaborn", "scipy", "ipykernel", "xllamacpp"):
        assert named in pins, f"{named} missing from requirements.txt"
    nodeps = _requirements("requirements-nodeps.txt")
    assert set(nodeps) & set(pins) == set(), "a --no-deps package is also in requirements.txt"


def test_environment_yml_delegates_to_the_pinned_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [["-r requirements.txt"]]
    # A conda package pinned here must agree with the pip pin (none besides python and pip today).
    pins = _requirements("requirements.txt")
    for dep in deps:
        if isinstance(dep, str) and dep not in ("pip",) and not dep.startswith("python="):
            name, _, version = dep.partition("=")
            assert pins.get(name) == version.lstrip("="), f"environment.yml pins {dep}, pip has {pins.get(name)}"


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme
    commands = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.startswith(("#", "set ", "cd "))]
    assert commands == ["make test"]


def test_setup_script_is_keyed_on_everything_that_shapes_the_environment():
    script = (ROOT / "lib" / "setup-env.sh").read_text()
    key_line = next(ln for ln in script.splitlines() if ln.startswith("key="))
    for part in ("requirements.txt", "requirements-nodeps.txt", "pyproject.toml"):
        assert part in key_line
    assert re.search(r"ipykernel install .*--name llmdisc", script)
