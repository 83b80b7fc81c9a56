"""``llmdisc bench joint-calibration``: is the joint contrast's per-sample p-value uniform where it must be?

Under column independence a sample and its within-sample permutations are exchangeable, so the randomised
permutation p-value of a shuffled-columns sample is exactly Uniform(0, 1) and the rank of log P(sample) among its
k + 1 tables is uniform on 0..k. The default run checks this on its 20 shuffled-columns samples a dataset (a KS
test, ``joint_cells.csv``); this bench checks it on many fresh ones (``--seed`` other than the run's 0), in the
default run's design (k = 2, 20 reference rows, CSV, the embedded model at the precision this CPU runs, or
``--dtype``), with
:func:`~llmdisc.discrimination.likelihood.joint_runs.run_joint`. Records go to
``results/likelihood/joint/calibration/`` (resumable). Needs the processed tables (``llmdisc run --only 01``).

Printed per dataset: samples; mean C (nats) with its standard error and a one-sample t-test of mean 0; the KS test
of the randomised p-values against Uniform(0, 1); the counts of samples by how many of their k permutations
scored below them (0 = the sample least probable), expected equal, with a chi-square test; seconds per sample.
Minutes per dataset: left out of ``llmdisc bench all``.
"""

from __future__ import annotations

import argparse
import time

NAME = "joint-calibration"
HELP = "joint-structure contrast: uniformity of the per-sample p-values on many fresh shuffled-columns samples"
IN_ALL = False
"""Minutes per dataset: ``bench all`` leaves it out."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: dataset keys, samples, seed, design."""
    parser.add_argument("--datasets", nargs="+", default=["adult", "census-codes"], metavar="KEY",
                        help="processed dataset keys (default adult census-codes)")
    parser.add_argument("--samples", type=int, default=100, help="shuffled-columns samples per dataset (default 100)")
    parser.add_argument("--seed", type=int, default=1,
                        help="run seed of the samples, the reference rows and the permutations (default 1: not the "
                             "default run's 0, so the samples are fresh)")
    parser.add_argument("--k", type=int, default=2, help="permutations per sample (default 2, the default run's)")
    parser.add_argument("--reference-rows", type=int, default=20, help="real reference rows (default 20)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="precision of the model (default auto: the default run's on this CPU)")


def calibration_row(frame, k: int) -> dict:  # noqa: ANN001 - a DataFrame of JointRecords
    """The figures printed for one dataset's records (see the module docstring)."""
    import numpy as np
    from scipy import stats

    from llmdisc.scoring.joint import uniformity_test

    contrast = frame["contrast"].to_numpy(float)
    observed = frame["logprob"].to_numpy(float)
    permuted = np.array(frame["permuted_logprobs"].tolist(), float)
    below = np.bincount((permuted < observed[:, None]).sum(axis=1), minlength=k + 1)
    uniform = uniformity_test(frame["p_randomised"])
    return {"samples": len(frame), "mean_C": contrast.mean(), "se_C": contrast.std(ddof=1) / np.sqrt(len(frame)),
            "t_p": float(stats.ttest_1samp(contrast, 0.0).pvalue), "ks_stat": uniform["ks_stat"],
            "ks_p": uniform["ks_p"], "rank_counts": " / ".join(map(str, below)),
            "rank_chi2_p": float(stats.chisquare(below).pvalue),
            "s_per_sample": float(frame["seconds"].mean())}


def run(args: argparse.Namespace) -> int:
    """Score the samples (resuming), print one row per dataset; returns 0."""
    import pandas as pd

    from llmdisc.discrimination.likelihood.joint_runs import default_joint_path, run_joint
    from llmdisc.discrimination.likelihood.records import load_joint
    from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables
    from llmdisc.discrimination.likelihood.token_cache import TokenCache
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
    from llmdisc.errors import ConfigError
    from llmdisc.synthesis.controls import POSITIVE_CONTROL

    if args.samples < 2 or args.k < 1 or args.reference_rows < 0:
        raise ConfigError("--samples must be >= 2, --k >= 1 and --reference-rows >= 0; fix: e.g. --samples 100")
    start = time.perf_counter()
    scorer = TransformersScorer(token_cache=TokenCache(enabled=False), dtype=args.dtype)
    rows = []
    for key in args.datasets:
        specs = [s for s in build_likelihood_queue([key], [], args.samples, run_seed=args.seed, reference_samples=2,
                                                   train_control=False) if s.source == POSITIVE_CONTROL]
        tables = load_likelihood_tables(key, [POSITIVE_CONTROL, "holdout"], run_seed=args.seed)
        path = (default_joint_path("calibration").parent / "calibration"
                / f"{key}-csv-m{args.reference_rows}-k{args.k}-n{args.samples}-s{args.seed}-{scorer.backend}.jsonl")

        def progress(done: int, total: int, spec: object, key: str = key) -> None:
            if done % 10 == 0 or done == total:
                print(f"  {key}: {done}/{total} samples, {time.perf_counter() - start:.0f} s", flush=True)

        run_joint(specs, {key: tables}, scorer, path, k=args.k, reference_rows=args.reference_rows,
                  serialisation="csv", progress=progress)
        rows.append({"dataset_key": key, "dtype": scorer.dtype, **calibration_row(load_joint(path), args.k)})
    print(pd.DataFrame(rows).round(3).to_string(index=False))
    print(f"rank_counts: samples with 0, 1, … {args.k} of their permutations below them (equal expected); "
          f"{time.perf_counter() - start:.0f} s in all")
    return 0
