"""``llmdisc bench baselines``: DCR and C2ST, the full Adult train table against a same-size synthetic one.

Prints wall seconds and peak memory (target: under 60 s and 2 GB on 2 cores) and the load average. The synthetic
table is the release ``data/synthetic/adult/<synthesizer>.parquet`` (resampled up to the train size) when it
exists, else a seeded stand-in (:func:`noisy_resample`, said so in the output). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np
import pandas as pd

from llmdisc.cli.benchmarks._common import peak_rss_mib

NAME = "baselines"
HELP = "DCR and C2ST seconds and peak memory: full Adult train (~24k) vs a same-size synthetic table"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--synthesizer", default="gaussian_copula",
                        help="published release to use when present (default gaussian_copula)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every draw (default 0)")
    parser.add_argument("--c2st-rows", type=int, default=0,
                        help="rows per table for the C2ST; 0 = the whole train table (default 0)")
    parser.add_argument("--classifiers", nargs="+", default=["logistic", "hist_gb"],
                        help="C2ST classifiers to time (default: logistic hist_gb)")


def noisy_resample(holdout: pd.DataFrame, n: int, numerical: list[str], seed: int) -> pd.DataFrame:
    """A seeded stand-in synthetic table: ``n`` holdout rows drawn with replacement, numerics jittered by Gaussian
    noise (5 % of each column's SD, rounded to integers)."""
    rng = np.random.default_rng(seed)
    table = holdout.iloc[rng.integers(0, len(holdout), n)].reset_index(drop=True).copy()
    for col in numerical:
        noise = rng.normal(0.0, 0.05 * float(table[col].std()), n)
        table[col] = np.round(table[col].to_numpy(dtype=float) + noise).astype(table[col].dtype)
    return table


def _inputs(synthesizer: str, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, str]:
    from llmdisc.data.datasets import column_kinds, load_dataset, load_processed, train_holdout_split
    from llmdisc.errors import DataError
    from llmdisc.synthesis.releases import load_synthetic

    try:
        train, holdout = load_processed("adult", "train"), load_processed("adult", "holdout")
        source = "data/processed/adult"
    except DataError:
        train, holdout = train_holdout_split(load_dataset("adult"), seed=0)
        source = "load_dataset('adult') split in memory (seed 0): data/processed/adult is absent"
    try:
        synthetic = load_synthetic("adult", synthesizer)
        source += f"; synthetic: published {synthesizer} release ({len(synthetic)} rows)"
        if len(synthetic) < len(train):  # a quick release: resample it (seeded) up to the benchmark's size
            rows = np.random.default_rng(seed).integers(0, len(synthetic), len(train))
            synthetic = synthetic.iloc[rows].reset_index(drop=True)
            source += f", resampled with replacement to {len(train)} rows"
    except DataError:
        numerical = [c for c, k in column_kinds("adult").items() if k == "numerical"]
        synthetic = noisy_resample(holdout, len(train), numerical, seed)
        source += (f"; synthetic: NO published {synthesizer} release, so a seeded resample-with-noise of the "
                   f"holdout stands in ({len(train)} rows)")
    return train, holdout, synthetic, source


def run(args: argparse.Namespace) -> int:
    from llmdisc.baselines import c2st, dcr_baseline
    from llmdisc.data.datasets import column_kinds

    kinds = column_kinds("adult")
    train, holdout, synthetic, source = _inputs(args.synthesizer, args.seed)
    print(f"inputs: {source}")
    # the machine is often shared: the load average says how much of the 2 cores this run had
    print(f"load average (1, 5, 15 min) at start: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs")
    print(f"train {len(train)} rows, holdout {len(holdout)}, synthetic {len(synthetic)}; "
          f"peak RSS after loading {peak_rss_mib():.0f} MiB")

    tracemalloc.start()
    start = time.perf_counter()
    dcr = dcr_baseline(train, synthetic, holdout, seed=args.seed, kinds=kinds)
    seconds = time.perf_counter() - start
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"DCR: {seconds:.1f} s for {len(synthetic)} synthetic + {len(holdout)} holdout queries vs "
          f"{len(train)} train records; peak traced allocations {traced_peak / 2**20:.0f} MiB; "
          f"peak RSS {peak_rss_mib():.0f} MiB")
    print(f"     share closer than holdout median {dcr.share_closer.value:.3f} "
          f"[{dcr.share_closer.ci_low:.3f}, {dcr.share_closer.ci_high:.3f}], exact copies "
          f"{dcr.exact_copy_rate.value:.4f} (holdout {dcr.holdout_copy_rate.value:.4f})")

    rows = args.c2st_rows or None
    for name in args.classifiers:
        start = time.perf_counter()
        res = c2st(train, synthetic, seed=args.seed, classifier=name, max_rows=rows, kinds=kinds,
                   shuffled_baseline=False)
        seconds = time.perf_counter() - start
        print(f"C2ST {name}: {seconds:.1f} s on {res.n_real} + {res.n_real} rows, 5 folds, no shuffled run; "
              f"AUC {res.auc.value:.3f} [{res.auc.ci_low:.3f}, {res.auc.ci_high:.3f}]; "
              f"peak RSS {peak_rss_mib():.0f} MiB")
    print(f"load average at end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0
