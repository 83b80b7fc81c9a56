"""The trial record (docs/ARCHITECTURE.md), and the JSONL record files of the trials and the likelihood runs.

One record per line, one line per id: :func:`append_record` writes, :func:`read_by_id` reads tolerantly (torn
lines skipped, the last record of an id wins), :func:`write_atomically` repairs, :func:`load_trials` loads a table.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from llmdisc.discrimination.cache import append_line
from llmdisc.errors import DataError, LlmdiscWarning
from llmdisc.paths import relative_to_root

PROTOCOL_COLUMNS = ("prompt_variant", "metadata_source", "sampling", "scoring", "label_method", "config_name")
"""Part of every cell key, so trials of different protocols, label-score methods or run configurations are never
pooled into one cell."""

CELL_KEY = ("dataset_key", "synthetic_method", "condition", "provider", "model", *PROTOCOL_COLUMNS)
"""Columns of a scoring cell of a trial table: never pooled across datasets, providers, models or protocols."""

def cell_columns(trials: Any, base: tuple[str, ...] | list[str] = CELL_KEY[:5]) -> list[str]:
    """``base`` and every :data:`PROTOCOL_COLUMNS` the table holds: the cell key of ``trials`` (a table without
    them is one protocol)."""
    return [*base, *(c for c in PROTOCOL_COLUMNS if c in trials and c not in base)]


UNRECORDED_CONFIG = "unrecorded"
"""``config_name`` of records written before the field existed, or outside a configured run."""


@dataclass
class TrialRecord:
    """One trial: the paper's fields first, then ours (docs/ARCHITECTURE.md, "The trial record")."""

    trial_id: str
    """Deterministic id within the queue: ``dataset_key|synthesizer|condition|label|index|r<replicate>``."""
    timestamp: str
    """UTC time the trial finished, ISO 8601."""
    provider: str
    model: str
    """Model id asked for (never substituted)."""
    condition: str
    true_label: str
    predicted_label: str | None
    """``REAL``/``SYNTHETIC`` for valid trials, else None (so is ``correct``)."""
    correct: bool | None
    confidence: int | None
    """Model's confidence 0–100 for valid trials (None otherwise)."""
    reasoning: str | None
    red_flags: list[str]
    supporting_evidence: list[str]
    synthetic_method: str
    """Synthesizer of the cell (also for REAL samples: it names the cell the trial belongs to)."""
    run_id: str
    dataset: str
    encoding: str
    """``labels`` or ``codes`` (see :func:`llmdisc.data.datasets.parse_dataset_key`)."""
    dataset_key: str
    sampling: str
    sample_seed: int
    row_ids: list[int]
    """Positional row ids of the sample in its source table."""
    n_rows: int
    prompt_variant: str
    metadata_source: str
    prompt_hash: str
    """sha256 of system text, user text and schema; equal hashes = byte-identical prompts."""
    model_digest: str | None
    """Version the service reported with the answer, else the digest/weights hash known beforehand."""
    latency_s: float | None
    """Seconds of the successful call (the original call's for cache hits)."""
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int
    """Calls made for this trial (0 for a cache hit; retries included)."""
    cache_hit: bool
    status: str
    """``valid``, ``invalid`` (answered, failed the schema) or ``error`` (no answer after retries)."""
    invalid_reason: str | None
    """Parser's named reason (invalid) or ``ErrorClass: message`` (error); None when valid."""
    raw_text: str | None
    replicate: int
    run_seed: int
    # --- the verdict as a probability (scoring ``probability`` or ``both``); None under ``verdict`` ------
    scoring: str = "verdict"
    """Under ``probability`` there is no generated verdict: ``status`` and ``invalid_reason`` describe the scores."""
    logprob_real: float | None = None
    """Log-probability (nats) of the REAL label's full token sequence as the answer's first value."""
    logprob_synthetic: float | None = None
    logprob_real_per_char: float | None = None
    """``logprob_real / 4`` (per character of ``REAL``: length-normalised, lm-evaluation-harness' acc_norm)."""
    logprob_synthetic_per_char: float | None = None
    """``logprob_synthetic / 9`` (per character of ``SYNTHETIC``)."""
    p_synthetic: float | None = None
    """Softmax of the two log-probabilities: P(SYNTHETIC) / (P(REAL) + P(SYNTHETIC)); 0.5 = no preference."""
    label_mass: float | None = None
    """Probability mass (0-1) the labels' first tokens hold at the first answer position (format check)."""
    label_n_tokens: dict[str, int] | None = None
    score_status: str | None = None
    """Like ``status``, for the scores (``invalid``: NaN, a label missing from the top-k …); None: none asked."""
    score_invalid_reason: str | None = None
    score_latency_s: float | None = None
    verdict_agrees: bool | None = None
    """Under ``both``: whether the generated verdict is the label the scores prefer."""
    label_method: str = ""
    """How the label scores were computed when the provider has more than one way (e.g. ``transformers-float32``);
    "" otherwise, without label scores, or in files written before the field existed."""
    config_name: str = UNRECORDED_CONFIG
    """The ``configs/<name>.yaml`` whose run wrote the record, else :data:`UNRECORDED_CONFIG`."""

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict, in field order."""
        return asdict(self)

    def to_json(self) -> str:
        """One line of JSON (no trailing newline), UTF-8 characters kept."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrialRecord":
        """Build a record from a dict holding every field; DataError names missing or unknown fields."""
        names = [f.name for f in fields(cls)]
        optional = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
        data = {**optional, **data}  # files written before the score fields existed stay readable
        missing = [n for n in names if n not in data]
        extra = [k for k in data if k not in names]
        if missing or extra:
            raise DataError(f"not a trial record: missing fields {missing}, unknown fields {extra}; "
                            "fix: write records with llmdisc.discrimination.runner.run_trials (docs/ARCHITECTURE.md lists "
                            "them)")
        return cls(**{n: data[n] for n in names})


TRIAL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(TrialRecord))
"""Column order of :func:`load_trials` (= field order of :class:`TrialRecord`)."""


@dataclass
class RecordFile:
    """What :func:`read_by_id` found in one JSONL file."""

    records: list[dict[str, Any]] = field(default_factory=list)
    """One dict per id (the last line of each id wins), in the order of those last lines."""
    corrupt_lines: int = 0
    """Lines that were not a JSON object with a string id (e.g. a torn last line)."""
    duplicate_lines: int = 0
    ends_mid_line: bool = False

    @property
    def clean(self) -> bool:
        """True when nothing had to be skipped: the file can be appended to as it is."""
        return not (self.corrupt_lines or self.duplicate_lines or self.ends_mid_line)


def read_by_id(path: Path | str, id_field: str = "trial_id") -> RecordFile:
    """Read a JSONL file of records keyed by ``id_field`` tolerantly into a :class:`RecordFile` (bad lines are
    counted, never raised; a missing file reads as empty)."""
    found, path = RecordFile(), Path(path)
    if not path.exists():
        return found
    by_id: dict[str, dict[str, Any]] = {}
    data = path.read_bytes()
    found.ends_mid_line = bool(data) and not data.endswith(b"\n")
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
            if not isinstance(record, dict) or not isinstance(record.get(id_field), str):
                raise ValueError(f"no {id_field}")
        except (ValueError, UnicodeDecodeError):
            found.corrupt_lines += 1
            continue
        if by_id.pop(record[id_field], None) is not None:  # re-inserted: order follows the superseding line
            found.duplicate_lines += 1
        by_id[record[id_field]] = record
    found.records = list(by_id.values())
    return found


def write_atomically(path: Path | str, records: Iterable[dict[str, Any]]) -> None:
    """Replace ``path`` with exactly these records, one per line (temporary file, fsync, ``os.replace``): a crash
    leaves the old file or the new one, never a mix. Creates the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def append_record(path: Path | str, record: Any) -> None:
    """Append ``record.to_json()`` as one line via :func:`~llmdisc.discrimination.cache.append_line` (locked,
    fsynced, kept apart from a torn last line): a killed run loses at most the line being written."""
    append_line(Path(path), (record.to_json() + "\n").encode("utf-8"))


def jsonl_files(path_or_dir: Path | str, missing: str, recursive: bool = True) -> list[Path]:
    """The ``*.jsonl`` files of a folder (sorted; with its subfolders' when ``recursive``), or the file
    itself; DataError with the message ``missing`` when nothing is at ``path_or_dir``."""
    path = Path(path_or_dir)
    if path.is_dir():
        return sorted(path.rglob("*.jsonl") if recursive else path.glob("*.jsonl"))
    if path.is_file():
        return [path]
    raise DataError(missing)


def load_trials(path_or_dir: Path | str) -> pd.DataFrame:
    """Load trial records into a DataFrame, one row per trial, columns :data:`TRIAL_COLUMNS`.

    ``path_or_dir`` is a ``<run>.jsonl`` file or a folder searched recursively (DataError when it does not
    exist). List columns stay Python lists; torn or corrupt lines are skipped with a
    :class:`~llmdisc.errors.LlmdiscWarning`.
    """
    rows: list[dict[str, Any]] = []
    missing = (f"no trials at {relative_to_root(path_or_dir)}; fix: run `llmdisc trials run ...` or notebook "
               "04_llm_trials, or pass the path of an existing results/trials/<run>.jsonl file or folder")
    for file in jsonl_files(path_or_dir, missing):
        found = read_by_id(file)
        if found.corrupt_lines or found.duplicate_lines:
            warnings.warn(f"{relative_to_root(file)}: skipped {found.corrupt_lines} corrupt line(s) and "
                          f"{found.duplicate_lines} superseded duplicate(s); re-running the same "
                          "configuration repairs the file", LlmdiscWarning, stacklevel=2)
        rows.extend(found.records)
    frame = pd.DataFrame(rows)
    for column in TRIAL_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object")
    frame["scoring"] = frame["scoring"].where(frame["scoring"].notna(), "verdict")  # files from before scoring
    frame["label_method"] = frame["label_method"].where(frame["label_method"].notna(), "")
    frame["config_name"] = frame["config_name"].where(frame["config_name"].notna() & (frame["config_name"] != ""),
                                                      UNRECORDED_CONFIG)
    return frame.loc[:, list(TRIAL_COLUMNS)].reset_index(drop=True)


def protocol_label(row: Any) -> str:
    """The protocol of a cell in words, e.g. ``neutral prompt, real metadata, fresh samples, probability (default)``.

    ``row`` is a mapping or ``pd.Series`` holding some of :data:`PROTOCOL_COLUMNS`; "" when it holds none.
    """
    get = row.get if hasattr(row, "get") else (lambda k, d=None: getattr(row, k, d))
    parts = [(get("prompt_variant"), "{} prompt"), (get("metadata_source"), "{} metadata"),
             (get("sampling"), "{} samples"), (get("scoring"), "{}"),
             (get("label_method"), "{} label scores"), (get("config_name"), "config {}")]
    return ", ".join(form.format(value) for value, form in parts if isinstance(value, str) and value)
