"""Scoring the likelihood discriminator: AUC, permutation p, the label-free band rule, the tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from llmdisc.errors import DataError
from llmdisc.scoring.likelihood import (
    REAL_VS_REAL,
    likelihood_auc,
    column_contributions,
    decision_scores,
    flag_outside_band,
    likelihood_table,
    permutation_p_value,
    real_vs_real_warnings,
    reference_band,
    band_coverage,
)


def test_auc_matches_sklearn_and_reports_direction_and_separation_d():
    rng = np.random.default_rng(1)
    real, syn = rng.normal(0, 1, 25), rng.normal(-1.0, 1, 20)
    result = likelihood_auc(real, syn, seed=3, n_perm=500)
    labels = np.r_[np.zeros(25), np.ones(20)]
    assert result["auc"] == pytest.approx(roc_auc_score(labels, np.r_[real, syn]))
    assert result["auc"] < 0.5 and result["direction"] == "synthetic less probable"
    assert result["separation"] == pytest.approx(2 * (0.5 - result["auc"]))
    assert result["auc_low"] <= result["auc"] <= result["auc_high"]
    assert 0 <= result["separation_low"] <= result["separation"] <= result["separation_high"] <= 1
    flipped = likelihood_auc(syn, real, seed=3, n_perm=500)
    assert flipped["direction"] == "synthetic more probable"
    assert flipped["separation"] == pytest.approx(result["separation"])
    joint = likelihood_auc(real, syn, seed=3, n_perm=500, words=("less structured", "more structured"))
    assert joint["direction"] == "synthetic less structured"


def test_permutation_p_value_is_reproducible_for_a_seed_and_small_for_clear_separation():
    rng = np.random.default_rng(2)
    real, syn = rng.normal(0, 1, 20), rng.normal(0.1, 1, 20)
    first = permutation_p_value(real, syn, seed=11, n_perm=999)
    assert first == permutation_p_value(real, syn, seed=11, n_perm=999)
    assert first != permutation_p_value(real, syn, seed=12, n_perm=999)
    separated = permutation_p_value(np.arange(20.0), np.arange(20.0) + 100, seed=11, n_perm=999)
    assert separated == pytest.approx(1 / 1000)  # no permutation is as extreme as perfect separation
    # Two-sided: the mirror image is as significant.
    assert permutation_p_value(np.arange(20.0) + 100, np.arange(20.0), seed=11, n_perm=999) == separated


def test_decision_rule_never_reads_the_synthetic_labels():
    rng = np.random.default_rng(4)
    reference = rng.normal(0, 1, 40)
    pooled = np.r_[rng.normal(0, 1, 20), rng.normal(2, 1, 20)]
    band = reference_band(reference)
    flags = flag_outside_band(pooled, band)
    for seed in range(5):  # relabel the pooled samples at random: each sample's decision stays the same
        order = np.random.default_rng(seed).permutation(len(pooled))
        assert (flag_outside_band(pooled[order], band) == flags[order]).all()
    # The counts move with the labels, the decisions do not.
    a = decision_scores(pooled[:20], pooled[20:], reference, seed=0)
    b = decision_scores(pooled[20:], pooled[:20], reference, seed=0)
    assert a["band_low"] == b["band_low"] and a["band_high"] == b["band_high"]
    assert a["p_syn"] == pytest.approx(1 - b["p_real"])


def test_decision_rule_counts_and_intervals():
    reference = np.linspace(-1, 1, 41)
    low, high = reference_band(reference)
    assert low == pytest.approx(-1.0) and high == pytest.approx(1.0)  # 41 samples: min-max keeps 40/42
    result = decision_scores(real=[0.0] * 18 + [5.0, -5.0], synthetic=[3.0] * 15 + [0.0] * 5, reference=reference,
                             seed=1)
    assert result["p_real"] == pytest.approx(0.9) and result["p_syn"] == pytest.approx(0.75)
    assert result["drs"] == pytest.approx(0.75)
    assert result["p_real_low"] < 0.9 < result["p_real_high"] and result["drs_low"] <= 0.75 <= result["drs_high"]


def test_the_band_keeps_the_share_of_new_real_samples_it_states():
    # order statistics of exchangeable samples: (n + 1 - 2j) / (n + 1), whatever the score's distribution
    assert band_coverage(20) == pytest.approx(19 / 21) and band_coverage(39) == pytest.approx(0.95)
    assert band_coverage(79) == pytest.approx(76 / 80)  # j = 2 from 79 samples on
    rng = np.random.default_rng(5)
    for n in (20, 39, 100):
        kept = []
        for _ in range(3000):
            low, high = reference_band(rng.standard_exponential(n))
            kept.append(low <= rng.standard_exponential() <= high)
        assert abs(np.mean(kept) - band_coverage(n)) < 0.015, n
    result = decision_scores(rng.normal(size=10), rng.normal(size=10), rng.normal(size=20), seed=0)
    assert result["band_coverage"] == pytest.approx(19 / 21)


def test_empty_or_one_class_inputs_get_a_clear_error():
    with pytest.raises(DataError, match="both classes"):
        likelihood_auc([], [1.0, 2.0], seed=0)
    with pytest.raises(DataError, match="both classes"):
        likelihood_auc([1.0, 2.0], [], seed=0)
    with pytest.raises(DataError, match="reference"):
        reference_band([1.0])
    with pytest.raises(DataError, match="NaN"):
        likelihood_auc([np.nan, 1.0], [1.0, 2.0], seed=0)


def _records(seed: int = 0, shift: float = -0.5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    groups = [("holdout", "test", 0.0), ("holdout", "reference", 0.0), ("train", "control", 0.0),
              ("ctgan", "test", shift), ("shuffled_columns", "test", shift / 2)]
    for source, role, mean in groups:
        for i in range(20):
            age, job = rng.normal(mean, 1) * 20, rng.normal(0, 1) * 20
            rows.append({"dataset_key": "adult", "backend": "transformers", "model": "m", "serialisation": "markdown",
                         "context": "c1_prompt", "source": source, "role": role, "index": i, "n_rows": 20,
                         "mean_logprob": -1 + age / 400, "min_k_logprob": -4 + age / 100,
                         "column_logprob": {"age": -40 + age, "job": -40 + job}})
    return pd.DataFrame(rows)


def test_likelihood_table_has_each_source_with_its_kind_and_the_real_vs_real_control():
    table = likelihood_table(_records(), seed=5, n_perm=300, n_boot=300)
    assert set(table["source"]) == {"ctgan", "shuffled_columns", REAL_VS_REAL}
    kinds = dict(zip(table["source"], table["kind"]))
    assert kinds == {"ctgan": "release", "shuffled_columns": "positive_control", REAL_VS_REAL: "real_vs_real"}
    ctgan = table.set_index("source").loc["ctgan"]
    assert ctgan["auc"] < 0.5 and ctgan["n_real"] == 20 and ctgan["n_syn"] == 20
    again = likelihood_table(_records(), seed=5, n_perm=300, n_boot=300)
    pd.testing.assert_frame_equal(table, again)
    assert isinstance(real_vs_real_warnings(table), list)


def test_float32_and_bfloat16_samples_are_two_cells_never_pooled():
    # the default run's float32 scores and an opt-in bfloat16 run's of the same samples, side by side
    both = pd.concat([_records(), _records(seed=1).assign(backend="transformers-bfloat16")], ignore_index=True)
    table = likelihood_table(both, seed=5, n_perm=300, n_boot=300)
    assert sorted(set(table["backend"])) == ["transformers", "transformers-bfloat16"]
    assert (table["n_real"] == 20).all() and (table["n_syn"] == 20).all()  # each cell its own 20, never 40
    alone = likelihood_table(_records(), seed=5, n_perm=300, n_boot=300)
    pd.testing.assert_frame_equal(table[table["backend"] == "transformers"].reset_index(drop=True), alone)


def test_real_vs_real_warning_fires_when_the_control_separates():
    records = _records()
    train = records["source"] == "train"
    records.loc[train, "mean_logprob"] = records.loc[train, "mean_logprob"] + 5  # a "memorised" train split
    warnings = real_vs_real_warnings(likelihood_table(records, seed=5, n_perm=300, n_boot=300))
    assert len(warnings) == 1 and "memorised" in warnings[0]


def test_column_contributions_point_at_the_shifted_column():
    columns = column_contributions(_records(shift=-3.0))
    ctgan = columns[columns["source"] == "ctgan"].set_index("column")
    assert ctgan.loc["age", "rank"] == 1 and ctgan.loc["age", "delta_nats_per_row"] < 0
    assert ctgan.loc["age", "column_auc"] < 0.2


def test_table_without_holdout_samples_names_the_fix():
    records = _records()
    with pytest.raises(DataError, match="holdout"):
        likelihood_table(records[records["source"] != "holdout"])
