"""``llmdisc bench joint``: the joint-structure contrast's cost per sample against its k + 1 table passes.

For each number of reference rows m and each way of running the k + 1 variants (``batch`` or ``sequential``
after the shared prefix cache), in a fresh child process: Adult holdout samples scored by
:func:`~llmdisc.discrimination.likelihood.joint.joint_contrast`. The first sample pays for the shared prefix; the
next reuse it. The last sample's k + 1 tables are also run as plain forward passes, which give the prefill limit
(tokens ÷ median tokens/s). Printed per row: samples/min, seconds per sample, the ratio of seconds per sample (after
the first) to the prefill limit (target <= 1.2), tokens per sample, peak RSS (MiB). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

from llmdisc.cli.benchmarks._common import _child, peak_rss_mib

NAME = "joint"
HELP = "joint-structure contrast: samples/min, seconds per sample vs k+1 table passes and the prefill limit, memory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", type=int, default=3, help="samples per configuration (default 3)")
    parser.add_argument("--rows", type=int, default=20, help="rows per sample (default 20)")
    parser.add_argument("--k", type=int, default=2, help="permutations per sample (default 2)")
    parser.add_argument("--reference-rows", type=int, nargs="+", default=[0, 20], metavar="M",
                        help="reference rows shown before the sample (default: 0 20)")
    parser.add_argument("--serialisation", default="csv", choices=["csv", "markdown", "great"],
                        help="how the table is written (default csv, as the default run)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"],
                        help="precision (default auto: bfloat16 where the CPU computes it natively, else float32)")
    parser.add_argument("--modes", nargs="+", default=["batch", "sequential"], choices=["batch", "sequential"],
                        help="how the k + 1 variants run after the shared prefix")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the samples and the permutations")


def _measure(m: int, mode: str, samples: int, rows: int, k: int, threads: int, seed: int,  # noqa: ANN001
             serialisation: str, dtype: str, queue) -> None:
    import torch

    from llmdisc.cli.benchmarks.likelihood import benchmark_table
    from llmdisc.discrimination.likelihood.joint import joint_contrast, joint_text, permutation_seeds, permute_within
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
    from llmdisc.discrimination.samples import sample_rows

    table, source = benchmark_table()
    scorer = TransformersScorer(threads=threads, dtype=dtype)
    scorer.batch_variants = mode == "batch"
    reference = sample_rows(table, m, seed=seed - 1)[0] if m else None
    seconds, tokens_run, prompt = [], [], []
    for i in range(samples):
        sample, _ = sample_rows(table, rows, seed=seed + i)
        begin = time.perf_counter()
        scores = joint_contrast(scorer, sample, k=k, seed=seed + i, reference=reference, serialisation=serialisation)
        seconds.append(time.perf_counter() - begin)
        tokens_run.append(scores.tokens_run)
        prompt.append(scores.prompt_tokens)
    # The last sample's k + 1 tables as plain forward passes (no shared prefix, no batch): the cost without reuse,
    # and, from their median tokens/s, the prefill limit.
    variants = [sample] + [permute_within(sample, s) for s in permutation_seeds(seed + samples - 1, k)]
    torch.set_num_threads(threads)
    plain, plain_tokens = [], []
    for variant in variants:
        ids = scorer.tokenize(joint_text(scorer, variant, reference=reference, serialisation=serialisation).text)[0]
        begin = time.perf_counter()
        scorer.logits(ids)
        plain.append(time.perf_counter() - begin)
        plain_tokens.append(len(ids))
    queue.put({"m": m, "mode": mode, "dtype": scorer.dtype, "source": source, "seconds": seconds,
               "tokens_run": tokens_run, "prompt_tokens": prompt, "plain_seconds": plain,
               "plain_tokens": plain_tokens, "peak_mib": peak_rss_mib()})


def run(args: argparse.Namespace) -> int:
    from statistics import mean, median

    from tabulate import tabulate

    from llmdisc.errors import ConfigError

    if args.samples < 1 or args.k < 1 or min(args.reference_rows) < 0:
        raise ConfigError("--samples and --k must be >= 1 and --reference-rows >= 0; fix: e.g. --samples 3 --k 2")
    rows = []
    for m in args.reference_rows:
        for mode in args.modes:
            r = _child(_measure, m, mode, args.samples, args.rows, args.k, args.threads, args.seed,
                       args.serialisation, args.dtype)
            seconds = ", ".join(f"{x:.2f}" for x in r["seconds"])
            print(f"m={m} / {mode} / {args.serialisation} / {r['dtype']}: {seconds} s per sample, {r['tokens_run']} "
                  f"tokens run; k + 1 plain passes {r['plain_tokens']} tokens in "
                  f"{', '.join(f'{x:.2f}' for x in r['plain_seconds'])} s; peak {r['peak_mib']:.0f} MiB", flush=True)
            tok_s = median(t / s for t, s in zip(r["plain_tokens"], r["plain_seconds"]))
            passes = sum(r["plain_seconds"])
            limit = sum(r["plain_tokens"]) / tok_s
            steady = mean(r["seconds"][1:]) if len(r["seconds"]) > 1 else r["seconds"][0]
            rows.append([m, mode, args.serialisation, r["dtype"], r["source"], args.rows, args.k, f"{60 * len(r['seconds']) / sum(r['seconds']):.2f}",
                         f"{mean(r['seconds']):.1f}", f"{steady:.1f}", f"{passes:.1f}", f"{limit:.1f}",
                         f"{steady / limit:.2f}", f"{mean(r['tokens_run']):.0f}", f"{mean(r['prompt_tokens']):.0f}",
                         f"{tok_s:.0f}", f"{r['peak_mib']:.0f}"])
    print()
    print(tabulate(rows, headers=["m", "mode", "serialisation", "dtype", "table", "rows", "k", "samples/min", "s/sample", "s/sample after 1st",
                                  "k+1 passes s", "prefill limit s", "ratio to limit", "tokens run/sample",
                                  "text tokens", "plain tok/s", "peak RSS MiB"]))
    print("\nThe k + 1 passes: the last sample and its k permutations, each run whole (reference rows included) as "
          "one plain forward pass, measured; the prefill limit: their tokens ÷ the median tok/s of those passes. "
          "Issue 26 asks a ratio <= 1.2.")
    return 0
