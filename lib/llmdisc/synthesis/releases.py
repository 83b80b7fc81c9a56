"""Stage 02: seeded, cached SDV releases (GaussianCopula, CTGAN, TVAE) of a real training table.

Typical use::

    release = synthesize(train, dataset_key="adult", synthesizer="ctgan", epochs=5, seed=0)
    publish_release(release)              # data/synthetic/adult/ctgan.parquet (+ ctgan.manifest.json)
    synthetic = load_synthetic("adult", "ctgan")

The same parameters and library versions give the same table, loaded from the cache the second time.
"""

from __future__ import annotations

import logging
import numbers
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc import PAPER_RELEASES, RELEASES
from llmdisc.errors import ChecksumError, ConfigError, DataError, LlmdiscError
from llmdisc.manifest import read_manifest, sha256_file, write_manifest
from llmdisc.paths import data_dir, relative_to_root
from llmdisc.synthesis.fit import (COLUMN_KINDS, METADATA_MODES, NEURAL_SYNTHESIZERS, SYNTHESIZERS,
                                   check_metadata_mode, check_synthesizer, fit_and_sample, torch_threads)
from llmdisc.synthesis.model_cache import (TABLE_FILE, cache_key, cache_key_payload, entry_dir, load_entry,
                                           store_entry, table_sha256)

__all__ = ["SYNTHESIZERS", "METADATA_MODES", "SyntheticRelease", "synthesize", "out_of_vocabulary",
           "synthetic_path", "publish_release", "publish_paper_release", "paper_releases_for", "load_synthetic",
           "quality_report", "resolve_column_kinds"]

PAPER_RELEASE_KEYS = ("census-codes",)

logger = logging.getLogger(__name__)


@dataclass
class SyntheticRelease:
    """One synthetic table and where it came from.

    Attributes:
        cache_key: full sha256 hex of everything that determines the table.
        cache_hit: True when the table was loaded from the cache and no fit ran.
        fit_seconds, sample_seconds: wall-clock seconds of ``fit`` (with SDV's preprocessing) and ``sample``;
            None on a cache hit.
        path: the cached ``synthetic.parquet``; ``manifest``: its cache entry's manifest.
    """

    table: pd.DataFrame
    synthesizer: str
    dataset_key: str
    cache_key: str
    cache_hit: bool
    fit_seconds: float | None
    sample_seconds: float | None
    path: Path
    manifest: dict[str, Any]


def resolve_column_kinds(train: pd.DataFrame, dataset_key: str,
                         column_kinds: dict[str, str] | None) -> dict[str, str]:
    """Return validated ``{column: "categorical"|"numerical"}`` for every column of ``train``.

    Explicit ``column_kinds`` win; else the kinds :mod:`llmdisc.data.datasets` declares for ``dataset_key``,
    or for ``train``'s columns when it does not know the key.

    Raises:
        ConfigError: a kind is unknown or a column has no kind.
    """
    from llmdisc.data.datasets import column_kinds as declared_kinds  # data layer (stage 01)

    kinds = column_kinds
    if kinds is None:
        try:
            kinds = declared_kinds(dataset_key)
        except (LlmdiscError, KeyError, ValueError):  # not a dataset the data layer knows
            kinds = declared_kinds(train)
    missing = [c for c in train.columns if c not in kinds]
    if missing:
        raise ConfigError(f"column_kinds has no kind for columns {missing}; fix: give each column "
                          f"'categorical' or 'numerical' (or use metadata_mode='detected')")
    bad = {c: kinds[c] for c in train.columns if kinds[c] not in COLUMN_KINDS}
    if bad:
        raise ConfigError(f"column_kinds {bad} not understood; valid kinds: {', '.join(COLUMN_KINDS)}")
    return {str(c): kinds[c] for c in train.columns}


def _check_rows(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                              or value < 1):
        raise ConfigError(f"{name}={value!r} must be a positive integer of rows (fix: e.g. {name}=1000, "
                          f"or None for all rows)")


def synthesize(train: pd.DataFrame, *, dataset_key: str, synthesizer: str, seed: int = 0,
               epochs: int | None = None, metadata_mode: str = "declared",
               column_kinds: dict[str, str] | None = None, num_rows: int | None = None,
               fit_rows: int | None = None, cache_root: Path | None = None,
               show_progress: bool = True) -> SyntheticRelease:
    """Fit ``synthesizer`` on the real training table and sample a release, or load it from the cache.

    Args:
        train: the real *train* split (never the holdout).
        dataset_key: names the cache folder and the published file (``adult``, ``census-codes``, …).
        seed: seeds the fit subsample, model fitting (NumPy, ``random``, torch) and sampling.
        epochs: training epochs for ``ctgan``/``tvae`` (None: SDV's default of 300, the paper scale);
            not used by ``gaussian_copula`` (and not part of its cache key).
        metadata_mode: ``declared`` (column kinds → sdtypes; integer codes stay categorical) or
            ``detected`` (SDV's auto-detection, as the paper; invents codes).
        column_kinds: kinds for ``declared``; None looks them up via :func:`resolve_column_kinds`.
        num_rows: rows to sample (None: ``len(train)``); ``fit_rows``: fit on a seeded subsample (None: all).
        cache_root: folder replacing ``data/synthetic`` for the cache.

    Raises:
        ConfigError: unknown synthesizer or metadata mode, bad row counts, epochs, seed or column kinds.
        DataError: ``train`` is empty.
    """
    check_synthesizer(synthesizer)
    check_metadata_mode(metadata_mode)
    if not isinstance(train, pd.DataFrame) or train.empty:
        raise DataError("train must be a non-empty DataFrame (fix: pass load_processed(key, 'train'))")
    _check_rows("num_rows", num_rows)
    _check_rows("fit_rows", fit_rows)
    if epochs is not None and (not isinstance(epochs, numbers.Integral) or isinstance(epochs, bool) or epochs < 1):
        raise ConfigError(f"epochs={epochs!r} must be a positive integer (fix: e.g. epochs=5, or None for 300)")
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed={seed!r} must be an integer in [0, 2**32) (fix: e.g. seed=0)")
    train = train.reset_index(drop=True)
    train.columns = [str(c) for c in train.columns]
    kinds = resolve_column_kinds(train, dataset_key, column_kinds) if metadata_mode == "declared" else None
    n_out = len(train) if num_rows is None else num_rows
    use_fit_rows = fit_rows if fit_rows is not None and fit_rows < len(train) else None
    parameters = {"dataset_key": dataset_key, "synthesizer": synthesizer, "seed": seed,
                  "epochs": epochs if synthesizer in NEURAL_SYNTHESIZERS else None,
                  "metadata_mode": metadata_mode, "column_kinds": kinds, "num_rows": n_out,
                  "fit_rows": use_fit_rows, "n_train_rows": len(train)}
    train_hash = table_sha256(train)
    payload = cache_key_payload(parameters, train_hash)
    key = cache_key(payload)
    root = Path(cache_root) if cache_root is not None else data_dir() / "synthetic"
    directory = entry_dir(root, dataset_key, synthesizer, key)
    release = partial(SyntheticRelease, synthesizer=synthesizer, dataset_key=dataset_key, cache_key=key,
                      path=directory / TABLE_FILE)

    start = time.perf_counter()
    cached = load_entry(directory, key, n_out)
    if cached is not None:
        logger.info("cache hit for %s/%s (%s): loaded in %.2f s, no fit", dataset_key, synthesizer, key[:16],
                    time.perf_counter() - start)
        return release(table=cached[0], manifest=cached[1], cache_hit=True, fit_seconds=None,
                       sample_seconds=None)

    fit_table = train.sample(n=use_fit_rows, random_state=seed).reset_index(drop=True) if use_fit_rows else train
    result = fit_and_sample(fit_table, synthesizer=synthesizer, seed=seed, epochs=epochs,
                            metadata_mode=metadata_mode, column_kinds=kinds, num_rows=n_out,
                            show_progress=show_progress)
    oov = out_of_vocabulary(train, result.table)
    # Invented values matter for categories and codes; continuous columns take new values by design.
    report_kinds = kinds or resolve_column_kinds(train, dataset_key, None)
    categorical = [c for c in oov.index if report_kinds.get(c) == "categorical"]
    metrics = {"fit_seconds": round(result.fit_seconds, 3), "sample_seconds": round(result.sample_seconds, 3),
               "n_rows": len(result.table), "n_fit_rows": len(fit_table),
               "n_oov_values_total": int(oov["n_synthetic_values_not_in_real"].sum()),
               "n_oov_values_categorical": int(oov.loc[categorical, "n_synthetic_values_not_in_real"].sum()),
               "torch_threads": torch_threads()}
    extra: dict[str, Any] = {"train_sha256": train_hash, "synthetic_sha256": table_sha256(result.table),
                             "sdv_metadata": result.metadata,
                             "oov": oov.reset_index().to_dict(orient="records")}
    if result.loss_values is not None and not result.loss_values.empty:
        extra["final_losses"] = result.loss_values.groupby("Epoch").mean(numeric_only=True).iloc[-1].to_dict()
    manifest = store_entry(directory, model=result.model, table=result.table, key=key, payload=payload,
                           seed=seed, metrics=metrics, extra=extra)
    return release(table=result.table, manifest=manifest, cache_hit=False, fit_seconds=result.fit_seconds,
                   sample_seconds=result.sample_seconds)


def out_of_vocabulary(real: pd.DataFrame, synthetic: pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """Count, per column (default: those both tables share, in ``real``'s order), synthetic values that never
    occur in ``real`` (the full train split): invented codes. New values are expected in continuous columns.

    Returns one row per column (index ``column``): ``n_synthetic_values_not_in_real`` (distinct invented
    values), ``n_distinct_synthetic``, ``n_distinct_real``, ``share_rows_oov`` (share of synthetic rows with
    one, 0–1).
    """
    if columns is None:
        columns = [c for c in real.columns if c in synthetic.columns]
    missing = [c for c in columns if c not in real.columns or c not in synthetic.columns]
    if missing:
        raise DataError(f"columns {missing} are not in both tables (fix: pass columns present in real and synthetic)")
    rows = []
    for column in columns:
        real_values = pd.unique(real[column])
        is_oov = ~synthetic[column].isin(real_values)
        rows.append({
            "column": column,
            "n_synthetic_values_not_in_real": int(synthetic.loc[is_oov, column].nunique(dropna=False)),
            "n_distinct_synthetic": int(synthetic[column].nunique(dropna=False)),
            "n_distinct_real": int(real[column].nunique(dropna=False)),
            "share_rows_oov": float(is_oov.mean()) if len(synthetic) else 0.0})
    return pd.DataFrame(rows).set_index("column")


def synthetic_path(key: str, synthesizer: str) -> Path:
    """``data/synthetic/<key>/<synthesizer>.parquet``; its manifest is ``<synthesizer>.manifest.json`` beside it.

    ``synthesizer`` is one of :data:`llmdisc.RELEASES` (ours, or ``paper_<name>`` for the paper's own), else
    ConfigError."""
    if synthesizer not in RELEASES:
        raise ConfigError(f"unknown release {synthesizer!r}; valid releases: {', '.join(RELEASES)} "
                          "(fix: pass one of them; paper_* are the paper's own Census releases)")
    return data_dir() / "synthetic" / key / f"{synthesizer}.parquet"


def _published_manifest_path(key: str, synthesizer: str) -> Path:
    return synthetic_path(key, synthesizer).with_name(f"{synthesizer}.manifest.json")


def _publish(table: pd.DataFrame, key: str, synthesizer: str, **manifest: Any) -> Path:
    """Write ``table`` to :func:`synthetic_path` (via a temporary name: an interrupted write leaves no partial
    release) and its manifest beside it; return the parquet path."""
    path = synthetic_path(key, synthesizer)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    table.to_parquet(tmp, index=False)
    tmp.replace(path)
    write_manifest(path.parent, "02_synthesis", outputs=[path],
                   name=_published_manifest_path(key, synthesizer).name, **manifest)
    return path


def publish_release(release: SyntheticRelease) -> Path:
    """Write ``release.table`` to :func:`synthetic_path` with a manifest copied from its cache entry (and
    naming it); return the parquet path."""
    source = release.manifest
    return _publish(
        release.table, release.dataset_key, release.synthesizer, parameters=source.get("parameters", {}),
        seed=source.get("seed"), metrics=source.get("metrics"),
        extra={"cache_key": release.cache_key, "cache_entry": relative_to_root(release.path.parent),
               "cache_hit": release.cache_hit, "train_sha256": source.get("train_sha256"),
               "sdv_metadata": source.get("sdv_metadata"), "oov": source.get("oov"),
               "fit_versions": source.get("versions")})


def paper_releases_for(dataset_key: str) -> list[str]:
    """The paper's releases that can be cells of ``dataset_key``: every one in :data:`llmdisc.PAPER_RELEASES`
    whose file is in the reference folder, for a key in the paper's own encoding (``census-codes``); else none."""
    from llmdisc.data.reference import RELEASE_PATH  # data layer (stage 01)
    from llmdisc.paths import reference_dir

    ref = reference_dir()
    if dataset_key not in PAPER_RELEASE_KEYS or ref is None:
        return []
    return [name for name in PAPER_RELEASES
            if (ref / RELEASE_PATH.format(synthesizer=name.removeprefix("paper_"))).is_file()]


def publish_paper_release(dataset_key: str, name: str, train: pd.DataFrame) -> Path:
    """Publish the paper's own release ``name`` (``paper_ctgan`` …) as a cell of ``dataset_key``.

    Read from the reference folder, checked against ``train``'s columns and dtypes, and written to
    :func:`synthetic_path`; its manifest states that the paper fitted it on every real row (our holdout included:
    distance-based tests against the holdout are not valid on it). Returns the parquet path.

    Raises:
        ConfigError: ``name`` is not a paper release, or ``dataset_key`` is not in the paper's encoding.
        ReferenceMissingError: the file is not on this machine (fix: ``llmdisc data fetch-reference``).
        DataError: its columns or dtypes differ from ``train``'s.
    """
    from llmdisc.data.reference import RELEASE_PATH, load_paper_release, paper_release_path  # data layer

    if name not in PAPER_RELEASES:
        raise ConfigError(f"{name!r} is not one of the paper's releases; fix: use one of {', '.join(PAPER_RELEASES)}")
    if dataset_key not in PAPER_RELEASE_KEYS:
        raise ConfigError(f"the paper's releases are in the encoding of {', '.join(PAPER_RELEASE_KEYS)}, not "
                          f"{dataset_key!r}; fix: add them to a census-codes run")
    synthesizer = name.removeprefix("paper_")
    table = load_paper_release(synthesizer)
    if list(table.columns) != list(train.columns) or dict(table.dtypes) != dict(train.dtypes):
        raise DataError(f"the paper's {synthesizer} release has columns {dict(table.dtypes)}, the {dataset_key} "
                        f"train split {dict(train.dtypes)}; fix: re-run notebooks/01_data_prep.ipynb for "
                        f"{dataset_key} on the paper's extract, or restore the release with "
                        "`llmdisc data fetch-reference`")
    return _publish(
        table, dataset_key, name, inputs=[paper_release_path(synthesizer)],
        parameters={"dataset_key": dataset_key, "synthesizer": synthesizer, "release": name,
                    "source": RELEASE_PATH.format(synthesizer=synthesizer), "num_rows": len(table)},
        extra={"fitted_by": "the paper (SDV defaults) on all 32,561 rows of its Census extract",
               "holdout_in_training": True,
               "note": "our holdout rows were in this release's training data: distance-based tests against "
                       "the holdout are not valid on it"})


def load_synthetic(key: str, synthesizer: str) -> pd.DataFrame:
    """Read a published release, checking it against its manifest.

    Raises:
        DataError: the release was never published. ChecksumError: the file differs from its manifest.
    """
    path = synthetic_path(key, synthesizer)
    fix = (f"fix: run `llmdisc synth --dataset-key {key} --synthesizers {synthesizer}` "
           "or notebooks/02_synthesis.ipynb")
    if synthesizer in PAPER_RELEASES:
        fix = ("fix: run notebooks/02_synthesis.ipynb with paper_releases (`llmdisc run`; it needs the paper's files: "
               "`llmdisc data fetch-reference`)")
    if not path.exists():
        raise DataError(f"no synthetic release at {relative_to_root(path)}; {fix}")
    manifest = read_manifest(_published_manifest_path(key, synthesizer))
    if manifest is not None:
        recorded = next(iter(manifest.get("outputs", {}).values()), None)
        actual = sha256_file(path)
        if recorded is not None and recorded != actual:
            raise ChecksumError(f"{relative_to_root(path)} has sha256 {actual}, its manifest records {recorded}; "
                                f"{fix}")
    return pd.read_parquet(path)


def quality_report(real: pd.DataFrame, synthetic: pd.DataFrame, column_kinds: dict[str, str]) -> dict[str, Any]:
    """SDMetrics ``QualityReport`` of a release against the real train table, columns compared by
    ``column_kinds``: ``{"score": float, "properties", "column_shapes", "column_pair_trends": DataFrame}``; scores
    in [0, 1] (1: marginals and pairwise trends match exactly); detail tables sorted worst first."""
    import warnings

    with warnings.catch_warnings():
        # sdmetrics 0.32 marks the single-table report deprecated; it is still the documented one.
        warnings.simplefilter("ignore", FutureWarning)
        from sdmetrics.reports.single_table import QualityReport

    metadata = {"columns": {c: {"sdtype": column_kinds[c]} for c in real.columns}}
    report = QualityReport()
    report.generate(real, synthetic[list(real.columns)], metadata, verbose=False)
    shapes = report.get_details("Column Shapes").sort_values("Score").reset_index(drop=True)
    trends = report.get_details("Column Pair Trends").sort_values("Score").reset_index(drop=True)
    return {"score": float(report.get_score()), "properties": report.get_properties(),
            "column_shapes": shapes, "column_pair_trends": trends}
