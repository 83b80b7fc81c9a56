"""Which columns are categorical and which numerical, and the checks that real and synthetic tables agree.

The rule (applied to the rows read from the *real* table, then overridden by ``--categorical`` /
``--numerical``):

1. a table whose column set is a dataset the compendium knows (UCI Adult, the ACS Census extract) gets the
   kinds declared in :func:`llmdisc.data.datasets.column_kinds`;
2. otherwise a column is **numerical** when every non-missing value is a number (not a boolean), except an
   integer-valued column with few distinct values — at most :data:`MAX_CATEGORICAL_LEVELS` (20) and at most
   ``max(2, MAX_LEVEL_SHARE × rows)`` (5 % of the non-missing rows) — which is a code and so **categorical**
   (e.g. 0/1 flags, 1–5 ratings, occupation codes in a large table);
3. everything else (text, booleans, dates, mixed values) is **categorical**.

:func:`harmonise` then gives both tables the same representation: numerical columns as ``int64`` (when
integral and complete) or ``float64``; categorical columns as text, integral numbers written without ``.0``
so that a code reads the same in both tables. A numerical column holding text is an error naming the column.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.audit.errors import ColumnMismatchError
from llmdisc.errors import ConfigError

MAX_CATEGORICAL_LEVELS = 20
"""An integer column with at most this many distinct values (and few relative to rows) is categorical."""
MAX_LEVEL_SHARE = 0.05
"""... and with at most this share of its non-missing rows as distinct values."""


def _is_number_column(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype)


def _integral(values: pd.Series) -> bool:
    present = values.dropna().to_numpy(dtype=float)
    return bool(np.all(np.isfinite(present)) and np.all(present == np.round(present)))


def infer_kind(values: pd.Series) -> str:
    """Kind of one column by rule 2-3 of the module docstring: ``"numerical"`` or ``"categorical"``."""
    if not _is_number_column(values):
        return "categorical"
    present = values.dropna()
    if present.empty:
        return "categorical"
    if _integral(present):
        levels = present.nunique()
        if levels <= MAX_CATEGORICAL_LEVELS and levels <= max(2.0, MAX_LEVEL_SHARE * len(present)):
            return "categorical"
    return "numerical"


def infer_column_kinds(
    table: pd.DataFrame, *, categorical: Sequence[str] = (), numerical: Sequence[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """Kinds of every column of ``table`` (the real rows read), with the user's overrides.

    Args:
        table: rows of the real table.
        categorical: columns forced categorical (``--categorical``).
        numerical: columns forced numerical (``--numerical``).

    Returns:
        ``(kinds, how)``: column -> ``categorical``/``numerical``, and column -> why (``declared for a known
        dataset``, ``inferred``, ``--categorical``, ``--numerical``).

    Raises:
        ConfigError: an override names an unknown column, or a column is given both kinds.
    """
    from llmdisc.data.datasets import ADULT_COLUMNS, CENSUS_COLUMNS, column_kinds

    columns = [str(c) for c in table.columns]
    for flag, names in (("--categorical", categorical), ("--numerical", numerical)):
        unknown = [n for n in names if n not in columns]
        if unknown:
            raise ConfigError(
                f"{flag} names column(s) {unknown} that the real table lacks; fix: use names from "
                f"its header: {columns}"
            )
    both = sorted(set(categorical) & set(numerical))
    if both:
        raise ConfigError(
            f"column(s) {both} are given to both --categorical and --numerical; fix: name each once"
        )
    known = frozenset(columns) in (frozenset(ADULT_COLUMNS), frozenset(CENSUS_COLUMNS))
    if known:
        kinds, how = column_kinds(table), {c: "declared for a known dataset" for c in columns}
    else:
        kinds = {c: infer_kind(table[c]) for c in columns}
        how = {c: "inferred" for c in columns}
    for name in categorical:
        kinds[name], how[name] = "categorical", "--categorical"
    for name in numerical:
        kinds[name], how[name] = "numerical", "--numerical"
    return kinds, how


def check_same_columns(
    real_columns: Sequence[str], other_columns: Sequence[str], *, other: str, real_name: str, other_name: str
) -> None:
    """Raise :class:`ColumnMismatchError` when the two tables do not have the same set of columns.

    Args:
        real_columns: columns of the real table.
        other_columns: columns of the synthetic (or holdout) table.
        other: its role, ``synthetic`` or ``holdout``.
        real_name: file name of the real table (for the message).
        other_name: file name of the other table.
    """
    missing = [c for c in real_columns if c not in other_columns]
    extra = [c for c in other_columns if c not in real_columns]
    if missing or extra:
        raise ColumnMismatchError(
            f"the columns of the {other} table {other_name} differ from the real table {real_name}: missing "
            f"{missing}, extra {extra}; fix: give both tables the same columns (same names; order may differ)"
        )


def _numeric(values: pd.Series, column: str, role: str) -> pd.Series:
    converted = pd.to_numeric(values, errors="coerce") if not _is_number_column(values) else values
    if pd.api.types.is_bool_dtype(converted.dtype):
        converted = converted.astype("int64")
    bad = converted.isna() & values.notna()
    if bad.any():
        example = values[bad].iloc[0]
        raise ColumnMismatchError(
            f"column {column!r} is numerical but the {role} table holds non-numbers such as "
            f"{str(example)[:40]!r}; "
            f"fix: clean that column, or declare it categorical with --categorical {column}"
        )
    return converted.astype("float64")


def _as_text(value: object) -> object:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return np.nan
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (np.integer, np.bool_)):
        return str(value.item())
    return str(value)


def harmonise(tables: Mapping[str, pd.DataFrame], kinds: Mapping[str, str]) -> dict[str, pd.DataFrame]:
    """Give every table the real table's column order and one representation per column kind.

    Args:
        tables: role (``real``, ``synthetic``, ``holdout``) -> rows read; all with the same column set.
        kinds: column -> ``categorical``/``numerical`` (from :func:`infer_column_kinds`).

    Returns:
        role -> converted copy (numerical: ``int64`` when every value in every table is integral and present,
        else ``float64``; categorical: text, missing kept as NaN).

    Raises:
        ColumnMismatchError: a numerical column holds text in some table (names the column and a value).
    """
    order = list(kinds)
    converted = {role: table.loc[:, order].copy() for role, table in tables.items()}
    for column, kind in kinds.items():
        if kind == "numerical":
            for role, table in converted.items():
                table[column] = _numeric(table[column], column, role)
            whole = all(t[column].notna().all() and _integral(t[column]) for t in converted.values())
            if whole:
                for table in converted.values():
                    table[column] = table[column].astype("int64")
        else:
            for table in converted.values():
                table[column] = table[column].map(_as_text).astype(object)
    return converted
