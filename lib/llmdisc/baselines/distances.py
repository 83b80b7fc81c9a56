"""Privacy distances: distance to closest record (DCR) against a real holdout, exact copies, the paper's
linkage.

DCR (:func:`dcr_baseline`): for each query record, the smallest Gower-like distance to any record of the real
*train* table: the mean over columns of a per-column distance in [0, 1] — numerics ``min(|a - b| / range, 1)``
with the real train column's range (a constant column: ``min(|a - b|, 1)``), a missing numeric 0 against a
missing value and 1 against a present one, categoricals 0 if equal else 1 (missing is a level). The holdout is
the baseline (SDMetrics' DCR-overfitting idea): a release that copies its training data has smaller DCRs.

The paper's "record linkage" (:func:`paper_linkage`) is kept as it was; its threshold is relative to its own
distances, so it returns about 84 % on any roughly normal set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.neighbors import NearestNeighbors

from llmdisc.baselines.encoding import TableSchema, category_codes, numeric_matrix, one_hot, resolve_schema
from llmdisc.scoring.metrics import Estimate, wilson_interval

DEFAULT_BLOCK_ROWS = 32  # small blocks stay in cache: faster than large ones


@dataclass(frozen=True)
class DCRResult:
    """Distances to closest record for a synthetic table and for the real holdout (the baseline).

    Attributes:
        dcr_synthetic: per synthetic record, its DCR to the real train table (0 = an exact copy);
            ``dcr_holdout`` the same per real holdout record.
        share_closer: share of synthetic records whose DCR is below the holdout median (ties split at random
            by ``seed``), Wilson 95 % CI. 0.5 = as close as fresh real records (ideal); 1 = every synthetic
            record closer to train than a typical real one (memorisation); near 0 = far from the real data.
        exact_copy_rate: share of synthetic records identical to some train record (Wilson 95 % CI).
        holdout_copy_rate: the same for real holdout records: how often real data repeats itself (baseline).
    """

    dcr_synthetic: np.ndarray
    dcr_holdout: np.ndarray
    share_closer: Estimate
    exact_copy_rate: Estimate
    holdout_copy_rate: Estimate
    median_synthetic: float
    median_holdout: float
    seed: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class PaperLinkage:
    """The paper's record linkage: ``success_rate`` is the share of synthetic records whose Euclidean NN
    distance (scaled numerics) is below ``threshold`` = mean + 1 population SD of the distances, about 0.84 on
    any data by construction, so it is no evidence of linkage."""

    success_rate: float
    threshold: float
    mean_distance: float
    std_distance: float
    n: int
    columns: tuple[str, ...]


def gower_dcr(
    queries: pd.DataFrame, reference: pd.DataFrame, schema: TableSchema, *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
) -> np.ndarray:
    """Distance in [0, 1] from each query record to its closest ``reference`` record (module docstring).

    ``block_rows``: queries per block; memory ≈ 4 × block_rows × len(reference) × 4 bytes.
    """
    n_cols = len(schema.columns)
    q_num, r_num = numeric_matrix(queries, schema.numerical), numeric_matrix(reference, schema.numerical)
    lo, hi = np.nanmin(_finite_or_zero(r_num), axis=0), np.nanmax(_finite_or_zero(r_num), axis=0)
    scale = np.where(hi - lo > 0, hi - lo, 1.0)
    q_num, r_num = ((q_num - lo) / scale).astype(np.float32), ((r_num - lo) / scale).astype(np.float32)
    # Clipping at 1 is only needed for a column where some query lies outside the train range.
    needs_clip = ~((np.nan_to_num(q_num, nan=0.5) >= 0) & (np.nan_to_num(q_num, nan=0.5) <= 1)).all(axis=0)
    has_nan = np.isnan(q_num).any(axis=0) | np.isnan(r_num).any(axis=0)
    if schema.categorical:
        (q_codes, r_codes), levels = category_codes([queries, reference], schema.categorical)
        r_hot = one_hot(r_codes, levels, np.float32).T.copy()
    out = np.empty(len(queries))
    buf = None
    for start in range(0, len(queries), block_rows):
        stop = min(start + block_rows, len(queries))
        if schema.categorical:
            # mismatches = n_categorical - matches; matches = one-hot(q) @ one-hot(r).T (exact small integers)
            total = one_hot(q_codes[start:stop], levels, np.float32) @ r_hot
            np.subtract(np.float32(len(schema.categorical)), total, out=total)
        else:
            total = np.zeros((stop - start, len(reference)), dtype=np.float32)
        if buf is None or buf.shape != total.shape:
            buf = np.empty_like(total)
        for j in range(q_num.shape[1]):
            np.subtract.outer(q_num[start:stop, j], r_num[:, j], out=buf)
            np.abs(buf, out=buf)
            if needs_clip[j]:
                np.minimum(buf, 1.0, out=buf)
            if has_nan[j]:
                q_nan, r_nan = np.isnan(q_num[start:stop, j]), np.isnan(r_num[:, j])
                np.nan_to_num(buf, copy=False, nan=1.0)  # one side missing: a full mismatch
                buf[np.ix_(q_nan, r_nan)] = 0.0  # both missing: equal
            total += buf
        out[start:stop] = total.min(axis=1) / n_cols
    return np.clip(out, 0.0, 1.0)


def _finite_or_zero(values: np.ndarray) -> np.ndarray:
    # nanmin of an all-missing column warns and returns NaN; such a column gets range [0, 0] (scale 1).
    filled = values.copy()
    all_nan = np.isnan(filled).all(axis=0)
    filled[:, all_nan] = 0.0
    return filled


def row_hashes(tables: list[pd.DataFrame], schema: TableSchema) -> list[np.ndarray]:
    """uint64 hash of each record over ``schema.columns``, comparable across ``tables`` (exact-copy test)."""
    if schema.categorical:
        codes, _ = category_codes(tables, schema.categorical)
    hashes = []
    for i, table in enumerate(tables):
        parts = {f"n{j}": numeric_matrix(table, schema.numerical)[:, j] for j in range(len(schema.numerical))}
        if schema.categorical:
            parts.update({f"c{j}": codes[i][:, j] for j in range(len(schema.categorical))})
        hashes.append(pd.util.hash_pandas_object(pd.DataFrame(parts), index=False).to_numpy())
    return hashes


def exact_copy_rate(queries: pd.DataFrame, reference: pd.DataFrame, schema: TableSchema) -> Estimate:
    """Share of ``queries`` records that appear verbatim in ``reference`` (Wilson 95 % CI; 0: none copied)."""
    q_hash, r_hash = row_hashes([queries, reference], schema)
    return wilson_interval(int(np.isin(q_hash, r_hash).sum()), len(q_hash))


def dcr_baseline(
    train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, *, seed: int,
    kinds: dict[str, str] | None = None, max_rows: int | None = None, block_rows: int = DEFAULT_BLOCK_ROWS,
) -> DCRResult:
    """DCR of synthetic and of holdout records to the real train table, and the exact-copy rates.

    Args:
        train: the real training table (the synthesizer's input); the reference set, always used whole.
        seed: seed of the query subsample (when ``max_rows`` is set) and of tie-breaking at the median.
        max_rows: at most this many synthetic and holdout records are measured (seeded draw); None or 0 = all.

    Raises:
        DataError: the tables' columns or kinds differ (:func:`~llmdisc.baselines.encoding.resolve_schema`).
    """
    schema = resolve_schema(train, synthetic, kinds, names=("real train", "synthetic"), others=[holdout])
    rng = np.random.default_rng(seed)
    if max_rows:
        synthetic = _subsample(synthetic, max_rows, rng)
        holdout = _subsample(holdout, max_rows, rng)
    d_syn = gower_dcr(synthetic, train, schema, block_rows=block_rows)
    d_hold = gower_dcr(holdout, train, schema, block_rows=block_rows)
    median_hold = float(np.median(d_hold))
    tied = d_syn == median_hold
    closer = int((d_syn < median_hold).sum() + (rng.random(int(tied.sum())) < 0.5).sum())
    return DCRResult(
        dcr_synthetic=d_syn, dcr_holdout=d_hold,
        share_closer=wilson_interval(closer, len(d_syn)),
        exact_copy_rate=exact_copy_rate(synthetic, train, schema),
        holdout_copy_rate=exact_copy_rate(holdout, train, schema),
        median_synthetic=float(np.median(d_syn)), median_holdout=median_hold,
        seed=seed, notes=schema.notes)


def _subsample(table: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    if len(table) <= n:
        return table.reset_index(drop=True)
    return table.iloc[np.sort(rng.choice(len(table), size=n, replace=False))].reset_index(drop=True)


def paper_linkage(real: pd.DataFrame, synthetic: pd.DataFrame) -> PaperLinkage:
    """The paper's record linkage, reproduced (no randomness; NaN figures when ``real`` has no numerics).

    Numeric columns of ``real`` with missing values filled by the real means, standard-scaled on ``real``; for
    each synthetic record the Euclidean distance to its nearest real record (a k-d tree instead of the paper's
    loop; same numbers); success = share below mean + 1 SD of the distances.
    """
    columns = tuple(str(c) for c in real.select_dtypes(include=[np.number]).columns)
    if not columns:
        return PaperLinkage(float("nan"), float("nan"), float("nan"), float("nan"), len(synthetic), ())
    real_num = real[list(columns)].astype("float64")
    means = real_num.mean()
    syn_num = synthetic[list(columns)].apply(pd.to_numeric, errors="coerce").astype("float64").fillna(means)
    real_num = real_num.fillna(means)
    std = real_num.std(ddof=0).replace(0.0, 1.0)  # sklearn's StandardScaler leaves constant columns unscaled
    real_scaled = ((real_num - means) / std).to_numpy()
    syn_scaled = ((syn_num - means) / std).to_numpy()
    distances, _ = NearestNeighbors(n_neighbors=1).fit(real_scaled).kneighbors(syn_scaled)
    distances = distances[:, 0]
    mean, sd = float(distances.mean()), float(distances.std())
    threshold = mean + sd
    return PaperLinkage(success_rate=float((distances < threshold).mean()), threshold=threshold,
                        mean_distance=mean, std_distance=sd, n=len(distances), columns=columns)
