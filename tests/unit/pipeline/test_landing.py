"""The landing and tables pages: numbers read from results/tables, missing tables tolerated."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pytest

from llmdisc.paths import project_root
from llmdisc.pipeline.landing import SiteMap, headline_label, landing_page, pct, tables_page

TABLES = project_root() / "results" / "tables"


def test_pct_formats_shares_as_percent_and_missing_as_a_dash():
    assert pct(0.8367) == "83.7" and pct(0) == "0.0" and pct(1) == "100.0"
    assert pct(float("nan")) == "–" and pct(None) == "–"


def test_headline_rows_are_the_committed_cells_table():
    if not (TABLES / "llm_cells.csv").is_file():
        pytest.skip("results/tables/llm_cells.csv is not in this checkout (it is committed; restore it)")
    cells = pd.read_csv(TABLES / "llm_cells.csv")
    page = landing_page(TABLES, SiteMap(), [])
    for (provider, model), frame in cells.groupby(["provider", "model"]):
        assert f":name: {headline_label(provider, model)}" in page
        for row in frame.itertuples():
            line = (f"| {row.dataset} | {row.synthetic_method} | {row.condition} | "
                    f"{row.n_valid_real} / {row.n_valid_syn} | {100 * row.p_real:.1f} | {100 * row.p_syn:.1f} | "
                    f"{100 * row.drs:.1f} [{100 * row.drs_ci_low:.1f}, {100 * row.drs_ci_high:.1f}] |")
            assert line in page


def test_paper_numbers_sit_beside_the_records_numbers():
    if not (TABLES / "paper_cells_from_trials.csv").is_file():
        pytest.skip("results/tables/paper_cells_from_trials.csv is not in this checkout")
    paper = pd.read_csv(TABLES / "paper_cells_from_trials.csv")
    page = landing_page(TABLES, SiteMap(), [])
    assert f"{int(paper['matches'].sum())} of {len(paper)} cells match" in page
    first = paper.iloc[0]
    assert f"| {first.paper_n} | {first.paper_drs:.1f} | {first.N} | {first.DRS:.1f} |" in page


def test_missing_tables_leave_their_parts_out(tmp_path):
    page = landing_page(tmp_path, SiteMap(), ["```{toctree}", "```"])
    assert "No `results/tables/llm_cells.csv` yet" in page
    assert "No `results/tables/paper_*.csv`" in page
    assert "_not in this run_" in page  # research questions with nothing to point to
    assert page.rstrip().endswith("```")


def test_tables_page_renders_every_table_and_survives_an_empty_one(tmp_path):
    if not (TABLES / "baselines_headline.csv").is_file():
        pytest.skip("results/tables/baselines_headline.csv is not in this checkout")
    shutil.copy(TABLES / "baselines_headline.csv", tmp_path / "baselines_headline.csv")
    (tmp_path / "cues_new.csv").write_text("")  # a table another stage is still writing
    site = SiteMap(table_files={"baselines_headline": ["_tables/baselines_headline.csv", "_tables/baselines_headline.tex"]})
    page = tables_page({"baselines_headline": tmp_path / "baselines_headline.csv", "cues_new": tmp_path / "cues_new.csv"}, site)
    assert "{download}`CSV <_tables/baselines_headline.csv>` · {download}`TEX <_tables/baselines_headline.tex>`" in page
    assert ":name: tbl-baselines-headline" in page and "Unnamed" not in page
    assert re.search(r"## `cues_new`\n\n.*\n\n_Could not be read: EmptyDataError._", page)


def test_probability_and_likelihood_headlines_are_the_committed_tables():
    from llmdisc.pipeline.landing import _interval, _num

    for name in ("llm_probability_cells", "likelihood_cells"):
        if not (TABLES / f"{name}.csv").is_file():
            pytest.skip(f"results/tables/{name}.csv is not in this checkout (it is committed; restore it)")
    page = landing_page(TABLES, SiteMap(), [])
    probability = pd.read_csv(TABLES / "llm_probability_cells.csv")
    for row in probability.itertuples():
        line = (f"| {row.dataset_key} | {row.synthetic_method} | {row.condition} | {row.n_real} / {row.n_syn} | "
                f"{row.auc:.2f} [{row.auc_ci_low:.2f}, {row.auc_ci_high:.2f}] | {row.auc_p_value:.3f} | "
                f"{row.batch_drs:.2f} [{row.batch_drs_ci_low:.2f}, {row.batch_drs_ci_high:.2f}] | "
                f"{_interval(row.raw_drs, row.raw_drs_ci_low, row.raw_drs_ci_high)} |")
        assert line in page, line
    likelihood = pd.read_csv(TABLES / "likelihood_cells.csv")
    for row in likelihood[likelihood["score"] == "mean_logprob"].itertuples():
        line = (f"| {row.dataset_key} | {row.source} | {row.kind} | {row.n_real} / {row.n_syn} | "
                f"{row.auc:.2f} [{row.auc_low:.2f}, {row.auc_high:.2f}] | {row.direction} | {_num(row.perm_p, 3)} | "
                f"{row.drs:.2f} [{row.drs_low:.2f}, {row.drs_high:.2f}] |")
        assert line in page, line
    assert page.index("Headline: the verdict as a probability") < page.index("Headline: our trials")


def test_a_run_without_generated_verdicts_says_so_instead_of_an_empty_table(tmp_path):
    if not all((TABLES / f"{name}.csv").is_file() for name in ("llm_cells", "llm_probability_cells")):
        pytest.skip("results/tables/llm_cells.csv or llm_probability_cells.csv is not in this checkout")
    pd.read_csv(TABLES / "llm_cells.csv", nrows=0).to_csv(tmp_path / "llm_cells.csv", index=False)
    shutil.copy(TABLES / "llm_probability_cells.csv", tmp_path / "llm_probability_cells.csv")
    page = landing_page(tmp_path, SiteMap(), [])
    assert "No trial of the last run generated a verdict" in page
    assert "No `results/tables/llm_cells.csv` yet" not in page
    assert "-probability" in page  # the probability headline is still there


def test_a_question_whose_table_this_run_did_not_write_is_not_pointed_at(tmp_path):
    from llmdisc.pipeline.landing import _question_lines

    pd.DataFrame({"dataset_key": ["adult"], "auc": [0.5]}).to_csv(tmp_path / "likelihood_cells.csv", index=False)
    pd.DataFrame(columns=["dataset", "drs"]).to_csv(tmp_path / "llm_cells.csv", index=False)  # no verdict generated
    site = SiteMap(notebook_pages={"07": ["default/07_figures"], "09": ["default/09_likelihood__adult"]},
                   section_labels={("default/07_figures", "3"): "c2-section",
                                   ("default/07_figures", "2"): "verdict-section",
                                   ("default/07_figures", "5a"): "joint-section",
                                   ("default/09_likelihood__adult", "3"): "lik-section"},
                   table_files={"likelihood_cells": ["_tables/likelihood_cells.csv"],
                                "llm_cells": ["_tables/llm_cells.csv"]})
    lines = {line.split(".**")[0].lstrip("- *"): line
             for line in _question_lines(tmp_path, site) if line.startswith("- **RQ")}
    assert lines["RQ2"].endswith("_not in this run_")  # C2 not run: its section exists, its table does not
    assert lines["RQ13"].endswith("_not in this run_")
    assert lines["RQ1"].endswith("_not in this run_")  # its table was written with a header and no rows
    assert "lik-section" in lines["RQ11"] and "likelihood_cells" in lines["RQ11"]
