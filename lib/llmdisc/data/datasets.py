"""Stage 01: the real tables (UCI Adult, ACS Census), their encodings, and the seeded train/holdout split.

Dataset keys name a table and its encoding: ``adult`` (strings), ``census-codes`` (PUMS integer codes, the
paper's form) and ``census-labels`` (codes decoded to text). :func:`prepare_dataset` writes
``data/processed/<key>/{train,holdout}.parquet`` and a ``manifest.json``; later stages read them with
:func:`load_processed`. The holdout is never shown to a synthesizer; the baselines use it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from llmdisc.data.acs import (CENSUS_COLUMNS, CENSUS_NUMERICAL, CENSUS_TARGET, decode_census, load_census,
                              subsample)
from llmdisc.data.adult import (ADULT_COLUMNS, ADULT_NUMERICAL, ADULT_SHA256, ADULT_TARGET, adult_raw_dir,
                                load_adult)
from llmdisc.errors import ConfigError, DataError
from llmdisc.manifest import MANIFEST_NAME, write_manifest
from llmdisc.paths import data_dir, relative_to_root

__all__ = [
    "ADULT_COLUMNS", "ADULT_SHA256", "CENSUS_COLUMNS", "ENCODINGS", "SPLITS", "TARGET_COLUMN",
    "add_manifest_metrics", "adult_raw_dir", "column_kinds", "dataset_key", "load_adult", "load_dataset",
    "load_processed", "parse_dataset_key", "prepare_dataset", "processed_dir", "profile_table",
    "split_balance", "train_holdout_split",
]  # fmt: skip

TARGET_COLUMN: dict[str, str] = {"adult": ADULT_TARGET, "census": CENSUS_TARGET}
#: Encodings per dataset; the first is the default.
ENCODINGS: dict[str, tuple[str, ...]] = {"adult": ("labels",), "census": ("codes", "labels")}
SPLITS: tuple[str, ...] = ("train", "holdout")
STAGE = "01_data_prep"


def _check_dataset(dataset: str) -> str:
    if dataset not in ENCODINGS:
        raise ConfigError(f"unknown dataset {dataset!r}; fix: use one of {sorted(ENCODINGS)}")
    return dataset


def _check_encoding(dataset: str, encoding: str | None) -> str:
    options = ENCODINGS[_check_dataset(dataset)]
    if encoding is None or encoding == "":
        return options[0]
    if encoding not in options:
        raise ConfigError(f"unknown encoding {encoding!r} for dataset {dataset!r}; fix: use one of "
                          f"{list(options)} (or leave it empty for the default, {options[0]!r})")
    return encoding


def dataset_key(dataset: str, encoding: str | None = None) -> str:
    """``adult``, ``census-codes`` or ``census-labels``; ``encoding`` None or ``""``: the dataset's default.
    Raises ConfigError for an unknown dataset or encoding."""
    encoding = _check_encoding(dataset, encoding)
    return dataset if len(ENCODINGS[dataset]) == 1 else f"{dataset}-{encoding}"


def parse_dataset_key(key: str) -> tuple[str, str]:
    """Inverse of :func:`dataset_key`: ``"census-codes"`` -> ``("census", "codes")``; a bare name gives its
    default encoding. Raises ConfigError for an unknown key."""
    dataset, _, encoding = str(key).partition("-")
    if dataset not in ENCODINGS or (encoding and encoding not in ENCODINGS[dataset]):
        valid = sorted({dataset_key(d, e) for d, options in ENCODINGS.items() for e in options})
        raise ConfigError(f"unknown dataset key {key!r}; fix: use one of {valid}")
    return dataset, _check_encoding(dataset, encoding or None)


def _load(name: str, encoding: str | None, census_csv: str | Path | None, states: list[str] | None,
          n_rows: int | None, seed: int) -> tuple[pd.DataFrame, list[Path]]:
    encoding = _check_encoding(name, encoding)
    if name == "adult":
        if census_csv is not None or states:
            raise ConfigError("census_csv and states apply to dataset 'census' only; "
                              "fix: drop them for 'adult'")
        table, path = load_adult()
        return subsample(table, n_rows, seed, what="Adult rows"), [path]
    table, files = load_census(census_csv=census_csv, states=states, n_rows=n_rows, seed=seed)
    return (decode_census(table) if encoding == "labels" else table), files


def load_dataset(name: str, encoding: str | None = None, *, census_csv: str | Path | None = None,
                 states: list[str] | None = None, n_rows: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Load a real table in the requested encoding.

    Args:
        encoding: ``labels`` (Adult); ``codes`` (default) or ``labels`` (Census). None or ``""``: the default.
        census_csv, states: Census only: as :func:`~llmdisc.data.acs.load_census`.
        n_rows, seed: seeded subsample size (default: all rows; 32,561 for a folktables download).

    Returns:
        Adult: 30,162 x 15 (six ``int64``, nine strings). Census: 11 columns; ``codes`` all ``int64``,
        ``labels`` with the eight code columns as strings and age, hours and the 0/1 target as ``int64``.

    Raises:
        ConfigError: unknown dataset/encoding, or options that do not apply.
        DataError, ChecksumError: missing, corrupt or off-schema input.
    """
    return _load(_check_dataset(name), encoding, census_csv, states, n_rows, seed)[0]


def column_kinds(table_or_key: pd.DataFrame | str) -> dict[str, str]:
    """Map each column to ``"categorical"`` or ``"numerical"``, as declared to synthesizers and metrics.

    ``table_or_key`` is a DataFrame or a dataset key. Census code columns are categorical (so SDV invents no
    codes); an unknown table's numeric non-boolean dtypes are numerical.
    """
    if isinstance(table_or_key, str):
        dataset, _ = parse_dataset_key(table_or_key)
        columns = ADULT_COLUMNS if dataset == "adult" else CENSUS_COLUMNS
    else:
        columns = tuple(table_or_key.columns)
        known = {frozenset(ADULT_COLUMNS): "adult", frozenset(CENSUS_COLUMNS): "census"}
        dataset = known.get(frozenset(columns))
    if dataset is not None:
        numerical = ADULT_NUMERICAL if dataset == "adult" else CENSUS_NUMERICAL
        return {col: "numerical" if col in numerical else "categorical" for col in columns}
    return {col: "numerical" if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            else "categorical" for col, dtype in table_or_key.dtypes.items()}


def train_holdout_split(
    table: pd.DataFrame, *, holdout_fraction: float = 0.2, seed: int = 0, stratify_column: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split real rows into seeded (train, holdout), each with a fresh RangeIndex (row ids are positions).

    Args:
        holdout_fraction: share of rows in the holdout, strictly between 0 and 1 (0.2 = 80/20).
        stratify_column: column whose shares both parts keep; None: the table's target.

    Raises:
        ConfigError: fraction out of range, unknown stratify column, or no target to stratify on.
    """
    from sklearn.model_selection import train_test_split

    if not 0.0 < float(holdout_fraction) < 1.0:
        raise ConfigError(f"holdout_fraction={holdout_fraction} must be strictly between 0 and 1; "
                          f"fix: pass e.g. 0.2 for an 80/20 split")
    if stratify_column is None:
        targets = [c for c in TARGET_COLUMN.values() if c in table.columns]
        if not targets:
            raise ConfigError(f"table has no target column ({sorted(TARGET_COLUMN.values())}) to stratify "
                              f"on; fix: pass stratify_column=<one of {list(table.columns)}>")
        stratify_column = targets[0]
    if stratify_column not in table.columns:
        raise ConfigError(f"stratify_column {stratify_column!r} is not a column; "
                          f"fix: use one of {list(table.columns)}")
    train, holdout = train_test_split(table, test_size=float(holdout_fraction), random_state=seed,
                                      shuffle=True, stratify=table[stratify_column])
    return train.reset_index(drop=True), holdout.reset_index(drop=True)


def processed_dir(key: str) -> Path:
    """``data/processed/<key>`` (the key is checked)."""
    parse_dataset_key(key)
    return data_dir() / "processed" / key


def _shares(values: pd.Series) -> dict[str, float]:
    shares = values.astype(str).value_counts(normalize=True).sort_index()
    return {str(k): round(float(v), 6) for k, v in shares.items()}


def profile_table(table: pd.DataFrame, top_n: int = 5) -> pd.DataFrame:
    """One row per column (index ``column``): ``dtype``, ``kind``, ``unique``, ``missing``, and ``top_values``
    (the ``top_n`` most frequent values with their share of rows in %)."""
    kinds = column_kinds(table)
    rows = []
    for col in table.columns:
        top = table[col].value_counts(normalize=True).head(top_n)
        rows.append({"column": col, "dtype": str(table[col].dtype), "kind": kinds[col],
                     "unique": int(table[col].nunique()), "missing": int(table[col].isna().sum()),
                     "top_values": "; ".join(f"{str(v)[:40]} ({100 * s:.1f}%)" for v, s in top.items())})
    return pd.DataFrame(rows).set_index("column")


def split_balance(train: pd.DataFrame, holdout: pd.DataFrame, target: str) -> pd.DataFrame:
    """Share of each target value (in %) in train, holdout and both together; rows are target values."""
    parts = {"train": train[target], "holdout": holdout[target],
             "all": pd.concat([train[target], holdout[target]], ignore_index=True)}
    return pd.DataFrame({name: pd.Series(_shares(values)) * 100 for name, values in parts.items()}).round(2)


def prepare_dataset(dataset: str, encoding: str | None = None, *, seed: int = 0,
                    holdout_fraction: float = 0.2, census_csv: str | Path | None = None) -> Path:
    """Load a dataset, split it, write ``data/processed/<key>/{train,holdout}.parquet`` and ``manifest.json``.

    ``seed`` seeds the split (and a folktables subsample). Returns the folder written; its manifest records
    the inputs' and outputs' sha256, row counts and target shares.
    """
    key = dataset_key(_check_dataset(dataset), encoding)
    encoding = parse_dataset_key(key)[1]
    table, inputs = _load(dataset, encoding, census_csv, None, None, seed)
    train, holdout = train_holdout_split(table, holdout_fraction=holdout_fraction, seed=seed)
    folder = processed_dir(key)
    folder.mkdir(parents=True, exist_ok=True)
    outputs = []
    for split, part in zip(SPLITS, (train, holdout), strict=True):
        path = folder / f"{split}.parquet"
        part.to_parquet(path, index=False)
        outputs.append(path)
    target = TARGET_COLUMN[dataset]
    parameters = {"dataset": dataset, "encoding": encoding, "key": key, "seed": seed,
                  "holdout_fraction": float(holdout_fraction),
                  "source": [relative_to_root(p) for p in inputs]}
    metrics = {"rows": len(table), "columns": int(table.shape[1]), "train_rows": len(train),
               "holdout_rows": len(holdout), "target": target, "target_share": _shares(table[target]),
               "train_target_share": _shares(train[target]), "holdout_target_share": _shares(holdout[target])}
    extra = {"columns": list(table.columns), "dtypes": {c: str(t) for c, t in table.dtypes.items()},
             "column_kinds": column_kinds(key)}
    if dataset == "adult":  # the .gz hash is in "inputs"; this is the pristine content it was checked against
        extra["verified_content_sha256"] = {"adult.data": ADULT_SHA256["adult.data"]}
    write_manifest(folder, STAGE, inputs=inputs, outputs=outputs, parameters=parameters, seed=seed,
                   metrics=metrics, extra=extra)
    return folder


def load_processed(key: str, split: str = "train") -> pd.DataFrame:
    """Read ``data/processed/<key>/<split>.parquet`` written by :func:`prepare_dataset`.

    Raises:
        ConfigError: unknown key or split. DataError: the file is missing (names the command that writes it).
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; fix: use one of {list(SPLITS)}")
    dataset, encoding = parse_dataset_key(key)
    path = processed_dir(key) / f"{split}.parquet"
    if not path.is_file():
        raise DataError(f"{relative_to_root(path)} is missing; fix: run `llmdisc data prepare --dataset "
                        f"{dataset} --encoding {encoding}` (or notebook 01 with dataset={dataset!r}, "
                        f"encoding={encoding!r})")
    return pd.read_parquet(path)


def add_manifest_metrics(key: str, metrics: dict[str, object]) -> Path:
    """Merge ``metrics`` into ``metrics`` of ``data/processed/<key>/manifest.json`` (notebook 01's last cell);
    hashes and parameters are left untouched, so skip-by-hash still works. Raises DataError if none yet."""
    path = processed_dir(key) / MANIFEST_NAME
    if not path.is_file():
        raise DataError(f"{relative_to_root(path)} is missing; fix: run prepare_dataset for {key!r} first")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest.setdefault("metrics", {}).update(json.loads(json.dumps(metrics, default=str)))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
