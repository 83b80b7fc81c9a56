"""Shared handling of mixed-type tables for the baselines: the column-kind rule, schema checks, encodings.

:func:`infer_kinds` is the project's one column-kind rule for a table whose kinds are not given (the baselines
and ``llmdisc audit`` use it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from llmdisc.errors import DataError

KINDS = ("numerical", "categorical")
MAX_CODE_LEVELS = 20
"""An integer column with at most this many distinct values (and few relative to rows) is a categorical
code."""
MAX_CODE_SHARE = 0.05
"""... and with at most this share of its non-missing rows as distinct values."""
FOLD_MAX_LEVELS = 255
"""Levels each categorical column keeps inside a C2ST fold, the one for the rarer and unseen levels included:
the most categories a ``HistGradientBoostingClassifier`` splits natively (missing values get another bin)."""


@dataclass(frozen=True)
class TableSchema:
    """Which columns a baseline uses, and how; ``dropped`` columns carry no information (one note each)."""

    numerical: tuple[str, ...]
    categorical: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def columns(self) -> tuple[str, ...]:
        """Numerical then categorical column names (the order of every encoded matrix)."""
        return self.numerical + self.categorical


def is_number(values: pd.Series) -> bool:
    """Whether a column's dtype is numeric and not boolean (a type check, not a kind decision)."""
    return pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)


def is_integral(values: pd.Series) -> bool:
    present = values.dropna().to_numpy(dtype=float)
    return bool(np.all(np.isfinite(present)) and np.all(present == np.round(present)))


def infer_kind(values: pd.Series) -> str:
    """Kind of one column by rules 2-3 of :func:`infer_kinds`: ``"numerical"`` or ``"categorical"``."""
    if not is_number(values):
        return "categorical"
    present = values.dropna()
    if present.empty:
        return "categorical"
    if is_integral(present):
        levels = present.nunique()
        if levels <= MAX_CODE_LEVELS and levels <= max(2.0, MAX_CODE_SHARE * len(present)):
            return "categorical"
    return "numerical"


def declared_kinds(table: pd.DataFrame) -> dict[str, str] | None:
    """The kinds :func:`llmdisc.data.datasets.column_kinds` declares when ``table``'s column set is a dataset
    the compendium knows (UCI Adult, ACS Census), else None."""
    from llmdisc.data.datasets import ADULT_COLUMNS, CENSUS_COLUMNS, column_kinds

    columns = frozenset(str(c) for c in table.columns)
    if columns in (frozenset(ADULT_COLUMNS), frozenset(CENSUS_COLUMNS)):
        return column_kinds(table)
    return None


def infer_kinds(table: pd.DataFrame) -> dict[str, str]:
    """The project's column-kind rule: each column of ``table`` -> ``"numerical"`` or ``"categorical"``.

    1. a table whose column set is a dataset the compendium knows gets its declared kinds;
    2. otherwise a column is **numerical** when its dtype is numeric and not boolean, except an integer-valued
       column with at most :data:`MAX_CODE_LEVELS` (20) and at most ``max(2, MAX_CODE_SHARE × rows)`` distinct
       values, which is a code and so **categorical** (0/1 flags, 1–5 ratings, occupation codes);
    3. everything else (text, booleans, all-missing columns, mixed values) is **categorical**.

    """
    declared = declared_kinds(table)
    if declared is not None:
        return {str(c): declared[str(c)] for c in table.columns}
    return {str(c): infer_kind(table[c]) for c in table.columns}


def check_compatible(
    real: pd.DataFrame, synthetic: pd.DataFrame, kinds: Mapping[str, str] | None = None,
    *, names: tuple[str, str] = ("real", "synthetic"),
) -> dict[str, str]:
    """Check that two tables hold the same columns of the same kinds; return ``{column: kind}``.

    ``kinds``: declared kinds; None applies :func:`infer_kinds` to ``real``. A ``numerical`` column must be
    numeric in both tables; a ``categorical`` one numeric in both or in neither (unless all missing in one).
    ``names``: how the two tables are called in error messages. Raises DataError when the columns differ
    (names both sets) or a column's kind differs between the tables.
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
    differing = []
    for col in real_cols:
        number_real, number_syn = is_number(real[col]), is_number(synthetic[col])
        if kinds[col] == "numerical":
            if not (number_real and number_syn):
                differing.append(f"{col} ({a} {real[col].dtype}, {b} {synthetic[col].dtype})")
        elif number_real != number_syn and not real[col].isna().all() and not synthetic[col].isna().all():
            differing.append(f"{col} ({a} {real[col].dtype}, {b} {synthetic[col].dtype})")
    if differing:
        raise DataError(
            f"{a} and {b} tables differ in column types: {', '.join(differing)}; "
            f"fix: cast these columns to the same type in both tables")
    return {c: kinds[c] for c in real_cols}


def resolve_schema(
    real: pd.DataFrame, synthetic: pd.DataFrame, kinds: Mapping[str, str] | None = None,
    *, names: tuple[str, str] = ("real", "synthetic"), others: Sequence[pd.DataFrame] = (),
) -> TableSchema:
    """Check two tables (:func:`check_compatible`) and drop the columns that carry no information.

    A column is dropped when it is missing in every row of every table, or holds one and the same value
    (no missing) in every table; a column constant in one table only is kept (that difference is a signal).
    ``others``: further tables (e.g. a holdout) that must share the schema and count for degeneracy.

    Raises:
        DataError: as :func:`check_compatible`, or no informative column is left.
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
    """Integer codes of categorical columns, consistent across tables, missing as a level of its own: one
    int32 array (rows × columns) per table, and the number of levels per column."""
    sizes = [len(t) for t in tables]
    codes = [np.zeros((n, len(columns)), dtype=np.int32) for n in sizes]
    levels = []
    for j, col in enumerate(columns):
        pooled = pd.concat([_as_category_values(t[col]) for t in tables], ignore_index=True)
        col_codes, uniques = pd.factorize(pooled, use_na_sentinel=True)
        col_codes = np.where(col_codes < 0, len(uniques), col_codes)  # missing -> its own level
        levels.append(len(uniques) + 1)
        for out, part in zip(codes, np.split(col_codes, np.cumsum(sizes)[:-1])):
            out[:, j] = part
    return codes, levels


def _as_category_values(values: pd.Series) -> pd.Series:
    # Integer codes in one table and floats in the other (SDV output) must meet as the same level.
    if is_number(values):
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
    # astype first: nullable Int64/Float64 columns turn pd.NA into NaN (to_numpy would raise)
    return table[list(columns)].apply(pd.to_numeric, errors="coerce").astype("float64").to_numpy()


def category_text(values: pd.Series) -> pd.Series:
    """A categorical column as text, value by value (no statistic of the column is used): missing stays NaN,
    integral numbers are written without ``.0`` (a code ``3`` in one table and ``3.0`` in another, as SDV
    writes it, is one level ``"3"``), other values as ``str``."""
    if is_number(values):
        numbers = values.astype("float64")
        return pd.Series([np.nan if np.isnan(v) else str(int(v)) if v.is_integer() else str(v) for v in numbers],
                         index=values.index, dtype=object)
    return pd.Series([_one_text(v) for v in values.astype("object")], index=values.index, dtype=object)


def _one_text(value: object) -> object:
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and np.isnan(value)):
        return np.nan
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def classifier_frame(tables: Sequence[pd.DataFrame], schema: TableSchema) -> pd.DataFrame:
    """Stack tables for a C2ST: numerics as float64, then categoricals as text (NaN for missing), rows in
    order. Only casts, cell by cell, so stacking before the cross-validation leaks nothing."""
    parts = []
    for table in tables:
        part = pd.DataFrame(numeric_matrix(table, schema.numerical), columns=list(schema.numerical))
        for column in schema.categorical:
            part[column] = category_text(table[column]).to_numpy()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[list(schema.columns)]


def c2st_encoder(
    schema: TableSchema, *, scale: bool = False, native_categorical: bool = False,
) -> ColumnTransformer:
    """The C2ST's unfitted encoder of a :func:`classifier_frame` (dense output, numerics first).

    Numerics: median-imputed with a 0/1 missing indicator, then (``scale``) the values standard-scaled.
    Categoricals: one-hot over at most :data:`FOLD_MAX_LEVELS` training-fold levels (rarer and unseen levels
    one column; missing a level of its own). With ``native_categorical`` (for
    ``HistGradientBoostingClassifier``'s ``categorical_features``): numerics as they are, categoricals as
    ordinal codes, missing or unseen NaN.
    """
    steps: list[tuple[str, object, list[str]]] = []
    numerical, categorical = list(schema.numerical), list(schema.categorical)
    if native_categorical:
        if numerical:
            steps.append(("numerical", "passthrough", numerical))
        if categorical:
            steps.append(("categorical", OrdinalEncoder(
                handle_unknown="use_encoded_value", unknown_value=np.nan, encoded_missing_value=np.nan,
                max_categories=FOLD_MAX_LEVELS), categorical))
        return ColumnTransformer(steps, sparse_threshold=0.0)
    if numerical:
        impute = SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True)
        if scale:  # the imputer's first len(numerical) outputs are the values, the indicators follow
            values = ColumnTransformer([("values", StandardScaler(), slice(0, len(numerical)))],
                                       remainder="passthrough", sparse_threshold=0.0)
            steps.append(("numerical", Pipeline([("impute", impute), ("scale", values)]), numerical))
        else:
            steps.append(("numerical", impute, numerical))
    if categorical:
        steps.append(("categorical", OneHotEncoder(handle_unknown="infrequent_if_exist",
                                                   max_categories=FOLD_MAX_LEVELS, sparse_output=False),
                      categorical))
    return ColumnTransformer(steps, sparse_threshold=0.0)


def seeded_rows(table: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows of ``table`` drawn without replacement by ``rng`` (all rows, shuffled, when n >= len)."""
    take = rng.permutation(len(table))[: min(n, len(table))]
    return table.iloc[np.sort(take)].reset_index(drop=True)


def cap_levels(tables: dict[str, pd.DataFrame], kinds: Mapping[str, str], reference: pd.DataFrame,
               max_levels: int = 50, *, unseen: bool = False) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """Keep the ``max_levels`` most frequent levels (in ``reference``) of each categorical column.

    Gradient-boosted trees split at most 255 levels natively; Census occupation (524 codes) exceeds it. No
    leak of the C2ST's test folds: what is kept is read from ``reference`` alone (fixed before the C2ST draws
    rows and folds), each value rewritten by itself.

    Args:
        tables: name → table; every table's capped columns are rewritten the same way.
        reference: the table whose level frequencies decide what is kept (the real train split).
        unseen: also count the levels ``reference`` never has as ``(other)``, in every column (a release that
            invents codes, such as the paper's Census releases, would otherwise pass the native limit).

    Returns:
        ``(tables, notes)``: copies with the other levels replaced by ``(other)``; notes on what was capped.
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
