"""Results tables: one function per table, each a tidy DataFrame; :func:`write_table` saves CSV + LaTeX.

Our own tables (:func:`cell_scores_table`, :func:`effective_n_table`, …) are per cell and never pool across
providers or models. The ``paper_*`` tables reproduce the paper's tables *with the paper's definitions*: its
"all trials per model" row pools every cell of one model (one DRS over all its trials), in percent. Every
table carries the number of excluded (invalid/error) records beside the valid ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from llmdisc.discrimination.records import CELL_KEY, cell_columns
from llmdisc.errors import ConfigError
from llmdisc.paths import results_dir
from llmdisc.scoring.analyses import (MATCHED_SEED, PERMUTATION_N, PERMUTATION_SEED, STABILITY_SEEDS,
                                      matched_n_sample, permutation_tests, seed_stability)
from llmdisc.scoring.metrics import CELL_COLUMNS, score_cells

PAPER_COLUMNS = {"n_valid": "N", "n_valid_real": "N_real", "n_valid_syn": "N_syn", "accuracy": "Accuracy",
                 "drs": "DRS", "real_prediction_rate": "Pred_REAL_rate", "mean_confidence": "Avg_conf"}
_PERCENT = ("accuracy", "drs", "real_prediction_rate", "p_real", "p_syn")


def cell_table(trials: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """First per-cell look at a run: counts, p_REAL, p_SYN and DRS = min(p_REAL, p_SYN) per cell (``seed``:
    the base seed of the DRS bootstrap, :func:`llmdisc.scoring.metrics.score_cells`).

    Returns one row per cell (:data:`CELL_KEY`: the protocol and the configuration included) with ``n_total,
    n_valid_real, n_valid_syn, p_real, p_syn, drs, drs_ci_low, drs_ci_high, n_invalid, n_error``; rates are
    fractions (:data:`llmdisc.scoring.metrics.SCORES`), NaN when a class has no valid trial.
    """
    columns = ["n_total", "n_valid_real", "n_valid_syn", "p_real", "p_syn", "drs", "drs_ci_low",
               "drs_ci_high", "n_invalid", "n_error"]
    if trials.empty:
        return pd.DataFrame(columns=list(CELL_KEY) + columns)
    by = cell_columns(trials)
    return score_cells(trials, by=by, seed=seed).loc[:, by + columns]


def tables_dir() -> Path:
    """``results/tables`` under the project root."""
    return results_dir() / "tables"


def write_table(df: pd.DataFrame, name: str, directory: Path | str | None = None,
                float_format: str = "%.3f") -> dict[str, Path]:
    """Write ``df`` as ``<name>.csv`` and ``<name>.tex`` (booktabs tabular) and return both paths.

    ``name`` is a file stem of letters, digits, ``_`` and ``-`` (else ConfigError); ``directory`` defaults to
    ``results/tables``; ``float_format`` applies to the LaTeX file only (the CSV keeps full precision).
    """
    if not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        raise ConfigError(f"table name {name!r} must be letters, digits, '_' or '-'; fix: e.g. 'paper_model_table'")
    folder = Path(directory) if directory is not None else tables_dir()
    folder.mkdir(parents=True, exist_ok=True)
    csv_path, tex_path = folder / f"{name}.csv", folder / f"{name}.tex"
    df.to_csv(csv_path, index=False)
    tex_path.write_text(df.to_latex(index=False, float_format=float_format, na_rep="--"), encoding="utf-8")
    return {"csv": csv_path, "tex": tex_path}


def _to_percent(df: pd.DataFrame, columns: Sequence[str] = _PERCENT) -> pd.DataFrame:
    return df.assign(**{col: df[col] * 100 for col in df.columns
                        if col in columns or any(col.startswith(f"{c}_ci_") for c in columns)})


def cell_scores_table(trials: pd.DataFrame, *, by: Sequence[str] = CELL_COLUMNS, seed: int = 0,
                      n_boot: int = 2000) -> pd.DataFrame:
    """Our per-cell table: every count, rate (fraction) and interval of :func:`~llmdisc.scoring.metrics.score_cells`."""
    return score_cells(trials, by=by, seed=seed, n_boot=n_boot)


def _paper_format(trials: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    scored = score_cells(trials, by=by, seed=0, n_boot=1)
    keep = [*by, "n_total", "n_excluded", *PAPER_COLUMNS, "p_real", "p_syn"]
    return _to_percent(scored[keep]).rename(columns={**PAPER_COLUMNS, "p_real": "p_real_correct",
                                                     "p_syn": "p_syn_correct"})


def paper_model_table(trials: pd.DataFrame, *, model_cols: Sequence[str] = ("provider", "model")) -> pd.DataFrame:
    """The paper's per-model table: one row per model, DRS over *all* its trials pooled (paper definition).

    Percent units as printed (N, N_real, N_syn, Accuracy, DRS, Pred_REAL_rate, Avg_conf), plus n_total and
    n_excluded (the paper's error lines). Pooling is within one model only. The paper averaged confidence
    over values > 0; this uses every valid confidence (identical on its data: none is 0).
    """
    return _paper_format(trials, list(model_cols))


def paper_dataset_model_table(trials: pd.DataFrame) -> pd.DataFrame:
    """The paper's dataset × model table (pooled over synthesizers and conditions of one model), in percent."""
    return _paper_format(trials, ["dataset", "provider", "model"])


def paper_cell_table(trials: pd.DataFrame) -> pd.DataFrame:
    """The paper's per-cell table (dataset × model × synthesizer × condition), in percent, with n_excluded."""
    return _paper_format(trials, ["dataset", "provider", "model", "synthetic_method", "condition"])


def reproduction_table(ours: pd.DataFrame, paper: pd.DataFrame,
                       keys: Sequence[str] = ("dataset", "synthetic_method", "condition", "provider", "model"),
                       tolerance: float = 0.05) -> pd.DataFrame:
    """Side by side: our per-cell N/DRS/accuracy (percent) against the paper's printed values
    (:func:`llmdisc.scoring.reference.paper_reported_cells`), one row per cell of either table with
    ``drs_diff``, ``accuracy_diff`` and ``matches`` (|difference| within ``tolerance`` percentage points: the
    paper printed 1 decimal)."""
    merged = ours.merge(paper, on=list(keys), how="outer", indicator=True)
    merged["drs_diff"] = (merged["DRS"] - merged["paper_drs"]).round(6)
    merged["accuracy_diff"] = (merged["Accuracy"] - merged["paper_accuracy"]).round(6)
    merged["matches"] = ((merged["_merge"] == "both") & (merged["N"] == merged["paper_n"])
                         & (merged["drs_diff"].abs() <= tolerance) & (merged["accuracy_diff"].abs() <= tolerance))
    return merged.drop(columns="_merge")


def effective_n_table(trials: pd.DataFrame, *, by: Sequence[str] = CELL_COLUMNS) -> pd.DataFrame:
    """Per cell: valid trials, excluded records and effective N (distinct prompts, or distinct answers)."""
    columns = [*by, "n_total", "n_valid", "n_excluded", "effective_n", "effective_n_source"]
    out = score_cells(trials, by=by, seed=0, n_boot=1)[columns]
    return out.assign(trials_per_distinct=out["n_valid"] / out["effective_n"])


def matched_n_table(trials: pd.DataFrame, *, seed: int = MATCHED_SEED, models: Sequence[str] | None = None,
                    by: Sequence[str] = ("provider", "model")) -> pd.DataFrame:
    """The paper's matched-N per-model table (fair cells, equal N per model and cell, pooled), in percent."""
    return _paper_format(matched_n_sample(trials, seed=seed, models=models), list(by)).assign(seed=seed)


def seed_stability_table(trials: pd.DataFrame, *, seeds: Sequence[int] = STABILITY_SEEDS,
                         models: Sequence[str] | None = None,
                         model_labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per model (pooled, ``level='model'``) and per cell (``level='cell'``): DRS mean and 2.5-97.5 % over seeds."""
    result = seed_stability(trials, seeds=seeds, models=models, model_labels=model_labels)
    out = pd.concat([result.models.assign(level="model"), result.cells.assign(level="cell")],
                    ignore_index=True)
    return out.reindex(columns=["level", "model", "dataset", "synthetic_method", "condition", "drs_mean",
                                "drs_q025", "drs_q975", "n_seeds"]).assign(seeds=f"{min(seeds)}-{max(seeds)}")


def permutation_table(trials: pd.DataFrame, *, seed: int = PERMUTATION_SEED, n_perm: int = PERMUTATION_N,
                      orders: Mapping[str, Sequence[str]] | None = None,
                      group_cols: Sequence[str] = ("dataset", "provider", "model", "synthetic_method"),
                      ) -> pd.DataFrame:
    """DRS(C2) - DRS(C1) per group (default dataset × model × synthesizer, the paper's; our trials add the
    protocol columns) with permutation p-values (DRS in percent)."""
    out = permutation_tests(trials, seed=seed, n_perm=n_perm, orders=orders, group_cols=group_cols)
    if out.empty:
        return out
    for col in ("drs_c1", "drs_c2", "delta", "perm_null_q025", "perm_null_q975"):
        out[col] = out[col] * 100
    out["significant_005"] = out["p_two_sided"] < 0.05
    return out
