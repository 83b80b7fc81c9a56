"""``llmdisc synth``: fit (or load from the cache) and publish synthetic releases of a processed dataset."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth", help="fit SDV synthesizers on a train split and publish data/synthetic/<key>/<synth>.parquet",
        description="Fit GaussianCopula / CTGAN / TVAE on data/processed/<key>/train.parquet (seeded, cached) "
        "and publish each release with its manifest. A second run with the same parameters loads from the cache.")
    parser.add_argument("--dataset-key", required=True, help="adult, census-codes or census-labels")
    parser.add_argument("--synthesizers", nargs="+", default=["gaussian_copula", "ctgan", "tvae"], metavar="ITEM",
                        help="one or more of gaussian_copula, ctgan, tvae, space- or comma-separated "
                        "(default: all three)")
    parser.add_argument("--synthesizer", nargs="+", dest="synthesizers", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # the old spelling, kept working
    parser.add_argument("--epochs", type=int, default=None,
                        help="CTGAN/TVAE epochs (default: SDV's 300, the paper scale; 5 is a quick run)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fit subsample, fitting and sampling")
    parser.add_argument("--metadata-mode", default="declared",
                        help="declared (column kinds; codes stay categorical) or detected (SDV, as the paper)")
    parser.add_argument("--fit-rows", type=int, default=None, help="fit on a seeded subsample of this many rows")
    parser.add_argument("--num-rows", type=int, default=None, help="rows to sample (default: train size)")
    parser.add_argument("--train", type=Path, default=None,
                        help="a parquet or CSV train table to use instead of data/processed/<key>/train.parquet")
    parser.add_argument("--no-publish", action="store_true", help="only fill the cache; do not write the release")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch progress bar")
    parser.set_defaults(func=run)


def _read_train(args: argparse.Namespace) -> "pd.DataFrame":
    import pandas as pd

    from llmdisc.data.datasets import load_processed
    from llmdisc.errors import DataError

    if args.train is not None:
        if not args.train.exists():
            raise DataError(f"--train {args.train.name} does not exist (fix: give an existing parquet or CSV file)")
        return pd.read_parquet(args.train) if args.train.suffix == ".parquet" else pd.read_csv(args.train)
    return load_processed(args.dataset_key, split="train")


def run(args: argparse.Namespace) -> int:
    """Fit or load each requested release, publish it, and print one summary line per synthesizer."""
    from llmdisc.parameters import cli_items
    from llmdisc.paths import relative_to_root
    from llmdisc.synthesis.fit import check_metadata_mode, check_synthesizer
    from llmdisc.synthesis.releases import publish_release, synthesize

    names = cli_items(args.synthesizers)
    for name in names:
        check_synthesizer(name)
    check_metadata_mode(args.metadata_mode)
    train = _read_train(args)
    for name in names:
        release = synthesize(train, dataset_key=args.dataset_key, synthesizer=name, seed=args.seed,
                             epochs=args.epochs, metadata_mode=args.metadata_mode, num_rows=args.num_rows,
                             fit_rows=args.fit_rows, show_progress=not args.quiet)
        oov = release.manifest.get("metrics", {}).get("n_oov_values_categorical")
        timing = ("cache hit (no fit)" if release.cache_hit
                  else f"fit {release.fit_seconds:.1f} s, sample {release.sample_seconds:.1f} s")
        where = "not published" if args.no_publish else relative_to_root(publish_release(release))
        print(f"{args.dataset_key} {name}: {len(release.table)} rows, {timing}, "
              f"invented categories/codes {oov}, key {release.cache_key[:16]} -> {where}", flush=True)
    return 0
