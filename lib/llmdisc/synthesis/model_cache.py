"""Cache of fitted synthesizers and their sampled tables, keyed by everything that changes them.

An entry (:func:`entry_dir`) holds ``synthesizer.pkl``, ``synthetic.parquet`` and ``manifest.json``; its key is
the sha256 of :func:`cache_key_payload`. An entry is used only when its manifest records this exact key and both
files their recorded sha256; anything else is reported with an :class:`~llmdisc.errors.LlmdiscWarning`, removed
and refitted.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.determinism import arithmetic_key
from llmdisc.errors import LlmdiscWarning
from llmdisc.manifest import read_manifest, sha256_file, sha256_json, write_manifest

CACHE_FORMAT = 3  # bump when the entry layout or the fit/sampling procedure changes
MODEL_FILE = "synthesizer.pkl"
TABLE_FILE = "synthetic.parquet"
_KEYED_VERSIONS = ("sdv", "rdt", "ctgan", "copulas", "torch", "numpy", "pandas", "scikit-learn", "scipy")


def table_sha256(table: pd.DataFrame) -> str:
    """Return a sha256 of a table's content, column names and dtypes (row order matters, index does not)."""
    digest = hashlib.sha256()
    digest.update(sha256_json([[str(c), str(t)] for c, t in table.dtypes.items()]).encode())
    for column in table.columns:
        digest.update(pd.util.hash_pandas_object(table[column], index=False).to_numpy().tobytes())
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries whose code shapes a fitted model or its sample."""
    versions = {}
    for name in _KEYED_VERSIONS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def cache_key_payload(parameters: dict[str, Any], train_sha256: str) -> dict[str, Any]:
    """Everything that changes a release: its parameters, the training data's hash, library versions, and the
    kernels' instruction set (:func:`llmdisc.determinism.arithmetic_key`: a fit at another is another release)."""
    return {"format": CACHE_FORMAT, "parameters": parameters, "train_sha256": train_sha256,
            "versions": library_versions(), "kernels": arithmetic_key()}


def cache_key(payload: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``payload``."""
    return sha256_json(payload)


def entry_dir(cache_root: Path, dataset_key: str, synthesizer: str, key: str) -> Path:
    """``<cache_root>/<dataset_key>/cache/<synthesizer>-<first 16 hex of key>``."""
    return Path(cache_root) / dataset_key / "cache" / f"{synthesizer}-{key[:16]}"


def _discard(directory: Path, problem: str) -> None:
    """Warn that the entry is unusable and remove it; returns None, for ``return _discard(...)``."""
    warnings.warn(
        f"cached synthetic release {directory.name} is unusable ({problem}); it was removed and "
        "the synthesizer is refitted", LlmdiscWarning, stacklevel=3)
    shutil.rmtree(directory, ignore_errors=True)


def load_entry(directory: Path, key: str, num_rows: int) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Return ``(table, manifest)`` of a valid cache entry, or None (with a warning if it was invalid).

    Besides the hashes, the table must have ``num_rows`` rows; the pickle is verified but not unpickled.
    """
    directory = Path(directory)
    if not directory.exists():
        return None
    manifest = read_manifest(directory)
    if manifest is None:
        return _discard(directory, "manifest.json missing or unreadable")
    if manifest.get("cache_key") != key:
        return _discard(directory, f"its manifest records key {str(manifest.get('cache_key'))[:16]}…, "
                        f"expected {key[:16]}…")
    recorded = manifest.get("files", {})
    for name in (MODEL_FILE, TABLE_FILE):
        path = directory / name
        if not path.exists():
            return _discard(directory, f"{name} is missing")
        if sha256_file(path) != recorded.get(name):
            return _discard(directory, f"{name} does not match its recorded sha256 (truncated or modified)")
    try:
        table = pd.read_parquet(directory / TABLE_FILE)
    except Exception as exc:  # noqa: BLE001 — any read failure means the entry cannot be used
        return _discard(directory, f"{TABLE_FILE} cannot be read: {type(exc).__name__}: {exc}")
    if len(table) != num_rows:
        return _discard(directory, f"{TABLE_FILE} has {len(table)} rows, expected {num_rows}")
    return table, manifest


def store_entry(directory: Path, *, model: Any, table: pd.DataFrame, key: str, payload: dict[str, Any],
                seed: int, metrics: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Write the model pickle, the table and the manifest of one entry (each via a temporary name, so an
    interrupted write never looks valid); return the manifest."""
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    model_tmp = directory / (MODEL_FILE + ".tmp")
    model.save(str(model_tmp))
    model_tmp.replace(directory / MODEL_FILE)
    table_tmp = directory / (TABLE_FILE + ".tmp")
    table.to_parquet(table_tmp, index=False)
    table_tmp.replace(directory / TABLE_FILE)
    files = {name: sha256_file(directory / name) for name in (MODEL_FILE, TABLE_FILE)}
    write_manifest(directory, "synth", outputs=[directory / MODEL_FILE, directory / TABLE_FILE],
                   parameters=payload["parameters"], seed=seed, metrics=metrics,
                   extra={"cache_key": key, "cache_key_payload": payload, "files": files, **extra})
    manifest = read_manifest(directory)
    assert manifest is not None
    return manifest
