"""How far a group is told apart from real data, and what a reading at a given n could have seen.

One convention for every instrument, table, figure and the audit:

- **AUC** = P(a unit of the group scores higher than a real unit), ties one half: 0.5 = not told apart, above 0.5
  the group scores *higher* (more probable, more structured, more often called synthetic), below 0.5 *lower*.
- **Separation D** = 2·|AUC − 0.5|: 0 = indistinguishable from real data, 1 = every unit told apart, with the
  direction said in words. Its interval is folded from the AUC's.
- **The AUC's interval** is a *score* interval (:func:`auc_interval`): the Hanley–McNeil variance of the AUC
  written as a function of the true AUC θ and inverted, |AUĈ − θ| ≤ z·√V(θ) (Newcombe 2006, Stat. Med. 25:559,
  method 5, here with N* = (n₁ + n₂)/2 so that V(0.5) is the exact Mann–Whitney null variance
  (n₁ + n₂ + 1)/(12 n₁ n₂)). It depends only on the AUC and the two sizes, and never has zero width: at 5 units a
  side a perfect split reads AUC 1 [0.64, 1], not [1, 1] (DeLong's interval collapses at 0 and 1).

What a reading could have detected: :func:`minimum_detectable_separation`; what a gate at threshold X can
promise: :func:`pass_probability_at_chance` and :func:`fail_probability`, both from the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

POWER = 0.8
"""The power every "could have detected" figure is stated at."""
ALPHA = 0.05


def null_standard_error(n1: float, n2: float) -> float:
    """Standard error of the AUC under no difference (Mann–Whitney, continuous scores): √((n₁+n₂+1)/(12 n₁ n₂))."""
    return math.sqrt((n1 + n2 + 1) / (12 * n1 * n2))


def auc_p_value(auc: float, n1: float, n2: float, *, one_sided: bool = False) -> float:
    """The p-value of an AUC against 0.5 at its units, from :func:`null_standard_error` (the same null the score
    interval inverts, so p < 0.05 where the interval leaves 0.5 out): two-sided, or for ``one_sided`` only an AUC
    above 0.5 (a cross-validated classifier's) counts."""
    z = (auc - 0.5) / null_standard_error(n1, n2)
    return float(stats.norm.sf(z) if one_sided else 2 * stats.norm.sf(abs(z)))


def _variance(theta: float, n1: float, n2: float) -> float:
    """Hanley–McNeil variance of the AUC at true value ``theta`` with N* = (n₁ + n₂)/2 on both sides."""
    half = (n1 + n2) / 2
    return theta * (1 - theta) / (n1 * n2) * (1 + (half - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta)))


def auc_interval(auc: float, n1: float, n2: float, confidence: float = 0.95) -> tuple[float, float]:
    """The score interval ``(low, high)`` of an AUC (module docstring) at ``n1``, ``n2`` units a class (may
    be fractional: effective sizes of samples that share rows): never of zero width for n₁, n₂ ≥ 1;
    ``(nan, nan)`` when the AUC is NaN or a class has fewer than one unit."""
    if not (math.isfinite(auc) and n1 >= 1 and n2 >= 1):
        return float("nan"), float("nan")
    auc = min(1.0, max(0.0, float(auc)))
    z2 = stats.norm.ppf(0.5 + confidence / 2) ** 2

    def outside(theta: float) -> float:  # > 0 where theta lies outside the interval
        return (auc - theta) ** 2 - z2 * _variance(theta, n1, n2)

    # at an AUC of 0 or 1 the variance vanishes there too: start the search just inside
    inner_low, inner_high = (auc if auc < 1 else 1 - 1e-9), (auc if auc > 0 else 1e-9)
    low = 0.0 if auc == 0 or outside(0.0) <= 0 else optimize.brentq(outside, 0.0, inner_low)
    high = 1.0 if auc == 1 or outside(1.0) <= 0 else optimize.brentq(outside, inner_high, 1.0)
    return float(low), float(high)


@dataclass(frozen=True)
class Separation:
    """A group's separation from real data: ``d`` = 2·|AUC − 0.5|, its interval folded from the AUC's
    (``low`` is 0 when the AUC interval holds 0.5) and the ``direction`` (``higher``: AUC above 0.5,
    ``lower``, ``none``)."""

    d: float
    low: float
    high: float
    direction: str

    def words(self, lower: str = "scores lower", higher: str = "scores higher") -> str:
        """``D 0.39 [0.04, 0.74], less structured`` with the instrument's words for the two directions."""
        way = {"higher": f", {higher}", "lower": f", {lower}"}.get(self.direction, "")
        return f"D {self.d:.2f} [{self.low:.2f}, {self.high:.2f}]{way}"


def separation(auc: float, low: float, high: float, *, one_sided: bool = False) -> Separation:
    """D and its interval folded from an AUC and its interval.

    With ``one_sided`` only an AUC above 0.5 is a finding (a trained classifier's held-out probability, where
    an AUC below 0.5 is the known small negative bias of cross-validation under no difference): D = 2·max(AUC
    − 0.5, 0), likewise each bound.
    """
    direction = "higher" if auc > 0.5 else "lower" if auc < 0.5 else "none"
    if one_sided:
        return Separation(2 * max(auc - 0.5, 0.0), 2 * max(low - 0.5, 0.0), 2 * max(high - 0.5, 0.0),
                          "higher" if auc > 0.5 else "none")
    upper = 2 * max(abs(low - 0.5), abs(high - 0.5))
    lower = 0.0 if low <= 0.5 <= high else 2 * min(abs(low - 0.5), abs(high - 0.5))
    return Separation(2 * abs(auc - 0.5), lower, upper, direction)


def minimum_detectable_separation(n1: float, n2: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest D a two-sided test at ``alpha`` detects with probability ``power`` at these sizes:
    2·(z₁₋α/₂ + z_power)·SE₀ (:func:`null_standard_error`). 20 vs 20: 0.52 at α 0.05, 0.67 at α 0.05/9 (Holm's
    first step over 9 cells). Capped at 1 (no D below 1 can be detected)."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return min(1.0, 2 * z * null_standard_error(n1, n2))


def _passing_half_width(threshold: float, n1: float, n2: float, confidence: float) -> float:
    """The largest |AUC − 0.5| whose interval keeps D's upper bound at or below ``threshold`` (-1: none)."""
    def margin(a: float) -> float:
        low, high = auc_interval(0.5 + a, n1, n2, confidence)
        return 2 * max(high - 0.5, 0.5 - low) - threshold

    if margin(0.0) > 0:
        return -1.0
    if margin(0.5) <= 0:
        return 0.5
    return float(optimize.brentq(margin, 0.0, 0.5))


def pass_probability_at_chance(threshold: float, n1: float, n2: float, confidence: float = 0.95) -> float:
    """The probability that a release exactly at chance (true AUC 0.5) keeps D's upper bound at or below
    ``threshold``: P(|AUĈ − 0.5| ≤ a*) with AUĈ ~ N(0.5, SE₀²), a* from the score interval. 0 when no AUC passes."""
    a = _passing_half_width(threshold, n1, n2, confidence)
    if a < 0:
        return 0.0
    return float(2 * stats.norm.cdf(a / null_standard_error(n1, n2)) - 1)


def fail_probability(true_d: float, threshold: float, n1: float, n2: float, confidence: float = 0.95) -> float:
    """The probability that a release whose true separation is ``true_d`` has D's upper bound above ``threshold``
    (the gate fails it): AUĈ ~ N(0.5 + d/2, V(0.5 + d/2)) (Hanley–McNeil)."""
    a = _passing_half_width(threshold, n1, n2, confidence)
    if a < 0:
        return 1.0
    theta = min(1.0, 0.5 + true_d / 2)
    sd = math.sqrt(max(_variance(theta, n1, n2), 1e-18))
    inside = stats.norm.cdf((0.5 + a - theta) / sd) - stats.norm.cdf((0.5 - a - theta) / sd)
    return float(1 - inside)


def equivalent_to_chance(auc: float, n1: float, n2: float, margin: float, *, alpha: float = ALPHA) -> bool:
    """Two one-sided tests (TOST) that the separation is below ``margin`` (on D's scale): True when the
    (1 − 2α) score interval of the AUC lies inside (0.5 − margin/2, 0.5 + margin/2)."""
    low, high = auc_interval(auc, n1, n2, confidence=1 - 2 * alpha)
    return bool(math.isfinite(low) and 0.5 - margin / 2 < low and high < 0.5 + margin / 2)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (NaN kept, not counted): the k-th smallest of m is
    multiplied by m − k + 1, then made non-decreasing, capped at 1."""
    p = np.asarray(p_values, float)
    ok = np.flatnonzero(np.isfinite(p))
    out = np.full(len(p), np.nan)
    order = ok[np.argsort(p[ok], kind="stable")]
    out[order] = np.maximum.accumulate(np.clip((len(order) - np.arange(len(order))) * p[order], 0.0, 1.0))
    return out.tolist()
