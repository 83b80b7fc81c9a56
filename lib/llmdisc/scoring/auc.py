"""Ranking scores of a discriminator: ROC-AUC with its score interval and a seeded permutation p-value.

Used for every score that ranks samples (``p_synthetic``, a likelihood score, a classifier's out-of-fold
probability). AUC = P(positive scores higher than negative), ties one half: 0.5 = no ranking. An AUC far below
0.5 still ranks, the wrong way round, which an adversary with a few labelled samples would flip; so
:func:`auc_test` reports the direction and the separation D = 2·|AUC − 0.5| beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from llmdisc.errors import DataError
from llmdisc.scoring.metrics import Estimate
from llmdisc.scoring.separation import auc_interval

PERMUTATIONS = 2000
"""Label permutations of :func:`auc_test`'s p-value (the smallest p it can give is 1/2001)."""


def auc_with_interval(labels: np.ndarray, scores: np.ndarray, confidence: float = 0.95) -> Estimate:
    """ROC-AUC with its score interval (:func:`llmdisc.scoring.separation.auc_interval`: never of zero width).

    ``labels`` are 0/1, 1 the class expected to score higher. Returns ``Estimate(auc, low, high, n=len(labels))``;
    NaN when a class is empty.
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    pos, neg = scores[labels], scores[~labels]
    m, n = len(pos), len(neg)
    if m == 0 or n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), len(labels))
    rank_all = stats.rankdata(np.concatenate([pos, neg]))
    auc = float((rank_all[:m].sum() - m * (m + 1) / 2) / (m * n))
    low, high = auc_interval(auc, m, n, confidence)
    return Estimate(auc, low, high, len(labels))


def _auc_many(labels: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """AUC for each row of a (k, n) label matrix over fixed mid-ranks (Mann-Whitney U / (m·n))."""
    m = labels.sum(axis=1)
    n = labels.shape[1] - m
    return ((labels * ranks).sum(axis=1) - m * (m + 1) / 2) / (m * n)


@dataclass(frozen=True)
class AUCTest:
    """An AUC, its interval, its direction, and how surprising it is under no ranking at all."""

    auc: Estimate
    """AUC of the score for the positive class (95 % score interval; n = samples of both classes)."""
    n_positive: int
    n_negative: int
    separation: float
    """D = 2·|AUC − 0.5|: how far the score separates the classes in either direction (0 = not at all, 1 =
    every positive on one side of every negative; :mod:`llmdisc.scoring.separation`)."""
    direction: str
    """``higher`` (positives score higher, AUC > 0.5), ``lower`` (AUC < 0.5) or ``none`` (exactly 0.5/NaN)."""
    p_value: float
    """Two-sided permutation p-value of ``|AUC - 0.5|`` (labels shuffled ``permutations`` times, seeded):
    ``(#{|AUC* - 0.5| >= |AUC - 0.5|} + 1) / (permutations + 1)``."""
    permutations: int
    seed: int


def auc_test(labels: np.ndarray, scores: np.ndarray, *, seed: int, permutations: int = PERMUTATIONS,
             confidence: float = 0.95) -> AUCTest:
    """AUC of ``scores`` for ``labels == 1``, its score interval, direction and permutation p-value.

    ``labels``: 0/1 (or bool), 1 the positive class (e.g. SYNTHETIC); ``scores``: finite, one per label;
    ``seed``: of the label permutations (stored in the result). DataError when lengths differ, a score is not
    finite, or a class is empty.
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    if labels.shape != scores.shape:
        raise DataError(f"{len(labels)} labels but {len(scores)} scores; fix: pass one score per sample")
    if not np.isfinite(scores).all():
        raise DataError(f"{int((~np.isfinite(scores)).sum())} score(s) are NaN or infinite; fix: drop "
                        "invalid trials (status != 'valid') before computing an AUC")
    m, n = int(labels.sum()), int((~labels).sum())
    if m == 0 or n == 0:
        raise DataError(f"an AUC needs both classes; got {m} positive and {n} negative samples; fix: score "
                        "a cell that holds both REAL and SYNTHETIC samples")
    if permutations < 1:
        raise DataError(f"permutations={permutations}; fix: use at least 1")
    auc = auc_with_interval(labels, scores, confidence)
    ranks = stats.rankdata(scores)
    rng = np.random.default_rng(seed)
    shuffled = np.stack([rng.permutation(labels) for _ in range(permutations)])
    null = _auc_many(shuffled, ranks)
    observed = abs(auc.value - 0.5)
    p = (int(np.sum(np.abs(null - 0.5) >= observed - 1e-12)) + 1) / (permutations + 1)
    direction = "higher" if auc.value > 0.5 else "lower" if auc.value < 0.5 else "none"
    return AUCTest(auc=auc, n_positive=m, n_negative=n, separation=2 * abs(auc.value - 0.5),
                   direction=direction, p_value=float(p), permutations=int(permutations), seed=int(seed))
