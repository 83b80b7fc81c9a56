"""Notebook 08 through papermill reproduces the paper's headline numbers from its own records (../shared)."""

from __future__ import annotations

import json
import shutil

import papermill
import pytest

from llmdisc.paths import project_root

pytestmark = pytest.mark.slow


def test_notebook_08_records_the_paper_numbers_in_its_manifest(reference, tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(project_root() / "notebooks" / "08_paper_reproduction.ipynb", root / "notebooks")
    monkeypatch.setenv("LLMDISC_ROOT", str(root))
    monkeypatch.setenv("LLMDISC_SHARED", str(reference.parent))
    papermill.execute_notebook(str(root / "notebooks" / "08_paper_reproduction.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"quick": False}, kernel_name="llmdisc", progress_bar=False,
                               cwd=str(root / "notebooks"))
    metrics = json.loads((root / "results" / "tables" / "paper_manifest.json").read_text())["metrics"]
    assert (metrics["gemini_drs"], metrics["gemini_accuracy"]) == (83.7, 92.3)
    assert (metrics["llama_drs"], metrics["llama_accuracy"]) == (20.2, 51.6)
    assert metrics["cells_matching_from_trials"] == metrics["cells_matching_from_counts"] == 23
    assert (metrics["matched_gemini_drs"], metrics["matched_llama_drs"]) == (83.0, 40.0)
    assert (metrics["perm_p_census_gemini_ctgan"], metrics["perm_p_census_gemini_tvae"]) == (0.005, 0.037)
