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


def append_record(path: Path | str, record: LikelihoodRecord) -> None:
    """Append one record as a line, flushed to disk (a killed run loses at most the line being written)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(record.to_json() + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def load_likelihood(path_or_dir: Path | str) -> pd.DataFrame:
    """Load records into a DataFrame, columns :data:`RECORD_COLUMNS` (dict/list columns kept as Python objects).

    Args:
        path_or_dir: A ``<run>.jsonl`` file or a folder searched recursively for ``*.jsonl``.

    Raises:
        DataError: the path does not exist.
    """
    path = Path(path_or_dir)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.jsonl"))
    elif path.is_file():
        files = [path]
    else:
        raise DataError(f"no likelihood records at {path.name!r}; fix: run notebooks/09_likelihood.ipynb or "
                        "llmdisc.discrimination.likelihood.runs.run_likelihood first")
    rows: list[dict[str, Any]] = []
    for file in files:
        rows.extend(read_records(file)[0].values())
    frame = pd.DataFrame(rows)
    for column in RECORD_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object")
    return frame.loc[:, list(RECORD_COLUMNS)].reset_index(drop=True)
