"""The C2 metadata block: distributional statistics of a table as deterministic text (docs/protocol.md §4).

Reproduces the paper's ``metadata.py`` (``extract_metadata`` + ``metadata_to_text``) line for line
(:func:`metadata_block`). Where the paper's code had no defined behaviour we choose, and say so in the text:
Shapiro–Wilk on a constant column reads ``p=n/a (...)``; an all-missing categorical column has no top values and
no entropy; undefined correlations are left out; tied categories keep their order of first appearance, and the
entropy is exact (the paper added 1e-9 to each count: a change below 1e-8).
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

METADATA_SOURCES = ("source", "real", "sample")
"""``source``: the whole table the sample came from (the paper's; label-revealing); ``real``: the whole
real table, shown with every sample (published official statistics); ``sample``: the shown rows only."""

SHAPIRO_MIN_VALUES = 9
"""Shapiro–Wilk is computed only on more than 8 non-missing values (the paper's rule; SciPy needs 3)."""
TOP_VALUES_SHOWN = 5
TOP_CORRELATIONS_SHOWN = 15


def _shapiro(values: pd.Series, seed: int, max_rows: int) -> tuple[float | None, str | None]:
    """Return (p, None) or (None, why not computed)."""
    clean = values.dropna()
    if len(clean) < SHAPIRO_MIN_VALUES:
        return None, f"fewer than {SHAPIRO_MIN_VALUES} values"
    if clean.nunique() < 2:
        return None, "constant column"
    subsample = clean.sample(min(max_rows, len(clean)), random_state=seed)
    with warnings.catch_warnings():
        # SciPy warns for n > 5000 and for near-constant data; the subsample and the check above cover both.
        warnings.simplefilter("ignore", UserWarning)
        return float(stats.shapiro(subsample.astype(float)).pvalue), None


def _value_shares(values: pd.Series) -> list[tuple[str, float]]:
    """Shares of each non-missing value, most frequent first, ties in order of first appearance."""
    counts = values.value_counts(sort=False, dropna=True)
    shares = counts.iloc[np.argsort(-counts.to_numpy(), kind="stable")] / counts.sum()
    return [(str(k), float(v)) for k, v in shares.items()]


def metadata_statistics(table: pd.DataFrame, *, shapiro_seed: int = 42,
                        shapiro_rows: int = 500) -> dict[str, Any]:
    """The numbers behind :func:`metadata_block` (unrounded); arguments as there.

    Returns:
        A JSON-serialisable dict: ``shape`` {rows, columns}; ``missing`` {column: % missing} for columns
        with any; ``columns`` {column: {dtype, kind ("numeric" | "categorical" | "other"), n_unique,
        missing_pct (0–100), and for numeric: mean, std (ddof 1), min, p25, median, p75, max, skewness,
        kurtosis (excess), shapiro_p (or None) and shapiro_skipped (reason or None); for categorical:
        top_values [[value, share 0–1], ...] (all values, most frequent first) and entropy (nats, None
        when all missing)}}; ``correlations`` [[col_a, col_b, r], ...] over numeric pairs (upper
        triangle, table order), sorted by |r| rounded to 4 dp descending, undefined r left out.
        NaN stands for an undefined statistic (e.g. the mean of an all-missing column).
    """
    numeric = table.select_dtypes(include=[np.number]).columns.tolist()
    categorical = table.select_dtypes(include=["object", "category", "bool", "string"]).columns.tolist()
    columns: dict[str, Any] = {}
    for col in table.columns:
        series = table[col]
        info: dict[str, Any] = {
            "dtype": str(series.dtype),
            "kind": "numeric" if col in numeric else "categorical" if col in categorical else "other",
            "n_unique": int(series.nunique()),
            "missing_pct": float(series.isna().mean() * 100) if len(series) else 0.0}
        if col in numeric:
            values = series.astype(float)
            with warnings.catch_warnings():
                # An all-missing column has undefined statistics (NaN, printed "nan"): expected, not alarming.
                warnings.simplefilter("ignore", RuntimeWarning)
                info.update(mean=float(values.mean()), std=float(values.std()), min=float(values.min()),
                            p25=float(values.quantile(0.25)), median=float(values.median()),
                            p75=float(values.quantile(0.75)), max=float(values.max()),
                            skewness=float(values.skew()), kurtosis=float(values.kurt()))
            info["shapiro_p"], info["shapiro_skipped"] = _shapiro(values, shapiro_seed, shapiro_rows)
        elif col in categorical:
            shares = _value_shares(series)
            info["top_values"] = [[value, share] for value, share in shares]
            info["entropy"] = float(stats.entropy([s for _, s in shares])) if shares else None
        columns[str(col)] = info
    correlations: list[list[Any]] = []
    if len(numeric) >= 2:
        matrix = table[numeric].astype(float).corr()
        pairs = [[str(a), str(b), float(matrix.loc[a, b])] for a, b in itertools.combinations(numeric, 2)]
        correlations = [pair for pair in pairs if not math.isnan(pair[2])]
        # Stable sort on the 4-dp magnitude, as the paper's sorted() over its rounded matrix.
        correlations.sort(key=lambda pair: abs(round(pair[2], 4)), reverse=True)
    missing = {name: info["missing_pct"] for name, info in columns.items() if info["missing_pct"] > 0}
    return {"shape": {"rows": int(table.shape[0]), "columns": int(table.shape[1])}, "missing": missing,
            "columns": columns, "correlations": correlations}


def _num(value: float) -> str:
    """The paper's number format: Python's ``str`` of the value rounded to 4 dp (``17.0``, ``38.4379``)."""
    return str(round(value, 4))


def render_metadata(statistics: dict[str, Any], *, include_row_count: bool = True) -> str:
    """Render :func:`metadata_statistics` output as the paper's text block (no trailing newline);
    ``include_row_count`` as :func:`metadata_block`."""
    shape = statistics["shape"]
    lines = ["=== DATASET METADATA ===", f"Shape: {shape['rows']} rows × {shape['columns']} columns"
             if include_row_count else f"Shape: {shape['columns']} columns"]
    if statistics["missing"]:
        lines.append("\n--- Missing Values ---")
        lines.extend(f"  {col}: {round(pct, 2)}% missing" for col, pct in statistics["missing"].items())
    else:
        lines.append("\nNo missing values detected.")
    lines.append("\n--- Column Profiles ---")
    for col, info in statistics["columns"].items():
        lines.append(f"\n[{col}]  dtype={info['dtype']}  unique={info['n_unique']}  "
                     f"missing={round(info['missing_pct'], 2)}%")
        if info["kind"] == "numeric":
            lines.append(f"  mean={_num(info['mean'])}  std={_num(info['std'])}  min={_num(info['min'])}  "
                         f"p25={_num(info['p25'])}  median={_num(info['median'])}  p75={_num(info['p75'])}  "
                         f"max={_num(info['max'])}")
            lines.append(f"  skewness={_num(info['skewness'])}  kurtosis={_num(info['kurtosis'])}")
            p = info["shapiro_p"]
            if p is not None:
                p4 = round(p, 4)
                lines.append(f"  Shapiro-Wilk p={p4} ({'normal' if p4 > 0.05 else 'non-normal'})")
            else:
                lines.append(f"  Shapiro-Wilk p=n/a ({info['shapiro_skipped']})")
        elif info["kind"] == "categorical":
            top = info["top_values"][:TOP_VALUES_SHOWN]
            if not top:
                lines.append("  top values: none (all values missing)")
                continue
            # The paper rounded shares to 4 dp and then printed them with one decimal of percent.
            shares = "  ".join(f"{value}={round(share, 4):.1%}" for value, share in top)
            lines.append(f"  top values: {shares}")
            lines.append(f"  entropy={_num(info['entropy'])}")
    if statistics["correlations"]:
        lines.append("\n--- Numeric Correlations (Pearson r) ---")
        lines.extend(f"  {a} × {b}: r={round(r, 4):.4f}"
                     for a, b, r in statistics["correlations"][:TOP_CORRELATIONS_SHOWN])
    return "\n".join(lines)


def metadata_block(table: pd.DataFrame, *, shapiro_seed: int = 42, shapiro_rows: int = 500,
                   include_row_count: bool = True) -> str:
    """The metadata block of ``table`` (see ``METADATA_SOURCES`` for which one) as shown in C2 prompts:
    deterministic text starting ``=== DATASET METADATA ===``, no trailing newline.

    ``shapiro_seed`` is the ``random_state`` of the Shapiro–Wilk subsample, ``shapiro_rows`` its size cap
    (paper: 42, 500); ``include_row_count`` False drops the row count from the shape line (``neutral``
    prompts).
    """
    return render_metadata(metadata_statistics(table, shapiro_seed=shapiro_seed, shapiro_rows=shapiro_rows),
                           include_row_count=include_row_count)
