"""The label-file schema shared by the labelling app (writer) and :mod:`llmdisc.human.analysis` (reader).

One CSV row is one answer of one annotator to one sample under one condition: the paper's 13 columns
(docs/protocol.md §7), then four of ours that make each answer reproducible.
"""

from __future__ import annotations

from typing import Sequence

PAPER_COLUMNS: tuple[str, ...] = (
    "annotator_id", "session_id", "dataset", "method", "pair_id", "condition", "n_rows_shown",
    "true_label", "predicted_label", "correct", "confidence", "notes", "timestamp",
)
"""Columns written by the paper's ``human_labeling_app.py``, in its order."""

EXTRA_COLUMNS: tuple[str, ...] = ("sample_seed", "row_ids", "metadata_source", "elapsed_seconds")
"""Columns only llmdisc's app writes: the draw's seed, the positional row ids shown (JSON list), the C2
metadata source and seconds from the step's latest display to the answer (a reopened page restarts it)."""

COLUMNS: tuple[str, ...] = PAPER_COLUMNS + EXTRA_COLUMNS  # a label file of llmdisc's app, in order

ANSWER_KEY: tuple[str, ...] = ("session_id", "dataset", "method", "pair_id", "condition")
"""Columns that identify one answer; a second row with the same key is a duplicate."""

PROTOCOL_PAPER = "paper"
"""Files of the paper's app: correctness of C1 shown before C2, so C2 answers are contaminated."""
PROTOCOL_LLMDISC = "llmdisc"
"""Files of llmdisc's app: no feedback until the session is over."""


def protocol_of_columns(columns: Sequence[str]) -> str:
    """Which app wrote a label file with header ``columns``: ours when it has every :data:`EXTRA_COLUMNS`."""
    return PROTOCOL_LLMDISC if set(EXTRA_COLUMNS) <= set(columns) else PROTOCOL_PAPER
