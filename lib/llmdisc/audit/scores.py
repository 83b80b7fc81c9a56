"""Per-condition scores of each cell of an audit (the release and its two controls), verdict and probability
(:func:`cell_rows`), with ``discrimination`` (D = 2·|AUC − 0.5| with its folded interval) and ``verdict_auc``
(the AUC of the verdict itself, which the positive-control rule reads under ``--scoring verdict``)."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from llmdisc.audit.instruments.base import discrimination as folded

__all__ = ["PROBABILITY_KEYS", "VERDICT_KEYS", "cell_rows", "discrimination", "plain", "verdict_auc"]

VERDICT_KEYS = (
    "n_total", "n_valid", "n_invalid", "n_error", "n_valid_real", "n_valid_syn", "n_correct_real",
    "n_correct_syn", "p_real", "p_real_ci_low", "p_real_ci_high", "p_syn", "p_syn_ci_low", "p_syn_ci_high",
    "drs", "drs_ci_low", "drs_ci_high", "bootstrap_seed", "balanced_accuracy", "mean_confidence",
)
"""The verdict figures of a cell × condition row (None when the audit generated no verdict)."""
PROBABILITY_KEYS = (
    "n_real", "n_syn", "n_invalid", "n_error", "mean_p_synthetic", "mean_label_mass", "auc", "auc_ci_low",
    "auc_ci_high", "auc_separation", "auc_direction", "auc_p_value", "raw_p_real", "raw_p_syn", "raw_drs",
    "raw_drs_ci_low", "raw_drs_ci_high", "batch_threshold", "batch_p_real", "batch_p_syn", "batch_drs",
    "batch_drs_ci_low", "batch_drs_ci_high", "context_threshold", "context_p_real", "context_p_syn",
    "context_drs", "context_drs_ci_low", "context_drs_ci_high", "brier", "ece", "seed",
)
"""The probability figures kept from :data:`llmdisc.scoring.probability.PROBABILITY_COLUMNS` (+ the seed)."""


def plain(value: Any) -> Any:
    """A NumPy scalar as a Python value; NaN as None (JSON has no NaN)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def discrimination(auc: float | None, low: float | None, high: float | None) -> dict[str, float | None]:
    """2·|AUC − 0.5| with its interval folded from the AUC's (:func:`llmdisc.audit.instruments.base.discrimination`),
    as ``{"value", "ci_low", "ci_high"}``; all None when the AUC or its interval is undefined."""
    value, ci_low, ci_high = folded(auc, low, high)
    if ci_low is None:
        return {"value": None, "ci_low": None, "ci_high": None}
    return {"value": value, "ci_low": ci_low, "ci_high": ci_high}


def verdict_auc(cell: pd.DataFrame, *, seed: int) -> dict[str, Any]:
    """AUC of the valid verdicts as a score (SYNTHETIC = 1, REAL = 0; equals the balanced accuracy): ``{"auc",
    "ci_low", "ci_high", "p_value", "n_real", "n_syn"}`` (95 % score interval, permutation p), the AUC fields
    None when a label has no valid verdict."""
    from llmdisc.scoring.auc import auc_test

    valid = cell[(cell["status"] == "valid") & (cell["scoring"].fillna("verdict") != "probability")]
    is_syn = (valid["true_label"] == "SYNTHETIC").to_numpy()
    out: dict[str, Any] = {"auc": None, "ci_low": None, "ci_high": None, "p_value": None,
                           "n_real": int((~is_syn).sum()), "n_syn": int(is_syn.sum())}
    if out["n_real"] and out["n_syn"]:
        said_syn = (valid["predicted_label"] == "SYNTHETIC").to_numpy(dtype=float)
        test = auc_test(is_syn, said_syn, seed=seed)
        out.update(auc=test.auc.value, ci_low=test.auc.ci_low, ci_high=test.auc.ci_high, p_value=test.p_value)
    return out


def _scored(frame: pd.DataFrame | None, cell: str, condition: str,
            keys: Sequence[str]) -> dict[str, Any] | None:
    """The ``keys`` of the cell × condition's row of ``frame``; None without one."""
    if frame is None:
        return None
    found = frame[(frame["synthetic_method"] == cell) & (frame["condition"] == condition)]
    return None if found.empty else {k: plain(found.iloc[0][k]) for k in keys}


def cell_rows(trials: pd.DataFrame, cells: Sequence[str], conditions: Sequence[str], *,
              content_free: pd.DataFrame | None, seed: int) -> dict[str, list[dict[str, Any]]]:
    """Score every cell × condition of the audit's ``trials`` (all cells; ``cells`` in report order, release
    first); ``content_free``: :func:`llmdisc.discrimination.load_content_free`'s scores or None; ``seed``:
    base seed of every bootstrap and permutation (each cell's derives from it and the cell).

    Returns:
        ``{cell: [row per condition]}``: ``condition``, the :data:`VERDICT_KEYS`, ``probability`` (the
        :data:`PROBABILITY_KEYS`, ``discrimination`` and ``calibrated_drs_ci_high``, the larger of the batch and
        contextual DRS upper bounds; None without label scores) and ``verdict_auc``.
    """
    from llmdisc.scoring.metrics import CELL_COLUMNS, cell_seed, score_cells
    from llmdisc.scoring.probability import score_probability_cells

    scoring = trials["scoring"].fillna("verdict") if "scoring" in trials else pd.Series("verdict", trials.index)
    has_verdicts = bool((scoring != "probability").any())
    has_scores = bool(scoring.isin(["probability", "both"]).any())
    verdicts = score_cells(trials, by=CELL_COLUMNS, seed=seed) if has_verdicts and not trials.empty else None
    probability = (score_probability_cells(trials, content_free=content_free, seed=seed)
                   if has_scores and not trials.empty else None)
    out: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        rows = []
        for condition in conditions:
            part = trials[(trials["synthetic_method"] == cell) & (trials["condition"] == condition)]
            verdict = _scored(verdicts, cell, condition, VERDICT_KEYS)
            row: dict[str, Any] = {"condition": condition, **(verdict or dict.fromkeys(VERDICT_KEYS))}
            row["probability"] = prob = _scored(probability, cell, condition, PROBABILITY_KEYS)
            if prob is not None:
                prob["discrimination"] = discrimination(prob["auc"], prob["auc_ci_low"], prob["auc_ci_high"])
                highs = [prob[k] for k in ("batch_drs_ci_high", "context_drs_ci_high") if prob[k] is not None]
                prob["calibrated_drs_ci_high"] = max(highs) if highs else None
            key = (part["dataset"].iloc[0], cell, condition, part["provider"].iloc[0],
                   part["model"].iloc[0]) if not part.empty else (cell, condition)
            row["verdict_auc"] = verdict_auc(part, seed=cell_seed(seed, key)) if has_verdicts and not part.empty \
                else None
            rows.append(row)
        out[cell] = rows
    return out
