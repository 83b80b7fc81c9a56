"""Calibration of a discriminator's stated confidence: Brier score, expected calibration error, reliability bins.

The stated ``confidence`` (0-100) is read as the probability, in percent, that the verdict given is correct.
Trials without a confidence (NaN) are left out of these three scores and of nothing else.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from llmdisc.errors import ConfigError, DataError


def _pairs(confidence: Any, correct: Any) -> tuple[np.ndarray, np.ndarray]:
    conf = np.asarray(confidence, dtype=float)
    corr = np.asarray(correct, dtype=float)
    if conf.shape != corr.shape:
        raise DataError(f"confidence ({conf.shape}) and correct ({corr.shape}) differ in shape; "
                        "fix: pass one confidence per verdict")
    keep = np.isfinite(conf) & np.isfinite(corr)
    conf, corr = conf[keep], corr[keep]
    if ((conf < 0) | (conf > 100)).any():
        raise DataError(f"confidence must be a percentage in 0-100, found {conf[(conf < 0) | (conf > 100)][0]!r}; "
                        "fix: rescale confidences to 0-100")
    return conf / 100.0, corr


def brier_score(confidence: Any, correct: Any) -> float:
    """Mean squared difference between stated confidence (percent 0-100, NaN ignored) and correctness (1/True
    when the verdict was right): 0 = every verdict right with confidence 100 (and wrong ones at 0); 0.25 =
    always 50 %; 1 = confidently wrong every time. NaN with no confidences.
    """
    conf, corr = _pairs(confidence, correct)
    return float(np.mean((conf - corr) ** 2)) if conf.size else math.nan


def reliability_bins(confidence: Any, correct: Any, n_bins: int = 10) -> pd.DataFrame:
    """Reliability diagram data (inputs as for :func:`brier_score`): per equal-width confidence bin,
    ``bin_low``, ``bin_high`` (percent), ``n``, ``mean_confidence`` (percent) and ``accuracy`` (fraction);
    empty bins have n = 0 and NaN means.
    """
    conf, corr = _pairs(confidence, correct)
    if n_bins < 1:
        raise ConfigError(f"n_bins must be >= 1, got {n_bins}; fix: use e.g. n_bins=10")
    idx = np.minimum((conf * n_bins).astype(int), n_bins - 1)  # confidence 1.0 goes into the last bin
    n = np.bincount(idx, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(idx, weights=conf, minlength=n_bins) / n
        acc = np.bincount(idx, weights=corr, minlength=n_bins) / n
    edges = np.linspace(0, 100, n_bins + 1)
    return pd.DataFrame({"bin_low": edges[:-1], "bin_high": edges[1:], "n": n,
                         "mean_confidence": mean_conf * 100, "accuracy": acc})


def expected_calibration_error(confidence: Any, correct: Any, n_bins: int = 10) -> float:
    """Expected calibration error: the n-weighted mean |accuracy - stated confidence| over confidence bins
    (inputs as for :func:`brier_score`). 0 = stated confidence equals observed accuracy in every bin; 0.5 =
    e.g. always 100 % confident and right half the time. NaN with no confidences.
    """
    bins = reliability_bins(confidence, correct, n_bins)
    total = bins["n"].sum()
    if total == 0:
        return math.nan
    filled = bins[bins["n"] > 0]
    gap = (filled["accuracy"] - filled["mean_confidence"] / 100).abs()
    return float((gap * filled["n"]).sum() / total)
