"""The sample's variety and the variety-adjusted joint contrast (llmdisc.scoring.variety)."""

import numpy as np
import pandas as pd
import pytest

from llmdisc.errors import DataError
from llmdisc.scoring.joint import JOINT_CELL_COLUMNS, joint_table
from llmdisc.scoring.variety import (ADJUSTED_SCORE, adjusted_records, sample_variety, variety_adjusted,
                                    with_variety)


def test_variety_is_zero_for_constant_columns_one_for_all_distinct_and_in_between_by_hand():
    assert sample_variety(pd.DataFrame({"a": [1] * 20, "b": ["x"] * 20})) == 0.0
    assert sample_variety(pd.DataFrame({"a": range(20), "b": [f"v{i}" for i in range(20)]})) == 1.0
    # a: 5 distinct of 20 → 4/19; b: 20 distinct → 1; NaN counts as one value: c has 2 → 1/19
    sample = pd.DataFrame({"a": [i % 5 for i in range(20)], "b": range(20), "c": [np.nan] * 10 + [1.0] * 10})
    assert sample_variety(sample) == pytest.approx((4 / 19 + 1 + 1 / 19) / 3)
    with pytest.raises(DataError, match="at least 2 rows"):
        sample_variety(pd.DataFrame({"a": [1]}))


def _cell(records):
    return {column: value for column, value in zip(JOINT_CELL_COLUMNS, ("adult", "transformers", "m", "csv",
                                                                          "none", 2, 20))} | records


def _planted(rng, n=20):
    """Reference and real test samples whose C is 40 × variety + noise; a 'collapsed' release with the real
    relation but lower variety (it lost variety, not dependence); a 'broken' one with real variety and C near 0."""
    table = pd.DataFrame({"a": np.arange(400) % 19, "b": np.arange(400) % 7})
    rows = []
    for source, role, low, high, broken in (("holdout", "reference", 0, 400, False), ("holdout", "test", 0, 400, False),
                                            ("collapsed", "test", 0, 400, False), ("broken", "test", 0, 400, True)):
        for i in range(n):
            ids = sorted(int(r) for r in rng.choice(np.arange(low, high), 20, replace=False))
            if source == "collapsed":  # fewer distinct values of a (rows with a < 9), within the reference's range
                ids = sorted(int(r) for r in rng.choice(np.flatnonzero(table["a"] < 9), 20, replace=False))
            v = sample_variety(table.iloc[ids])
            c = (0.5 if broken else 40 * v) + rng.normal(0, 0.5)
            rows.append(_cell({"source": source, "role": role, "row_ids": ids, "contrast": c, "p_value": 0.5,
                               "p_randomised": rng.random(), "index": i}))
    return table, pd.DataFrame(rows)


def test_the_adjustment_removes_a_loss_of_variety_and_keeps_a_loss_of_dependence():
    table, records = _planted(np.random.default_rng(0))
    records = with_variety(records, lambda key, sources: {s: table for s in ["holdout", *sources]})
    means = records.groupby("source")["variety"].mean()
    assert means["collapsed"] < means["holdout"] - 0.04
    adjusted = variety_adjusted(records, list(JOINT_CELL_COLUMNS))
    assert adjusted["variety_r"].iloc[0] > 0.9 and adjusted["variety_slope"].iloc[0] == pytest.approx(40, rel=0.15)
    raw = joint_table(adjusted, score="contrast", n_perm=200, n_boot=200).set_index("source")
    fixed = joint_table(adjusted, score=ADJUSTED_SCORE, n_perm=200, n_boot=200).set_index("source")
    assert raw.loc["collapsed", "separation_low"] > 0.5  # read raw: "less structured", a loss of variety only
    assert fixed.loc["collapsed", "separation_low"] == 0.0  # adjusted: not told apart
    assert fixed.loc["broken", "direction"] == "synthetic less structured" and fixed.loc["broken", "separation_low"] > 0.5
    assert raw.loc["collapsed", "other_variety"] < raw.loc["collapsed", "real_variety"]


def test_bad_records_name_the_fix():
    table, records = _planted(np.random.default_rng(1), n=4)
    with pytest.raises(DataError, match="with_variety"):
        variety_adjusted(records, list(JOINT_CELL_COLUMNS))
    with pytest.raises(DataError, match="no 'broken' table"):
        with_variety(records, lambda key, sources: {"holdout": table, "collapsed": table})
    with pytest.raises(DataError, match="other data"):
        with_variety(records, lambda key, sources: {s: table.head(30) for s in ["holdout", *sources]})
    with pytest.raises(DataError, match="variety_adjusted"):
        joint_table(records, score=ADJUSTED_SCORE)
    flat = with_variety(records, lambda key, sources: {s: table for s in ["holdout", *sources]})
    flat["variety"] = 0.5  # no line to fit: the cell's adjusted score is NaN and its records are left out
    assert variety_adjusted(flat, list(JOINT_CELL_COLUMNS))[ADJUSTED_SCORE].isna().all()
    assert adjusted_records(variety_adjusted(flat, list(JOINT_CELL_COLUMNS))).empty
    few = with_variety(records, lambda key, sources: {s: table for s in ["holdout", *sources]})
    few = few[~((few["role"] == "reference") & (few["index"] >= 2))]  # 2 reference samples, as a quick run has
    assert variety_adjusted(few, list(JOINT_CELL_COLUMNS))[ADJUSTED_SCORE].isna().all()


def test_a_slope_whose_interval_covers_zero_leaves_the_cell_unadjusted():
    """C that does not follow variety (noise only): the fitted slope's 95 % interval covers 0, so subtracting the
    line would only add the fit's noise; the cell keeps its fit columns and no adjusted score."""
    table, records = _planted(np.random.default_rng(2))
    records = with_variety(records, lambda key, sources: {s: table for s in ["holdout", *sources]})
    records["contrast"] = np.random.default_rng(3).normal(0, 0.5, len(records))
    noise = variety_adjusted(records, list(JOINT_CELL_COLUMNS))
    low, high = noise["variety_slope_low"].iloc[0], noise["variety_slope_high"].iloc[0]
    assert low < noise["variety_slope"].iloc[0] < high and low < 0 < high
    assert noise[ADJUSTED_SCORE].isna().all() and adjusted_records(noise).empty
    # the same records with the planted relation: the interval excludes 0 and brackets the planted 40
    planted = variety_adjusted(with_variety(_planted(np.random.default_rng(2))[1],
                                            lambda key, sources: {s: table for s in ["holdout", *sources]}),
                               list(JOINT_CELL_COLUMNS))
    assert planted["variety_slope_low"].iloc[0] < 40 < planted["variety_slope_high"].iloc[0]
    assert planted["variety_slope_low"].iloc[0] > 0 and planted[ADJUSTED_SCORE].notna().all()
