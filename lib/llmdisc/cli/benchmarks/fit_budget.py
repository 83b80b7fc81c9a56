"""``llmdisc bench fit-budget``: what the training budget changes, quick (5 epochs) against a configuration's.

Runs :func:`llmdisc.baselines.fit_budget.compare_fit_budgets` on the processed tables of the configuration's datasets
(``llmdisc run --only 01`` writes them): each synthesizer fitted at both budgets (from the fit cache when a run has
fitted it), measured by C2ST AUC, DCR share and the embedded model's likelihood AUC in float32. Writes the rows of
those datasets into ``results/tables/fit_budget.{csv,tex}`` (other datasets' rows kept) and prints them. It is not
part of ``make reproduce`` (minutes per dataset, most of it the likelihood passes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

NAME = "fit-budget"
HELP = ("what the training budget changes: the quick look's 5-epoch releases against a configuration's "
        "(writes results/tables/fit_budget.csv)")
IN_ALL = False  # fits 300-epoch models unless a run has cached them, 60 likelihood samples a dataset: minutes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=Path("configs/default.yaml"),
                        help="the run configuration whose synthesis settings (synthesizers, epochs, fit rows, "
                             "metadata, seed) are the 'default' budget (default configs/default.yaml)")
    parser.add_argument("--datasets", nargs="+", default=None, metavar="KEY",
                        help="dataset keys (default the configuration's)")
    parser.add_argument("--quick-epochs", type=int, default=5, help="the quick budget's epochs (default 5)")
    parser.add_argument("--no-likelihood", action="store_true",
                        help="leave the likelihood AUC out (no language model; its column is empty)")


def run(args: argparse.Namespace) -> int:
    from llmdisc.baselines.fit_budget import compare_fit_budgets, write_fit_budget
    from llmdisc.data import column_kinds, load_processed
    from llmdisc.errors import ConfigError
    from llmdisc.parameters import cli_items
    from llmdisc.paths import relative_to_root
    from llmdisc.pipeline.config import load_config

    config = load_config(args.config)
    synthesis = config.synthesis
    keys = cli_items(args.datasets) if args.datasets else list(config.datasets)
    if args.quick_epochs < 1 or args.quick_epochs >= synthesis.epochs:
        raise ConfigError(f"--quick-epochs {args.quick_epochs}: must be at least 1 and below the configuration's "
                          f"{synthesis.epochs} epochs; fix: pass a smaller number or a configuration with more")
    budgets = {"quick": args.quick_epochs, "default": synthesis.epochs}
    start = time.perf_counter()
    for key in keys:
        table = compare_fit_budgets(
            load_processed(key, "train"), load_processed(key, "holdout"), dataset_key=key,
            synthesizers=list(synthesis.synthesizers), seed=config.seed, budgets=budgets,
            fit_rows=synthesis.fit_rows or None, metadata_mode=synthesis.metadata_mode,
            column_kinds=column_kinds(key), likelihood=not args.no_likelihood)
        written = write_fit_budget(table)
        print(table.set_index(["dataset_key", "synthesizer", "budget"])[
            ["epochs", "fit_seconds", "c2st_auc", "likelihood_auc", "dcr_share", "exact_copy_rate"]].round(3)
            .to_string(), flush=True)
        print(f"{key}: wrote {relative_to_root(written['csv'])}; {time.perf_counter() - start:.0f} s so far",
              flush=True)
    return 0
