"""The per-sample likelihood record, and reading and writing ``results/likelihood/<run>.jsonl``.

One :class:`LikelihoodRecord` per line, one line per ``sample_id`` (a re-run appends only what is missing; a
reader keeps the last line of an id and skips a torn last line, counting it).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.errors import DataError

SAMPLE_ROLES = ("test", "reference", "control")
"""``test``: the real (holdout) or synthetic class of the AUC and the DRS; ``reference``: separate real holdout
samples that set the decision rule's band; ``control``: real train samples of the real-vs-real control."""


@dataclass
class LikelihoodRecord:
    """One scored sample: where its rows came from, how it was shown, and its scores (nats)."""

    sample_id: str
    """``dataset_key|source|role|index``: unique within a run."""
    timestamp: str
    dataset: str
    encoding: str
    dataset_key: str
    source: str
    """Table the rows came from: ``holdout``, ``train``, a synthesizer, or ``shuffled_columns``."""
    role: str
    """One of :data:`SAMPLE_ROLES`."""
    true_label: str
    """``REAL`` (holdout or train rows) or ``SYNTHETIC`` (a release or the positive control)."""
    index: int
    run_seed: int
    sample_seed: int
    row_ids: list[int]
    """Positional ids of the rows in the source table, in the order shown."""
    n_rows: int
    serialisation: str
    context: str
    prompt_variant: str
    text_hash: str
    """sha256 of the whole scored text (equal hashes = byte-identical input)."""
    backend: str
    model: str
    model_digest: str
    """sha256 of the GGUF weights."""
    prompt_tokens: int
    """Tokens of the scored text up to the end of the sample."""
    n_tokens: int
    total_logprob: float
    mean_logprob: float
    min_k_logprob: float
    min_k_fraction: float
    column_logprob: dict[str, float]
    column_tokens: dict[str, int]
    row_logprob: list[float]
    header_logprob: float
    layout_logprob: float
    straddling_tokens: int
    seconds: float

    def to_json(self) -> str:
        """One line of JSON, UTF-8 characters kept."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


RECORD_COLUMNS = tuple(f.name for f in fields(LikelihoodRecord))


@dataclass
class JointRecord:
    """One sample's joint-structure contrast (:mod:`~.joint`): where its rows and reference rows came from, how it
    was shown, every permutation's seed and score, C, its p-values and its split by column (nats)."""

    sample_id: str
    """``dataset_key|source|role|index``, as :class:`LikelihoodRecord`'s."""
    timestamp: str
    dataset: str
    encoding: str
    dataset_key: str
    source: str
    role: str
    true_label: str
    index: int
    run_seed: int
    sample_seed: int
    row_ids: list[int]
    """Positional ids of the sample's rows in the source table, in the order shown."""
    n_rows: int
    reference_rows: int
    """m: real holdout rows shown before the sample (0 = none)."""
    reference_seed: int | None
    reference_row_ids: list[int]
    """Positional ids of the reference rows in the holdout (never in a holdout sample of the same run)."""
    serialisation: str
    context: str
    prompt_variant: str
    text_hash: str
    """sha256 of the sample's whole scored text (prompt, header, reference rows, sample rows)."""
    backend: str
    model: str
    model_digest: str
    k: int
    seed: int
    """Joint seed: ``derive_seed(run_seed, sample_id, "joint")``; the permutation seeds and the uniform derive
    from it."""
    permutation_seeds: list[int]
    uniform: float
    logprob: float
    permuted_logprobs: list[float]
    contrast: float
    contrast_std: float
    p_value: float
    p_randomised: float
    n_tokens: int
    column_logprob: dict[str, float]
    permuted_column_logprob: list[dict[str, float]]
    header_logprob: float
    layout_logprob: float
    permuted_header_logprob: list[float]
    permuted_layout_logprob: list[float]
    column_contrast: dict[str, float]
    header_contrast: float
    layout_contrast: float
    constant_columns: list[str]
    prompt_tokens: int
    prefix_tokens: int
    prefix_run: int
    tokens_run: int
    seconds: float
    column_k: int
    """Permutations per column of :attr:`column_contrasts` (0 = not measured)."""
    column_contrasts: dict[str, float] | None
    column_seeds: dict[str, list[int]] | None
    column_permuted_logprobs: dict[str, list[float]] | None
    column_seconds: float

    def to_json(self) -> str:
        """One line of JSON, UTF-8 characters kept (NaN written as NaN, as json does)."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


JOINT_RECORD_COLUMNS = tuple(f.name for f in fields(JointRecord))


def read_records(path: Path | str) -> tuple[dict[str, dict[str, Any]], int]:
    """Read a likelihood JSONL file tolerantly.

    Returns:
        ``({sample_id: record}, skipped)``: the last line of each id wins; ``skipped`` counts lines that were
        not a record (a torn last line). A missing file reads as empty.
    """
    path = Path(path)
    if not path.exists():
        return {}, 0
    found: dict[str, dict[str, Any]] = {}
    skipped = 0
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
            if not isinstance(record, dict) or not isinstance(record.get("sample_id"), str):
                raise ValueError
        except (ValueError, UnicodeDecodeError):
            skipped += 1
            continue
        found.pop(record["sample_id"], None)
        found[record["sample_id"]] = record
    return found, skipped


def write_records(path: Path | str, records: list[dict[str, Any]]) -> None:
    """Replace ``path`` with exactly these records (temporary file + ``os.replace``: never a mix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def open_run_file(path: Path | str) -> dict[str, dict[str, Any]]:
    """The records already in a run file (``{sample_id: record}``), after repairing it for appending: a torn
    last line or any unreadable line is dropped by rewriting the file. Creates the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    existing, skipped_lines = read_records(path)
    if skipped_lines or (path.exists() and path.read_bytes()[-1:] not in (b"", b"\n")):
        write_records(path, list(existing.values()))  # repair a torn file before appending
    return existing


def close_run_file(path: Path | str, existing: dict[str, dict[str, Any]]) -> None:
    """Keep one line per sample: rewrite the file when re-scored samples left superseded lines."""
    path = Path(path)
    if path.exists() and len(existing) != sum(1 for line in path.read_bytes().split(b"\n") if line.strip()):
        write_records(path, list(existing.values()))


def append_record(path: Path | str, record: LikelihoodRecord | JointRecord) -> None:
    """Append one record as a line, flushed to disk (a killed run loses at most the line being written)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(record.to_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def _load(path_or_dir: Path | str, columns: tuple[str, ...], what: str, marker: str,
          recursive: bool = True) -> pd.DataFrame:
    """Records of one kind (those holding ``marker``) from a file or a folder, in ``columns``."""
    path = Path(path_or_dir)
    if path.is_dir():
        files = sorted(p for p in (path.rglob("*.jsonl") if recursive else path.glob("*.jsonl")))
    elif path.is_file():
        files = [path]
    else:
        raise DataError(f"no {what} records at {path.name!r}; fix: run notebooks/09_likelihood.ipynb or "
                        "llmdisc.discrimination.likelihood.runs.run_likelihood first")
    rows: list[dict[str, Any]] = []
    for file in files:
        rows.extend(r for r in read_records(file)[0].values() if marker in r)
    frame = pd.DataFrame(rows)
    for column in columns:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object")
    return frame.loc[:, list(columns)].reset_index(drop=True)


def load_joint(path_or_dir: Path | str, *, recursive: bool = True) -> pd.DataFrame:
    """Load joint-structure records (:class:`JointRecord`) into a DataFrame, columns :data:`JOINT_RECORD_COLUMNS`.

    Args:
        path_or_dir: A ``<run>.jsonl`` file or a folder (only joint records are kept).
        recursive: Search the folder's subfolders too; False reads only its own files (notebook 09: the
            pipeline's runs, not the design study's records under ``design/``).

    Raises:
        DataError: the path does not exist.
    """
    return _load(path_or_dir, JOINT_RECORD_COLUMNS, "joint-structure", "contrast", recursive)


def load_likelihood(path_or_dir: Path | str) -> pd.DataFrame:
    """Load records into a DataFrame, columns :data:`RECORD_COLUMNS` (dict/list columns kept as Python objects).

    Args:
        path_or_dir: A ``<run>.jsonl`` file or a folder searched recursively for ``*.jsonl`` (joint-structure
            records, :class:`JointRecord`, are left out).

    Raises:
        DataError: the path does not exist.
    """
    return _load(path_or_dir, RECORD_COLUMNS, "likelihood", "mean_logprob")
