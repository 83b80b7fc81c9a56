"""``llmdisc bench scoring``: time to score 100,000 trial records and to run the paper's analyses.

Seeded synthetic trial records (:func:`synthetic_trials`) stand in for real ones. Figures are medians over
``--repeats`` runs, in seconds; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np
import pandas as pd

NAME = "scoring"
HELP = "time score_cells on 100,000 records and the full set of paper analyses (medians, seconds)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--records", type=int, default=100_000, help="trial records to score (default 100000)")
    parser.add_argument("--models", type=int, default=2, help="models per cell (default 2)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the synthetic records (default 2026)")
    parser.add_argument("--n-perm", type=int, default=3000, help="shuffles per permutation test (default 3000)")
    parser.add_argument("--analysis-records", type=int, default=600,
                        help="records for the paper-analysis timing, paper-sized by default (600)")


def synthetic_trials(n: int, n_models: int, seed: int) -> pd.DataFrame:
    """``n`` seeded trial records spread over 12 × ``n_models`` cells (5 % invalid, 1 % errors)."""
    rng = np.random.default_rng(seed)
    datasets = rng.choice(["adult", "census"], n)
    methods = rng.choice(["ctgan", "tvae", "gaussian_copula"], n)
    conditions = rng.choice(["C1", "C2"], n)
    models = rng.choice([f"model-{i}" for i in range(n_models)], n)
    truth = rng.choice(["REAL", "SYNTHETIC"], n)
    p_correct = rng.uniform(0.4, 0.95, size=12 * n_models)
    cell = (pd.factorize(pd.Series(datasets) + methods + conditions + models)[0]) % len(p_correct)
    correct = rng.random(n) < p_correct[cell]
    other = np.where(truth == "REAL", "SYNTHETIC", "REAL")
    predicted = np.where(correct, truth, other).astype(object)
    status = rng.choice(["valid", "invalid", "error"], n, p=[0.94, 0.05, 0.01])
    predicted[status != "valid"] = None
    confidence = np.where(status == "valid", rng.integers(50, 101, n), np.nan)
    return pd.DataFrame({"dataset": datasets, "synthetic_method": methods, "condition": conditions,
                         "provider": "bench", "model": models, "true_label": truth, "predicted_label": predicted,
                         "confidence": confidence, "status": status,
                         "prompt_hash": rng.integers(0, n // 4 + 1, n).astype(str), "sample_seed": rng.integers(0, 50, n)})


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(args: argparse.Namespace) -> int:
    from llmdisc.scoring.analyses import (fair_cells, matched_n_sample, permutation_test, permutation_tests,
                                          seed_stability)
    from llmdisc.scoring.metrics import score_cells

    big = synthetic_trials(args.records, args.models, args.seed)
    small = synthetic_trials(args.analysis_records, args.models, args.seed + 1)
    models = sorted(small["model"].unique())
    pair = small[(small["dataset"] == "adult") & (small["synthetic_method"] == "ctgan")
                 & (small["model"] == models[0])]

    def analyses() -> None:
        fair_cells(small, models=models)
        drawn = matched_n_sample(small, seed=2026, models=models, min_valid=1)
        seed_stability(small, models=models, min_valid=1)
        permutation_tests(drawn, seed=20260531, n_perm=args.n_perm)

    figures = [
        (f"score_cells, {args.records:,} records, 2000 bootstrap/cell",
         lambda: score_cells(big, seed=args.seed)),
        (f"permutation test, one cell pair ({len(pair)} trials, {args.n_perm} shuffles)",
         lambda: permutation_test(pair, seed=20260531, n_perm=args.n_perm)),
        (f"paper analyses (fair cells, matched-N, 50-seed stability, permutation tests), {len(small)} records",
         analyses),
    ]
    print(f"repeats={args.repeats} seed={args.seed} (median seconds)")
    for label, fn in figures:
        print(f"{_median_time(fn, args.repeats):9.3f} s  {label}", flush=True)
    return 0
