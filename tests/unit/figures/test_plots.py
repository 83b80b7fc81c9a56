"""Figures: every function draws from tidy tables, one panel per dataset × model, n and intervals shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmdisc.figures import figure_data, plots


@pytest.fixture()
def cells() -> pd.DataFrame:
    rows = []
    for model in ("m1", "m2"):
        for synth in ("gaussian_copula", "ctgan", "tvae"):
            for cond in ("C1", "C2"):
                rows.append({"dataset": "adult", "synthetic_method": synth, "condition": cond, "provider": "p",
                             "model": model, "drs": 0.4, "drs_ci_low": 0.2, "drs_ci_high": 0.6, "n_valid": 8,
                             "n_valid_real": 4, "n_valid_syn": 4, "p_real": 0.5, "p_real_ci_low": 0.2,
                             "p_real_ci_high": 0.8, "p_syn": 0.4, "p_syn_ci_low": 0.1, "p_syn_ci_high": 0.7,
                             "real_prediction_rate": 0.55, "mean_confidence": 80.0})
    return pd.DataFrame(rows)


def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_drs_by_cell_has_one_panel_per_model_with_n_on_every_bar(cells, tmp_path):
    fig = plots.drs_by_cell(cells)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    assert {ax.get_title() for ax in visible} == {"adult — p / m1", "adult — p / m2"}
    assert _texts(fig).count("n=8") == 12
    paths = plots.save_figure(fig, "drs", tmp_path)
    assert all(p.stat().st_size > 1000 for p in paths)


def test_missing_cell_is_marked_not_drawn_as_zero(cells):
    fig = plots.drs_by_cell(cells[~((cells.synthetic_method == "tvae") & (cells.condition == "C2"))])
    assert _texts(fig).count("n/a") == 2


def test_other_figures_draw(cells, tmp_path):
    assert len(plots.drs_decomposition(cells).axes) >= 2
    assert len(plots.label_bias(cells).axes) >= 2
    tests = pd.DataFrame({"dataset": "adult", "model": "m1", "synthetic_method": ["ctgan", "tvae"],
                          "drs_c1": [1.0, 0.5], "drs_c2": [0.0, 0.25], "p_value": [0.005, np.nan]})
    labels = [t.get_text() for t in plots.condition_change(tests).axes[0].get_legend().get_texts()]
    assert labels == ["ctgan (p=0.005)", "tvae (p n/a)"]
    base = pd.DataFrame({"dataset": "adult", "synthetic_method": ["gaussian_copula", "ctgan", "tvae"],
                         "c2st_auc": [0.52, 0.56, 0.75]})
    drs = cells["synthetic_method"].map({"gaussian_copula": 0.4, "ctgan": 0.5, "tvae": 0.9})
    ordered = cells.assign(drs=drs, drs_ci_low=drs - 0.1, drs_ci_high=drs + 0.05)
    agreement = figure_data.baseline_agreement(ordered, base, ["c2st_auc"])
    figure = plots.llm_vs_baselines(ordered, base, ["c2st_auc"], agreement)
    assert figure.axes[0].get_xlabel() == "c2st_auc" and figure.axes[0].get_ylim() == (-0.05, 1.05)
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["adult C1 (τ=+1.00)",
                                                                                 "adult C2 (τ=+1.00)"]
    bins = pd.DataFrame({"model": "m1", "mean_confidence": [0.55, 0.95], "accuracy": [0.5, 0.6], "n": [3, 9]})
    assert plots.calibration(bins).axes[0].get_title() == "Confidence calibration"
    census = cells.assign(dataset=np.where(cells.index % 2, "census-codes", "census-labels"))
    assert plots.encoding_effect(census).axes
    eff = pd.DataFrame({"protocol": ["paper (fixed)", "ours (fresh)"], "n_valid": [10, 8], "effective_n": [3, 8]})
    assert plots.protocol_effect(eff).axes[0].get_xlabel() == "valid trials in the cell"


def test_baseline_agreement_orders_synthesizers_and_names_why_tau_is_missing():
    base = pd.DataFrame({"dataset": "adult", "synthetic_method": ["gaussian_copula", "ctgan", "tvae"],
                         "auc": [0.6, 0.7, 0.9]})
    rows = []
    for cond, drs in (("C1", [0.1, 0.3, 0.5]), ("C2", [0.5, 0.3, 0.1]), ("C3", [0.0, 0.0, 0.0])):
        rows += [{"dataset": "adult", "synthetic_method": s, "condition": cond, "provider": "p", "model": "m",
                  "drs": d} for s, d in zip(base["synthetic_method"], drs)]
    rows.append({"dataset": "census", "synthetic_method": "tvae", "condition": "C1", "provider": "p",
                 "model": "m", "drs": 0.4})
    cells = pd.DataFrame(rows)
    base = pd.concat([base, pd.DataFrame({"dataset": ["census"], "synthetic_method": ["tvae"], "auc": [0.8]})])
    table = figure_data.baseline_agreement(cells, base, ["auc"]).set_index(["dataset", "condition"])
    assert table.loc[("adult", "C1"), "kendall_tau"] == pytest.approx(1.0)
    assert table.loc[("adult", "C2"), "kendall_tau"] == pytest.approx(-1.0)
    assert np.isnan(table.loc[("adult", "C3"), "kendall_tau"])
    assert table.loc[("adult", "C3"), "tau_note"] == "constant DRS"
    assert table.loc[("census", "C1"), "tau_note"] == "fewer than 2 synthesizers"
    assert table.loc[("census", "C1"), "n_synthesizers"] == 1


def test_calibration_bins_count_only_trials_that_stated_a_verdict():
    # A label-score trial (scoring: probability) is valid but states no verdict and no confidence.
    trials = pd.DataFrame({
        "provider": "local", "model": "m", "status": "valid",
        "true_label": ["REAL", "SYNTHETIC", "REAL", "SYNTHETIC"],
        "predicted_label": ["REAL", "REAL", None, None],
        "confidence": [90.0, 70.0, None, None]})
    bins = figure_data.calibration_table(trials)
    assert int(bins["n"].sum()) == 2
    assert figure_data.calibration_table(trials[trials["predicted_label"].isna()]).empty
