"""Scoring the likelihood discriminator: AUC real vs synthetic, a label-free decision rule, controls, columns.

Input: the per-sample records of ``results/likelihood/*.jsonl``, whose score (default ``mean_logprob``, the
mean token log-likelihood in nats) is higher when the model finds a sample more probable. The AUC is read
two-sided (a mode-collapsed release reads as *more* probable); the decision rule (:func:`decision_scores`)
never reads the synthetic labels, so its DRS stands on the footing of the LLM's. Real train samples as the
"synthetic" class must sit near AUC 0.5 (else the model has memorised the public data).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from llmdisc.errors import DataError
from llmdisc.scoring.auc import auc_test, auc_with_interval
from llmdisc.scoring.metrics import Estimate, cell_seed, drs_bootstrap_from_counts, wilson_interval
from llmdisc.scoring.separation import separation
from llmdisc.synthesis.controls import POSITIVE_CONTROL

SCORE_COLUMNS = ("mean_logprob", "min_k_logprob")
"""Per-sample scores the tables are computed for."""
REAL_VS_REAL = "real_vs_real"
"""``source`` name of the real-vs-real control in the tables (train samples against holdout samples)."""
BAND_COVERAGE = 0.95
CELL_COLUMNS = ("dataset_key", "backend", "model", "serialisation", "context")
"""What a likelihood cell is never pooled over (with the ``source`` compared against the holdout)."""


def _labelled(real: np.ndarray, synthetic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(real) == 0 or len(synthetic) == 0:
        raise DataError(f"an AUC needs both classes; got {len(real)} real and {len(synthetic)} synthetic scores; "
                        "fix: score real holdout samples and synthetic samples (samples_per_class >= 2 each)")
    if not (np.isfinite(real).all() and np.isfinite(synthetic).all()):
        raise DataError("some scores are NaN or infinite; fix: re-score those samples (a text without scored "
                        "tokens has no score)")
    return np.r_[np.zeros(len(real)), np.ones(len(synthetic))], np.r_[real, synthetic]


def auc_interval(real: Sequence[float], synthetic: Sequence[float], confidence: float = 0.95) -> Estimate:
    """AUC = P(synthetic > real) (ties half) with its score interval (:func:`llmdisc.scoring.auc.auc_with_interval`)."""
    labels, scores = _labelled(np.asarray(real, float), np.asarray(synthetic, float))
    return auc_with_interval(labels, scores, confidence)


def permutation_p_value(real: Sequence[float], synthetic: Sequence[float], *, seed: int, n_perm: int = 2000) -> float:
    """Two-sided permutation p-value of |AUC − 0.5| (:func:`llmdisc.scoring.auc.auc_test`):
    ``(1 + #{perm: |AUC_perm − .5| >= |AUC − .5|}) / (1 + n_perm)``; the same seed gives the same p-value."""
    labels, scores = _labelled(np.asarray(real, float), np.asarray(synthetic, float))
    return auc_test(labels, scores, seed=seed, permutations=n_perm).p_value


def likelihood_auc(real: Sequence[float], synthetic: Sequence[float], *, seed: int, n_perm: int = 2000,
                   confidence: float = 0.95, words: tuple[str, str] = ("less probable", "more probable")
                   ) -> dict[str, Any]:
    """AUC of the score, real vs synthetic, with its separation D, direction in words, interval and permutation p.

    ``words``: what a *lower* and a *higher* score means (``less structured``/``more structured`` for the
    joint contrast).

    Returns ``auc``, ``auc_low``, ``auc_high`` (score interval), ``separation`` = D = 2·|AUC − 0.5| with
    ``separation_low``/``separation_high`` (:func:`llmdisc.scoring.separation.separation`), ``direction``
    (``synthetic <words[0]>`` when AUC < 0.5, ``synthetic <words[1]>`` when > 0.5, ``none`` at 0.5),
    ``perm_p`` (two-sided, seeded), ``n_real``, ``n_syn``. DataError for an empty class or a non-finite score.
    """
    real_arr, syn_arr = np.asarray(real, float), np.asarray(synthetic, float)
    est = auc_interval(real_arr, syn_arr, confidence)
    folded = separation(est.value, est.ci_low, est.ci_high)
    direction = {"lower": f"synthetic {words[0]}", "higher": f"synthetic {words[1]}"}.get(folded.direction, "none")
    return {"auc": est.value, "auc_low": est.ci_low, "auc_high": est.ci_high,
            "separation": folded.d, "separation_low": folded.low, "separation_high": folded.high,
            "direction": direction, "perm_p": permutation_p_value(real_arr, syn_arr, seed=seed, n_perm=n_perm),
            "n_real": len(real_arr), "n_syn": len(syn_arr)}


def _band_rank(n: int, coverage: float) -> int:
    """The rank j of the band's order statistics: the largest j >= 1 with (n + 1 − 2j)/(n + 1) >= ``coverage``
    (1 when even the minimum and the maximum cover less)."""
    return max(1, int(np.floor(((n + 1) * (1 - coverage)) / 2 + 1e-9)))


def band_coverage(n: int, coverage: float = BAND_COVERAGE) -> float:
    """The share of new real samples that :func:`reference_band` of ``n`` reference samples keeps inside, in
    expectation, for any continuous score: (n + 1 − 2j)/(n + 1) (order statistics of exchangeable samples). It is
    below ``coverage`` when ``n`` is too small to reach it: 20 reference samples keep 19/21 = 0.905 (a real sample
    is flagged 9.5 % of the time), 39 keep 0.95."""
    return (n + 1 - 2 * _band_rank(n, coverage)) / (n + 1)


def reference_band(reference: Sequence[float], coverage: float = BAND_COVERAGE) -> tuple[float, float]:
    """The band of the reference (real holdout) scores a new real sample falls in with probability ``coverage``,
    or as close to it as ``n`` reference samples allow: their j-th smallest and j-th largest value
    (:func:`band_coverage` gives the coverage the band really has; min–max below 39 samples at 0.95).
    DataError for fewer than 2 reference scores, or a non-finite one.
    """
    values = np.sort(np.asarray(reference, float))
    if len(values) < 2 or not np.isfinite(values).all():
        raise DataError(f"the decision rule needs at least 2 finite reference scores of real holdout samples; got "
                        f"{len(values)}; fix: score reference holdout samples (at least 39 give the band its 95 % "
                        "coverage)")
    j = _band_rank(len(values), coverage)
    return float(values[j - 1]), float(values[len(values) - j])


def flag_outside_band(scores: Sequence[float], band: tuple[float, float]) -> np.ndarray:
    """True (called SYNTHETIC) for each score below ``band[0]`` or above ``band[1]``. Reads no label."""
    values = np.asarray(scores, float)
    return (values < band[0]) | (values > band[1])


def decision_scores(real: Sequence[float], synthetic: Sequence[float], reference: Sequence[float], *, seed: int,
                    coverage: float = BAND_COVERAGE, n_boot: int = 2000) -> dict[str, Any]:
    """p_REAL, p_SYN and the likelihood DRS of the label-free band rule, with intervals: a sample is called
    SYNTHETIC when its score falls outside the band (:func:`reference_band`) of the ``reference`` scores
    (separate real holdout samples).

    Returns ``band_low``, ``band_high``, ``n_reference``, ``band_coverage`` (the band's true coverage,
    :func:`band_coverage`: with no synthesis at all p_SYN stays near 1 − it), ``p_real`` (+
    ``_low``/``_high``, Wilson), ``p_syn`` (+ Wilson), ``drs`` (+ bootstrap interval); fractions in [0, 1].
    """
    band = reference_band(reference, coverage)
    real_flags, syn_flags = flag_outside_band(real, band), flag_outside_band(synthetic, band)
    if len(real_flags) == 0 or len(syn_flags) == 0:
        raise DataError(f"the decision rule needs real and synthetic samples; got {len(real_flags)} and "
                        f"{len(syn_flags)}; fix: score both classes")
    n_real, kept = len(real_flags), int((~real_flags).sum())
    n_syn, caught = len(syn_flags), int(syn_flags.sum())
    p_real, p_syn = wilson_interval(kept, n_real), wilson_interval(caught, n_syn)
    drs = drs_bootstrap_from_counts(n_real, kept, n_syn, caught, seed=seed, n_boot=n_boot)
    return {"band_low": band[0], "band_high": band[1], "n_reference": len(reference),
            "band_coverage": band_coverage(len(reference), coverage),
            "p_real": p_real.value, "p_real_low": p_real.ci_low, "p_real_high": p_real.ci_high,
            "p_syn": p_syn.value, "p_syn_low": p_syn.ci_low, "p_syn_high": p_syn.ci_high,
            "drs": drs.value, "drs_low": drs.ci_low, "drs_high": drs.ci_high}


def likelihood_table(records: pd.DataFrame, *, score: str = "mean_logprob", seed: int = 0, n_perm: int = 2000,
                     n_boot: int = 2000) -> pd.DataFrame:
    """One row per cell × compared source: AUC test and decision rule against the real holdout test samples.

    Sources compared: each synthesizer, the shuffled-columns positive control (``kind`` ``positive_control``)
    and the train samples (``source`` :data:`REAL_VS_REAL`, ``kind`` ``real_vs_real``). Seeds of the
    permutation test and the bootstrap derive from ``seed`` and the row's identity. DataError for a cell
    without real holdout test or reference samples.
    """
    if score not in SCORE_COLUMNS:
        raise DataError(f"score {score!r} is not a per-sample score; fix: use one of {', '.join(SCORE_COLUMNS)}")
    return pd.DataFrame([comparison_row(CELL_COLUMNS, cell, score, real, reference, source, group, seed=seed,
                                        seed_key=(score,), n_perm=n_perm, n_boot=n_boot)
                         for cell, _, real, reference, source, group in
                         comparisons(records, CELL_COLUMNS, score)])


def comparisons(records: pd.DataFrame, columns: Sequence[str], score: str | None = None) -> Iterator[tuple]:
    """``(cell, its records, real holdout test rows, reference scores, compared source, its rows)`` per
    cell × compared source, in sorted order. With ``score``, a cell without real holdout test or reference
    samples raises DataError; without (reference scores None), a cell without real test samples is skipped."""
    for cell, frame in records.groupby(list(columns), sort=True, dropna=False):
        holdout = frame[frame["source"] == "holdout"]
        real = holdout[holdout["role"] == "test"]
        reference = None if score is None else holdout.loc[holdout["role"] == "reference",
                                                           score].to_numpy(float)
        if reference is not None and (real.empty or len(reference) == 0):
            raise DataError(f"cell {dict(zip(columns, cell))} has {len(real)} real holdout test and "
                            f"{len(reference)} reference samples; fix: score both (build_likelihood_queue does)")
        if not real.empty:
            for source, group in frame[frame["source"] != "holdout"].groupby("source", sort=True):
                yield cell, frame, real, reference, source, group


def compared_name(source: str) -> str:
    """The name a compared source has in the tables: :data:`REAL_VS_REAL` for the train samples."""
    return REAL_VS_REAL if source == "train" else source


def comparison_row(columns: Sequence[str], cell: tuple, score: str, real_rows: pd.DataFrame,
                   reference: np.ndarray, source: str, group: pd.DataFrame, *, seed: int, seed_key: tuple,
                   n_perm: int, n_boot: int,
                   words: tuple[str, str] = ("less probable", "more probable")) -> dict[str, Any]:
    """One table row of a compared source: the cell, ``source``, ``kind``, ``score``, the AUC test
    (:func:`likelihood_auc`), the decision rule (:func:`decision_scores`), ``real_mean`` and ``other_mean``;
    its seed derives from ``seed``, the cell, the source's name and ``seed_key``."""
    name = compared_name(source)
    real, other = real_rows[score].to_numpy(float), group[score].to_numpy(float)
    row_seed = cell_seed(seed, (*cell, name, *seed_key))
    kind = ("real_vs_real" if source == "train" else
            "positive_control" if source == POSITIVE_CONTROL else "release")
    return {**dict(zip(columns, cell)), "source": name, "kind": kind, "score": score,
            **likelihood_auc(real, other, seed=row_seed, n_perm=n_perm, words=words),
            **decision_scores(real, other, reference, seed=row_seed, n_boot=n_boot),
            "real_mean": float(np.mean(real)), "other_mean": float(np.mean(other))}


def real_vs_real_warnings(table: pd.DataFrame, *, alpha: float = 0.05) -> list[str]:
    """Sentences for each real-vs-real control whose AUC departs from 0.5 (permutation p < ``alpha``)."""
    return [f"{row['dataset_key']} ({row['model']}, {row['score']}): real train samples against real "
            f"holdout samples give AUC {row['auc']:.2f} (p = {row['perm_p']:.3f}), not 0.5: the model "
            "tells two real samples apart, which points to memorised public data or a split artefact; "
            "read this cell's release AUCs against it"
            for _, row in table[table["kind"] == "real_vs_real"].iterrows() if row["perm_p"] < alpha]


def column_contributions(records: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per cell × compared source × column: how probable the column's values are, synthetic against real.

    Columns: ``real_nats_per_row`` and ``other_nats_per_row`` (mean over samples of the column's summed token
    log-probabilities divided by the sample's rows), ``delta_nats_per_row`` = other − real (negative: the
    synthetic values of this column are less probable), ``column_auc`` (P(other > real) for that column's sum, 0.5 =
    no difference), and ``rank`` (1 = the column with the largest |delta|).
    """
    rows = []
    for cell, _, real, _, source, group in comparisons(records, CELL_COLUMNS):
        real_cols = pd.DataFrame(list(real["column_logprob"])).div(real["n_rows"].to_numpy(), axis=0)
        other_cols = pd.DataFrame(list(group["column_logprob"])).div(group["n_rows"].to_numpy(), axis=0)
        part = [{**dict(zip(CELL_COLUMNS, cell)), "source": compared_name(source), "column": column,
                 "real_nats_per_row": float(real_cols[column].mean()),
                 "other_nats_per_row": float(other_cols[column].mean()),
                 "delta_nats_per_row": float(other_cols[column].mean() - real_cols[column].mean()),
                 "column_auc": auc_interval(real_cols[column].to_numpy(float),
                                            other_cols[column].to_numpy(float)).value}
                for column in real_cols.columns if column in other_cols.columns]
        order = sorted(part, key=lambda r: -abs(r["delta_nats_per_row"]))
        rows.extend({**row, "rank": rank} for rank, row in enumerate(order, start=1))
    return pd.DataFrame(rows)


# no timing column: the records keep each sample's seconds, and a results table must read the same on every run
SAMPLE_TABLE_COLUMNS = ("dataset_key", "backend", "model", "model_digest", "serialisation", "context", "source",
                        "role", "true_label", "index", "sample_seed", "n_rows", "prompt_tokens", "n_tokens",
                        "total_logprob", "mean_logprob", "min_k_logprob", "header_logprob", "layout_logprob")


def samples_table(records: pd.DataFrame) -> pd.DataFrame:
    """One row per scored sample (the flat columns of the records; figures read this table)."""
    return records.loc[:, list(SAMPLE_TABLE_COLUMNS)].sort_values(
        ["dataset_key", "model", "source", "role", "index"]).reset_index(drop=True)
