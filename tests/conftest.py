"""Shared test fixtures: hermetic environment, the optional paper reference folder, the api marker."""

from __future__ import annotations

import os
from pathlib import Path

# Before numpy, sklearn or torch load (a session fixture is too late): one OpenMP thread per process, so the
# C2ST's trees and the model passes do not oversubscribe the 2 cores (measured: 132 s instead of 6 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from llmdisc.paths import reference_dir


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runapi", action="store_true", default=False,
                     help="run tests that call real provider APIs (need keys and the internet)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runapi"):
        return
    skip_api = pytest.mark.skip(reason="needs a real API key and the internet; run with --runapi")
    for item in items:
        if "api" in item.keywords:
            item.add_marker(skip_api)


@pytest.fixture(autouse=True, scope="session")
def _hermetic_environment(tmp_path_factory: pytest.TempPathFactory) -> None:
    # SDV writes a logger config under the user data dir on first import: keep it out of $HOME.
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg_data"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Never let a developer's real keys reach a test.
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY"):
        os.environ.pop(var, None)


@pytest.fixture(scope="session")
def reference() -> Path:
    """The paper's reference folder (:func:`llmdisc.paths.reference_dir`: ``LLMDISC_REFERENCE``, the fetched
    ``data/reference``, ``../shared/reference``); skips (with the reason) where absent."""
    ref = reference_dir()
    if ref is None:
        pytest.skip("the paper's reference data is not on this machine; run `llmdisc data fetch-reference` "
                    "(or `make reference`), or set LLMDISC_REFERENCE, to run this test")
    return ref
