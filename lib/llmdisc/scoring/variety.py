"""A sample's variety, and the joint-structure contrast with the variety taken out.

A column whose 20 values are all alike recombines into itself and adds nothing to the joint contrast C, so a
release whose modes collapsed reads "less structured" without having lost a dependence (and a more varied one
"more structured"). Reading C therefore needs each group's variety beside it: :func:`sample_variety`,
:func:`with_variety` (per joint record) and :func:`variety_adjusted` (C minus what a line of C on variety, fitted
on each cell's real reference samples, predicts; read with ``joint_table(score="contrast_adjusted")``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats

from llmdisc.errors import DataError

ADJUSTED_SCORE = "contrast_adjusted"
"""The variety-adjusted contrast's column in the joint records (nats)."""

SLOPE_COLUMNS = ("variety_slope", "variety_slope_low", "variety_slope_high", "variety_r")
"""The fit of C on variety that :func:`variety_adjusted` adds to each record of a cell (and ``joint_table`` keeps)."""


def sample_variety(sample: pd.DataFrame) -> float:
    """Mean over columns of (distinct values − 1) / (rows − 1), missing values one value: 0 = every column
    constant, 1 = no value repeated within any column. DataError for fewer than 2 rows or no column."""
    if len(sample) < 2 or sample.shape[1] == 0:
        raise DataError(f"a sample of {len(sample)} rows × {sample.shape[1]} columns has no variety to measure; "
                        "fix: pass a sample of at least 2 rows and 1 column")
    distinct = sample.nunique(dropna=False).to_numpy(float)
    return float(np.mean((distinct - 1) / (len(sample) - 1)))


def with_variety(records: pd.DataFrame, load_tables: Callable[[str, list[str]], dict[str, pd.DataFrame]]
                 ) -> pd.DataFrame:
    """``records`` with a ``variety`` column (:func:`sample_variety` of each record's rows).

    ``load_tables(dataset_key, sources)`` → ``{source: table}`` gives the tables the run drew from
    (:func:`llmdisc.discrimination.likelihood.runs.load_likelihood_tables` with the run's seed); ``row_ids``
    are positions in them. DataError when a source table is missing or a row id lies outside it.
    """
    values = pd.Series(np.nan, index=records.index, dtype=float)
    for key, frame in records.groupby("dataset_key", sort=True):
        tables = load_tables(str(key), sorted(set(frame["source"]) - {"holdout"}))
        for index, source, row_ids in zip(frame.index, frame["source"], frame["row_ids"]):
            table = tables.get(source)
            if table is None:
                raise DataError(f"no {source!r} table of {key} to rebuild its joint samples from; fix: run notebooks "
                                "01 and 02 for the configuration that wrote these records")
            if max(row_ids) >= len(table):
                raise DataError(f"a {source!r} sample of {key} names row {max(row_ids)} of a {len(table)}-row table: "
                                "the records were scored on other data; fix: re-run notebook 09 on this data")
            values[index] = sample_variety(table.iloc[list(row_ids)])
    return records.assign(variety=values)


def variety_adjusted(records: pd.DataFrame, cell_columns: list[str], *, score: str = "contrast",
                     level: float = 0.95) -> pd.DataFrame:
    """``records`` with :data:`ADJUSTED_SCORE` = ``score`` − (a + b · variety), a and b fitted per cell on its real
    holdout reference samples (``source == "holdout"``, ``role == "reference"``), and the fit: ``variety_slope``
    (b, nats per unit of variety) with its ``level`` interval ``variety_slope_low`` / ``variety_slope_high``
    (Student t, n − 2 degrees of freedom) and ``variety_r`` (Pearson r of C and variety over the reference samples).

    Fitted on the reference samples only (the group no comparison reads), so the adjusted score stays label-free
    and the real test samples stay out of the fit. Only a cell whose slope interval excludes 0 is adjusted: where
    C does not detectably follow variety, subtracting the line would move every reading by the fit's noise. A cell
    with fewer than 3 reference samples or all of one variety keeps a NaN adjusted score too (:func:`adjusted_records`
    leaves it out); the fit's columns are filled wherever a line could be fitted. DataError without a
    ``variety`` column (:func:`with_variety` first).
    """
    if "variety" not in records:
        raise DataError("the joint records carry no variety; fix: add it with llmdisc.scoring.variety.with_variety")
    out = records.assign(**dict.fromkeys((ADJUSTED_SCORE, *SLOPE_COLUMNS), np.nan))
    for cell, frame in records.groupby(cell_columns, sort=True, dropna=False):
        reference = frame[(frame["source"] == "holdout") & (frame["role"] == "reference")]
        x, y = reference["variety"].to_numpy(float), reference[score].to_numpy(float)
        if len(x) < 3 or np.ptp(x) == 0:
            continue
        fit = stats.linregress(x, y)
        half = float(stats.t.ppf(0.5 + level / 2, len(x) - 2) * fit.stderr)
        low, high = fit.slope - half, fit.slope + half
        out.loc[frame.index, list(SLOPE_COLUMNS)] = [float(fit.slope), low, high, float(fit.rvalue)]
        if low > 0 or high < 0:
            out.loc[frame.index, ADJUSTED_SCORE] = frame[score].to_numpy(float) - (
                fit.intercept + fit.slope * frame["variety"].to_numpy(float))
    return out


def adjusted_records(records: pd.DataFrame) -> pd.DataFrame:
    """The records of the cells :func:`variety_adjusted` adjusted (a finite :data:`ADJUSTED_SCORE`)."""
    if ADJUSTED_SCORE not in records:
        return records.iloc[0:0]
    return records[np.isfinite(records[ADJUSTED_SCORE].to_numpy(float))]
