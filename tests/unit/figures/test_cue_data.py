"""Notebook 10's tables on the paper's own records and the human notes, and the two cue figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from llmdisc.figures import cue_plots
from llmdisc.paths import reference_dir


def _shift_table():
    rows = []
    for theme in ("cross_column", "dataset_recognition"):
        rows.append({"source": "paper", "provider": "google", "model": "gemini", "dataset": "adult", "theme": theme,
                     "n_c1": 10, "share_c1": 0.5, "share_c1_ci_low": 0.24, "share_c1_ci_high": 0.76, "n_c2": 8,
                     "share_c2": 0.25, "share_c2_ci_low": 0.07, "share_c2_ci_high": 0.59})
    return pd.DataFrame(rows)


def test_theme_shift_figure_has_one_panel_per_model_and_dataset():
    shift = pd.concat([_shift_table(), _shift_table().assign(dataset="census")])
    fig = cue_plots.theme_shift_figure(shift)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    assert "n C1=10, C2=8" in visible[0].get_title()
    plt.close(fig)


def test_validity_figure_stacks_the_three_verdicts():
    validity = pd.DataFrame({"source": ["paper", "paper"], "provider": ["groq", "groq"], "model": ["llama"] * 2,
                             "true_label": ["REAL", "SYNTHETIC"], "n_claims": [10, 4],
                             "share_true": [0.9, 0.0], "share_false": [0.1, 0.0], "share_not_checkable": [0.0, 1.0]})
    fig = cue_plots.validity_figure(validity)
    assert len(fig.axes[0].patches) == 6  # 2 bars x 3 verdicts
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.skipif(reference_dir() is None, reason="needs ../shared/reference (the paper's records)")
def test_cue_analysis_on_the_papers_records_and_the_human_notes():
    from llmdisc.figures.cue_data import cue_analysis

    result = cue_analysis(include_ours=False)
    tables = result["tables"]
    quality = tables["cues_input_quality"].set_index(["source", "field", "input_issue"])["n"]
    assert quality[("paper", "record", "not_valid_record")] == 409
    assert quality[("human", "notes", "empty")] + quality[("human", "notes", "ok")] == 240
    freq = tables["cues_theme_frequency"]
    assert {"share", "share_ci_low", "share_ci_high", "n_trials"} <= set(freq.columns)
    assert (freq["share_ci_low"] <= freq["share"]).all() and (freq["share"] <= freq["share_ci_high"]).all()
    paper_trials = freq[(freq["source"] == "paper") & (freq["theme"] == "generic")]["n_trials"].sum()
    assert paper_trials == 451
    validity = tables["cues_validity"].set_index(["source", "model", "true_label"])
    # the paper's synthetic tables are not available: none of their claims can be checked
    assert validity.loc[("paper", "gemini-2.5-flash", "SYNTHETIC"), "share_not_checkable"] == 1.0
    assert validity.loc[("paper", "gemini-2.5-flash", "REAL"), "n_checked"] > 0
    real = validity.loc[("paper", "gemini-2.5-flash", "REAL")]
    assert real["n_true"] + real["n_false"] + real["n_not_checkable"] == real["n_claims"]
    conflicts = tables["cues_row_fact_conflicts"]
    assert (conflicts["n_conflicting"] <= conflicts["n_row_facts"]).all()
    claims = tables["cues_validity_claims"]
    assert set(claims.loc[claims["source"] == "human", "verdict"]) == {"not_checkable"}
    assert set(tables["cues_coder_agreement"]["subset"]) == {"all", "test_fold",
                                                            "test_fold_without_codebook_examples"}
