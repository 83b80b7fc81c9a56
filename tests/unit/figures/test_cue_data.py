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


def test_validity_figure_stacks_the_three_verdicts_with_trivial_claims_on_their_own_bar():
    validity = pd.DataFrame({"source": ["paper"] * 4, "provider": ["groq"] * 4, "model": ["llama"] * 4,
                             "true_label": ["REAL", "REAL", "SYNTHETIC", "SYNTHETIC"],
                             "claim_set": ["substantive", "trivial"] * 2, "n_claims": [10, 5, 4, 0],
                             "distinct_n_claims": [3, 1, 2, 0],
                             "share_true": [0.9, 1.0, 0.0, None], "share_false": [0.1, 0.0, 0.0, None],
                             "share_not_checkable": [0.0, 0.0, 1.0, None]})
    fig = cue_plots.validity_figure(validity)
    assert len(fig.axes[0].patches) == 9  # 3 bars (the empty trivial set has none) x 3 verdicts
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["paper: groq/llama | REAL", "paper: groq/llama | REAL | trivial",
                      "paper: groq/llama | SYNTHETIC"]
    assert "n=10 (3 distinct)" in [t.get_text() for t in fig.axes[0].texts]
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.skipif(reference_dir() is None, reason="needs ../shared/reference (the paper's records)")
def test_cue_analysis_on_the_papers_records_and_the_human_notes():
    from llmdisc.figures.cue_data import cue_analysis
    from llmdisc.scoring.cue_validity import TRIVIAL_KINDS

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
    validity = tables["cues_validity"].set_index(["source", "model", "true_label", "claim_set"])
    # the paper's Census releases rebuild its SYNTHETIC samples: GaussianCopula's verifies and its claims are
    # checked; the committed CTGAN and TVAE files are not the ones the trials saw, so theirs are not
    checks = result["paper_samples"].cells
    status = checks[checks["true_label"] == "SYNTHETIC"].groupby("synthetic_method")["sample_status"].first()
    assert status.to_dict() == {"ctgan": "mismatch", "gaussian_copula": "verified", "tvae": "mismatch"}
    assert set(checks.loc[checks["true_label"] == "REAL", "sample_status"]) == {"verified"}
    syn = validity.loc[("paper", "gemini-2.5-flash", "SYNTHETIC", "substantive")]
    assert syn["n_true"] > 0 and 0 < syn["share_not_checkable"] < 1.0
    by_cell = tables["cues_validity_by_cell"].set_index(["source", "model", "dataset", "synthetic_method",
                                                         "true_label", "claim_set"])
    assert by_cell.loc[("paper", "gemini-2.5-flash", "census", "gaussian_copula", "SYNTHETIC", "substantive"),
                       "n_not_checkable"] == 0
    ctgan = by_cell.loc[("paper", "gemini-2.5-flash", "census", "ctgan", "SYNTHETIC", "substantive")]
    assert ctgan["n_not_checkable"] == ctgan["n_claims"] > 0
    assert validity.loc[("paper", "gemini-2.5-flash", "REAL", "substantive"), "n_checked"] > 0
    real = validity.loc[("paper", "gemini-2.5-flash", "REAL", "substantive")]
    assert real["n_true"] + real["n_false"] + real["n_not_checkable"] == real["n_claims"]
    # the paper repeats its answers: far fewer distinct claims than mentions
    assert 0 < real["distinct_n_claims"] < real["n_claims"]
    conflicts = tables["cues_row_fact_conflicts"]
    assert (conflicts["n_conflicting"] <= conflicts["n_row_facts"]).all()
    claims = tables["cues_validity_claims"]
    assert set(claims.loc[claims["source"] == "human", "verdict"]) == {"not_checkable"}
    mismatched = claims[(claims["source"] == "paper") & (claims["dataset"] == "census")
                        & (claims["synthetic_method"] == "ctgan") & (claims["true_label"] == "SYNTHETIC")]
    assert set(mismatched["verdict"]) == {"not_checkable"} and mismatched["detail"].str.contains("mismatch").all()
    # trivial kinds are counted in their own row, never in the headline
    paper_real = claims[(claims["source"] == "paper") & (claims["true_label"] == "REAL")
                        & (claims["model"] == "gemini-2.5-flash")]
    n_trivial = int(paper_real["claim_kind"].isin(list(TRIVIAL_KINDS)).sum())
    assert n_trivial > 0
    assert validity.loc[("paper", "gemini-2.5-flash", "REAL", "trivial"), "n_claims"] == n_trivial
    assert real["n_claims"] == len(paper_real) - n_trivial
    # coverage counts the strings without a claim; its per-kind claims add up to the claims table
    coverage = tables["cues_parser_coverage"]
    overall = coverage[(coverage["breakdown"] == "all") & (coverage["source"] == "paper")].set_index("true_label")
    assert (overall["n_with_claim"] < overall["n_cue_strings"]).all()
    per_kind = coverage[(coverage["breakdown"] == "claim_kind") & (coverage["source"] == "paper")]
    assert per_kind.groupby("true_label")["n_claims"].sum().to_dict() == \
        claims[claims["source"] == "paper"].groupby("true_label").size().to_dict()
    accuracy = tables["cues_parser_accuracy"]
    assert set(accuracy["fixture"]) == {"cue_claims_v1.csv", "tests/fixtures/cue_paraphrases"}
    assert set(tables["cues_coder_agreement"]["subset"]) == {"all", "test_fold",
                                                            "test_fold_without_codebook_examples"}
