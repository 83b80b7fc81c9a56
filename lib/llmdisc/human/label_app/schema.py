"""The label-file schema shared by the labelling app (writer) and :mod:`llmdisc.human.analysis` (reader).

One CSV row is one answer of one annotator to one sample under one condition. The first 13 columns
are the paper's (docs/protocol.md §7); the last four are ours and make each answer reproducible and auditable
(which rows were shown, drawn with which seed, which metadata, how long the annotator looked).
A file with the paper's columns only is a file of the paper's app, whose protocol differed (it told the
annotator whether the C1 answer was right before C2); :func:`protocol_of_columns` tells them apart.
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
metadata source (``source``/``real``/``sample``) and seconds from showing the step to the answer
(counted from the step's latest display, so a reopened page restarts the clock)."""

COLUMNS: tuple[str, ...] = PAPER_COLUMNS + EXTRA_COLUMNS
"""Every column of a label file written by llmdisc's app, in order."""

ANSWER_KEY: tuple[str, ...] = ("session_id", "dataset", "method", "pair_id", "condition")
"""Columns that identify one answer; a second row with the same key is a duplicate."""

PROTOCOL_PAPER = "paper"
"""Files of the paper's app: correctness of C1 shown before C2, so C2 answers are contaminated."""
PROTOCOL_LLMDISC = "llmdisc"
"""Files of llmdisc's app: no feedback until the session is over."""


def protocol_of_columns(columns: Sequence[str]) -> str:
    """Tell which app wrote a label file from its header.

    Args:
        columns: the file's column names.

    Returns:
        :data:`PROTOCOL_LLMDISC` when every one of :data:`EXTRA_COLUMNS` is present (only our app writes
        them), else :data:`PROTOCOL_PAPER`.
    """
    return PROTOCOL_LLMDISC if set(EXTRA_COLUMNS) <= set(columns) else PROTOCOL_PAPER
