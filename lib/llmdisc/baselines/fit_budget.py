"""What the training budget changes: the quick (5-epoch) against the default (300-epoch) release.

:func:`compare_fit_budgets` fits (or reads from the fit cache) one release per synthesizer and budget, with
the same seed, fit subsample and metadata, and measures each the same way:

- ``fit_seconds``: wall-clock seconds of the SDV fit, from the cache entry's manifest (also on a cache hit).
- ``c2st_auc``: our gradient-boosted C2ST (no shuffled baseline) of the real train split against the release;
  categorical columns keep their :data:`C2ST_MAX_LEVELS` most frequent levels. 0.5 = indistinguishable.
- ``dcr_share``: share of synthetic records closer to the train split than the holdout's median record. 0.5 =
  as close as unseen real records; 1 = every one nearer (copies or a collapsed release).
- ``likelihood_auc``: AUC of the embedded model's (SmolLM2-135M, float32) mean token log-probability of 20-row
  release samples against holdout samples, the table alone. 0.5 = as probable as real tables, 1 = every
  release sample more probable. Empty with a note when the model cannot load.

The measurement seeds (stored in the row) do not depend on the budget, so both budgets of a synthesizer are
measured on the same real rows and sample positions (paired).
"""

from __future__ import annotations

import fcntl
import logging
import time
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.baselines.c2st import c2st
from llmdisc.baselines.distances import dcr_baseline
from llmdisc.baselines.encoding import cap_levels
from llmdisc.discrimination.samples import derive_seed, sample_rows
from llmdisc.errors import ConfigError, LlmdiscError
from llmdisc.scoring.likelihood import likelihood_auc
from llmdisc.scoring.tables import tables_dir, write_table
from llmdisc.synthesis.fit import NEURAL_SYNTHESIZERS
from llmdisc.synthesis.releases import SyntheticRelease, synthesize

logger = logging.getLogger(__name__)

BUDGETS: dict[str, int] = {"quick": 5, "default": 300}
"""Budget name → CTGAN/TVAE epochs: the quick look's and SDV's default (the paper's training budget)."""
C2ST_ROWS = 3000
DCR_ROWS = 2000
C2ST_MAX_LEVELS = 50
LIKELIHOOD_SAMPLES = 10
LIKELIHOOD_ROWS = 20
TABLE_NAME = "fit_budget"

FIT_BUDGET_COLUMNS = (
    "dataset_key", "synthesizer", "budget", "epochs", "fit_rows", "seed", "cache_key", "fit_seconds",
    "c2st_auc", "c2st_auc_low", "c2st_auc_high", "c2st_rows", "c2st_seed",
    "dcr_share", "dcr_share_low", "dcr_share_high", "exact_copy_rate", "dcr_rows", "dcr_seed",
    "likelihood_auc", "likelihood_auc_low", "likelihood_auc_high", "likelihood_samples", "likelihood_seed",
    "notes",
)
"""Columns of :func:`compare_fit_budgets`' table (one row per synthesizer × budget)."""


def _likelihood_means(scorer, samples: Sequence[pd.DataFrame]) -> list[float]:  # noqa: ANN001
    """Mean token log-probability (nats per token) of each sample's rows, the table alone (no prompt)."""
    from llmdisc.discrimination.likelihood.joint import score_tables

    scores = [score_tables(scorer, [sample], context="none")[0][0] for sample in samples]
    return [score.logprob / score.n_tokens for score in scores]


def _samples(table: pd.DataFrame, n_samples: int, n_rows: int, seed: int, *parts: object) -> list[pd.DataFrame]:
    return [sample_rows(table, n_rows, seed=derive_seed(seed, *parts, index))[0] for index in range(n_samples)]


def _open_scorer():  # noqa: ANN202
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

    return TransformersScorer()  # float32 on every CPU: a default-run table must not depend on the reader's CPU


def compare_fit_budgets(
    train: pd.DataFrame, holdout: pd.DataFrame, *, dataset_key: str, synthesizers: Sequence[str],
    seed: int = 0, budgets: Mapping[str, int] = BUDGETS, fit_rows: int | None = 5000,
    metadata_mode: str = "declared", column_kinds: dict[str, str] | None = None, num_rows: int | None = None,
    c2st_rows: int = C2ST_ROWS, dcr_rows: int = DCR_ROWS, likelihood: bool = True,
    likelihood_samples: int = LIKELIHOOD_SAMPLES, likelihood_rows: int = LIKELIHOOD_ROWS,
    scorer=None,  # noqa: ANN001 - a LikelihoodScorer; None opens the embedded model (float32)
    cache_root: Path | None = None, show_progress: bool = False,
) -> pd.DataFrame:
    """Fit (or load from the fit cache) each synthesizer at each budget and measure what the budget changes.

    Args:
        train: the real train split (the synthesizers' input and the C2ST's and DCR's real side).
        holdout: the real holdout split (DCR baseline, real side of the likelihood AUC).
        seed: the run seed: the fits' seed (as stage 02's) and the root of every measurement seed.
        fit_rows: fit on a seeded subsample of this many train rows (None: every row), as stage 02.
        num_rows: rows sampled per release (None: as many as the train split, stage 02's releases).
        likelihood_samples: samples per class for the likelihood AUC.
        scorer: a likelihood scorer; None opens ``TransformersScorer()`` (skipped with a note when the model
            cannot load).
        cache_root: the fit cache's folder (default ``data/synthetic``).

    Returns:
        One row per synthesizer × budget with :data:`FIT_BUDGET_COLUMNS`.

    Raises:
        ConfigError: no synthesizer or budget, or a budget's epochs is not a positive integer.
    """
    if not synthesizers or not budgets:
        raise ConfigError("compare_fit_budgets needs at least one synthesizer and one budget; fix: e.g. "
                          "synthesizers=['ctgan'], budgets={'quick': 5, 'default': 300}")
    for name, epochs in budgets.items():
        if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
            raise ConfigError(f"budget {name!r} has epochs={epochs!r}; fix: a positive integer, e.g. 300")
    if column_kinds is None:
        from llmdisc.synthesis.releases import resolve_column_kinds

        column_kinds = resolve_column_kinds(train, dataset_key, None)
    capped, cap_notes = cap_levels({"train": train}, column_kinds, train, C2ST_MAX_LEVELS)
    notes_common = list(cap_notes)

    if likelihood and scorer is None:
        try:
            scorer = _open_scorer()
        except (LlmdiscError, ImportError, OSError) as exc:
            notes_common.append(f"likelihood AUC skipped: the embedded model did not load ({type(exc).__name__}: "
                                f"{exc})")
            likelihood = False
    elif not likelihood:
        notes_common.append("likelihood AUC not asked for")
    likelihood_seed = derive_seed(seed, "fit_budget", dataset_key, "likelihood")
    real_scores: list[float] = []
    if likelihood:
        real_scores = _likelihood_means(scorer, _samples(holdout, likelihood_samples, likelihood_rows,
                                                          likelihood_seed, "holdout"))

    rows, measured = [], {}
    for synthesizer in synthesizers:
        c2st_seed = derive_seed(seed, "fit_budget", dataset_key, synthesizer, "c2st")
        dcr_seed = derive_seed(seed, "fit_budget", dataset_key, synthesizer, "dcr")
        for budget, epochs in budgets.items():
            release: SyntheticRelease = synthesize(
                train, dataset_key=dataset_key, synthesizer=synthesizer, seed=seed, epochs=epochs,
                metadata_mode=metadata_mode, column_kinds=column_kinds, num_rows=num_rows, fit_rows=fit_rows,
                cache_root=cache_root, show_progress=show_progress)
            if release.cache_key not in measured:  # GaussianCopula: one release for every budget
                measured[release.cache_key] = _measure(
                    train, holdout, release.table, capped["train"], column_kinds, c2st_seed=c2st_seed,
                    dcr_seed=dcr_seed, c2st_rows=c2st_rows, dcr_rows=dcr_rows, scorer=scorer if likelihood else None,
                    real_scores=real_scores, likelihood_samples=likelihood_samples,
                    likelihood_rows=likelihood_rows, likelihood_seed=likelihood_seed, synthesizer=synthesizer)
            figures = measured[release.cache_key]
            neural = synthesizer in NEURAL_SYNTHESIZERS
            notes = notes_common + ([] if neural else ["no epochs: one release for every budget"])
            rows.append({
                "dataset_key": dataset_key, "synthesizer": synthesizer, "budget": budget,
                "epochs": epochs if neural else np.nan,
                "fit_rows": int(release.manifest["metrics"]["n_fit_rows"]), "seed": seed,
                "cache_key": release.cache_key[:16], "fit_seconds": release.manifest["metrics"]["fit_seconds"],
                **figures, "c2st_seed": c2st_seed, "dcr_seed": dcr_seed,
                "likelihood_seed": likelihood_seed if likelihood else np.nan, "notes": "; ".join(notes)})
    return pd.DataFrame(rows, columns=list(FIT_BUDGET_COLUMNS))


def _measure(train: pd.DataFrame, holdout: pd.DataFrame, synthetic: pd.DataFrame, capped_train: pd.DataFrame,
             kinds: dict[str, str], *, c2st_seed: int, dcr_seed: int, c2st_rows: int, dcr_rows: int, scorer,  # noqa: ANN001
             real_scores: list[float], likelihood_samples: int, likelihood_rows: int, likelihood_seed: int,
             synthesizer: str) -> dict[str, float]:
    """C2ST, DCR and likelihood figures of one release."""
    start = time.perf_counter()
    capped_syn, _ = cap_levels({"synthetic": synthetic}, kinds, train, C2ST_MAX_LEVELS)
    c2 = c2st(capped_train, capped_syn["synthetic"], seed=c2st_seed, classifier="hist_gb", max_rows=c2st_rows,
              kinds=kinds, shuffled_baseline=False, native_categorical=True)
    dcr = dcr_baseline(train, synthetic, holdout, seed=dcr_seed, kinds=kinds, max_rows=dcr_rows)
    figures = {"c2st_auc": c2.auc.value, "c2st_auc_low": c2.auc.ci_low, "c2st_auc_high": c2.auc.ci_high,
               "c2st_rows": c2.n_real, "dcr_share": dcr.share_closer.value, "dcr_share_low": dcr.share_closer.ci_low,
               "dcr_share_high": dcr.share_closer.ci_high, "exact_copy_rate": dcr.exact_copy_rate.value,
               "dcr_rows": len(dcr.dcr_synthetic), "likelihood_auc": np.nan, "likelihood_auc_low": np.nan,
               "likelihood_auc_high": np.nan, "likelihood_samples": 0}
    if scorer is not None:
        syn_scores = _likelihood_means(scorer, _samples(synthetic, likelihood_samples, likelihood_rows,
                                                        likelihood_seed, "release", synthesizer))
        auc = likelihood_auc(real_scores, syn_scores, seed=likelihood_seed)
        figures.update(likelihood_auc=auc["auc"], likelihood_auc_low=auc["auc_low"],
                       likelihood_auc_high=auc["auc_high"], likelihood_samples=len(syn_scores))
    logger.info("measured %s release in %.1f s", synthesizer, time.perf_counter() - start)
    return figures


def write_fit_budget(table: pd.DataFrame, directory: Path | str | None = None) -> dict[str, Path]:
    """Write ``table``'s rows into ``results/tables/fit_budget.{csv,tex}``, replacing those of its datasets
    and keeping the others; return the paths by suffix.

    Raises ConfigError when ``table`` lacks a column of :data:`FIT_BUDGET_COLUMNS`.
    """
    missing = [c for c in FIT_BUDGET_COLUMNS if c not in table.columns]
    if missing:
        raise ConfigError(f"the fit-budget table lacks columns {missing}; fix: pass compare_fit_budgets(...)'s table")
    folder = Path(directory) if directory is not None else tables_dir()
    path = folder / f"{TABLE_NAME}.csv"
    folder.mkdir(parents=True, exist_ok=True)
    # two benches (one dataset each) may write at once: read-merge-write under a lock
    with open(folder / f".{TABLE_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            old = pd.read_csv(path)
            old = old[~old["dataset_key"].isin(set(table["dataset_key"]))]
            table = pd.concat([old[[c for c in FIT_BUDGET_COLUMNS if c in old.columns]], table], ignore_index=True)
        table = table.sort_values(["dataset_key"], kind="stable").reset_index(drop=True)
        return write_table(table[list(FIT_BUDGET_COLUMNS)], TABLE_NAME, folder)
