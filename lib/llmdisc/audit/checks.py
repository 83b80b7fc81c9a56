"""The non-LLM checks of an audit, on bounded subsamples: C2ST, distances to closest record, Anonymeter.

- C2ST (:func:`llmdisc.baselines.c2st.c2st`): logistic regression and gradient boosting on at most
  :data:`C2ST_ROWS` rows per table, with the label-shuffled baseline and the 20-row block scores.
- Distances: with a holdout, :func:`llmdisc.baselines.distances.dcr_baseline` (the share of synthetic records
  closer to the real rows than the median real holdout record is: 0.5 = like fresh real data); without
  one, only the synthetic records' DCR to the real rows read and the exact-copy rate, *without* the holdout
  comparison (the report says so). At most :data:`DCR_ROWS` query records.
- Anonymeter (singling out, linkability, inference) only with a holdout, which it needs as control.

The real rows are those read from the real file (``--max-rows``): for a table larger than that, DCR and
copies are measured against that seeded subsample, not every real record (a lower bound on closeness).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

C2ST_ROWS = 5000
"""Rows per table for each C2ST."""
DCR_ROWS = 2000
"""Synthetic (and holdout) records whose distance to closest real record is measured."""


def _estimate(est: Any) -> dict[str, Any]:
    return {
        "value": _num(est.value),
        "ci_low": _num(est.ci_low),
        "ci_high": _num(est.ci_high),
        "n": int(est.n),
    }


def _num(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def c2st_checks(
    real: pd.DataFrame, synthetic: pd.DataFrame, kinds: dict[str, str], *, seed: int
) -> dict[str, Any]:
    """Our C2ST with each classifier.

    Returns:
        ``{"rows_per_table", "classifiers": {name: {"auc", "shuffled_auc", "heldout_accuracy",
        "accuracy_p_value", "block_auc", "block_drs"}}, "notes"}``;
        AUC 0.5 = indistinguishable, 1 = separable.
        When a table has fewer than 100 rows (5 folds × 20-row blocks) the C2ST is skipped with a note.
    """
    from llmdisc.baselines.c2st import BLOCK_SIZE, CLASSIFIERS, c2st

    rows = min(len(real), len(synthetic), C2ST_ROWS)
    out: dict[str, Any] = {"rows_per_table": rows, "classifiers": {}, "notes": []}
    if rows < 5 * BLOCK_SIZE:
        out["notes"].append(
            f"C2ST skipped: it needs at least {5 * BLOCK_SIZE} rows per table, {rows} available"
        )
        return out
    for name in CLASSIFIERS:
        res = c2st(real, synthetic, seed=seed, classifier=name, max_rows=C2ST_ROWS, kinds=kinds)
        out["classifiers"][name] = {
            "auc": _estimate(res.auc),
            "shuffled_auc": _estimate(res.shuffled_auc) if res.shuffled_auc else None,
            "heldout_accuracy": _estimate(res.heldout_accuracy),
            "accuracy_p_value": _num(res.accuracy_p_value),
            "block_auc": _estimate(res.block_auc),
            "block_drs": _num(res.block_drs),
        }
        out["notes"] += [n for n in res.notes if n not in out["notes"]]
    return out


def distance_checks(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    holdout: pd.DataFrame | None,
    kinds: dict[str, str],
    *,
    seed: int,
) -> dict[str, Any]:
    """DCR and exact copies (module docstring); with a holdout, its comparison too.

    Returns:
        ``{"with_holdout", "median_dcr_synthetic", "exact_copy_rate", "n_synthetic", ...}`` and, with a
        holdout, ``share_closer_than_holdout_median`` (0.5 = like fresh real data, 1 = every synthetic record
        closer than a typical real one: memorisation), ``median_dcr_holdout``, ``holdout_exact_copy_rate``.
        DCR is in [0, 1]: 0 = an identical real record exists.
    """
    from llmdisc.baselines.distances import dcr_baseline, exact_copy_rate, gower_dcr
    from llmdisc.baselines.encoding import resolve_schema

    if holdout is not None:
        res = dcr_baseline(real, synthetic, holdout, seed=seed, kinds=kinds, max_rows=DCR_ROWS)
        return {
            "with_holdout": True,
            "n_synthetic": len(res.dcr_synthetic),
            "n_holdout": len(res.dcr_holdout),
            "share_closer_than_holdout_median": _estimate(res.share_closer),
            "median_dcr_synthetic": _num(res.median_synthetic),
            "median_dcr_holdout": _num(res.median_holdout),
            "exact_copy_rate": _estimate(res.exact_copy_rate),
            "holdout_exact_copy_rate": _estimate(res.holdout_copy_rate),
            "notes": list(res.notes),
        }
    schema = resolve_schema(real, synthetic, kinds)
    rng = np.random.default_rng(seed)
    if len(synthetic) > DCR_ROWS:
        synthetic = synthetic.iloc[np.sort(rng.choice(len(synthetic), DCR_ROWS, replace=False))]
    dcr = gower_dcr(synthetic.reset_index(drop=True), real, schema)
    return {
        "with_holdout": False,
        "n_synthetic": len(dcr),
        "median_dcr_synthetic": _num(np.median(dcr)),
        "exact_copy_rate": _estimate(exact_copy_rate(synthetic, real, schema)),
        "notes": list(schema.notes)
        + [
            "no holdout given: DCR and copies are not compared with fresh real "
            "records, so they cannot say whether the release is closer to the "
            "real data than new real data would be"
        ],
    }


def attack_checks(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    holdout: pd.DataFrame,
    kinds: dict[str, str],
    *,
    seed: int,
    n_attacks: int,
) -> list[dict[str, Any]]:
    """Anonymeter's risks, one dict per attack (excess success over the control: 0 = none, 1 = total)."""
    from llmdisc.baselines.attacks import anonymeter_attacks

    return [
        {
            "attack": r.attack,
            "risk": _estimate(r.risk),
            "attack_rate": _num(r.attack_rate),
            "control_rate": _num(r.control_rate),
            "baseline_rate": _num(r.baseline_rate),
            "n_attacks": r.n_attacks,
            "detail": r.detail,
        }
        for r in anonymeter_attacks(real, synthetic, holdout, seed=seed, n_attacks=n_attacks, kinds=kinds)
    ]


def run_checks(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    holdout: pd.DataFrame | None,
    kinds: dict[str, str],
    *,
    seed: int,
    n_attacks: int,
) -> dict[str, Any]:
    """All non-LLM checks (C2ST, distances, Anonymeter with a holdout and ``n_attacks`` > 0).

    Returns:
        ``{"c2st", "distances", "anonymeter" (list, or None when skipped), "anonymeter_note",
        "seconds", "seed"}``.
    """
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    result: dict[str, Any] = {"seed": seed, "c2st": c2st_checks(real, synthetic, kinds, seed=seed)}
    seconds["c2st"] = time.perf_counter() - start
    start = time.perf_counter()
    result["distances"] = distance_checks(real, synthetic, holdout, kinds, seed=seed)
    seconds["distances"] = time.perf_counter() - start
    result["anonymeter"], result["anonymeter_note"] = None, ""
    if holdout is None:
        result["anonymeter_note"] = "Anonymeter skipped: it needs a real holdout as control (--holdout)"
    elif n_attacks < 1:
        result["anonymeter_note"] = "Anonymeter skipped: --n-attacks 0"
    else:
        start = time.perf_counter()
        result["anonymeter"] = attack_checks(real, synthetic, holdout, kinds, seed=seed, n_attacks=n_attacks)
        seconds["anonymeter"] = time.perf_counter() - start
    result["seconds"] = {k: round(v, 3) for k, v in seconds.items()}
    return result
