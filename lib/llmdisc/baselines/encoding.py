"""Shared handling of mixed-type tables for the baselines: schema checks, degenerate columns, encodings.

Every baseline compares a real table with a synthetic one (or a real table with a real holdout). They
must hold the same columns with the same kind (``numerical`` or ``categorical``); a mismatch is an error
naming the differing columns. Columns that carry no information (all missing in both tables, or the same
single value in both) are dropped with a note instead of crashing a scaler or a one-hot encoder.

Encodings produced here:
- integer category codes that are consistent across several tables (missing values are their own level);
- a classifier matrix: numerics (missing imputed by the real median, plus a 0/1 missing indicator) followed by
  one-hot categoricals;
- range-scaled numerics (Gower's numeric part, scaled by the *reference* table's range).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.errors import DataError

KINDS = ("numerical", "categorical")


@dataclass(frozen=True)
class TableSchema:
    """Which columns a baseline uses, and how.

    Attributes:
        numerical: numeric columns, in table order.
        categorical: categorical columns, in table order.
        dropped: columns left out because they carry no information (see ``notes``).
        notes: one human-readable line per dropped column.
    """

    numerical: tuple[str, ...]
    categorical: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def columns(self) -> tuple[str, ...]:
        """Numerical then categorical column names (the order of every encoded matrix)."""
        return self.numerical + self.categorical


def infer_kinds(table: pd.DataFrame) -> dict[str, str]:
    """Map each column to ``"numerical"`` (numeric, non-boolean dtype) or ``"categorical"`` (anything else).
    """
    kinds = {}
    for name in table.columns:
        dtype = table[name].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        kinds[str(name)] = "numerical" if numeric else "categorical"
    return kinds


def check_compatible(
    real: pd.DataFrame, synthetic: pd.DataFrame, kinds: Mapping[str, str] | None = None,
    *, names: tuple[str, str] = ("real", "synthetic"),
) -> dict[str, str]:
    """Check that two tables hold the same columns of the same kinds and return the kind of each column.

    Args:
        real: the real table (its column order is kept).
        synthetic: the table compared with it (a synthetic release or a real holdout).
        kinds: declared kinds (``llmdisc.data.datasets.column_kinds``); None infers them from ``real``'s dtypes.
            A declared ``numerical`` column must be numeric in both tables.
        names: how the two tables are called in error messages.

    Returns:
        ``{column: "numerical" | "categorical"}`` in ``real``'s column order.

    Raises:
        DataError: columns differ (names both sets), or a column's kind differs between the tables.
    """
    a, b = names
    real_cols = [str(c) for c in real.columns]
    syn_cols = [str(c) for c in synthetic.columns]
    only_real = [c for c in real_cols if c not in set(syn_cols)]
    only_syn = [c for c in syn_cols if c not in set(real_cols)]
    if only_real or only_syn:
        raise DataError(
            f"{a} and {b} tables have different columns: only in {a}: {only_real}; only in {b}: {only_syn}; "
            f"fix: pass tables with the same columns (drop or rename the differing ones)")
    if kinds is None:
        kinds = infer_kinds(real)
    unknown = sorted(set(real_cols) - set(kinds))
    bad_kinds = sorted(c for c in real_cols if c in kinds and kinds[c] not in KINDS)
    if unknown or bad_kinds:
        raise DataError(f"column kinds missing for {unknown} or not in {KINDS} for {bad_kinds}; "
                        f"fix: give every column a kind 'numerical' or 'categorical'")
    inferred_real, inferred_syn = infer_kinds(real), infer_kinds(synthetic)
    differing = []
    for col in real_cols:
        if kinds[col] == "numerical":
            if inferred_real[col] != "numerical" or inferred_syn[col] != "numerical":
                differing.append(f"{col} ({a} {real[col].dtype}, {b} {synthetic[col].dtype})")
        elif inferred_real[col] != inferred_syn[col] and not _all_missing(real[col]) \
                and not _all_missing(synthetic[col]):
            differing.append(f"{col} ({a} {real[col].dtype}, {b} {synthetic[col].dtype})")
    if differing:
        raise DataError(
            f"{a} and {b} tables differ in column types: {', '.join(differing)}; "
            f"fix: cast these columns to the same type in both tables")
    return {c: kinds[c] for c in real_cols}


def _all_missing(values: pd.Series) -> bool:
    return bool(values.isna().all())


def resolve_schema(
    real: pd.DataFrame, synthetic: pd.DataFrame, kinds: Mapping[str, str] | None = None,
    *, names: tuple[str, str] = ("real", "synthetic"), others: Sequence[pd.DataFrame] = (),
) -> TableSchema:
    """Check two tables (:func:`check_compatible`) and drop the columns that carry no information.

    A column is dropped when it is missing in every row of every table, or holds one and the same value
    (no missing) in every table; a column constant in one table only is kept (that difference is a signal).

    Args:
        real: the real table.
        synthetic: the table compared with it.
        kinds: declared column kinds, or None to infer them from ``real``.
        names: names of the two tables in messages.
        others: further tables (e.g. a holdout) that must share the schema and count for degeneracy.

    Returns:
        The :class:`TableSchema` the baselines use.
    """
    resolved = check_compatible(real, synthetic, kinds, names=names)
    for i, other in enumerate(others):
        check_compatible(real, other, resolved, names=(names[0], f"extra table {i}"))
    tables = [real, synthetic, *others]
    dropped, notes = [], []
    for col in resolved:
        pooled = pd.concat([t[col] for t in tables], ignore_index=True)
        if pooled.isna().all():
            dropped.append(col)
            notes.append(f"column {col!r} dropped: missing in every row of every table")
        elif pooled.notna().all() and pooled.nunique() == 1:
            dropped.append(col)
            notes.append(f"column {col!r} dropped: the single value {pooled.iloc[0]!r} in every table")
    keep = [c for c in resolved if c not in dropped]
    if not keep:
        raise DataError("no informative column is left (every column is constant or all missing); "
                        "fix: pass tables with at least one varying column")
    return TableSchema(
        numerical=tuple(c for c in keep if resolved[c] == "numerical"),
        categorical=tuple(c for c in keep if resolved[c] == "categorical"),
        dropped=tuple(dropped), notes=tuple(notes))


def category_codes(
    tables: Sequence[pd.DataFrame], columns: Sequence[str],
) -> tuple[list[np.ndarray], list[int]]:
    """Integer codes of categorical columns, consistent across tables; a missing value is its own level.

    Args:
        tables: tables holding ``columns``.
        columns: categorical column names.

    Returns:
        (one int32 array of shape (rows, len(columns)) per table, number of levels per column).
    """
    sizes = [len(t) for t in tables]
    codes = [np.zeros((n, len(columns)), dtype=np.int32) for n in sizes]
    levels = []
    for j, col in enumerate(columns):
        pooled = pd.concat([_as_category_values(t[col]) for t in tables], ignore_index=True)
        col_codes, uniques = pd.factorize(pooled, use_na_sentinel=True)
        col_codes = np.where(col_codes < 0, len(uniques), col_codes)  # missing -> its own level
        levels.append(len(uniques) + 1)
        start = 0
        for out, n in zip(codes, sizes):
            out[:, j] = col_codes[start:start + n]
            start += n
    return codes, levels


def _as_category_values(values: pd.Series) -> pd.Series:
    # Integer codes in one table and floats in the other (SDV output) must meet as the same level.
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.astype("float64")
    return values.astype("object")


def one_hot(codes: np.ndarray, levels: Sequence[int], dtype: type = np.float32) -> np.ndarray:
    """One-hot matrix (rows × sum(levels)) of integer codes (rows × columns), one block per column."""
    offsets = np.concatenate([[0], np.cumsum(levels)[:-1]]).astype(np.int64)
    out = np.zeros((codes.shape[0], int(np.sum(levels))), dtype=dtype)
    rows = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
    out[rows, (codes + offsets[None, :]).ravel()] = 1
    return out


def numeric_matrix(table: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Numeric columns as a float64 array (rows × columns) with NaN for missing values."""
    if not columns:
        return np.zeros((len(table), 0))
    # astype first: nullable Int64/Float64 columns turn pd.NA into NaN there (to_numpy would raise)
    return table[list(columns)].apply(pd.to_numeric, errors="coerce").astype("float64").to_numpy()


def classifier_matrices(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: TableSchema,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode two tables for a classifier: numerics first (imputed), then one-hot categoricals.

    Missing numerics are imputed by the real table's median (0 when the real column is all missing) and a
    0/1 missing-indicator column is appended for every numeric column with any missing value; categorical
    levels are the union of both tables' values (a level only the synthetic table has stays visible).

    Returns:
        (X_real, X_synthetic, n_scaled): float64 matrices with the same columns; the first ``n_scaled``
        columns are the numerics a scaler should standardise.
    """
    num_real, num_syn = numeric_matrix(real, schema.numerical), numeric_matrix(synthetic, schema.numerical)
    blocks_real, blocks_syn, indicators_real, indicators_syn = [num_real], [num_syn], [], []
    for j in range(num_real.shape[1]):
        col_real, col_syn = num_real[:, j], num_syn[:, j]
        miss_real, miss_syn = np.isnan(col_real), np.isnan(col_syn)
        if miss_real.any() or miss_syn.any():
            fill = float(np.nanmedian(col_real)) if not miss_real.all() else 0.0
            col_real[miss_real], col_syn[miss_syn] = fill, fill
            indicators_real.append(miss_real.astype(np.float64))
            indicators_syn.append(miss_syn.astype(np.float64))
    n_scaled = num_real.shape[1]
    if indicators_real:
        blocks_real.append(np.column_stack(indicators_real))
        blocks_syn.append(np.column_stack(indicators_syn))
    if schema.categorical:
        (codes_real, codes_syn), levels = category_codes([real, synthetic], schema.categorical)
        blocks_real.append(one_hot(codes_real, levels, np.float64))
        blocks_syn.append(one_hot(codes_syn, levels, np.float64))
    return np.hstack(blocks_real), np.hstack(blocks_syn), n_scaled


def seeded_rows(table: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows of ``table`` drawn without replacement by ``rng`` (all rows, shuffled, when n >= len)."""
    take = rng.permutation(len(table))[: min(n, len(table))]
    return table.iloc[np.sort(take)].reset_index(drop=True)


def cap_levels(tables: dict[str, pd.DataFrame], kinds: Mapping[str, str], reference: pd.DataFrame,
               max_levels: int = 50, *, unseen: bool = False) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Keep the ``max_levels`` most frequent levels (in ``reference``) of each categorical column.

    Gradient-boosted trees split at most 254 levels natively; Census occupation (524 codes) and place of birth
    (208) exceed it.

    Args:
        tables: name → table; every table's capped columns are rewritten the same way.
        kinds: column kinds; only ``categorical`` columns are capped.
        reference: the table whose level frequencies decide what is kept (the real train split).
        max_levels: levels kept per column.
        unseen: also count the levels ``reference`` never has as ``(other)``, in every column (a release that
            invents codes, such as the paper's Census releases, would otherwise pass the native limit).

    Returns:
        ``(tables, notes)``: copies with the other levels replaced by ``(other)``; one note per capped column.
    """
    out = {name: table.copy() for name, table in tables.items()}
    notes = []
    for column, kind in kinds.items():
        if kind != "categorical":
            continue
        counts = reference[column].astype("object").value_counts()
        keep = set(counts.index[:max_levels])
        invented = {name: int((~table[column].astype("object").isin(set(counts.index))
                               & table[column].notna()).sum()) for name, table in out.items()} if unseen else {}
        if len(counts) <= max_levels and not any(invented.values()):
            continue
        for table in out.values():
            values = table[column].astype("object")
            table[column] = values.where(values.isin(keep) | values.isna(), "(other)")
        if len(counts) > max_levels:
            notes.append(f"C2ST: column {column!r} has {len(counts)} levels; its {max_levels} most frequent are "
                         "kept, the rest count as one level")
        for name, n in invented.items():
            if n:
                notes.append(f"C2ST: {n} values of {column!r} in {name} never occur in the real table; they count "
                             "as the level (other)")
    return out, notes
