"""Per-cell scores: DRS, Wilson and bootstrap intervals, binomial test, calibration, bad input."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmdisc.errors import ConfigError, DataError
from llmdisc.scoring.calibration import brier_score, expected_calibration_error, reliability_bins
from llmdisc.scoring.metrics import (
    CELL_COLUMNS,
    SCORES,
    Estimate,
    balanced_accuracy,
    cell_reliability,
    cell_seed,
    chance_drs,
    disclosure_risk_score,
    drs_bootstrap,
    score_cell,
    score_cells,
    wilson_interval,
    youden_j,
)


def _trials(true: list[str], pred: list[object], conf: list[object] | None = None, **extra: object) -> pd.DataFrame:
    df = pd.DataFrame({"true_label": true, "predicted_label": pred,
                       "confidence": conf if conf is not None else [90] * len(true)})
    for key, value in extra.items():
        df[key] = value
    return df


def _wilson_by_hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


class TestWilson:
    @pytest.mark.parametrize("k, n, low, high", [
        (8, 10, 0.490, 0.943),
        (0, 10, 0.000, 0.278),
        (10, 10, 0.722, 1.000),
        (50, 100, 0.404, 0.596),
        (500, 1000, 0.469, 0.531),
        (900, 1000, 0.880, 0.917),
    ])
    def test_pinned_values(self, k: int, n: int, low: float, high: float) -> None:
        # Run
        est = wilson_interval(k, n)
        # Assert
        assert est == Estimate(k / n, est.ci_low, est.ci_high, n)
        assert np.round(est.ci_low, 3) == low
        assert np.round(est.ci_high, 3) == high
        by_hand = _wilson_by_hand(k, n)
        assert est.ci_low == pytest.approx(max(0.0, by_hand[0]), abs=1e-12)
        assert est.ci_high == pytest.approx(min(1.0, by_hand[1]), abs=1e-12)

    def test_other_level_is_wider(self) -> None:
        assert wilson_interval(8, 10, 0.99).ci_low < wilson_interval(8, 10, 0.95).ci_low

    def test_empty_is_nan(self) -> None:
        est = wilson_interval(0, 0)
        assert est.n == 0 and all(math.isnan(v) for v in (est.value, est.ci_low, est.ci_high))

    def test_bad_counts_and_level(self) -> None:
        with pytest.raises(DataError, match=re.escape("needs 0 <= successes <= n, got successes=11, n=10")):
            wilson_interval(11, 10)
        with pytest.raises(ConfigError, match="confidence must be between 0 and 1"):
            wilson_interval(1, 2, confidence=95)

    def test_percent(self) -> None:
        assert wilson_interval(8, 10).percent().value == pytest.approx(80.0)


class TestDisclosureRiskScore:
    def test_always_real_scores_zero(self) -> None:
        assert disclosure_risk_score(["REAL", "SYNTHETIC"] * 5, ["REAL"] * 10) == 0.0

    def test_always_synthetic_scores_zero(self) -> None:
        assert disclosure_risk_score(["REAL", "SYNTHETIC"] * 5, ["SYNTHETIC"] * 10) == 0.0

    def test_min_of_class_rates(self) -> None:
        true = ["REAL"] * 4 + ["SYNTHETIC"] * 5
        pred = ["REAL", "REAL", "REAL", "SYNTHETIC"] + ["SYNTHETIC"] * 2 + ["REAL"] * 3
        assert disclosure_risk_score(true, pred) == pytest.approx(0.4)  # min(3/4, 2/5)

    def test_balanced_accuracy_and_youden(self) -> None:
        true = ["REAL"] * 4 + ["SYNTHETIC"] * 5
        pred = ["REAL", "REAL", "REAL", "SYNTHETIC"] + ["SYNTHETIC"] * 2 + ["REAL"] * 3
        assert balanced_accuracy(true, pred) == pytest.approx((0.75 + 0.4) / 2)
        assert youden_j(true, pred) == pytest.approx(0.15)
        assert balanced_accuracy(["REAL", "SYNTHETIC"], ["REAL", "REAL"]) == 0.5  # one label always: chance
        assert math.isnan(youden_j(["REAL"], ["REAL"]))

    def test_empty_class_is_nan_not_zero(self) -> None:
        assert math.isnan(disclosure_risk_score(["REAL"] * 3, ["REAL"] * 3))

    def test_missing_predictions_are_excluded(self) -> None:
        assert disclosure_risk_score(["REAL", "SYNTHETIC", "SYNTHETIC"], ["REAL", "SYNTHETIC", None]) == 1.0

    def test_unknown_label_raises(self) -> None:
        with pytest.raises(DataError, match=re.escape("predicted_label has 1 value(s) that are not "
                                                      "REAL/SYNTHETIC: 'MAYBE'; fix: map them")):
            disclosure_risk_score(["REAL", "SYNTHETIC"], ["REAL", "MAYBE"])


class TestChanceBaseline:
    def test_exact_small_case(self) -> None:
        assert chance_drs(1, 1) == pytest.approx(0.25)  # both coin flips right
        assert math.isnan(chance_drs(0, 3))

    @pytest.mark.parametrize("n_real, n_syn, expected", [(5, 5, 0.377), (4, 5, 0.363), (100, 100, 0.472)])
    def test_against_simulation(self, n_real: int, n_syn: int, expected: float) -> None:
        rng = np.random.default_rng(0)
        simulated = np.minimum(rng.binomial(n_real, 0.5, 200_000) / n_real,
                               rng.binomial(n_syn, 0.5, 200_000) / n_syn).mean()
        assert np.round(chance_drs(n_real, n_syn), 3) == expected
        assert chance_drs(n_real, n_syn) == pytest.approx(simulated, abs=0.003)


class TestBootstrap:
    TRUE = ["REAL"] * 10 + ["SYNTHETIC"] * 10
    PRED = ["REAL"] * 8 + ["SYNTHETIC"] * 2 + ["SYNTHETIC"] * 6 + ["REAL"] * 4

    def test_reproducible_for_a_seed(self) -> None:
        a = drs_bootstrap(self.TRUE, self.PRED, seed=7)
        b = drs_bootstrap(self.TRUE, self.PRED, seed=7)
        c = drs_bootstrap(self.TRUE, self.PRED, seed=8, n_boot=200)
        assert a == b
        assert a.value == pytest.approx(0.6) and a.n == 20
        assert a.ci_low <= 0.6 <= a.ci_high
        assert (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high) or c.value == a.value

    def test_pinned_interval(self) -> None:
        est = drs_bootstrap(self.TRUE, self.PRED, seed=2026)
        assert (np.round(est.ci_low, 2), np.round(est.ci_high, 2)) == (0.3, 0.8)

    def test_perfect_and_empty(self) -> None:
        assert drs_bootstrap(["REAL", "SYNTHETIC"], ["REAL", "SYNTHETIC"], seed=1) == Estimate(1.0, 1.0, 1.0, 2)
        assert math.isnan(drs_bootstrap(["REAL"], ["REAL"], seed=1).ci_low)

    def test_bad_n_boot(self) -> None:
        with pytest.raises(ConfigError, match="n_boot must be >= 1, got 0"):
            drs_bootstrap(self.TRUE, self.PRED, seed=1, n_boot=0)


class TestScoreCell:
    def test_breakdown_numbers(self) -> None:
        # Setup: 10 valid (8 correct), 1 invalid answer, 1 API error.
        true = ["REAL"] * 5 + ["SYNTHETIC"] * 5 + ["REAL", "SYNTHETIC"]
        pred = ["REAL"] * 4 + ["SYNTHETIC"] + ["SYNTHETIC"] * 4 + ["REAL"] + [None, None]
        df = _trials(true, pred, [80] * 10 + [None, None])
        df["status"] = ["valid"] * 10 + ["invalid", "error"]
        df["prompt_hash"] = [f"h{i % 3}" for i in range(12)]
        # Run
        out = score_cell(df, seed=3)
        # Assert
        assert (out["n_total"], out["n_valid"], out["n_excluded"], out["n_invalid"], out["n_error"]) == (12, 10, 2, 1, 1)
        assert out["valid_rate"] == pytest.approx(10 / 12)
        assert (out["p_real"], out["p_syn"], out["drs"]) == (0.8, 0.8, 0.8)
        assert out["accuracy"] == 0.8 and out["balanced_accuracy"] == pytest.approx(0.8)
        assert out["youden_j"] == pytest.approx(0.6)
        assert out["real_prediction_rate"] == 0.5
        assert out["binom_p"] == pytest.approx(0.109375)  # 2 * (1 + 10 + 45) / 1024
        assert out["binom_p"] == pytest.approx(stats.binomtest(8, 10, 0.5).pvalue)
        assert out["effective_n"] == 3 and out["effective_n_source"] == "prompt_hash"
        assert out["brier"] == pytest.approx(0.8 * 0.04 + 0.2 * 0.64)
        assert out["ece"] == pytest.approx(0.0)
        assert out["bootstrap_seed"] == 3
        assert out["chance_drs"] == pytest.approx(chance_drs(5, 5))

    def test_status_derived_when_absent(self) -> None:
        out = score_cell(_trials(["REAL", "SYNTHETIC", "REAL"], ["REAL", "ERROR", float("nan")]))
        assert (out["n_valid"], out["n_excluded"]) == (1, 2)
        assert math.isnan(out["drs"])

    def test_reasoning_proxy_for_effective_n(self) -> None:
        df = _trials(["REAL", "SYNTHETIC", "REAL"], ["REAL", "SYNTHETIC", "REAL"], reasoning=["a", "b", "a"])
        out = score_cell(df)
        assert (out["effective_n"], out["effective_n_source"]) == (2, "reasoning")

    def test_missing_column(self) -> None:
        with pytest.raises(DataError, match=re.escape("trial table lacks column(s) ['confidence']")):
            score_cell(pd.DataFrame({"true_label": ["REAL"], "predicted_label": ["REAL"]}))

    def test_unknown_true_label(self) -> None:
        with pytest.raises(DataError, match="true_label has 1 value"):
            score_cell(_trials(["FAKE"], ["REAL"]))

    def test_confidence_out_of_range(self) -> None:
        with pytest.raises(DataError, match=re.escape("1 valid trial(s) have a confidence outside 0-100 (e.g. 150)")):
            score_cell(_trials(["REAL", "SYNTHETIC"], ["REAL", "REAL"], [150, 50]))

    def test_valid_status_without_verdict(self) -> None:
        df = _trials(["REAL"], [None], status=["valid"])
        with pytest.raises(DataError, match="status 'valid' but predicted_label"):
            score_cell(df)

    def test_unknown_status(self) -> None:
        with pytest.raises(DataError, match=re.escape("status must be one of ('valid', 'invalid', 'error')")):
            score_cell(_trials(["REAL"], ["REAL"], status=["ok"]))


class TestScoreCells:
    def test_one_row_per_cell_never_pooling_providers(self) -> None:
        base = _trials(["REAL", "SYNTHETIC"] * 2, ["REAL", "SYNTHETIC", "REAL", "REAL"],
                       dataset="adult", synthetic_method="ctgan", condition="C1")
        base["provider"] = ["gemini", "gemini", "ollama", "ollama"]
        base["model"] = ["m1", "m1", "m2", "m2"]
        out = score_cells(base, seed=5)
        assert list(out["provider"]) == ["gemini", "ollama"]
        assert list(out["drs"]) == [1.0, 0.0]
        assert list(out["bootstrap_seed"]) == [cell_seed(5, ("adult", "ctgan", "C1", "gemini", "m1")),
                                                cell_seed(5, ("adult", "ctgan", "C1", "ollama", "m2"))]
        assert list(out.columns[:5]) == list(CELL_COLUMNS)

    def test_custom_grouping(self) -> None:
        df = _trials(["REAL", "SYNTHETIC"] * 2, ["REAL"] * 4, annotator=["a", "a", "b", "b"])
        out = score_cells(df, by=["annotator"])
        assert list(out["annotator"]) == ["a", "b"] and list(out["n_valid"]) == [2, 2]

    def test_missing_group_column(self) -> None:
        with pytest.raises(DataError, match=re.escape("cannot group by ['dataset']")):
            score_cells(_trials(["REAL"], ["REAL"]), by=["dataset"])

    def test_scores_table_covers_output(self) -> None:
        out = score_cells(_trials(["REAL", "SYNTHETIC"], ["REAL", "SYNTHETIC"], annotator="x"), by=["annotator"])
        assert set(SCORES) <= set(out.columns)
        assert SCORES["drs"].min_value == 0.0 and SCORES["drs"].max_value == 1.0


class TestCalibration:
    def test_pinned(self) -> None:
        conf, correct = [100, 100, 50, 50], [1, 0, 1, 0]
        assert brier_score(conf, correct) == pytest.approx(0.375)
        assert expected_calibration_error(conf, correct) == pytest.approx(0.25)
        bins = reliability_bins(conf, correct)
        assert list(bins["n"]) == [0, 0, 0, 0, 0, 2, 0, 0, 0, 2]
        assert bins.loc[9, "mean_confidence"] == 100 and bins.loc[9, "accuracy"] == 0.5

    def test_nan_ignored_and_empty(self) -> None:
        assert brier_score([np.nan, 100], [0, 1]) == 0.0
        assert math.isnan(expected_calibration_error([], []))

    def test_out_of_range(self) -> None:
        with pytest.raises(DataError, match="confidence must be a percentage in 0-100, found 101.0"):
            brier_score([101], [1])

    def test_cell_reliability(self) -> None:
        df = _trials(["REAL", "SYNTHETIC", "REAL", "SYNTHETIC"], ["REAL", "REAL", "REAL", None],
                     [95, 95, 35, None], annotator=["a", "a", "b", "b"])
        out = cell_reliability(df, by=["annotator"], n_bins=5)
        assert len(out) == 10 and list(out.columns[:2]) == ["annotator", "bin_low"]
        a_top = out[(out["annotator"] == "a") & (out["bin_low"] == 80)].iloc[0]
        assert (a_top["n"], a_top["accuracy"]) == (2, 0.5)
        assert out.loc[out["annotator"] == "b", "n"].sum() == 1  # the invalid trial is not binned
