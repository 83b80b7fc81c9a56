"""Scoring the joint-structure contrast across samples: AUC of C, a label-free decision, per-sample p-values, columns.

Input: :class:`~llmdisc.discrimination.likelihood.records.JointRecord` rows, whose ``contrast`` C =
log P(sample) − mean log P(within-sample permutations) (nats) is large for real samples (the model knows their
columns go together) and near 0 when the columns look independent. An AUC below 0.5: the release keeps less
structure than real rows; above: more, as a collapsed synthesizer can be too consistent. The KS test of
randomised p-values must not reject on the shuffled-columns control (:func:`calibration_table`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from llmdisc.errors import DataError
from llmdisc.scoring.likelihood import compared_name, comparison_row, comparisons
from llmdisc.scoring.metrics import wilson_interval
from llmdisc.scoring.variety import ADJUSTED_SCORE, SLOPE_COLUMNS

JOINT_CELL_COLUMNS = ("dataset_key", "backend", "model", "serialisation", "context", "k", "reference_rows")
"""What a joint-structure cell is never pooled over (with the ``source`` compared against the holdout)."""
JOINT_SCORES = ("contrast", "contrast_std", ADJUSTED_SCORE)
ALPHA = 0.05


def uniformity_test(p_values: Any) -> dict[str, float]:
    """KS test of randomised p-values against Uniform(0, 1): ``ks_stat``, ``ks_p`` (NaN for no values).
    ``ks_p`` < 0.05 = the per-sample test is not calibrated for this group."""
    values = np.asarray(p_values, float)
    values = values[np.isfinite(values)]
    if not len(values):
        return {"ks_stat": float("nan"), "ks_p": float("nan")}
    result = stats.kstest(values, "uniform")
    return {"ks_stat": float(result.statistic), "ks_p": float(result.pvalue)}


def calibration_summary(frame: pd.DataFrame, k: int) -> dict[str, Any]:
    """How calibrated the per-sample test is on shuffled-columns samples (where a sample and its k permutations are
    exchangeable): ``samples``; ``mean_C`` with its standard error ``se_C`` and the one-sample t-test ``t_p`` of
    mean 0 (nats); the KS test of the randomised p-values against Uniform(0, 1) (``ks_stat``, ``ks_p``); the counts
    of samples by how many of their k permutations scored below them (``rank_counts``, "a / b / c", 0 = the sample
    least probable; equal expected) with a chi-square test (``rank_chi2_p``); ``s_per_sample``.
    """
    contrast = frame["contrast"].to_numpy(float)
    observed = frame["logprob"].to_numpy(float)
    permuted = np.array(frame["permuted_logprobs"].tolist(), float)
    below = np.bincount((permuted < observed[:, None]).sum(axis=1), minlength=k + 1)
    return {"samples": len(frame), "mean_C": float(contrast.mean()),
            "se_C": float(contrast.std(ddof=1) / np.sqrt(len(frame))),
            "t_p": float(stats.ttest_1samp(contrast, 0.0).pvalue), **uniformity_test(frame["p_randomised"]),
            "rank_counts": " / ".join(map(str, below)),
            "rank_chi2_p": float(stats.chisquare(below).pvalue), "s_per_sample": float(frame["seconds"].mean())}


def calibration_table(frames: dict[tuple[str, int], pd.DataFrame], k: int) -> pd.DataFrame:
    """One :func:`calibration_summary` row per dataset and run seed, then one per dataset over every seed (``run_seed``
    ``all``): the calibration evidence the findings read (``results/tables/joint_calibration.csv``).
    ``frames``: ``{(dataset_key, run_seed): JointRecords}`` of shuffled-columns samples.
    """
    rows = [{"dataset_key": key, "run_seed": str(seed), **calibration_summary(frame, k)}
            for (key, seed), frame in sorted(frames.items())]
    for key in sorted({key for key, _ in frames}):
        pooled = pd.concat([f for (name, _), f in sorted(frames.items()) if name == key], ignore_index=True)
        seeds = sorted(seed for name, seed in frames if name == key)
        rows.append({"dataset_key": key, "run_seed": "all", **calibration_summary(pooled, k),
                     "seeds": " ".join(map(str, seeds))})
    return pd.DataFrame(rows)


def attainable_level(k: Any, alpha: float = ALPHA) -> float:
    """The per-sample test's level with ``k`` permutations: ``alpha`` when a p-value can reach it (k + 1 >=
    1/alpha), else the smallest p, 1/(k + 1). Compared with a small epsilon: (1 + 0)/(k + 1) is a float."""
    floor = 1.0 / (int(k) + 1)
    return float(alpha) if floor <= alpha + 1e-12 else floor


def count_at_level(p_values: Any, level: float) -> int:
    """How many per-sample p-values are at most ``level`` (with a float tolerance: 1/(k + 1) is computed)."""
    return int((np.asarray(p_values, float) <= level + 1e-12).sum())


def _share(p_values: np.ndarray, alpha: float, prefix: str) -> dict[str, float]:
    est = wilson_interval(count_at_level(p_values, alpha), len(p_values))
    return {prefix: est.value, f"{prefix}_low": est.ci_low, f"{prefix}_high": est.ci_high}


def joint_table(records: pd.DataFrame, *, score: str = "contrast", seed: int = 0, n_perm: int = 2000,
                n_boot: int = 2000, alpha: float = ALPHA) -> pd.DataFrame:
    """One row per cell × compared source (each release, ``shuffled_columns``, ``real_vs_real``).

    Columns: those of :func:`~llmdisc.scoring.likelihood.comparison_row` (``auc`` = P(other C > real C), C in
    nats); ``share_level`` (:func:`attainable_level`), ``share_p_real`` and ``share_p_other`` (share with
    per-sample p <= it, Wilson interval); ``ks_stat``, ``ks_p`` (:func:`uniformity_test` of the other group);
    where the records carry them ``real_variety``, ``other_variety`` (the groups' mean, 0–1) and
    :data:`~llmdisc.scoring.variety.SLOPE_COLUMNS`. DataError for an unknown score, one the records lack, or a
    cell without real test or reference samples.
    """
    if score not in JOINT_SCORES:
        raise DataError(f"score {score!r} is not a joint-structure score; fix: use one of {', '.join(JOINT_SCORES)}")
    if score not in records:
        raise DataError(f"the joint records have no {score!r}; fix: add it with "
                        "llmdisc.scoring.variety.variety_adjusted")
    rows = []
    for cell, frame, real_rows, reference, source, group in comparisons(records, JOINT_CELL_COLUMNS, score):
        row = comparison_row(JOINT_CELL_COLUMNS, cell, score, real_rows, reference, source, group, seed=seed,
                             seed_key=(score, "joint"), n_perm=n_perm, n_boot=n_boot,
                             words=("less structured", "more structured"))
        level = attainable_level(row["k"], alpha)
        row["share_level"] = level
        row.update(_share(real_rows["p_value"].to_numpy(float), level, "share_p_real"))
        row.update(_share(group["p_value"].to_numpy(float), level, "share_p_other"))
        row.update(uniformity_test(group["p_randomised"]))
        if "variety" in frame:
            row["real_variety"], row["other_variety"] = (float(real_rows["variety"].mean()),
                                                         float(group["variety"].mean()))
        row.update({fitted: float(frame[fitted].iloc[0]) for fitted in SLOPE_COLUMNS if fitted in frame})
        rows.append(row)
    return pd.DataFrame(rows)


def _mean_dicts(series: pd.Series) -> pd.Series:
    frame = pd.DataFrame([d for d in series if isinstance(d, dict)])
    return frame.mean() if not frame.empty else pd.Series(dtype=float)


def joint_column_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per cell × compared source × column: how much of C each column carries, real holdout vs the other group.

    Columns: ``real_split``, ``other_split``, ``delta_split`` (mean of the free split of C by column, nats:
    the column's tokens, sample minus permutation mean; other − real); ``real_cj``, ``other_cj``, ``delta_cj``
    (mean C_j with only column j permuted, where measured; else NaN). A clearly negative delta: the other
    group lost a dependence of this column that real rows show to the model. Sorted by ``delta_cj`` where
    measured, else ``delta_split``.
    """
    rows = []
    for cell, _, real, _, source, group in comparisons(records, JOINT_CELL_COLUMNS):
        real_split, real_cj = _mean_dicts(real["column_contrast"]), _mean_dicts(real["column_contrasts"])
        other_split, other_cj = _mean_dicts(group["column_contrast"]), _mean_dicts(group["column_contrasts"])
        part = []
        for column in real_split.index:
            r_cj, o_cj = real_cj.get(column, np.nan), other_cj.get(column, np.nan)
            part.append({**dict(zip(JOINT_CELL_COLUMNS, cell)), "source": compared_name(source),
                         "column": column, "real_split": float(real_split[column]),
                         "other_split": float(other_split.get(column, np.nan)),
                         "delta_split": float(other_split.get(column, np.nan) - real_split[column]),
                         "real_cj": float(r_cj), "other_cj": float(o_cj), "delta_cj": float(o_cj - r_cj)})
        key = "delta_cj" if any(np.isfinite(r["delta_cj"]) for r in part) else "delta_split"
        rows.extend(sorted(part, key=lambda r: r[key] if np.isfinite(r[key]) else np.inf))
    return pd.DataFrame(rows)
