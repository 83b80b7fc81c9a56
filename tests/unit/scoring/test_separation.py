"""The separation D, its never-zero-width interval, what a reading could detect, TOST and Holm, checked against
closed forms, hand-computed values and simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llmdisc.scoring.auc import auc_with_interval
from llmdisc.scoring.separation import (
    auc_interval,
    equivalent_to_chance,
    fail_probability,
    holm,
    minimum_detectable_separation,
    null_standard_error,
    pass_probability_at_chance,
    separation,
)


def _auc(real: np.ndarray, other: np.ndarray) -> float:
    ranks = stats.rankdata(np.r_[real, other])
    n = len(other)
    return (ranks[len(real):].sum() - n * (n + 1) / 2) / (len(real) * n)


def test_the_interval_never_has_zero_width_even_at_a_perfect_split() -> None:
    for n in (2, 5, 20, 500):
        low, high = auc_interval(1.0, n, n)
        assert high == 1.0 and low < 1.0
        low, high = auc_interval(0.0, n, n)
        assert low == 0.0 and high > 0.0
    # 5 a side: a perfect split is consistent with an AUC near 0.64, so D's lower bound is about 0.29, not 1
    low, _ = auc_interval(1.0, 5, 5)
    assert low == pytest.approx(0.643, abs=0.005)
    assert separation(1.0, low, 1.0).low == pytest.approx(2 * (low - 0.5))
    # through the labelled-scores entry point too
    estimate = auc_with_interval(np.r_[0, 0, 0, 0, 0, 1, 1, 1, 1, 1], np.arange(10.0))
    assert estimate.value == 1.0 and estimate.ci_low == pytest.approx(low)


def test_at_chance_the_interval_rests_on_the_exact_mann_whitney_null_variance() -> None:
    from llmdisc.scoring.separation import _variance

    for n1, n2 in ((20, 20), (10, 30), (100, 7)):
        assert _variance(0.5, n1, n2) == pytest.approx(null_standard_error(n1, n2) ** 2)
        low, high = auc_interval(0.5, n1, n2)
        assert 0.5 - low == pytest.approx(high - 0.5)  # symmetric about chance
        # a score interval: each end is where the distance equals z standard errors *at that end*
        for end in (low, high):
            assert (end - 0.5) ** 2 == pytest.approx(1.959964 ** 2 * _variance(end, n1, n2), rel=1e-4)
    assert null_standard_error(20, 20) == pytest.approx(np.sqrt(41 / 4800))


def test_the_interval_covers_the_true_auc_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(0)
    for n, shift in ((10, 0.0), (20, 0.0), (20, 1.0), (40, 2.0)):
        truth = stats.norm.cdf(shift / np.sqrt(2))
        covered = 0
        for _ in range(1500):
            low, high = auc_interval(_auc(rng.normal(size=n), rng.normal(shift, size=n)), n, n)
            covered += low <= truth <= high
        assert covered / 1500 >= 0.93, (n, shift, covered / 1500)


@pytest.mark.parametrize(("auc", "low", "high", "expected"), [
    (0.7, 0.55, 0.85, (0.4, 0.1, 0.7, "higher")),
    (0.6, 0.4, 0.8, (0.2, 0.0, 0.6, "higher")),  # the interval holds 0.5: the lower bound is chance
    (0.2, 0.05, 0.35, (0.6, 0.3, 0.9, "lower")),  # the wrong way round counts the same, its direction kept
    (0.5, 0.4, 0.6, (0.0, 0.0, 0.2, "none")),
])
def test_separation_folds_the_auc_and_says_its_direction(auc: float, low: float, high: float,
                                                         expected: tuple) -> None:
    folded = separation(auc, low, high)
    assert (folded.d, folded.low, folded.high) == pytest.approx(expected[:3])
    assert folded.direction == expected[3]
    assert separation(0.3, 0.16, 0.45, one_sided=True).d == 0.0  # a classifier below chance found nothing
    words = separation(0.305, 0.17, 0.48).words(lower="less structured", higher="more structured")
    assert words == "D 0.39 [0.04, 0.66], less structured"


def test_the_minimum_detectable_separation_is_the_usual_power_calculation() -> None:
    # 20 vs 20: 2·(1.96 + 0.84)·√(41/4800) = 0.52; under Holm over 9 cells (α/9 at the first step) 0.67
    assert minimum_detectable_separation(20, 20) == pytest.approx(0.518, abs=0.002)
    assert minimum_detectable_separation(20, 20, alpha=0.05 / 9) == pytest.approx(0.668, abs=0.002)
    assert minimum_detectable_separation(2, 2) == 1.0  # capped: nothing below 1 can be seen
    # simulated: a release planted at that D is found (two-sided permutation-free normal test) ~80 % of the time
    rng = np.random.default_rng(1)
    d = minimum_detectable_separation(20, 20)
    shift = np.sqrt(2) * stats.norm.ppf(0.5 + d / 2)
    found = sum(abs(_auc(rng.normal(size=20), rng.normal(shift, size=20)) - 0.5) / null_standard_error(20, 20)
                > 1.96 for _ in range(2000))
    assert 0.72 <= found / 2000 <= 0.9


def test_pass_and_fail_probabilities_of_a_gate_match_simulation() -> None:
    rng = np.random.default_rng(2)
    n, threshold = 40, 0.5
    for true_d in (0.0, 0.5, 0.75):
        shift = np.sqrt(2) * stats.norm.ppf(0.5 + true_d / 2)
        passed = 0
        for _ in range(2000):
            auc = _auc(rng.normal(size=n), rng.normal(shift, size=n))
            passed += separation(auc, *auc_interval(auc, n, n)).high <= threshold
        expected = pass_probability_at_chance(threshold, n, n) if true_d == 0 else \
            1 - fail_probability(true_d, threshold, n, n)
        assert passed / 2000 == pytest.approx(expected, abs=0.04), true_d
    assert pass_probability_at_chance(0.0, 10_000, 10_000) == 0.0  # no interval is that narrow
    assert fail_probability(1.0, 0.5, 30, 30) > 0.999


def test_tost_shows_equivalence_only_with_enough_units() -> None:
    assert equivalent_to_chance(0.5, 200, 200, margin=0.2)
    assert not equivalent_to_chance(0.5, 10, 10, margin=0.2)  # too few to show anything
    assert not equivalent_to_chance(0.62, 200, 200, margin=0.2)  # its 90 % interval reaches past 0.6
    assert equivalent_to_chance(0.35, 20, 20, margin=0.67)
    # at the margin itself TOST rejects no more than 5 % of the time (simulated, true D = margin)
    rng = np.random.default_rng(3)
    margin, n = 0.3, 100
    shift = np.sqrt(2) * stats.norm.ppf(0.5 + margin / 2)
    wrong = sum(equivalent_to_chance(_auc(rng.normal(size=n), rng.normal(shift, size=n)), n, n, margin)
                for _ in range(1000))
    assert wrong / 1000 <= 0.06


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.03, 0.04 of m = 4: ×4, ×3, ×2, ×1 = 0.04, 0.06, 0.06, 0.04 -> running max 0.04, 0.06,
    # 0.06, 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, float("nan"), 0.01]) == pytest.approx([0.5, float("nan"), 0.02], nan_ok=True)
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == []


def test_the_auc_p_value_agrees_with_the_score_interval_at_the_edge():
    from llmdisc.scoring.separation import auc_p_value

    # p < 0.05 exactly where the score interval leaves 0.5 out (both from the same null standard error)
    for auc in (0.55, 0.6, 0.65, 0.7, 0.8):
        low, _ = auc_interval(auc, 40, 40)
        assert (auc_p_value(auc, 40, 40) < 0.05) == (low > 0.5), auc
    assert auc_p_value(0.5, 97, 97) == pytest.approx(1.0)
    assert auc_p_value(0.80, 97, 97, one_sided=True) < 1e-6  # the report's C2ST control: AUC 0.80, 97 / 97
    assert auc_p_value(0.40, 20, 20, one_sided=True) > 0.5  # below chance is no finding for a classifier
