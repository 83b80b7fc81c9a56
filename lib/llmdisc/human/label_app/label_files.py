"""Label files of the human pilot: find them, check every row, rename annotators, de-duplicate answers.

Entry point :func:`read_labels`. Bad input never stops the reading: each problem is collected with its file
and line, warned about, and the rest is read.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc import CONDITIONS, LABELS
from llmdisc.errors import DataError, LlmdiscWarning
from llmdisc.human.label_app.schema import ANSWER_KEY, PAPER_COLUMNS, PROTOCOL_PAPER, protocol_of_columns
from llmdisc.paths import relative_to_root

PAPER_ANNOTATOR_MAP: dict[str, str] = {"ManelS": "HA1", "TK": "HA2"}
"""The paper's annotator ids and the names its tables use."""


@dataclass(frozen=True)
class LabelProblem:
    """One problem found in the label files; its row (if any) was left out of the analysis. ``line`` is
    1-based (the header is line 1), 0 for a whole-file problem; ``file`` root-relative."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        where = f"{self.file}, line {self.line}" if self.line else self.file
        return f"{where}: {self.message}"


def find_label_files(paths: Iterable[Path | str]) -> list[Path]:
    """Label CSVs under ``paths`` (files or folders, searched recursively), skipping ``*_export-*`` summaries.
    Raises DataError for a path that does not exist."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in sorted(path.rglob("*.csv")) if "_export-" not in p.name)
        else:
            raise DataError(f"label path {relative_to_root(path)!r} does not exist; fix: pass a label CSV "
                            "or a folder holding them (e.g. data/human)")
    return sorted(set(found))


def _check_columns(columns: Sequence[str], name: str) -> list[LabelProblem]:
    missing = [c for c in PAPER_COLUMNS if c not in columns]
    if not missing:
        return []
    unknown = [c for c in columns if c not in PAPER_COLUMNS]
    hints = []
    for column in missing:
        close = difflib.get_close_matches(column, unknown, n=1, cutoff=0.6)
        hints.append(f"{column!r} (is {close[0]!r} a misspelling of it?)" if close else repr(column))
    return [LabelProblem(name, 0, f"missing column(s) {', '.join(hints)}; the file was skipped; fix: "
                                  f"give it the columns {', '.join(PAPER_COLUMNS)}")]


def _row_problems(raw: pd.DataFrame) -> pd.Series:
    """Per row, the first problem found (None when usable): labels, condition, confidence, pair_id."""
    problems = pd.Series([None] * len(raw), index=raw.index, dtype=object)
    checks = []
    for column, allowed in (("true_label", LABELS), ("predicted_label", LABELS), ("condition", CONDITIONS)):
        bad = ~raw[column].isin(allowed)
        checks.append((bad, lambda v, c=column, a=allowed: (
            f"{c} {v[c]!r} is not one of {', '.join(a)}; the row was left out; fix: write exactly "
            f"{' or '.join(a)}")))
    conf = pd.to_numeric(raw["confidence"], errors="coerce")
    checks.append((~conf.between(0, 100), lambda v: (
        f"confidence {v['confidence']!r} is not a number from 0 to 100; the row was left out; fix: write the "
        "annotator's confidence in percent")))
    pair = pd.to_numeric(raw["pair_id"], errors="coerce")
    checks.append((pair.isna() | (pair != pair.round()), lambda v: (
        f"pair_id {v['pair_id']!r} is not an integer; the row was left out; fix: number pairs 0, 1, …")))
    for bad, message in checks:
        for index in raw.index[bad & problems.isna()]:
            problems[index] = message(raw.loc[index])
    return problems


def read_label_file(path: Path | str) -> tuple[pd.DataFrame, list[LabelProblem]]:
    """Read and check one label file; return ``(answers, problems)``: the valid rows, typed, plus
    ``protocol``, ``source_file`` and ``source_line`` (none when a column is missing), and the problems."""
    path = Path(path)
    name = relative_to_root(path)
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        return pd.DataFrame(), [LabelProblem(name, 0, f"cannot be read as CSV ({exc}); the file was skipped; "
                                                      "fix: save it as comma-separated UTF-8 text")]
    problems = _check_columns(list(raw.columns), name)
    if problems:
        return pd.DataFrame(), problems
    for column in ("true_label", "predicted_label", "condition", "annotator_id", "session_id", "dataset",
                   "method"):
        raw[column] = raw[column].str.strip()
    raw["source_file"] = name
    raw["source_line"] = np.arange(len(raw)) + 2
    row_problems = _row_problems(raw)
    for index, message in row_problems.dropna().items():
        problems.append(LabelProblem(name, int(raw.at[index, "source_line"]), str(message)))
    answers = raw[row_problems.isna()].copy()
    answers["pair_id"] = pd.to_numeric(answers["pair_id"]).astype(int)
    answers["confidence"] = pd.to_numeric(answers["confidence"]).astype(float)
    stated = answers["correct"].str.strip().str.lower()
    answers["correct"] = answers["true_label"] == answers["predicted_label"]
    recomputed = answers["correct"].map({True: "true", False: "false"})
    disagree = stated.isin(["true", "false"]) & (stated != recomputed)
    for line in answers.loc[disagree, "source_line"]:
        problems.append(LabelProblem(name, int(line), "the 'correct' column disagrees with true_label and "
                                     "predicted_label; correctness was recomputed from the labels"))
    answers["protocol"] = protocol_of_columns(list(raw.columns))
    return answers, problems


def read_labels(paths: Iterable[Path | str], *, annotator_map: Mapping[str, str] | None = None,
                protocol: str = "auto") -> tuple[pd.DataFrame, list[LabelProblem], list[str]]:
    """Read, check, rename and de-duplicate every label file under ``paths``; warn about each problem.

    Args:
        annotator_map: renames of ``annotator_id`` into the ``annotator`` column (default
            :data:`PAPER_ANNOTATOR_MAP`); ids not in the map keep their name.
        protocol: ``auto`` (from each file's columns), ``paper`` (C1 correctness shown before C2) or
            ``llmdisc`` (no feedback) for every file.

    Returns ``(answers, problems, files)``; a duplicate answer keeps its first occurrence (files in path
    order). Raises DataError for an unknown ``protocol`` or a path that does not exist.
    """
    if protocol not in ("auto", "paper", "llmdisc"):
        raise DataError(f"protocol={protocol!r}; fix: use 'auto', 'paper' or 'llmdisc'")
    mapping = PAPER_ANNOTATOR_MAP if annotator_map is None else dict(annotator_map)
    frames, problems = [], []
    files = find_label_files(paths)
    for path in files:
        frame, found = read_label_file(path)
        problems.extend(found)
        if not frame.empty:
            frames.append(frame)
    if not frames:
        answers = pd.DataFrame(columns=[*PAPER_COLUMNS, "annotator", "protocol", "contaminated"])
    else:
        answers = pd.concat(frames, ignore_index=True)
        duplicated = answers.duplicated(list(ANSWER_KEY), keep="first")
        first = answers[~duplicated].set_index(list(ANSWER_KEY))
        for _, row in answers[duplicated].iterrows():
            kept = first.loc[tuple(row[list(ANSWER_KEY)])]
            problems.append(LabelProblem(row["source_file"], int(row["source_line"]), (
                f"duplicate answer for session {row['session_id']} pair {row['pair_id']} {row['condition']} "
                f"(first given in {kept['source_file']}, line {kept['source_line']}); the duplicate was left "
                "out; fix: delete one of the two rows")))
        answers = answers[~duplicated].reset_index(drop=True)
        if protocol != "auto":
            answers["protocol"] = protocol
        answers["annotator"] = answers["annotator_id"].map(lambda a: mapping.get(a, a))
        answers["contaminated"] = (answers["protocol"] == PROTOCOL_PAPER) & (answers["condition"] == "C2")
    for problem in problems:
        warnings.warn(str(problem), LlmdiscWarning, stacklevel=2)
    return answers, problems, [relative_to_root(f) for f in files]
