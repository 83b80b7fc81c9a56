"""Notebook 08 through papermill reproduces the paper's headline numbers from its own records, found through
LLMDISC_REFERENCE (the only place looked at when set)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import papermill
import pytest

from llmdisc.data.reference import pinned_files
from llmdisc.paths import project_root

pytestmark = pytest.mark.slow


def test_notebook_08_records_the_paper_numbers_in_its_manifest(reference, tmp_path, monkeypatch):
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(project_root() / "notebooks" / "08_paper_reproduction.ipynb", root / "notebooks")
    monkeypatch.setenv("LLMDISC_ROOT", str(root))
    empty = tmp_path / "no_shared"
    empty.mkdir()
    fetched = tmp_path / "fetched"  # only the pinned files, as `llmdisc data fetch-reference` leaves them
    for pin in pinned_files():
        (fetched / pin.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(reference / pin.path, fetched / pin.path)
    monkeypatch.setenv("LLMDISC_REFERENCE", str(fetched))
    monkeypatch.setenv("LLMDISC_SHARED", str(empty))
    papermill.execute_notebook(str(root / "notebooks" / "08_paper_reproduction.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"quick": False}, kernel_name="llmdisc", progress_bar=False,
                               cwd=str(root / "notebooks"))
    metrics = json.loads((root / "results" / "tables" / "paper_manifest.json").read_text())["metrics"]
    assert (metrics["gemini_drs"], metrics["gemini_accuracy"]) == (83.7, 92.3)
    assert (metrics["llama_drs"], metrics["llama_accuracy"]) == (20.2, 51.6)
    assert metrics["cells_matching_from_trials"] == metrics["cells_matching_from_counts"] == 23
    assert (metrics["matched_gemini_drs"], metrics["matched_llama_drs"]) == (83.0, 40.0)
    assert (metrics["perm_p_census_gemini_ctgan"], metrics["perm_p_census_gemini_tvae"]) == (0.005, 0.037)
    assert 0.58 <= metrics["paper_c2st_auc_mean"]["ctgan"] <= 0.66
    c2st = pd.read_csv(root / "results" / "tables" / "paper_c2st_releases.csv")
    assert list(c2st["paper_printed_auc"]) == [0.538, 0.605, 0.687] and (c2st["n_seeds"] == 20).all()
    assert c2st["distance_tests"].str.startswith("not valid").all()
