"""Per-cell scores of a discriminator's verdicts: DRS with honest uncertainty, accuracy, calibration.

A *cell* is ``dataset × synthetic_method × condition × provider × model`` (:data:`CELL_COLUMNS`); scores are
never pooled across providers or models. Every rate is a fraction in [0, 1] with its Wilson interval and its n,
DRS with a seeded bootstrap interval (docs/protocol.md §1, §8 row 9). Invalid and error trials are excluded from
the rates and counted in ``n_excluded``, never dropped silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from llmdisc import LABELS
from llmdisc.discrimination.samples import derive_seed
from llmdisc.errors import ConfigError, DataError
from llmdisc.scoring.calibration import brier_score, expected_calibration_error, reliability_bins

CELL_COLUMNS = ("dataset", "synthetic_method", "condition", "provider", "model")
STATUSES = ("valid", "invalid", "error")
REQUIRED_COLUMNS = ("true_label", "predicted_label", "confidence")


@dataclass(frozen=True)
class Estimate:
    """A rate (fraction in [0, 1]; NaN when undefined), its interval in the same units, and its n."""

    value: float
    ci_low: float
    ci_high: float
    n: int

    def percent(self) -> "Estimate":
        """Value and bounds in percent (the paper's units)."""
        return Estimate(self.value * 100, self.ci_low * 100, self.ci_high * 100, self.n)


class ScoreInfo(NamedTuple):
    """Label, direction and range of a score (SDMetrics' ``name/goal/min_value/max_value``); ``goal`` is read
    by the privacy analyst: a higher discriminator score means the release is easier to tell apart."""

    name: str
    goal: str
    min_value: float
    max_value: float
    description: str


SCORES: dict[str, ScoreInfo] = {
    "drs": ScoreInfo("DRS", "minimize", 0.0, 1.0,
                     "Disclosure Risk Score min(p_REAL, p_SYN): 0 = no balanced discrimination (e.g. one label "
                     "always), 0.5 = chance-level balanced, 1 = every sample classified correctly"),
    "chance_drs": ScoreInfo("Chance DRS", "ignore", 0.0, 0.5,
                            "expected DRS of a coin-flip answerer with the cell's class sizes (baseline)"),
    "p_real": ScoreInfo("p_REAL", "ignore", 0.0, 1.0, "share of real samples labelled REAL"),
    "p_syn": ScoreInfo("p_SYN", "ignore", 0.0, 1.0, "share of synthetic samples labelled SYNTHETIC"),
    "accuracy": ScoreInfo("Accuracy", "minimize", 0.0, 1.0,
                          "share of valid verdicts that are correct: 0.5 = chance on balanced labels, 1 = perfect"),
    "balanced_accuracy": ScoreInfo("Balanced accuracy", "minimize", 0.0, 1.0,
                                   "(p_REAL + p_SYN) / 2: 0.5 = chance (or one label always), 1 = perfect"),
    "youden_j": ScoreInfo("Youden's J", "minimize", -1.0, 1.0,
                          "p_REAL + p_SYN - 1: 0 = no discrimination, 1 = perfect, < 0 = systematically inverted"),
    "real_prediction_rate": ScoreInfo("REAL-prediction rate", "ignore", 0.0, 1.0,
                                      "share of valid verdicts that say REAL: 0.5 = unbiased on balanced labels"),
    "mean_confidence": ScoreInfo("Mean confidence", "ignore", 0.0, 100.0, "mean stated confidence, 0-100"),
    "valid_rate": ScoreInfo("Valid rate", "maximize", 0.0, 1.0, "share of trials with a parsed verdict"),
    "effective_n": ScoreInfo("Effective N", "maximize", 0.0, math.inf,
                             "distinct prompts among the valid trials (repeated prompts add no information)"),
    "binom_p": ScoreInfo("Binomial p", "ignore", 0.0, 1.0, "exact two-sided binomial test of accuracy vs 0.5"),
    "brier": ScoreInfo("Brier score", "minimize", 0.0, 1.0,
                       "mean squared gap between stated confidence/100 and correctness: 0 = perfect calibration "
                       "and accuracy, 0.25 = always 50 %"),
    "ece": ScoreInfo("ECE", "minimize", 0.0, 1.0,
                     "expected calibration error over 10 confidence bins: 0 = stated confidence matches accuracy"),
}


def _check_confidence_level(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}; "
                          "fix: pass e.g. confidence=0.95 for a 95 % interval")


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """Wilson score interval of a binomial proportion (Wilson 1927), via ``scipy.stats.binomtest``.

    ``successes`` of ``n`` trials (0 <= successes <= n; n = 0 gives NaN), ``confidence`` two-sided in (0, 1).
    Returns ``Estimate(successes / n, low, high, n)`` as fractions in [0, 1].
    """
    _check_confidence_level(confidence)
    successes, n = int(successes), int(n)
    if n < 0 or successes < 0 or successes > n:
        raise DataError(f"wilson_interval needs 0 <= successes <= n, got successes={successes}, n={n}; "
                        "fix: count successes among the n trials")
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Estimate(successes / n, float(max(0.0, ci.low)), float(min(1.0, ci.high)), n)


def _normalise(values: Any) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """Strip and upper-case label strings (vectorised); return (labels or None, missing mask, originals)."""
    raw = values.reset_index(drop=True) if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    raw = raw.astype(object)
    missing = raw.isna().to_numpy()
    norm = raw.astype(str).str.strip().str.upper().to_numpy(dtype=object)
    norm[missing] = None
    return norm, missing, raw


def _label_array(values: Any, what: str, allow_missing: bool) -> np.ndarray:
    """Normalise labels to an object array of 'REAL'/'SYNTHETIC'/None; unknown strings raise DataError."""
    norm, missing, raw = _normalise(values)
    bad = ~missing & ~np.isin(norm, LABELS)
    if not allow_missing:
        bad |= missing
    if bad.any():
        shown = sorted({repr(b) for b in raw[bad]})[:5]
        raise DataError(f"{what} has {int(bad.sum())} value(s) that are not REAL/SYNTHETIC: {', '.join(shown)}; "
                        f"fix: map them to REAL or SYNTHETIC"
                        + (", or set them to None and mark the trial invalid" if allow_missing else ""))
    return norm


def class_counts(true_labels: Any, predicted_labels: Any) -> tuple[int, int, int, int]:
    """``(n_real, correct_real, n_syn, correct_syn)`` over trials with a verdict (None/NaN: not counted)."""
    true = _label_array(true_labels, "true_label", allow_missing=False)
    pred = _label_array(predicted_labels, "predicted_label", allow_missing=True)
    if len(true) != len(pred):
        raise DataError(f"true_labels ({len(true)}) and predicted_labels ({len(pred)}) differ in length; "
                        "fix: pass one prediction per trial")
    has = pred != None  # noqa: E711 - elementwise on an object array
    is_real = (true == "REAL") & has
    is_syn = (true == "SYNTHETIC") & has
    return (int(is_real.sum()), int((is_real & (pred == "REAL")).sum()),
            int(is_syn.sum()), int((is_syn & (pred == "SYNTHETIC")).sum()))


def drs_from_counts(n_real: int, correct_real: int, n_syn: int, correct_syn: int) -> float:
    """DRS = min(correct_real / n_real, correct_syn / n_syn); NaN when a class is empty."""
    if n_real == 0 or n_syn == 0:
        return math.nan
    return min(correct_real / n_real, correct_syn / n_syn)


def disclosure_risk_score(true_labels: Any, predicted_labels: Any) -> float:
    """Disclosure Risk Score ``min(p_REAL, p_SYN)`` of a set of verdicts (docs/protocol.md §1), a fraction.

    Verdicts None/NaN (no valid verdict) are left out of both rates. Higher is worse for privacy; NaN when
    either class has no valid trial.
    """
    return drs_from_counts(*class_counts(true_labels, predicted_labels))


def balanced_accuracy(true_labels: Any, predicted_labels: Any) -> float:
    """(p_REAL + p_SYN) / 2 over trials with a verdict: 0.5 = chance, 1 = perfect, 0 = inverted (NaN: a
    class empty)."""
    n_real, c_real, n_syn, c_syn = class_counts(true_labels, predicted_labels)
    return (c_real / n_real + c_syn / n_syn) / 2 if n_real and n_syn else math.nan


def youden_j(true_labels: Any, predicted_labels: Any) -> float:
    """p_REAL + p_SYN - 1 in [-1, 1]: 0 = no discrimination (chance or one label always), 1 = perfect, < 0 inverted."""
    return 2 * balanced_accuracy(true_labels, predicted_labels) - 1


def chance_drs(n_real: int, n_syn: int) -> float:
    """Expected DRS of a coin-flip answerer on ``n_real`` real and ``n_syn`` synthetic samples (the baseline).

    E[min(X/n_real, Y/n_syn)] for independent X ~ Bin(n_real, 0.5), Y ~ Bin(n_syn, 0.5), computed exactly as
    the sum over the support grid of P(X/n_real >= u) P(Y/n_syn >= u) du. It is below 0.5 for small cells
    (0.377 with 5 samples per class, 0.472 with 100): read a DRS against it. NaN when a class is empty.
    """
    if n_real <= 0 or n_syn <= 0:
        return math.nan
    grid = np.union1d(np.arange(1, n_real + 1) / n_real, np.arange(1, n_syn + 1) / n_syn)
    steps = np.diff(np.concatenate([[0.0], grid]))
    # P(X >= k) with k = ceil(u * n) - small epsilon guards float grid points that equal k/n.
    surv_real = stats.binom.sf(np.ceil(grid * n_real - 1e-9) - 1, n_real, 0.5)
    surv_syn = stats.binom.sf(np.ceil(grid * n_syn - 1e-9) - 1, n_syn, 0.5)
    return float(np.sum(steps * surv_real * surv_syn))


def drs_bootstrap_from_counts(n_real: int, correct_real: int, n_syn: int, correct_syn: int, *, seed: int,
                              n_boot: int = 2000, confidence: float = 0.95) -> Estimate:
    """Bootstrap interval of DRS from a cell's confusion counts (see :func:`drs_bootstrap`)."""
    _check_confidence_level(confidence)
    if n_boot < 1:
        raise ConfigError(f"n_boot must be >= 1, got {n_boot}; fix: use e.g. n_boot=2000")
    n = n_real + n_syn
    value = drs_from_counts(n_real, correct_real, n_syn, correct_syn)
    if math.isnan(value):
        return Estimate(math.nan, math.nan, math.nan, n)
    rng = np.random.default_rng(seed)
    # Resampling n Bernoulli outcomes with replacement draws a Binomial(n, p_hat) count: the same
    # distribution as the index bootstrap within each true class, at O(n_boot) cost.
    boot_real = rng.binomial(n_real, correct_real / n_real, size=n_boot) / n_real
    boot_syn = rng.binomial(n_syn, correct_syn / n_syn, size=n_boot) / n_syn
    boot = np.minimum(boot_real, boot_syn)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return Estimate(value, float(low), float(high), n)


def drs_bootstrap(true_labels: Any, predicted_labels: Any, *, seed: int, n_boot: int = 2000,
                  confidence: float = 0.95) -> Estimate:
    """DRS with a percentile bootstrap interval, resampling trials within each true class.

    The class sizes stay fixed (stratified bootstrap), so an interval exists whenever DRS does. A class
    answered all right (or all wrong) resamples to itself, so the interval collapses there (e.g. [1, 1] for
    12 correct verdicts): read it beside the Wilson bounds of p_REAL and p_SYN, which do not. Returns
    ``Estimate(drs, low, high, n_valid)``; all NaN when a class is empty.
    """
    return drs_bootstrap_from_counts(*class_counts(true_labels, predicted_labels), seed=seed, n_boot=n_boot,
                                     confidence=confidence)


def prepare_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Check a trial table and return a copy with normalised labels and a ``status`` for every row.

    Trials with ``scoring == "probability"`` (label scores, no verdict) are left out: see
    :mod:`llmdisc.scoring.probability`. Without a ``status`` column a row is ``valid`` when its prediction is
    REAL/SYNTHETIC, else ``invalid`` (``invalid_reason`` says why).

    DataError for a missing required column, a ``true_label`` not REAL/SYNTHETIC, or a valid row without a
    REAL/SYNTHETIC prediction or with a confidence outside 0-100.
    """
    if missing := [c for c in REQUIRED_COLUMNS if c not in trials.columns]:
        raise DataError(f"trial table lacks column(s) {missing}; it has {list(trials.columns)}; fix: load trials "
                        "with llmdisc.discrimination.runner.load_trials or llmdisc.scoring.reference.import_paper_trials, or add them")
    df = trials.copy()
    if "scoring" in df.columns:  # label-score-only trials carry no verdict: scored in scoring.probability
        df = df[df["scoring"].fillna("verdict") != "probability"].copy()
    df["true_label"] = _label_array(df["true_label"], "true_label", allow_missing=False)
    normalised, _, _ = _normalise(df["predicted_label"])
    is_label = np.isin(normalised, LABELS)
    if "status" not in df.columns:
        df["status"] = np.where(is_label, "valid", "invalid")
        reasons = pd.Series([None if ok else ("no verdict" if p is None else
                                              f"predicted_label {p!r} is not REAL/SYNTHETIC")
                             for ok, p in zip(is_label, normalised)], index=df.index, dtype=object)
        df["invalid_reason"] = (df["invalid_reason"].where(df["invalid_reason"].notna(), reasons)
                                if "invalid_reason" in df.columns else reasons)
    else:
        unknown = sorted(set(df["status"].dropna()) - set(STATUSES))
        if unknown or df["status"].isna().any():
            raise DataError(f"status must be one of {STATUSES}; found {unknown or 'missing values'}; "
                            "fix: mark each trial valid, invalid or error")
        bad = (df["status"].to_numpy() == "valid") & ~is_label
        if bad.any():
            raise DataError(f"{int(bad.sum())} trial(s) have status 'valid' but predicted_label "
                            f"{sorted({repr(normalised[i]) for i in np.flatnonzero(bad)})[:5]}; fix: a valid "
                            "trial needs REAL or SYNTHETIC, otherwise set status to 'invalid' with a reason")
    keep = is_label & (df["status"].to_numpy() == "valid")
    df["predicted_label"] = np.where(keep, normalised, None)
    conf = pd.to_numeric(df["confidence"], errors="coerce")
    valid = df["status"].to_numpy() == "valid"
    out_of_range = valid & conf.notna().to_numpy() & ~conf.between(0, 100).to_numpy()
    if out_of_range.any():
        raise DataError(f"{int(out_of_range.sum())} valid trial(s) have a confidence outside 0-100 "
                        f"(e.g. {conf[out_of_range].iloc[0]!r}); fix: confidences are percentages 0-100 - "
                        "rescale them, or mark those trials invalid with the reason")
    df["confidence"] = conf.where(valid)
    return df


def cell_reliability(trials: pd.DataFrame, by: Sequence[str] = ("dataset", "synthetic_method", "condition",
                                                                "provider", "model"),
                     n_bins: int = 10) -> pd.DataFrame:
    """:func:`reliability_bins` of every cell's valid trials, stacked: the ``by`` columns, then the bins'."""
    df = prepare_trials(trials)
    valid = df[df["status"] == "valid"]
    columns = [*by, "bin_low", "bin_high", "n", "mean_confidence", "accuracy"]
    parts = [reliability_bins(group["confidence"], group["true_label"] == group["predicted_label"], n_bins)
             .assign(**dict(zip(by, key)))[columns] for key, group in valid.groupby(list(by), sort=True)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def _effective_n(valid: pd.DataFrame) -> tuple[float, str]:
    if "prompt_hash" in valid.columns and valid["prompt_hash"].notna().any():
        return float(valid["prompt_hash"].nunique()), "prompt_hash"
    if "reasoning" in valid.columns and valid["reasoning"].notna().any():
        # The paper's records hold no prompt: at temperature 0 identical prompts give identical answers, so
        # distinct answers are a (lower-bound) proxy for distinct prompts.
        return float(valid["reasoning"].astype(str).nunique()), "reasoning"
    return math.nan, "none"


def _score_prepared(df: pd.DataFrame, seed: int, n_boot: int) -> dict[str, Any]:
    valid = df[df["status"] == "valid"]
    is_real = (valid["true_label"] == "REAL").to_numpy()
    said_real = (valid["predicted_label"] == "REAL").to_numpy()
    n_real, c_real = int(is_real.sum()), int((is_real & said_real).sum())
    n_syn, c_syn = int((~is_real).sum()), int((~is_real & ~said_real).sum())
    n_valid, n_correct = len(valid), c_real + c_syn
    p_real, p_syn = wilson_interval(c_real, n_real), wilson_interval(c_syn, n_syn)
    drs = drs_bootstrap_from_counts(n_real, c_real, n_syn, c_syn, seed=seed, n_boot=n_boot)
    correct = (valid["true_label"] == valid["predicted_label"]).to_numpy(dtype=float)
    conf = valid["confidence"].to_numpy(dtype=float)
    eff_n, eff_source = _effective_n(valid)
    return {
        "n_total": len(df),
        "n_valid": n_valid,
        "n_excluded": len(df) - n_valid,
        "n_invalid": int((df["status"] == "invalid").sum()),
        "n_error": int((df["status"] == "error").sum()),
        "valid_rate": n_valid / len(df) if len(df) else math.nan,
        "n_valid_real": n_real, "n_valid_syn": n_syn,
        "n_correct_real": c_real, "n_correct_syn": c_syn,
        "p_real": p_real.value, "p_real_ci_low": p_real.ci_low, "p_real_ci_high": p_real.ci_high,
        "p_syn": p_syn.value, "p_syn_ci_low": p_syn.ci_low, "p_syn_ci_high": p_syn.ci_high,
        "drs": drs.value, "drs_ci_low": drs.ci_low, "drs_ci_high": drs.ci_high, "bootstrap_seed": seed,
        "chance_drs": chance_drs(n_real, n_syn),
        "accuracy": n_correct / n_valid if n_valid else math.nan,
        "balanced_accuracy": (p_real.value + p_syn.value) / 2,
        "youden_j": p_real.value + p_syn.value - 1,
        "real_prediction_rate": float((valid["predicted_label"] == "REAL").mean()) if n_valid else math.nan,
        "mean_confidence": float(np.nanmean(conf)) if np.isfinite(conf).any() else math.nan,
        "effective_n": eff_n, "effective_n_source": eff_source,
        "binom_p": float(stats.binomtest(n_correct, n_valid, 0.5).pvalue) if n_valid else math.nan,
        "brier": brier_score(conf, correct),
        "ece": expected_calibration_error(conf, correct),
    }


def score_cell(trials: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    """Score one cell's trials: every count, rate and interval behind its DRS (SDMetrics' compute_breakdown).

    ``trials``: ``true_label``, ``predicted_label`` (None/NaN when not valid), ``confidence`` (0-100 or None),
    optionally ``status`` and ``prompt_hash``/``reasoning``; a ``correct`` column is ignored (recomputed from
    the labels). ``seed`` seeds the DRS bootstrap (stored as ``bootstrap_seed``).

    Returns a dict with n_total, n_valid, n_excluded (= n_invalid + n_error), valid_rate, n_valid_real/syn,
    p_real/p_syn with Wilson 95 % bounds, drs with bootstrap 95 % bounds, and the scores of :data:`SCORES`
    (rates are fractions in [0, 1]; mean_confidence 0-100; effective_n with its source column).
    """
    return _score_prepared(prepare_trials(trials), seed, n_boot)


def cell_seed(seed: int, key: Sequence[Any]) -> int:
    """Per-cell seed: :func:`~llmdisc.discrimination.samples.derive_seed` of the seed and the cell's key parts."""
    return derive_seed(seed, *key)


def score_cells(trials: pd.DataFrame, by: Sequence[str] = CELL_COLUMNS, *, seed: int = 0,
                n_boot: int = 2000) -> pd.DataFrame:
    """:func:`score_cell` of every group of ``by`` (default a full cell, never pooling providers or models),
    one row each; each cell's bootstrap seed is :func:`cell_seed` (seed, cell key)."""
    by = list(by)
    if missing := [c for c in by if c not in trials.columns]:
        raise DataError(f"cannot group by {missing}: the trial table has columns {list(trials.columns)}; "
                        "fix: add those columns or pass by=[...] with existing ones")
    df = prepare_trials(trials)
    rows = [{**dict(zip(by, key)), **_score_prepared(group, cell_seed(seed, key), n_boot)}
            for key, group in df.groupby(by, sort=True, dropna=False)]
    return pd.DataFrame(rows, columns=by + list(_score_prepared(df.iloc[:0], 0, 1)))


__all__ = ["CELL_COLUMNS", "SCORES", "Estimate", "ScoreInfo", "balanced_accuracy", "brier_score", "cell_reliability",
           "chance_drs",
           "cell_seed",
           "class_counts", "disclosure_risk_score", "drs_bootstrap", "drs_bootstrap_from_counts", "drs_from_counts",
           "expected_calibration_error", "prepare_trials", "reliability_bins", "score_cell", "score_cells",
           "wilson_interval", "youden_j"]
