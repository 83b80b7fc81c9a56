"""Per-cell scores of the verdict *as a probability*: AUC, raw and calibrated DRS, Brier score and ECE.

A generated verdict is one biased bit: a model that always says REAL scores DRS 0 whatever it perceives. The
label scores of a trial (:mod:`llmdisc.discrimination.label_scores`) give a ranking instead: the log-odds
``s = logprob_synthetic - logprob_real`` (higher = more SYNTHETIC; ``p_synthetic`` is its logistic).

AUC, every DRS, Brier and ECE compare the scores with the labels (that is what they measure); the decisions
never read the labels of the cell they decide: *raw* calls SYNTHETIC when ``s > 0`` (label bias included);
*batch calibration* (Zhou et al. 2024) thresholds at the median of the cell's own scores, which are balanced
by design; *contextual calibration* (Zhao et al. 2021) thresholds at the log-odds of a content-free table
(every cell ``N/A``) scored once per dataset × condition × model. A model that prefers REAL by a constant
margin but ranks perfectly gets raw DRS 0, AUC 1 and batch-calibrated DRS 1.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.discrimination.records import CELL_KEY, cell_columns
from llmdisc.errors import DataError
from llmdisc.scoring.auc import auc_test
from llmdisc.scoring.calibration import brier_score, expected_calibration_error
from llmdisc.scoring.metrics import cell_seed, drs_bootstrap_from_counts

PROBABILITY_CELL = CELL_KEY
"""Columns of a cell: never pooled across datasets, providers, models or protocols."""

PROBABILITY_COLUMNS = (
    "n_real", "n_syn", "n_invalid", "n_error", "mean_label_mass", "mean_p_synthetic",
    "auc", "auc_ci_low", "auc_ci_high", "auc_separation", "auc_direction", "auc_p_value", "auc_norm",
    "raw_p_real", "raw_p_syn", "raw_drs", "raw_drs_ci_low", "raw_drs_ci_high",
    "batch_threshold", "batch_p_real", "batch_p_syn", "batch_drs", "batch_drs_ci_low", "batch_drs_ci_high",
    "context_threshold", "context_p_real", "context_p_syn", "context_drs", "context_drs_ci_low",
    "context_drs_ci_high", "brier", "ece",
)
"""Columns :func:`score_probability_cells` adds after the cell columns."""


def log_odds(trials: pd.DataFrame, *, per_char: bool = False) -> pd.Series:
    """``logprob_synthetic - logprob_real`` per trial (``*_per_char`` forms with ``per_char``); NaN if absent."""
    real, syn = ("logprob_real_per_char", "logprob_synthetic_per_char") if per_char else (
        "logprob_real", "logprob_synthetic")
    return pd.to_numeric(trials[syn], errors="coerce") - pd.to_numeric(trials[real], errors="coerce")


def batch_threshold(scores: Sequence[float]) -> float:
    """Batch calibration's threshold: the median of a cell's log-odds (NaN for an empty cell). Reads no label.

    A sample is called SYNTHETIC when its score is *above* it, so a constant score calls every sample REAL
    (DRS 0), never half of them at random.
    """
    values = np.asarray(scores, dtype=float)
    return float(np.median(values)) if len(values) else math.nan


def decide(scores: Sequence[float], threshold: float) -> np.ndarray:
    """True (SYNTHETIC) where ``score > threshold``; all False when the threshold is NaN (no decision)."""
    return np.asarray(scores, dtype=float) > threshold  # every comparison with NaN is False


def _drs(is_syn: np.ndarray, called_syn: np.ndarray, *, seed: int, defined: bool = True) -> dict[str, float]:
    n_syn, n_real = int(is_syn.sum()), int((~is_syn).sum())
    if not defined:
        return {"p_real": math.nan, "p_syn": math.nan, "drs": math.nan, "low": math.nan, "high": math.nan}
    correct_syn, correct_real = int((called_syn & is_syn).sum()), int((~called_syn & ~is_syn).sum())
    est = drs_bootstrap_from_counts(n_real, correct_real, n_syn, correct_syn, seed=seed)
    return {"p_real": correct_real / n_real if n_real else math.nan,
            "p_syn": correct_syn / n_syn if n_syn else math.nan,
            "drs": est.value, "low": est.ci_low, "high": est.ci_high}


def score_probability_cell(trials: pd.DataFrame, *, seed: int, context_threshold: float = math.nan,
                           permutations: int = 2000) -> dict[str, Any]:
    """Scores of one cell's label scores (valid scores only; invalid and error trials are counted).

    ``seed`` seeds the AUC permutations and the DRS bootstraps; ``context_threshold`` is the content-free
    table's log-odds for this dataset × condition × model (NaN: no contextual calibration).

    Returns a dict with the keys of :data:`PROBABILITY_COLUMNS`: AUC with its 95 % score interval, direction
    and p-value; p_REAL, p_SYN and DRS (95 % bootstrap intervals) under the raw, batch and contextual
    decisions; Brier score and ECE of ``p_synthetic`` as a probability of SYNTHETIC. NaN where a class has no
    valid score.
    """
    status = trials["score_status"] if "score_status" in trials else pd.Series(index=trials.index, dtype=object)
    valid = trials[status == "valid"]
    out: dict[str, Any] = dict.fromkeys(PROBABILITY_COLUMNS, math.nan)
    out.update(n_invalid=int((status == "invalid").sum()), n_error=int((status == "error").sum()),
               auc_direction="none")
    is_syn = (valid["true_label"] == "SYNTHETIC").to_numpy()
    out.update(n_real=int((~is_syn).sum()), n_syn=int(is_syn.sum()))
    if valid.empty:
        return out
    scores = log_odds(valid).to_numpy(dtype=float)
    p_syn = pd.to_numeric(valid["p_synthetic"], errors="coerce").to_numpy(dtype=float)
    out["mean_label_mass"] = float(pd.to_numeric(valid["label_mass"], errors="coerce").mean())
    out["mean_p_synthetic"] = float(np.nanmean(p_syn))
    both = out["n_real"] > 0 and out["n_syn"] > 0
    if both:
        test = auc_test(is_syn, scores, seed=seed, permutations=permutations)
        out.update(auc=test.auc.value, auc_ci_low=test.auc.ci_low, auc_ci_high=test.auc.ci_high,
                   auc_separation=test.separation, auc_direction=test.direction, auc_p_value=test.p_value)
        norm = log_odds(valid, per_char=True).to_numpy(dtype=float)
        if np.isfinite(norm).all():
            out["auc_norm"] = auc_test(is_syn, norm, seed=seed, permutations=1).auc.value
        out["brier"] = brier_score(100 * p_syn, is_syn)  # P(SYNTHETIC) against "is synthetic"
        out["ece"] = expected_calibration_error(100 * np.maximum(p_syn, 1 - p_syn), (p_syn > 0.5) == is_syn)
    batch = batch_threshold(scores)
    for name, threshold in (("raw", 0.0), ("batch", batch), ("context", context_threshold)):
        drs = _drs(is_syn, decide(scores, threshold), seed=seed, defined=both and not math.isnan(threshold))
        out.update({f"{name}_p_real": drs["p_real"], f"{name}_p_syn": drs["p_syn"], f"{name}_drs": drs["drs"],
                    f"{name}_drs_ci_low": drs["low"], f"{name}_drs_ci_high": drs["high"]})
    out["batch_threshold"], out["context_threshold"] = batch, context_threshold
    return out


def score_probability_cells(trials: pd.DataFrame, *, content_free: pd.DataFrame | None = None, seed: int = 0,
                            by: Sequence[str] | None = None, permutations: int = 2000) -> pd.DataFrame:
    """:func:`score_probability_cell` for every cell of a trial table that asked for label scores.

    Rows with ``scoring`` ``verdict`` carry no scores and are left out. ``content_free``: the content-free
    scores (``dataset_key, condition, provider, model, log_odds``, and ``run_id`` from
    :func:`llmdisc.discrimination.load_content_free`: a cell then takes the score of its own run file, i.e.
    its own prompt variant and metadata source), or None (contextual calibration NaN). Each cell's seed is
    :func:`llmdisc.scoring.metrics.cell_seed` of ``seed`` and the cell; ``by`` defaults to
    :data:`PROBABILITY_CELL` (the protocol columns the table holds).

    Returns one row per cell: the ``by`` columns, then :data:`PROBABILITY_COLUMNS`, then ``seed``; raises
    DataError when the table lacks a column it needs.
    """
    by = list(by) if by is not None else cell_columns(trials, PROBABILITY_CELL[:5])
    needed = {"true_label", "scoring", "score_status", "logprob_real", "logprob_synthetic", "p_synthetic",
              "label_mass", *by}
    if missing := sorted(needed - set(trials.columns)):
        raise DataError(f"trial table lacks {missing}; fix: load it with llmdisc.discrimination.load_trials")
    scored = trials[trials["scoring"].isin(["probability", "both"])]
    if "run_id" in scored and not scored.empty:
        # a probability protocol's first trials also generate a verdict (scoring "both"): their label scores
        # belong to the protocol's probability cell, not to a cell of n = 1 beside it
        in_probability_run = scored.groupby("run_id")["scoring"].transform(lambda s: (s == "probability").any())
        scored = scored.assign(scoring=scored["scoring"].where(~in_probability_run, "probability"))
    thresholds: Mapping[tuple, float] = {}
    keys = ["dataset_key", "condition", "provider", "model"]
    by_run = content_free is not None and "run_id" in content_free and "run_id" in trials
    if content_free is not None and not content_free.empty:
        # an invalid content-free score (no log-odds) leaves its cells without a contextual threshold (NaN)
        thresholds = {tuple(row[k] for k in (["run_id"] if by_run else []) + keys):
                      float(pd.to_numeric(row["log_odds"], errors="coerce")) for _, row in content_free.iterrows()}
    rows = []
    for key, cell in scored.groupby(list(by), sort=True, dropna=False):
        named = dict(zip(by, key))
        where = [named.get(k, cell[k].iloc[0]) for k in keys]
        runs = sorted(cell["run_id"].dropna().unique()) if by_run else []
        found = {thresholds[(run, *where)] for run in runs if (run, *where) in thresholds}
        if not runs or not found:  # no run file of its own: the key's score, when only one file has that key
            found = {v for k, v in thresholds.items() if list(k[-len(keys):]) == where}
        context = found.pop() if len(found) == 1 else math.nan  # files disagreeing: no single threshold
        s = cell_seed(seed, key)
        rows.append({**named, **score_probability_cell(cell, seed=s, context_threshold=context,
                                                      permutations=permutations), "seed": s})
    return pd.DataFrame(rows, columns=[*by, *PROBABILITY_COLUMNS, "seed"])
