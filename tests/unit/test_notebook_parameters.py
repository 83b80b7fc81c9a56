"""Each notebook's parameter handling, run with the string form papermill's ``-p name value`` passes.

The notebook's ``parameters`` cell, then the assignments papermill would inject, then its
``parameter-checks`` cell are executed as papermill runs them (in one namespace, in that order); the
checked values must be the items meant (``"ctgan"`` is one synthesizer, not five letters) and a bad value
must stop the notebook there with an error naming it. For notebooks 04 and 06 the cell that consumes the
parameters runs too (it is free of data reads); notebook 09's checks build its config themselves.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import pytest

from llmdisc.errors import ConfigError
from llmdisc.paths import project_root

NOTEBOOKS = project_root() / "notebooks"

STRING_FORMS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "01_data_prep": ({"dataset": " census"}, {"dataset": "census"}),
    "02_synthesis": ({"dataset": "adult", "synthesizers": "ctgan", "metadata_mode": "detected",
                      "paper_releases": "paper_ctgan, paper_tvae"},
                     {"synthesizers": ("ctgan",), "metadata_mode": "detected",
                      "paper_releases": ("paper_ctgan", "paper_tvae")}),
    "03_prompting": ({"dataset_key": "census-codes", "synthesizer": "tvae", "variant": "paper"},
                     {"dataset_key": "census-codes", "synthesizer": "tvae", "variant": "paper"}),
    "04_llm_trials": ({"synthesizers": "ctgan", "conditions": "C1", "provider": "replay", "sampling": "fixed"},
                      {"synthesizers": ("ctgan",), "conditions": ("C1",), "provider": "replay"}),
    "05_baselines": ({"dataset_key": "census-labels", "synthesizers": "ctgan,tvae"},
                     {"synthesizers": ("ctgan", "tvae"), "names": None}),
    "06_human_pilot": ({"labels_dir": "../shared/reference/results/human"},
                       {"labels_dir": ("../shared/reference/results/human",)}),
    "09_likelihood": ({"synthesizers": "ctgan", "dataset_key": "census-codes"},
                      {"synthesizers": ("ctgan",), "dataset_key": "census-codes"}),
}
"""notebook -> (papermill ``-p`` values, what the checked parameters must then be)."""

BAD_VALUES = {
    "01_data_prep": ("dataset", "adults", "adult, census"),
    "02_synthesis": ("synthesizers", "ctgan,gan", "gaussian_copula, ctgan, tvae"),
    "03_prompting": ("synthesizer", "CTGAN", "gaussian_copula, ctgan, tvae"),
    "04_llm_trials": ("conditions", "C1,C3", "C1, C2"),
    "05_baselines": ("dataset_key", "census", "adult, census-codes, census-labels"),
    "06_human_pilot": ("labels_dir", 7, None),
    "09_likelihood": ("synthesizers", "ctgan,gan", "gaussian_copula, ctgan, tvae"),
}
IMPORTS_NEEDED = {"04_llm_trials", "06_human_pilot", "09_likelihood"}
"""Notebooks whose checks (or the cell consuming them) use names of the notebook's imports cell."""
CONSUMER_RUNS = {"04_llm_trials", "06_human_pilot"}
"""Notebooks whose cell after the checks is free of data reads, so it runs too."""


def _cells(stem: str) -> list[dict[str, Any]]:
    return [c for c in json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]


def _tagged(cells: list[dict[str, Any]], tag: str) -> int:
    found = [i for i, c in enumerate(cells) if tag in c.get("metadata", {}).get("tags", [])]
    assert len(found) == 1, f"expected one cell tagged {tag!r}, found {len(found)}"
    return found[0]


def _source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"])


def _run(stem: str, values: dict[str, Any], *, consumer: bool) -> dict[str, Any]:
    imports = stem in IMPORTS_NEEDED
    cells = _cells(stem)
    params = _tagged(cells, "parameters")
    checks = _tagged(cells, "parameter-checks")
    assert checks == params + 1, "the parameter-checks cell must come right after the parameters cell"
    namespace: dict[str, Any] = {}
    if imports:
        exec(_source(cells[0]), namespace)  # the imports
    exec(_source(cells[params]), namespace)
    exec("\n".join(f"{k} = {v!r}" for k, v in values.items()), namespace)  # what papermill injects
    exec(_source(cells[checks]), namespace)
    if consumer:
        exec(_source(cells[checks + 1]), namespace)
    return namespace


def _list_parameters(stem: str) -> list[str]:
    """Names the parameters cell declares as ``name: list = ...``."""
    cells = _cells(stem)
    tree = ast.parse(_source(cells[_tagged(cells, "parameters")]))
    return [n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)
            and isinstance(n.annotation, ast.Name) and n.annotation.id == "list"]


def test_every_notebook_with_a_list_parameter_is_covered() -> None:
    with_lists = {p.stem for p in sorted(NOTEBOOKS.glob("0*.ipynb")) if _list_parameters(p.stem)}
    assert with_lists <= set(STRING_FORMS), f"add the string form of {sorted(with_lists - set(STRING_FORMS))}"
    for stem in STRING_FORMS:
        for name in _list_parameters(stem):
            assert name in STRING_FORMS[stem][0], f"{stem}: the string form of list parameter {name!r} is untested"


@pytest.mark.parametrize("stem", sorted(STRING_FORMS))
def test_string_form_of_each_notebook_parameter(stem: str) -> None:
    values, expected = STRING_FORMS[stem]
    namespace = _run(stem, values, consumer=stem in CONSUMER_RUNS)
    for name, want in expected.items():
        if want is not None:
            assert namespace[name] == want, name
    if stem == "04_llm_trials":
        config = namespace["config"]
        assert config.synthesizers == ("ctgan",) and config.conditions == ("C1",) and config.sampling == "fixed"
    if stem == "09_likelihood":
        assert namespace["config"].synthesizers == ("ctgan",)
    if stem == "06_human_pilot":
        assert namespace["paths"] == ["../shared/reference/results/human"]  # one folder, not its letters


@pytest.mark.parametrize("stem", sorted(BAD_VALUES))
def test_a_bad_notebook_parameter_is_named(stem: str) -> None:
    name, value, valid = BAD_VALUES[stem]
    with pytest.raises(ConfigError) as info:
        _run(stem, {name: value}, consumer=False)
    message = str(info.value)
    assert name in message and "fix:" in message
    if valid is not None:
        bad = [v for v in str(value).split(",") if v not in valid.split(", ")][0]
        assert re.search(re.escape(f"{bad!r} is not one of {valid}"), message)


def test_notebooks_are_committed_without_outputs() -> None:
    for stem in STRING_FORMS:
        for cell in _cells(stem):
            assert cell["outputs"] == [] and cell["execution_count"] is None, stem


def test_every_notebook_is_valid_nbformat_with_unique_cell_ids() -> None:
    """papermill warns (MissingIDFieldWarning) on every run of a notebook whose cells lack ids."""
    import warnings

    import nbformat

    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 10
    for path in notebooks:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            notebook = nbformat.read(path, as_version=4)
            nbformat.validate(notebook)
        ids = [cell["id"] for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]]
        assert len(set(ids)) == len(ids), path.name
