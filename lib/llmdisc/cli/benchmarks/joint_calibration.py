"""``llmdisc bench joint-calibration``: is the joint contrast's per-sample p-value uniform where it must be?

Under column independence a shuffled-columns sample and its permutations are exchangeable, so its randomised
p-value is Uniform(0, 1) and its rank among its k + 1 tables uniform on 0..k. This checks that on many fresh samples
(``--seed`` other than the run's 0) in the default run's design. Records go to ``results/likelihood/joint/calibration/``
(resumable); needs the processed tables (``llmdisc run --only 01``). Printed per dataset: mean C (nats) with its SE
and t-test, the KS test of the p-values, the rank counts with a chi-square test.
"""

from __future__ import annotations

import argparse
import time

NAME = "joint-calibration"
HELP = "joint-structure contrast: uniformity of the per-sample p-values on many fresh shuffled-columns samples"
IN_ALL = False  # minutes per dataset: `bench all` leaves it out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=["adult", "census-codes"], metavar="KEY",
                        help="processed dataset keys (default adult census-codes)")
    parser.add_argument("--samples", type=int, default=100, help="shuffled-columns samples per dataset (default 100)")
    parser.add_argument("--seed", type=int, default=1,
                        help="run seed of the samples, the reference rows and the permutations (default 1: not the "
                             "default run's 0, so the samples are fresh)")
    parser.add_argument("--k", type=int, default=2, help="permutations per sample (default 2, the default run's)")
    parser.add_argument("--reference-rows", type=int, default=20, help="real reference rows (default 20)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "auto"],
                        help="precision of the model (default float32, the default run's on every CPU; auto: "
                             "bfloat16 where the CPU computes it natively)")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from llmdisc.discrimination.likelihood.joint_runs import default_joint_path, run_joint
    from llmdisc.discrimination.likelihood.records import load_joint
    from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables
    from llmdisc.discrimination.cache import TokenCache
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
    from llmdisc.errors import ConfigError
    from llmdisc.paths import relative_to_root
    from llmdisc.scoring.joint import calibration_summary
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
        rows.append({"dataset_key": key, "dtype": scorer.dtype, **calibration_summary(load_joint(path), args.k)})
    print(pd.DataFrame(rows).round(3).to_string(index=False))
    written = write_calibration_table(default_joint_path("calibration").parent / "calibration", args.k,
                                      args.reference_rows)
    if written is not None:
        print(f"every calibration run so far (k = {args.k}, {args.reference_rows} reference rows): "
              f"{relative_to_root(written)}")
    print(f"rank_counts: samples with 0, 1, … {args.k} of their permutations below them (equal expected); "
          f"{time.perf_counter() - start:.0f} s in all")
    return 0


def write_calibration_table(folder, k: int, reference_rows: int):  # noqa: ANN001, ANN201 - a Path in, a Path out
    """Pool every calibration record file of this design in ``folder`` (one backend only, so precisions never mix)
    into ``results/tables/joint_calibration.csv``; return its path, None when there is none."""
    import re

    from llmdisc.discrimination.likelihood.records import load_joint
    from llmdisc.scoring.joint import calibration_table
    from llmdisc.scoring.tables import write_table

    pattern = re.compile(rf"(?P<key>.+)-csv-m{reference_rows}-k{k}-n\d+-s(?P<seed>\d+)-(?P<backend>.+)\.jsonl")
    found: dict = {}
    for path in sorted(folder.glob("*.jsonl")):
        match = pattern.fullmatch(path.name)
        if match is None:
            continue
        frame = load_joint(path).assign(backend=match["backend"])
        found.setdefault(match["backend"], {})[(match["key"], int(match["seed"]))] = frame
    if not found:
        return None
    backend = "transformers-float32" if "transformers-float32" in found else sorted(found)[0]
    table = calibration_table(found[backend], k).assign(backend=backend, k=k, reference_rows=reference_rows)
    return write_table(table, "joint_calibration")["csv"]
