"""Metadata block: every number against an independent pandas/NumPy/SciPy computation; edge cases; text."""

from __future__ import annotations

import math
import re
from collections import Counter
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmdisc.discrimination.metadata import (
    METADATA_SOURCES,
    metadata_block,
    metadata_statistics,
    render_metadata,
)


@pytest.fixture(scope="module")
def placements() -> pd.DataFrame:
    """A small real table with missing values, booleans and text (shipped with sdmetrics: 215 rows)."""
    # find_spec locates the installed package without importing it (its import takes seconds).
    spec = find_spec("sdmetrics")
    assert spec is not None and spec.submodule_search_locations, "sdmetrics is part of the pinned environment"
    folder = Path(next(iter(spec.submodule_search_locations)))
    return pd.read_csv(folder / "demos" / "single_table" / "student_placements_real.csv")


@pytest.fixture(scope="module")
def wide() -> pd.DataFrame:
    """8 numeric columns (28 pairs, so the top-15 cut matters) and 700 rows (> the 500-row Shapiro cap)."""
    rng = np.random.default_rng(3)
    base = rng.normal(size=700)
    data = {f"x{i}": base * (i / 8) + rng.normal(size=700) for i in range(7)}
    data["counts"] = rng.poisson(3, 700)
    return pd.DataFrame(data)


def test_sources_are_the_documented_three():
    assert METADATA_SOURCES == ("source", "real", "sample")


class TestNumbers:
    def test_numeric_summaries_match_numpy_and_scipy(self, placements):
        numbers = metadata_statistics(placements)["columns"]
        for col in ("second_perc", "salary", "experience_years", "duration"):
            values = placements[col].dropna().to_numpy(dtype=float)
            info = numbers[col]
            assert info["kind"] == "numeric"
            assert info["mean"] == pytest.approx(values.mean())
            assert info["std"] == pytest.approx(values.std(ddof=1))
            assert info["min"] == values.min() and info["max"] == values.max()
            for key, q in (("p25", 25), ("median", 50), ("p75", 75)):
                assert info[key] == pytest.approx(np.percentile(values, q))
            assert info["skewness"] == pytest.approx(stats.skew(values, bias=False))
            assert info["kurtosis"] == pytest.approx(stats.kurtosis(values, fisher=True, bias=False))
            assert info["missing_pct"] == pytest.approx(100 * placements[col].isna().mean())
            assert info["n_unique"] == len(np.unique(values))

    def test_shapiro_uses_a_seeded_500_row_subsample(self, wide):
        numbers = metadata_statistics(wide)["columns"]["x3"]
        # pandas' sample(n, random_state=42) = RandomState(42).choice(len, n, replace=False).
        rows = np.random.RandomState(42).choice(700, 500, replace=False)
        expected = stats.shapiro(wide["x3"].to_numpy()[rows]).pvalue
        assert numbers["shapiro_p"] == pytest.approx(expected)
        other_seed = metadata_statistics(wide, shapiro_seed=7)["columns"]["x3"]["shapiro_p"]
        assert other_seed != pytest.approx(expected)
        full = metadata_statistics(wide, shapiro_rows=700)["columns"]["x3"]["shapiro_p"]
        assert full == pytest.approx(stats.shapiro(wide["x3"].to_numpy()).pvalue)

    def test_categorical_shares_and_entropy(self, placements):
        numbers = metadata_statistics(placements)["columns"]
        for col in ("gender", "degree_type", "mba_spec", "placed"):
            values = [str(v) for v in placements[col].dropna()]
            counts = Counter(values)
            total = sum(counts.values())
            top = numbers[col]["top_values"]
            assert numbers[col]["kind"] == "categorical"
            assert [v for v, _ in top[:5]] == [v for v, _ in counts.most_common(5)]
            for value, share in top:
                assert share == pytest.approx(counts[value] / total)
            shannon = -sum((c / total) * math.log(c / total) for c in counts.values())
            assert numbers[col]["entropy"] == pytest.approx(shannon)

    def test_correlations_are_pearson_sorted_by_magnitude(self, wide):
        pairs = metadata_statistics(wide)["correlations"]
        assert len(pairs) == 28
        for a, b, r in pairs:
            assert r == pytest.approx(np.corrcoef(wide[a], wide[b])[0, 1])
        magnitudes = [abs(round(r, 4)) for _, _, r in pairs]
        assert magnitudes == sorted(magnitudes, reverse=True)
        text = metadata_block(wide)
        shown = re.findall(r"^  (\w+) × (\w+): r=(-?\d\.\d{4})$", text, re.MULTILINE)
        assert len(shown) == 15
        assert [(a, b) for a, b, _ in shown] == [(a, b) for a, b, _ in pairs[:15]]
        assert [float(r) for *_, r in shown] == [round(r, 4) for *_, r in pairs[:15]]

    def test_correlations_use_pairwise_complete_rows(self, placements):
        pairs = {(a, b): r for a, b, r in metadata_statistics(placements)["correlations"]}
        both = placements[["salary", "mba_perc"]].dropna()
        assert pairs[("mba_perc", "salary")] == pytest.approx(np.corrcoef(both["mba_perc"], both["salary"])[0, 1])


class TestText:
    def test_layout_and_rounding_follow_the_paper(self, placements):
        text = metadata_block(placements)
        numbers = metadata_statistics(placements)
        lines = text.splitlines()
        assert lines[0] == "=== DATASET METADATA ==="
        assert lines[1] == "Shape: 215 rows × 17 columns"
        assert "\n--- Missing Values ---\n" in text
        salary_missing = round(100 * placements["salary"].isna().mean(), 2)
        assert f"  salary: {salary_missing}% missing" in lines
        salary = numbers["columns"]["salary"]
        assert f"[salary]  dtype=float64  unique={salary['n_unique']}  missing={salary_missing}%" in text
        assert f"  mean={round(salary['mean'], 4)}  std={round(salary['std'], 4)}  min={salary['min']}" in text
        gender = placements["gender"].value_counts(normalize=True)
        # The paper rounds shares to 4 dp before printing one decimal of percent: 139/215 -> 0.6465 -> "64.6%"
        # (printing the raw share would give 64.7%).
        assert f"  top values: M={round(gender['M'], 4):.1%}  F={round(gender['F'], 4):.1%}" in text
        assert "  top values: M=64.6%  F=35.4%" in text
        assert "--- Numeric Correlations (Pearson r) ---" in text
        assert not text.endswith("\n")

    def test_shapiro_tag_is_at_0_05(self, wide):
        text = metadata_block(wide)
        for p, tag in re.findall(r"Shapiro-Wilk p=([\d.e-]+) \((normal|non-normal)\)", text):
            assert (float(p) > 0.05) == (tag == "normal")
        assert "Shapiro-Wilk p=0.0 (non-normal)" in text  # Poisson counts

    def test_is_deterministic(self, placements):
        assert metadata_block(placements) == metadata_block(placements.copy())

    def test_row_count_can_be_left_out(self, placements):
        text = metadata_block(placements, include_row_count=False)
        assert text.splitlines()[1] == "Shape: 17 columns" and "215 rows" not in text

    def test_no_missing_values_line(self, wide):
        assert "\nNo missing values detected.\n" in metadata_block(wide)


class TestEdgeCases:
    def test_constant_and_all_missing_columns(self):
        table = pd.DataFrame({"const": [5] * 12, "empty_num": [np.nan] * 12, "empty_cat": [None] * 12,
                              "x": np.arange(12.0), "cat": list("ab") * 6})
        numbers = metadata_statistics(table)
        const = numbers["columns"]["const"]
        assert const["std"] == 0.0 and const["skewness"] == 0.0 and const["shapiro_p"] is None
        assert const["shapiro_skipped"] == "constant column"
        assert math.isnan(numbers["columns"]["empty_num"]["mean"])
        assert numbers["columns"]["empty_cat"]["top_values"] == [] and numbers["columns"]["empty_cat"]["entropy"] is None
        # Correlations with the constant and empty columns are undefined and left out.
        assert [p[:2] for p in numbers["correlations"]] == []
        text = metadata_block(table)
        assert "  Shapiro-Wilk p=n/a (constant column)" in text
        assert "[empty_num]  dtype=float64  unique=0  missing=100.0%" in text and "mean=nan" in text
        assert "  empty_cat: 100.0% missing" in text
        assert "  top values: none (all values missing)" in text
        assert "--- Numeric Correlations" not in text

    def test_fewer_rows_than_shapiro_needs(self):
        table = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 1.0]})
        numbers = metadata_statistics(table)
        assert numbers["columns"]["a"]["shapiro_p"] is None
        assert numbers["columns"]["a"]["shapiro_skipped"] == "fewer than 9 values"
        assert math.isnan(numbers["columns"]["a"]["skewness"])
        assert "Shapiro-Wilk p=n/a (fewer than 9 values)" in metadata_block(table)

    def test_twenty_row_sample_gets_shapiro(self, placements):
        sample = placements.head(20)
        assert metadata_statistics(sample)["columns"]["second_perc"]["shapiro_p"] == pytest.approx(
            stats.shapiro(sample["second_perc"].astype(float)).pvalue)

    def test_no_numeric_columns(self):
        table = pd.DataFrame({"a": list("xxyz"), "b": list("pqpq")})
        text = metadata_block(table)
        assert "Numeric Correlations" not in text and "mean=" not in text
        assert "  top values: x=50.0%  y=25.0%  z=25.0%" in text

    def test_ties_keep_first_appearance_order(self):
        table = pd.DataFrame({"a": ["q", "p", "p", "q", "r"]})
        assert [v for v, _ in metadata_statistics(table)["columns"]["a"]["top_values"]] == ["q", "p", "r"]

    def test_other_dtypes_get_the_header_line_only(self):
        table = pd.DataFrame({"when": pd.to_datetime(["2020-01-01", "2021-01-01"])})
        text = metadata_block(table)
        assert "[when]  dtype=datetime64[ns]  unique=2  missing=0.0%" in text
        assert text.rstrip().endswith("missing=0.0%")

    def test_render_accepts_the_statistics_dict(self, wide):
        assert render_metadata(metadata_statistics(wide)) == metadata_block(wide)
