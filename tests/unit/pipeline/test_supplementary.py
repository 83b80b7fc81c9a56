"""Staging the supplementary's sources: titles with run parameters, pipeline order, labels, stable hashes."""

from __future__ import annotations

import nbformat
import pytest

from llmdisc.pipeline.supplementary import (
    SupplementaryError, _page_order, fingerprint, nav_title, run_label, stage_sources)


def test_run_label_shows_dataset_model_and_protocol():
    assert run_label({"dataset_key": "adult", "provider": "ollama", "model": "llama3.1:8b", "variant": "paper",
                      "metadata_source": "source", "sampling": "fixed", "seed": 0}) == \
        "adult · ollama/llama3.1:8b · paper/source/fixed"
    assert run_label({"dataset": "census", "encoding": "codes"}) == "census-codes"
    assert run_label({"provider": "local", "model": ""}) == "local/default model"
    assert run_label({"seed": 0}) == ""


def test_nav_title_keeps_the_name_before_the_colon():
    assert nav_title("04 · LLM trials: ask a model whether …", "adult · local/default model") == \
        "04 · LLM trials — adult · local/default model"
    assert nav_title("07 — Figures and result tables", "") == "07 — Figures and result tables"


def test_pages_follow_pipeline_order_08_before_07():
    stems = ["07_figures", "08_paper_reproduction", "01_data_prep__census-codes", "04_llm_trials__adult",
             "01_data_prep__adult", "zz_extra", "06_human_pilot"]
    assert sorted(stems, key=_page_order) == [
        "01_data_prep__adult", "01_data_prep__census-codes", "04_llm_trials__adult", "06_human_pilot",
        "08_paper_reproduction", "07_figures", "zz_extra"]


def _write(path, title, parameters, code="x = 1"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"parameters": parameters}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nText."), nbformat.v4.new_markdown_cell("## 2. Part"),
                nbformat.v4.new_code_cell(code)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def test_staging_is_deterministic_titled_labelled_and_captions_existing_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    executed = tmp_path / "reports" / "executed" / "c"
    _write(executed / "04_llm_trials__adult.ipynb", "04 · LLM trials: ask", {"dataset_key": "adult",
                                                                            "provider": "local", "model": ""})
    _write(executed / "07_figures.ipynb", "07 — Figures", {"seed": 0},
           'f += plots.save_figure(plots.drs_by_cell(cells), "drs_by_cell")\n'
           'f += plots.save_figure(plots.calibration(bins), "calibration")')
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "drs_by_cell.png").write_bytes(b"\x89PNG fake")
    first, second = stage_sources("c"), stage_sources("c")
    assert fingerprint(first) == fingerprint(second)
    trials = nbformat.reads(first["c/04_llm_trials__adult.ipynb"].decode(), as_version=4)
    assert trials.cells[0].source.startswith("# 04 · LLM trials: ask — adult · local/default model\n")
    assert "(c-04-llm-trials-adult-s2)=\n## 2. Part" in trials.cells[1].source
    figures = nbformat.reads(first["c/07_figures.ipynb"].decode(), as_version=4)
    inserted = [c.source for c in figures.cells if c.source.startswith("```{figure}")]
    assert len(inserted) == 1 and ":name: fig-c-drs-by-cell" in inserted[0]  # calibration.png is absent
    index = first["index.md"].decode()
    assert "{doc}`04 · LLM trials — adult · local/default model <c/04_llm_trials__adult>`" in index
    (tmp_path / "figures" / "drs_by_cell.png").write_bytes(b"\x89PNG changed")
    assert fingerprint(stage_sources("c")) != fingerprint(first)


def test_nothing_to_publish_is_an_error_that_says_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    with pytest.raises(SupplementaryError, match=r"no executed notebook under reports/executed/<config>/.*make reproduce"):
        stage_sources("default")
