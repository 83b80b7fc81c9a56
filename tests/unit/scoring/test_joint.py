"""Scoring the joint-structure contrast across samples: AUC, the label-free decision, calibration, columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.likelihood.joint import contrast_statistics
from llmdisc.errors import DataError
from llmdisc.scoring.joint import attainable_level, joint_column_table, joint_table, uniformity_test


def _records(seed: int = 0, n: int = 20, k: int = 19) -> pd.DataFrame:
    """Real samples with C around +30 nats; a release keeping half of it; the shuffled control at 0; train as real.
    Per-sample p-values come from k = 19 planted permutation scores (exchangeable for the control)."""
    rng = np.random.default_rng(seed)
    rows = []
    groups = [("holdout", "test", "REAL", 30.0), ("holdout", "reference", "REAL", 30.0), ("train", "control", "REAL", 30.0),
              ("gaussian_copula", "test", "SYNTHETIC", 12.0), ("shuffled_columns", "test", "SYNTHETIC", 0.0)]
    for source, role, label, shift in groups:
        for i in range(n):
            permuted = rng.normal(0.0, 10.0, k)
            observed = float(rng.normal(shift, 10.0))
            stats = contrast_statistics(observed, permuted, uniform=float(rng.random()))
            split = {"relationship": stats["contrast"] * 0.6, "sex": stats["contrast"] * 0.4, "age": 0.0}
            rows.append({"dataset_key": "adult", "backend": "transformers", "model": "m", "serialisation": "markdown",
                         "context": "none", "k": k, "reference_rows": 40, "source": source, "role": role,
                         "true_label": label, "index": i, **stats, "column_contrast": split,
                         "column_contrasts": {c: v * 1.1 for c, v in split.items()}})
    return pd.DataFrame(rows)


def test_the_table_separates_the_control_and_reads_real_vs_real_at_chance():
    table = joint_table(_records(), n_perm=500, n_boot=200).set_index("source")
    control, release, rr = table.loc["shuffled_columns"], table.loc["gaussian_copula"], table.loc["real_vs_real"]
    assert control["kind"] == "positive_control" and control["auc"] < 0.1 and control["separation"] > 0.9
    assert control["direction"] == "synthetic less structured" and control["perm_p"] < 0.01
    assert release["auc"] < 0.3
    assert 0.25 < rr["auc"] < 0.75 and rr["kind"] == "real_vs_real"
    # per-sample p-values: the control's randomised ones are uniform, the real samples mostly significant
    assert control["ks_p"] > 0.05
    assert control["share_p_real"] > 0.5 and control["share_p_other"] < 0.3
    assert control["p_syn"] > 0.5 and 0 <= control["drs"] <= 1
    for column in ("auc_low", "auc_high", "p_real_low", "p_syn_high", "drs_low", "share_p_other_high"):
        assert np.isfinite(control[column])


def test_float32_and_bfloat16_contrasts_are_two_cells_never_pooled():
    both = pd.concat([_records(), _records(seed=1).assign(backend="transformers-bfloat16")], ignore_index=True)
    table = joint_table(both, n_perm=200, n_boot=100)
    assert sorted(set(table["backend"])) == ["transformers", "transformers-bfloat16"]
    assert (table["n_real"] == 20).all() and (table["n_syn"] == 20).all()  # each cell its own 20, never 40
    alone = joint_table(_records(), n_perm=200, n_boot=100)
    pd.testing.assert_frame_equal(table[table["backend"] == "transformers"].reset_index(drop=True), alone)


def test_with_few_permutations_the_per_sample_share_is_read_at_the_smallest_attainable_p():
    assert attainable_level(19) == 0.05 and attainable_level(2) == pytest.approx(1 / 3)
    table = joint_table(_records(k=2, n=60), n_perm=200, n_boot=100).set_index("source")
    control = table.loc["shuffled_columns"]
    assert control["share_level"] == pytest.approx(1 / 3)
    # real C (+30 nats, permutations at 0 ± 10) beats both permutations almost always; the control about 1 in 3
    assert control["share_p_real"] > 0.9
    assert control["share_p_other_low"] < 1 / 3 < control["share_p_other_high"]
    assert table.loc["gaussian_copula", "share_level"] == control["share_level"]


def test_uniformity_test_rejects_piled_up_p_values():
    assert uniformity_test(np.linspace(0.01, 0.99, 50))["ks_p"] > 0.5
    assert uniformity_test(np.full(50, 0.02))["ks_p"] < 1e-6


def test_column_table_names_the_columns_a_release_lost():
    table = joint_column_table(_records())
    release = table[table["source"] == "gaussian_copula"]
    assert release.iloc[0]["column"] == "relationship" and release.iloc[0]["delta_cj"] < -5
    assert release.set_index("column").loc["age", "delta_split"] == 0.0


def test_a_cell_without_reference_samples_is_refused_with_the_fix():
    records = _records()
    with pytest.raises(DataError, match="fix"):
        joint_table(records[records["role"] != "reference"], n_perm=10, n_boot=10)
