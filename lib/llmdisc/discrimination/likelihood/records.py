"""The per-sample likelihood record, and reading and writing ``results/likelihood/<run>.jsonl``.

One :class:`LikelihoodRecord` (or :class:`JointRecord`) per line, one line per ``sample_id``; a reader keeps the
last line of an id and skips a torn line (:mod:`llmdisc.discrimination.records`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.discrimination.likelihood.sample_scores import SampleScores
from llmdisc.discrimination.records import jsonl_files, read_by_id


@dataclass
class _SampleIdentity:
    """Where a scored sample's rows came from and how it was shown (the head of :class:`LikelihoodRecord`)."""

    sample_id: str
    """``dataset_key|source|role|index``: unique within a run (likewise in :class:`JointRecord`)."""
    timestamp: str
    dataset: str
    encoding: str
    dataset_key: str
    source: str
    """Table the rows came from: ``holdout``, ``train``, a synthesizer, or ``shuffled_columns``."""
    role: str
    """``test``: a class of the AUC and the DRS; ``reference``: real holdout samples that set the decision rule's
    band; ``control``: real train samples of the real-vs-real control."""
    true_label: str
    """``REAL`` (holdout or train rows) or ``SYNTHETIC`` (a release or the positive control)."""
    index: int
    run_seed: int
    sample_seed: int
    row_ids: list[int]
    """Positional ids of the rows in the source table, in the order shown (likewise in :class:`JointRecord`)."""
    n_rows: int
    serialisation: str
    context: str
    prompt_variant: str
    text_hash: str
    """sha256 of the whole scored text (equal hashes = byte-identical input)."""
    backend: str
    model: str
    model_digest: str
    prompt_tokens: int
    """Tokens of the scored text up to the end of the sample."""


class _JsonLine:
    """Adds ``to_json`` to a record dataclass."""

    def to_json(self) -> str:
        """One line of JSON, UTF-8 characters kept (NaN written as NaN, as json does)."""
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))


@dataclass
class LikelihoodRecord(_JsonLine, SampleScores, _SampleIdentity):
    """One scored sample: identity fields, :class:`~.sample_scores.SampleScores` fields (nats), and the seconds its
    scoring took (the original run's for cached scores)."""

    seconds: float


RECORD_COLUMNS = tuple(f.name for f in fields(LikelihoodRecord))


@dataclass
class JointRecord(_JsonLine):
    """One sample's joint-structure contrast (:class:`~.joint.JointScores`, nats) with its identity and the
    reference rows shown before it."""

    sample_id: str
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
    backend: str
    model: str
    model_digest: str
    k: int
    seed: int
    """``derive_seed(run_seed, sample_id, "joint")``; the permutation seeds and the uniform derive from it."""
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


JOINT_RECORD_COLUMNS = tuple(f.name for f in fields(JointRecord))


def read_records(path: Path | str) -> tuple[dict[str, dict[str, Any]], int]:
    """``({sample_id: record}, unreadable lines)`` of a likelihood JSONL file (the last line of an id wins; a missing
    file reads as empty)."""
    found = read_by_id(path, "sample_id")
    return {record["sample_id"]: record for record in found.records}, found.corrupt_lines


def _load(path_or_dir: Path | str, columns: tuple[str, ...], what: str, marker: str,
          recursive: bool = True) -> pd.DataFrame:
    missing = (f"no {what} records at {Path(path_or_dir).name!r}; fix: run notebooks/09_likelihood.ipynb or "
               "llmdisc.discrimination.likelihood.runs.run_likelihood first")
    rows: list[dict[str, Any]] = []
    for file in jsonl_files(path_or_dir, missing, recursive):
        rows.extend(r for r in read_by_id(file, "sample_id").records if marker in r)
    frame = pd.DataFrame(rows)
    for column in columns:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object")
    return frame.loc[:, list(columns)].reset_index(drop=True)


def load_joint(path_or_dir: Path | str, *, recursive: bool = True) -> pd.DataFrame:
    """Load the joint records of a ``<run>.jsonl`` file or a folder (``recursive``: its subfolders too) into a
    DataFrame of :data:`JOINT_RECORD_COLUMNS`. Raises DataError if the path does not exist."""
    return _load(path_or_dir, JOINT_RECORD_COLUMNS, "joint-structure", "contrast", recursive)


def load_likelihood(path_or_dir: Path | str) -> pd.DataFrame:
    """Load the likelihood records of a ``<run>.jsonl`` file or a folder (recursively; joint records left out)
    into a DataFrame of :data:`RECORD_COLUMNS`. Raises DataError if the path does not exist."""
    return _load(path_or_dir, RECORD_COLUMNS, "likelihood", "mean_logprob")
