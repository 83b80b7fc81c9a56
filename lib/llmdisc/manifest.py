"""``manifest.json`` beside every product: inputs' hashes, parameters, seed, versions, kernels, outputs' hashes.

The pipeline skips a notebook only when hashes say nothing changed
(:func:`llmdisc.pipeline.runs.is_current`); file times are never used.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import platform
from pathlib import Path
from typing import Any, Iterable, Mapping

from llmdisc.determinism import kernel_record
from llmdisc.paths import relative_to_root

MANIFEST_NAME = "manifest.json"
_VERSIONED = ("llmdisc", "pandas", "numpy", "scipy", "scikit-learn", "sdv", "sdmetrics", "torch",
              "papermill", "xllamacpp", "google-genai", "ollama", "openai")


def sha256_file(path: Path | str, chunk_size: int = 1 << 20) -> str:
    """Return the hex sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` deterministically (sorted keys, no spaces, UTF-8 kept) for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_json(obj: Any) -> str:
    """Return the hex sha256 of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def package_versions(names: Iterable[str] = _VERSIONED) -> dict[str, str]:
    """Return installed versions of the packages that shape results (missing ones omitted), plus Python."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def hash_files(paths: Iterable[Path | str]) -> dict[str, str]:
    """Map each file (as a root-relative path) to its sha256."""
    return {relative_to_root(p): sha256_file(p) for p in paths}


def write_manifest(directory: Path | str, stage: str, *, inputs: Iterable[Path | str] = (),
                   outputs: Iterable[Path | str] = (), parameters: Mapping[str, Any] | None = None,
                   seed: int | None = None, metrics: Mapping[str, Any] | None = None,
                   extra: Mapping[str, Any] | None = None, name: str = MANIFEST_NAME) -> Path:
    """Write ``<directory>/<name>`` describing one product and return its path.

    Args:
        directory: folder of the product; created if missing.
        stage: the stage that wrote it (``"01_data_prep"``, ``"synth"``, …).
        inputs, outputs: files the product was computed from, and its files (hashed now).
        parameters: every parameter that changes the product (JSON-serialisable).
        metrics: key numbers of the product (row counts, scores) that tests and the README read back.
        extra: anything else worth recording, merged at the top level.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "stage": stage, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "parameters": dict(parameters or {}), "parameters_sha256": sha256_json(dict(parameters or {})),
        "seed": seed, "inputs": hash_files(inputs), "outputs": hash_files(outputs),
        "versions": package_versions(),
        "kernels": kernel_record(),  # the instruction set the numbers were computed with (llmdisc.determinism)
        **({"metrics": dict(metrics)} if metrics else {}), **(extra or {})}
    path = directory / name
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)  # atomic: a crash never leaves half a manifest
    return path


def read_manifest(path: Path | str) -> dict[str, Any] | None:
    """Read a manifest (a file, or a folder holding ``manifest.json``); None if missing or unreadable."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
