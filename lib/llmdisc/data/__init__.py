"""Stage 01, the real tables: UCI Adult and ACS Census, their codebooks, and the train/holdout split.

Reads ``data/raw/adult/`` (sha256-checked) and the ACS Census source (``$LLMDISC_CENSUS_CSV``, the paper's
extract in the reference folder, or the ACS download), decodes PUMS codes to text labels with the packaged
codebooks, and writes ``data/processed/<key>/{train,holdout}.parquet`` with a ``manifest.json`` (``<key>``:
``adult``, ``census-codes``, ``census-labels``); later stages read tables through :func:`load_processed`.
:mod:`llmdisc.data.reference` pins, fetches, checks and reads the paper's own files.
"""

from llmdisc.data.acs import decode_census, load_census, load_codebook
from llmdisc.data.adult import load_adult
from llmdisc.data.datasets import (ENCODINGS, SPLITS, TARGET_COLUMN, add_manifest_metrics, column_kinds,
                                   dataset_key, load_dataset, load_processed, parse_dataset_key,
                                   prepare_dataset, processed_dir, profile_table, split_balance,
                                   train_holdout_split)
from llmdisc.data.reference import (PAPER_SYNTHESIZERS, check_reference, fetch_reference, load_paper_census,
                                    load_paper_release, paper_census_path, paper_release_path, pinned_files)

__all__ = [
    "ENCODINGS", "SPLITS", "TARGET_COLUMN", "add_manifest_metrics", "column_kinds", "dataset_key",
    "decode_census", "load_adult", "load_census", "load_codebook", "load_dataset", "load_processed",
    "parse_dataset_key", "prepare_dataset", "processed_dir", "profile_table", "split_balance",
    "train_holdout_split",
    "PAPER_SYNTHESIZERS", "check_reference", "fetch_reference", "load_paper_census", "load_paper_release",
    "paper_census_path", "paper_release_path", "pinned_files",
]
