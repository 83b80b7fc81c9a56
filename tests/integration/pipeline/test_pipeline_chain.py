"""The whole notebook chain 01 → 08 → 07 through papermill on configs/tiny.yaml, in a scratch project root.

This is `make reproduce` in miniature: real data, real SDV fits (1 epoch on 600 rows), the embedded local LLM
(1 trial per label per cell), baselines, human pilot, the paper reproduction, figures, HTML. A second run must
skip every notebook; no executed notebook or HTML page may hold a secret or an absolute machine path.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from llmdisc.paths import project_root, reference_dir
from llmdisc.pipeline.config import load_config
from llmdisc.pipeline.reports import find_leaks
from llmdisc.pipeline.runs import plan_run, run_pipeline
from llmdisc.pipeline.supplementary import render_html

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scratch_project(tmp_path_factory):
    root = tmp_path_factory.mktemp("chain") / "project"
    src = project_root()
    shutil.copytree(src / "notebooks", root / "notebooks")
    shutil.copytree(src / "configs", root / "configs")
    shutil.copytree(src / "data" / "raw" / "adult", root / "data" / "raw" / "adult")
    return root


def test_whole_chain_runs_then_skips(scratch_project, monkeypatch):
    ref = reference_dir()  # the paper's reference data, where present (stages 06 and 08 use it)
    if ref is not None:
        monkeypatch.setenv("LLMDISC_REFERENCE", str(ref))
    monkeypatch.setenv("LLMDISC_ROOT", str(scratch_project))
    # A key-shaped value (built here so no key-shaped string is tracked) must never leak into a product.
    monkeypatch.setenv("GEMINI_API_KEY", "AIza" + "FAKE" * 8 + "12")
    config = load_config(scratch_project / "configs" / "tiny.yaml")
    lines: list[str] = []
    first = run_pipeline(config, log=lines.append)
    assert [o["status"] for o in first] == ["ran"] * len(plan_run(config)), lines

    executed = scratch_project / "reports" / "executed" / "tiny"
    assert {p.stem for p in executed.glob("*.ipynb")} == {r.run_id for r in plan_run(config)}
    cells = pd.read_csv(scratch_project / "results" / "tables" / "llm_cells.csv")
    cell_names = {"gaussian_copula", "ctgan", "shuffled_columns", "real_holdout"}  # + the two controls
    assert set(cells["synthetic_method"]) == cell_names
    assert set(cells["condition"]) == {"C1", "C2"}
    assert int(cells["n_total"].sum()) == 16  # 1 dataset × 4 cells × 2 conditions × 2 labels × 1
    probability = pd.read_csv(scratch_project / "results" / "tables" / "llm_probability_cells.csv")
    assert set(probability["synthetic_method"]) == cell_names and len(probability) == 8
    assert (probability["n_real"] == 1).all() and (probability["n_syn"] == 1).all()
    assert probability["context_threshold"].notna().all()  # the content-free prompt was scored per condition
    assert (scratch_project / "figures" / "probability_roc.png").stat().st_size > 1000
    assert (scratch_project / "figures" / "drs_by_cell.png").stat().st_size > 1000
    assert (scratch_project / "figures" / "drs_by_cell.pdf").exists()
    assert (scratch_project / "results" / "baselines" / "adult.csv").exists()
    trials = [json.loads(line) for f in (scratch_project / "results" / "trials").glob("*.jsonl")
              for line in f.read_text().splitlines() if line.strip()]
    assert len(trials) == 16 and all(t["provider"] == "local" for t in trials)
    # the records carry the verdict as a probability wherever the scores are valid, never a made-up 0
    for t in trials:
        assert t["scoring"] == "both"
        assert (t["p_synthetic"] is not None) == (t["score_status"] == "valid"), t["trial_id"]
    real = [t for t in trials if t["true_label"] == "REAL" and t["condition"] == "C1"]
    assert len({t["prompt_hash"] for t in real}) == 1  # one REAL sample shared by the four cells

    index = render_html("tiny")
    assert all(f'href="tiny/{r.run_id}.html"' in index.read_text() for r in plan_run(config))
    for page in [*executed.glob("*.ipynb"), *(index.parent / "tiny").glob("*.html"), index]:
        assert find_leaks(page.read_text(encoding="utf-8")) == [], page.name

    second = run_pipeline(config, log=lines.append)
    assert [o["status"] for o in second] == ["skipped"] * len(first)


TIMING_COLUMNS = ("seconds",)
"""Columns of results/tables that measure time (likelihood_samples.csv: seconds per forward pass): the only
values allowed to differ between two runs of one configuration."""


def test_a_forced_second_run_writes_the_same_tables(scratch_project, monkeypatch):
    # Runs after test_whole_chain_runs_then_skips (same scratch root): every notebook again (--force), the
    # seeded SDV fits and the LLM answers from their caches, everything downstream recomputed. Every CSV of
    # results/tables must come out the same, timing columns aside.
    ref = reference_dir()
    if ref is not None:
        monkeypatch.setenv("LLMDISC_REFERENCE", str(ref))
    monkeypatch.setenv("LLMDISC_ROOT", str(scratch_project))
    tables = scratch_project / "results" / "tables"
    if not (tables / "llm_cells.csv").exists():
        pytest.skip("needs the chain run of test_whole_chain_runs_then_skips first")
    config = load_config(scratch_project / "configs" / "tiny.yaml")
    before = {p.name: pd.read_csv(p) for p in sorted(tables.glob("*.csv"))}
    outcomes = run_pipeline(config, force=True)
    assert [o["status"] for o in outcomes] == ["ran"] * len(outcomes)
    after = {p.name: pd.read_csv(p) for p in sorted(tables.glob("*.csv"))}
    assert sorted(after) == sorted(before)
    for name, table in before.items():
        keep = [c for c in table.columns if c not in TIMING_COLUMNS]
        pd.testing.assert_frame_equal(after[name][keep], table[keep], check_exact=True, obj=name)
