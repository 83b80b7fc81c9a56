"""All baselines of one synthetic release as one tidy table (stage 05 writes results/baselines/<key>.csv).

One row per (baseline, variant, method, metric) with value, interval, n, seed and note; ``variant`` says whose
definition it is: ``ours``, ``paper`` (as published), ``sdmetrics`` or ``anonymeter``.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
import pandas as pd

from llmdisc.baselines.attacks import ATTACKS, anonymeter_attacks
from llmdisc.baselines.c2st import CLASSIFIERS, c2st, paper_c2st, sdmetrics_logistic_detection
from llmdisc.baselines.distances import dcr_baseline, paper_linkage
from llmdisc.baselines.encoding import cap_levels, infer_kinds
from llmdisc.scoring.metrics import Estimate
from llmdisc.synthesis.controls import NEGATIVE_CONTROL, POSITIVE_CONTROL, shuffled_columns_table

RESULT_COLUMNS = ("dataset_key", "synthesizer", "baseline", "variant", "method", "metric",
                  "value", "ci_low", "ci_high", "n", "seed", "note")


def _row(baseline: str, variant: str, method: str, metric: str, value: float | Estimate, *, n: int | None,
         note: str = "") -> dict[str, Any]:
    est = value if isinstance(value, Estimate) else Estimate(float(value), np.nan, np.nan, n)
    return dict(baseline=baseline, variant=variant, method=method, metric=metric, value=est.value,
                ci_low=est.ci_low, ci_high=est.ci_high, n=est.n, note=note)


HIST_GB_MAX_LEVELS = 252
"""Levels kept per categorical column in the gradient-boosted C2ST: with ``(other)`` and a missing level,
254 categories, within the 255 a ``HistGradientBoostingClassifier`` splits natively (one to spare)."""


def c2st_rows(train: pd.DataFrame, synthetic: pd.DataFrame, *, seed: int, max_rows: int | None,
              kinds: dict[str, str] | None, classifiers: Sequence[str] = CLASSIFIERS,
              sdmetrics: bool = True) -> list[dict[str, Any]]:
    """Rows of our C2ST (each classifier), its block level and shuffled baseline, SDMetrics' (unless
    ``sdmetrics`` is False: it reads every row, the slowest part) and the paper's."""
    rows = []
    for name in classifiers:
        if name == "hist_gb":
            # native category splits: a release that invents thousands of codes (the paper's Census CTGAN) would
            # give thousands of one-hot columns; capped, invented codes still show as the level (other)
            resolved = kinds or infer_kinds(train)
            capped, cap_notes = cap_levels({"train": train, "synthetic": synthetic}, resolved, train,
                                           HIST_GB_MAX_LEVELS, unseen=True)
            res = c2st(capped["train"], capped["synthetic"], seed=seed, classifier=name, max_rows=max_rows,
                       kinds=resolved, native_categorical=True)
        else:
            res, cap_notes = c2st(train, synthetic, seed=seed, classifier=name, max_rows=max_rows, kinds=kinds), []
        note = "; ".join([*res.notes, *cap_notes])
        rows += [
            _row("c2st", "ours", name, "auc", res.auc, n=None,
                 note="5-fold out-of-fold; Nadeau-Bengio corrected 95% CI; " + note),
            _row("c2st", "ours", name, "accuracy", res.accuracy, n=None, note="corrected 95% CI"),
            _row("c2st", "ours", name, "heldout_accuracy", res.heldout_accuracy, n=None,
                 note="first held-out fold; exact 95% CI"),
            _row("c2st", "ours", name, "accuracy_p_value", res.accuracy_p_value, n=res.heldout_accuracy.n,
                 note="exact two-sided binomial test of heldout_accuracy vs 0.5"),
            _row("c2st", "ours", name, "balanced_accuracy", res.balanced_accuracy, n=res.accuracy.n),
            _row("c2st_block", "ours", name, "auc", res.block_auc, n=None,
                 note="20-row blocks within folds, mean row proba; corrected 95% CI"),
            _row("c2st_block", "ours", name, "accuracy", res.block_accuracy, n=None, note="Wilson 95% CI"),
            _row("c2st_block", "ours", name, "drs", res.block_drs, n=res.block_accuracy.n,
                 note="min(p_REAL, p_SYN) over blocks"),
        ]
        if res.shuffled_auc is not None:
            rows.append(_row("c2st_shuffled", "ours", name, "auc", res.shuffled_auc, n=None,
                             note="labels shuffled: expected 0.5"))
    # all rows: on subsamples a rare real category is often missing and SDMetrics' encoder then fails
    score, note = (sdmetrics_logistic_detection(train, synthetic, seed=seed, max_rows=None, kinds=kinds)
                   if sdmetrics else (np.nan, "not run on a control"))
    rows.append(_row("sdmetrics_detection", "sdmetrics", "logistic", "score", score, n=None,
                     note="; ".join(filter(None, ["1 = indistinguishable, 0 = separable; unseeded upstream, "
                                                  "numpy seeded; all rows", note]))))
    paper = paper_c2st(train, synthetic, seed=seed)
    paper_note = (f"numeric columns {list(paper.columns)}; first rows; one 70/30 split (seeded here, not in "
                  f"the paper)")
    rows += [
        _row("c2st", "paper", "logistic", "auc", paper.auc, n=None, note=paper_note),
        _row("c2st", "paper", "logistic", "accuracy", paper.accuracy, n=paper.n_test),
        _row("c2st", "paper", "logistic", "accuracy_real", paper.accuracy_real, n=None),
        _row("c2st", "paper", "logistic", "accuracy_synthetic", paper.accuracy_synthetic, n=None),
        _row("c2st", "paper", "logistic", "balanced_accuracy", paper.balanced_accuracy, n=paper.n_test),
    ]
    return rows


def distance_rows(train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, *, seed: int,
                  max_rows: int | None, kinds: dict[str, str] | None) -> list[dict[str, Any]]:
    """Rows of our DCR (synthetic and holdout), the copy rates and the paper's linkage."""
    res = dcr_baseline(train, synthetic, holdout, seed=seed, kinds=kinds, max_rows=max_rows)
    note = "; ".join(res.notes)
    link = paper_linkage(train, synthetic)
    return [
        _row("dcr", "ours", "gower", "share_closer_than_holdout_median", res.share_closer, n=None,
             note="0.5 = like fresh real data; Wilson 95% CI; " + note),
        _row("dcr", "ours", "gower", "median_dcr_synthetic", res.median_synthetic, n=len(res.dcr_synthetic)),
        _row("dcr", "ours", "gower", "median_dcr_holdout", res.median_holdout, n=len(res.dcr_holdout),
             note="baseline: real records never seen by the synthesizer"),
        _row("dcr", "ours", "gower", "exact_copy_rate", res.exact_copy_rate, n=None, note="Wilson 95% CI"),
        _row("dcr", "ours", "gower", "holdout_exact_copy_rate", res.holdout_copy_rate, n=None,
             note="baseline: real duplicates"),
        _row("linkage", "paper", "euclidean", "success_rate", link.success_rate, n=link.n,
             note=f"share below mean+1SD of its own distances (~0.84 by construction); "
                  f"columns {list(link.columns)}"),
    ]


def attack_rows(train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, *, seed: int,
                n_attacks: int, kinds: dict[str, str] | None,
                attacks: Sequence[str] = ATTACKS) -> list[dict[str, Any]]:
    """Rows of Anonymeter's risks and the success rates behind them."""
    rows = []
    for res in anonymeter_attacks(train, synthetic, holdout, seed=seed, n_attacks=n_attacks, kinds=kinds,
                                  attacks=attacks):
        rows += [
            _row("anonymeter", "anonymeter", res.attack, "risk", res.risk, n=None,
                 note="excess over holdout control, 95% CI; " + res.detail),
            _row("anonymeter", "anonymeter", res.attack, "attack_rate", res.attack_rate, n=res.n_attacks),
            _row("anonymeter", "anonymeter", res.attack, "control_rate", res.control_rate, n=res.n_attacks),
            _row("anonymeter", "anonymeter", res.attack, "baseline_rate", res.baseline_rate, n=res.n_attacks,
                 note="random-guess attacker"),
        ]
    return rows


def run_baselines(
    train: pd.DataFrame, holdout: pd.DataFrame, synthetic: pd.DataFrame, *, dataset_key: str,
    synthesizer: str,
    seed: int = 0, c2st_rows_per_table: int | None = 5000, dcr_rows: int | None = None, n_attacks: int = 500,
    kinds: dict[str, str] | None = None, classifiers: Sequence[str] = CLASSIFIERS,
    attacks: Sequence[str] = ATTACKS, holdout_in_training: bool = False,
) -> pd.DataFrame:
    """Every baseline of one release, as a tidy table (columns :data:`RESULT_COLUMNS`).

    Args:
        holdout: the real holdout (never seen by the synthesizer): DCR baseline and Anonymeter control.
        seed: seed of every draw (each baseline receives it).
        c2st_rows_per_table: rows drawn from each table for the C2STs; None or 0 = all.
        dcr_rows: synthetic and holdout records measured for DCR; None or 0 = all.
        n_attacks: attacks per Anonymeter evaluator; 0 skips Anonymeter.
        kinds: declared column kinds, or None to infer them.
        holdout_in_training: the release was fitted on rows of ``holdout`` (the paper's own releases): the
            distance and attack rows are written as not valid (value NaN, the reason in ``note``).

    Returns:
        The tidy table; ``.attrs["seconds"]`` holds each family's wall time in seconds (kept out of the CSV).

    Raises:
        DataError: the tables' columns or kinds differ. ConfigError: an unknown classifier or attack.
    """
    seconds = {}
    start = time.perf_counter()
    rows = c2st_rows(train, synthetic, seed=seed, max_rows=c2st_rows_per_table or None, kinds=kinds,
                     classifiers=classifiers)
    seconds["c2st"] = time.perf_counter() - start
    if holdout_in_training:
        rows += not_valid_rows(HOLDOUT_IN_TRAINING)
        n_attacks = 0
    else:
        start = time.perf_counter()
        rows += distance_rows(train, synthetic, holdout, seed=seed, max_rows=dcr_rows or None, kinds=kinds)
        seconds["distances"] = time.perf_counter() - start
    if n_attacks:
        start = time.perf_counter()
        rows += attack_rows(train, synthetic, holdout, seed=seed, n_attacks=n_attacks, kinds=kinds,
                            attacks=attacks)
        seconds["anonymeter"] = time.perf_counter() - start
    table = _tidy(rows, dataset_key, synthesizer, seed)
    table.attrs["seconds"] = seconds
    return table


def _tidy(rows: list[dict[str, Any]], dataset_key: str, synthesizer: str, seed: int) -> pd.DataFrame:
    table = pd.DataFrame(rows)
    table.insert(0, "synthesizer", synthesizer)
    table.insert(0, "dataset_key", dataset_key)
    table["seed"] = seed
    table["note"] = table["note"].fillna("").str.strip("; ")
    return table[list(RESULT_COLUMNS)]


def run_controls(train: pd.DataFrame, holdout: pd.DataFrame, *, dataset_key: str, seed: int = 0,
                 c2st_rows_per_table: int | None = 5000, kinds: dict[str, str] | None = None,
                 classifiers: Sequence[str] = CLASSIFIERS) -> pd.DataFrame:
    """The C2STs (ours and the paper's) on both controls, as a tidy table like :func:`run_baselines`'.

    The positive control, ``shuffled_columns``, is the holdout with every column permuted independently
    (every value real, how values go together destroyed); the negative control, ``real_holdout``, is the
    holdout itself, which any C2ST must read at chance. ``seed`` also seeds the shuffle.
    """
    controls = ((POSITIVE_CONTROL, shuffled_columns_table(holdout, seed=seed)), (NEGATIVE_CONTROL, holdout))
    tables = [_tidy(c2st_rows(train, other, seed=seed, max_rows=c2st_rows_per_table or None, kinds=kinds,
                              classifiers=classifiers, sdmetrics=False), dataset_key, name, seed)
              for name, other in controls]
    return pd.concat(tables, ignore_index=True)


HOLDOUT_IN_TRAINING = ("not valid: the release was fitted on every real row, so the holdout it is measured "
                       "against was in its training data")
"""The note of the distance and attack rows of a release fitted on the holdout (the paper's own releases)."""

HEADLINE_PICKS = {
    "c2st_auc_logistic": ("c2st", "ours", "logistic", "auc"),
    "c2st_auc_hist_gb": ("c2st", "ours", "hist_gb", "auc"),
    "block_auc_hist_gb": ("c2st_block", "ours", "hist_gb", "auc"),
    "block_drs_hist_gb": ("c2st_block", "ours", "hist_gb", "drs"),
    "shuffled_auc_logistic": ("c2st_shuffled", "ours", "logistic", "auc"),
    "sdmetrics_detection": ("sdmetrics_detection", "sdmetrics", "logistic", "score"),
    "paper_c2st_auc": ("c2st", "paper", "logistic", "auc"),
    "dcr_share_closer": ("dcr", "ours", "gower", "share_closer_than_holdout_median"),
    "exact_copy_rate": ("dcr", "ours", "gower", "exact_copy_rate"),
    "paper_linkage": ("linkage", "paper", "euclidean", "success_rate"),
    "singling_out_risk": ("anonymeter", "anonymeter", "singling_out", "risk"),
    "linkability_risk": ("anonymeter", "anonymeter", "linkability", "risk"),
    "inference_risk": ("anonymeter", "anonymeter", "inference", "risk"),
}
"""Headline column → (baseline, variant, method, metric) of its row."""

_DISTANCE_METRICS = tuple(HEADLINE_PICKS[name] for name in ("dcr_share_closer", "exact_copy_rate", "paper_linkage",
                                                           "singling_out_risk", "linkability_risk", "inference_risk"))


def not_valid_rows(reason: str) -> list[dict[str, Any]]:
    """The headline's distance and attack rows with no value and ``reason`` as their note."""
    return [_row(*parts, np.nan, n=None, note=reason) for parts in _DISTANCE_METRICS]


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """One row per synthesizer with the main numbers (C2ST AUCs, block DRS, DCR share, copy rate, risks)."""
    key = table.set_index(["dataset_key", "synthesizer", "baseline", "variant", "method", "metric"])["value"]
    releases = table[["dataset_key", "synthesizer"]].drop_duplicates().itertuples(index=False)
    return pd.DataFrame([{"dataset_key": dataset, "synthesizer": synth,
                          **{name: key.get((dataset, synth, *parts), np.nan)
                             for name, parts in HEADLINE_PICKS.items()}} for dataset, synth in releases])
