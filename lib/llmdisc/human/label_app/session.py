"""The labelling protocol as plain functions (docs/protocol.md §7, fixed as §8 row 4 asks); UI: ``app.py``.

A session is ``n_pairs`` pairs, half REAL and half SYNTHETIC in a seeded order, each one sample answered as C1
then C2. Every answer is appended to ``data/human/<annotator>/<session_id>.csv`` at once; that CSV is the only
state, so a reopened session resumes at its first unanswered step.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import os
import re
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from llmdisc import CONDITIONS, LABELS, SYNTHESIZERS
from llmdisc.discrimination.metadata import METADATA_SOURCES
from llmdisc.discrimination.samples import derive_seed, sample_rows
from llmdisc.errors import ConfigError, DataError
from llmdisc.human.label_app.schema import COLUMNS

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class SessionConfig:
    """Everything that defines a labelling session (and so its plan and its file).

    Attributes:
        annotator_id: who labels (letters, digits, ``_.-``; it names a folder).
        n_pairs: number of samples (each answered as C1 then C2); even, >= 2.
        seed: session seed; the order of labels and every sample seed derive from it.
        metadata_source: ``source``, ``real`` (default: no label leak) or ``sample``.
        session: explicit session id; empty = derived from the fields above (same inputs, same id).
    """

    annotator_id: str
    dataset: str
    synthesizer: str
    n_pairs: int = 10
    seed: int = 0
    metadata_source: str = "real"
    n_rows: int = 20
    session: str = ""

    def __post_init__(self) -> None:
        for name in ("annotator_id", "dataset"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _SAFE_ID.match(value):
                raise ConfigError(f"{name}={value!r} is not usable as a file name; fix: use 1-64 letters, "
                                  "digits, '_', '.' or '-', starting with a letter or digit (e.g. A1)")
        if self.session and not _SAFE_ID.match(self.session):
            raise ConfigError(f"session={self.session!r} is not usable as a file name; fix: use letters, "
                              "digits, '_', '.' or '-' only")
        if self.synthesizer not in SYNTHESIZERS:
            raise ConfigError(f"synthesizer={self.synthesizer!r} is not known; fix: use one of "
                              f"{', '.join(SYNTHESIZERS)}")
        if self.metadata_source not in METADATA_SOURCES:
            raise ConfigError(f"metadata_source={self.metadata_source!r} is not known; fix: use one of "
                              f"{', '.join(METADATA_SOURCES)}")
        if not isinstance(self.n_pairs, int) or self.n_pairs < 2 or self.n_pairs % 2:
            raise ConfigError(f"n_pairs={self.n_pairs!r}: a session needs an even number of pairs (>= 2) so "
                              "that exactly half are REAL and half SYNTHETIC; fix: use e.g. --pairs 10")
        if not isinstance(self.n_rows, int) or self.n_rows < 1:
            raise ConfigError(f"n_rows={self.n_rows!r}; fix: show at least 1 row (the study uses 20)")

    @property
    def session_id(self) -> str:
        """The explicit ``session``, else ``<dataset>_<synthesizer>_s<seed>_<8 hex>`` where the hex digits
        hash every field that changes the plan or the file, so a reopened session finds its own file."""
        if self.session:
            return self.session
        digest = derive_seed(self.seed, "human-session", self.annotator_id, self.dataset, self.synthesizer,
                             self.n_pairs, self.metadata_source, self.n_rows)
        return f"{self.dataset}_{self.synthesizer}_s{self.seed}_{digest:08x}"


@dataclass(frozen=True)
class PairPlan:
    """One pair of a session: 0-based position, label, 0-based count of earlier pairs with that label, and
    the seed of its row draw, the seed :func:`llmdisc.discrimination.samples.build_trial_queue` gives LLM
    trial ``index = label_index`` of a run with the same seed (humans and LLMs see the same samples)."""

    pair_id: int
    true_label: str
    label_index: int
    sample_seed: int


def plan_session(config: SessionConfig) -> list[PairPlan]:
    """The session's pairs: exactly ``n_pairs / 2`` of each label, in a seeded random order that does not
    depend on the annotator (two annotators with the same seed label the same samples)."""
    import numpy as np

    half = config.n_pairs // 2
    labels = [LABELS[0]] * half + [LABELS[1]] * half
    rng = np.random.default_rng(derive_seed(config.seed, "human-order", config.dataset, config.synthesizer))
    order = [labels[i] for i in rng.permutation(len(labels))]
    seen = {label: 0 for label in LABELS}
    plan = []
    for pair_id, label in enumerate(order):
        index = seen[label]
        seen[label] += 1
        plan.append(PairPlan(pair_id, label, index,
                             derive_seed(config.seed, config.dataset, config.synthesizer, label, index)))
    return plan


def session_steps(plan: list[PairPlan]) -> list[tuple[PairPlan, str]]:
    """The answers a session asks for, in order: ``(pair, "C1"), (pair, "C2")`` for every pair."""
    return [(pair, condition) for pair in plan for condition in CONDITIONS]


def read_table_file(path: str) -> pd.DataFrame:
    """Read a table given on the command line (``.parquet``, else CSV). Raises DataError if it is missing."""
    if not Path(path).is_file():
        raise DataError(f"table file {Path(path).name!r} does not exist; fix: pass an existing .parquet or "
                        ".csv file, or leave --real/--synthetic out to use data/processed and data/synthetic")
    return pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)


def draw_pair_sample(pair: PairPlan, real: pd.DataFrame, synthetic: pd.DataFrame,
                     n_rows: int) -> tuple[pd.DataFrame, list[int]]:
    """Draw the pair's ``(sample, row_ids)`` (for its C1 and C2 steps) from the table of its true label."""
    table = real if pair.true_label == "REAL" else synthetic
    return sample_rows(table, n_rows, seed=pair.sample_seed, sampling="fresh")


def metadata_table_kind(metadata_source: str, true_label: str) -> str:
    """Which table the C2 metadata describes (as in the LLM trials): ``"real"`` or ``"synthetic"`` (a whole
    table) or ``"sample"`` (the rows shown). Raises ConfigError for an unknown ``metadata_source``."""
    if metadata_source == "source":
        return "real" if true_label == "REAL" else "synthetic"
    if metadata_source in ("real", "sample"):
        return metadata_source
    raise ConfigError(f"metadata_source={metadata_source!r} is not known; fix: use one of "
                      f"{', '.join(METADATA_SOURCES)}")


def check_answer(predicted_label: str | None, confidence: float | None) -> list[str]:
    """Say what is missing or wrong in an answer (``confidence`` 0-100; None: not chosen, it has no default);
    an empty list means it can be saved."""
    problems = []
    if predicted_label not in LABELS:
        problems.append("Choose a verdict: REAL or SYNTHETIC (nothing is pre-selected).")
    if confidence is None or (isinstance(confidence, float) and math.isnan(confidence)):
        problems.append("Set your confidence from 0 (a pure guess) to 100 (certain): it has no default "
                        "value, so type a number.")
    elif not 0 <= confidence <= 100:
        problems.append(f"Confidence {confidence:g} is outside the range 0–100; fix: type a whole number "
                        "from 0 (a pure guess) to 100 (certain).")
    elif float(confidence) != int(confidence):
        problems.append(f"Confidence {confidence:g} is not a whole number; fix: type a whole number from 0 "
                        "(a pure guess) to 100 (certain).")
    return problems


def build_record(config: SessionConfig, pair: PairPlan, condition: str, row_ids: list[int],
                 predicted_label: str | None, confidence: float | None, notes: str, elapsed_seconds: float,
                 timestamp: str | None = None) -> dict[str, Any]:
    """Build one CSV row (:data:`~llmdisc.human.label_app.schema.COLUMNS`) for an answer.

    Raises:
        ConfigError: the answer is incomplete (:func:`check_answer`) or ``condition`` is unknown.
    """
    if condition not in CONDITIONS:
        raise ConfigError(f"condition={condition!r}; fix: use C1 or C2")
    problems = check_answer(predicted_label, confidence)
    if problems:
        raise ConfigError(" ".join(problems))
    return {
        "annotator_id": config.annotator_id, "session_id": config.session_id, "dataset": config.dataset,
        "method": config.synthesizer, "pair_id": pair.pair_id, "condition": condition,
        "n_rows_shown": len(row_ids), "true_label": pair.true_label, "predicted_label": predicted_label,
        "correct": predicted_label == pair.true_label,
        "confidence": int(confidence),  # type: ignore[arg-type]
        "notes": (notes or "").strip(),
        "timestamp": timestamp or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
        "sample_seed": pair.sample_seed, "row_ids": json.dumps([int(i) for i in row_ids]),
        "metadata_source": config.metadata_source, "elapsed_seconds": round(float(elapsed_seconds), 3),
    }


def session_path(config: SessionConfig, labels_dir: Path) -> Path:
    """``<labels_dir>/<annotator_id>/<session_id>.csv`` (``labels_dir`` is usually ``data/human``)."""
    return Path(labels_dir) / config.annotator_id / f"{config.session_id}.csv"


def append_answer(path: Path, record: Mapping[str, Any]) -> None:
    """Append one answer to a session CSV and force it to disk (flush + fsync) before returning, so a crash
    or a closed browser loses at most the answer being typed, never a submitted one.

    Raises:
        DataError: ``record`` lacks a column of the schema or has one too many.
    """
    if set(record) != set(COLUMNS):
        raise DataError(f"answer record has columns {sorted(record)}; expected {list(COLUMNS)}; "
                        "fix: build it with llmdisc.human.label_app.session.build_record")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):  # a crash mid-write left a partial last line: cut it
        path.write_bytes(data[: data.rfind(b"\n") + 1])
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        if new:
            writer.writeheader()
        writer.writerow(dict(record))
        fh.flush()
        os.fsync(fh.fileno())


def read_session(path: Path) -> pd.DataFrame:
    """Read a session CSV (empty frame with :data:`COLUMNS` when missing); a partial last line is ignored."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    frame = pd.read_csv(StringIO(text), dtype={"notes": str, "session_id": str}, keep_default_na=False,
                        na_values={"confidence": [""]})
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{path.name}: session file lacks columns {missing}; fix: it was not written by this "
                        "app — start a new session (another --seed or --session)")
    return frame


def resume_index(config: SessionConfig, plan: list[PairPlan], answers: pd.DataFrame) -> int:
    """Index in :func:`session_steps` of the first unanswered step (``2 * n_pairs`` when finished). Raises
    DataError when the file's answers belong to another plan (resuming would mix two sessions)."""
    by_pair = {p.pair_id: p for p in plan}
    for row_number, row in enumerate(answers.itertuples(index=False), start=2):
        pair = by_pair.get(int(row.pair_id))
        if (pair is None or row.true_label != pair.true_label or int(row.sample_seed) != pair.sample_seed
                or row.dataset != config.dataset or row.method != config.synthesizer
                or row.metadata_source != config.metadata_source):
            raise DataError(f"line {row_number} of session {config.session_id} (pair {row.pair_id}) does not "
                            "match this session's plan; fix: reopen it with the same annotator, dataset, "
                            "synthesizer, seed, pairs and metadata source, or start another --session")
    done = {(int(p), str(c)) for p, c in zip(answers["pair_id"], answers["condition"])}
    for index, (pair, condition) in enumerate(session_steps(plan)):
        if (pair.pair_id, condition) not in done:
            return index
    return 2 * len(plan)


def is_answered(answers: pd.DataFrame, pair: PairPlan, condition: str) -> bool:
    """True when the session file already holds this pair's answer under ``condition`` (no double saves)."""
    return bool(((answers["pair_id"].astype(int) == pair.pair_id)
                 & (answers["condition"] == condition)).any())


def session_summary(answers: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """The end-of-session summary, one row per condition: n, accuracy, p_REAL, p_SYN, DRS (fractions 0-1) and
    mean confidence (0-100). Raises DataError when there are no answers yet."""
    from llmdisc.scoring.metrics import score_cells

    if answers.empty:
        raise DataError("the session has no answers yet; fix: answer at least one step first")
    scored = score_cells(answers.assign(status="valid"), by=["condition"], seed=seed, n_boot=500)
    return scored[["condition", "n_valid", "accuracy", "p_real", "p_syn", "drs", "mean_confidence"]].rename(
        columns={"n_valid": "n"})

