"""A sample as the text a likelihood scorer reads, with the character span of every cell.

Serialisations (:data:`SERIALISATIONS`):

* ``markdown`` — :func:`llmdisc.discrimination.prompts.render_table`, byte for byte the table the LLM is shown.
* ``great`` — one row per line, ``column is value`` pairs joined by ``", "`` (the GReaT serialisation,
  Borisov et al. 2023), e.g. ``age is 39, workclass is State-gov``.
* ``csv`` — a header line, then one row per line, values joined by ``,`` with no padding (RFC 4180 quoting of a
  value holding ``,`` or ``"``), e.g. ``39,State-gov``: the fewest tokens (Adult 28 %, Census codes 45 % fewer than
  Markdown for 40 rows with SmolLM2's tokenizer), and a row's text never depends on the other rows (Markdown pads
  every column to the widest value of the whole table).

Contexts (:data:`CONTEXTS`):

* ``c1_prompt`` — the text sits where the table sits in the C1 prompt (system and user message under the model's
  own chat template), so the table is scored as the verdict model reads it; with ``great`` the Markdown table of
  the prompt is replaced by the ``great`` text.
* ``none`` — the text alone (its first token has nothing before it and is not scored).

Every character of the sample text is a cell's (row, column), a column name (``header``) or layout (pipes, dashes,
padding, newlines, ``is``, commas): :func:`character_owners` gives that map, from which token offsets are mapped
back. A CSV value's quotes belong to its cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from llmdisc.discrimination.prompts import build_prompt, render_table
from llmdisc.errors import ConfigError, DataError

SERIALISATIONS = ("markdown", "great", "csv")
CONTEXTS = ("c1_prompt", "none")
HEADER = -1
"""Owner code of column-name characters."""
LAYOUT = -2
"""Owner code of layout characters."""


@dataclass(frozen=True)
class CellSpan:
    """Characters ``[start, end)`` of the sample text holding the value of ``row`` (0-based) in ``column``."""

    start: int
    end: int
    row: int
    column: int
    """Column position (0-based) in the sample's column order."""


@dataclass(frozen=True)
class SampleText:
    """A serialised sample and where its cells and column names lie in it."""

    text: str
    cells: tuple[CellSpan, ...]
    header: tuple[tuple[int, int], ...]
    """Character spans of the column names."""
    columns: tuple[str, ...]
    n_rows: int
    serialisation: str

    def character_owners(self) -> list[tuple[int, int]]:
        """For every character: ``(row, column)`` of its cell, ``(HEADER, j)`` for column j's name, or
        ``(LAYOUT, -1)``."""
        owners = [(LAYOUT, -1)] * len(self.text)
        for j, (start, end) in enumerate(self.header):
            for k in range(start, end):
                owners[k] = (HEADER, j % len(self.columns))
        for cell in self.cells:
            for k in range(cell.start, cell.end):
                owners[k] = (cell.row, cell.column)
        return owners


def _check_values(sample: pd.DataFrame, serialisation: str) -> None:
    if sample.empty or sample.shape[1] == 0:
        raise DataError(f"the sample has shape {sample.shape}; fix: score a sample with at least one row and column")
    bad, named = ("|\n", "'|' and newlines") if serialisation == "markdown" else ("\n", "newlines")
    for column in sample.columns:
        texts = [str(column)] + [str(v) for v in sample[column].tolist()]
        if any(ch in text for text in texts for ch in bad):
            raise DataError(f"column {column!r} holds a value or name with {bad!r} characters, which break the "
                            f"{serialisation} rows; fix: replace {named} in that column before scoring")


def _pipe_cells(line: str, n_columns: int, line_no: int) -> list[tuple[int, int]]:
    pipes = [k for k, ch in enumerate(line) if ch == "|"]
    if len(pipes) != n_columns + 1:
        raise DataError(f"line {line_no} of the rendered table has {len(pipes)} '|' for {n_columns} columns; fix: "
                        "remove '|' from the values before scoring")
    spans = []
    for left, right in zip(pipes, pipes[1:]):
        content = line[left + 1:right]
        stripped = content.strip(" ")
        offset = left + 1 + (content.index(stripped) if stripped else 0)
        spans.append((offset, offset + len(stripped)))
    return spans


def markdown_text(sample: pd.DataFrame) -> SampleText:
    """The sample as :func:`~llmdisc.discrimination.prompts.render_table` renders it, with its cell spans.

    Raises:
        DataError: an empty sample, or a value containing ``|`` or a newline (the rows could not be told apart).
    """
    _check_values(sample, "markdown")
    text = render_table(sample)
    lines = text.split("\n")
    n_columns = sample.shape[1]
    if len(lines) != len(sample) + 2:
        raise DataError(f"the rendered table has {len(lines)} lines for {len(sample)} rows; fix: remove newlines "
                        "from the values before scoring")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    header = tuple((starts[0] + s, starts[0] + e) for s, e in _pipe_cells(lines[0], n_columns, 1))
    cells = []
    for row, line in enumerate(lines[2:]):
        for column, (s, e) in enumerate(_pipe_cells(line, n_columns, row + 3)):
            cells.append(CellSpan(starts[row + 2] + s, starts[row + 2] + e, row, column))
    return SampleText(text, tuple(cells), header, tuple(str(c) for c in sample.columns), len(sample), "markdown")


def _plain_value(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if pd.isna(value) else str(value)


def great_text(sample: pd.DataFrame) -> SampleText:
    """The sample as GReaT text: one row per line, ``column is value`` joined by ``", "``.

    Whole floats print without ``.0``; missing values print as an empty value (``age is ``).

    Raises:
        DataError: an empty sample or a value with a newline.
    """
    _check_values(sample, "great")
    parts: list[str] = []
    cells, header = [], []
    position = 0
    names = [str(c) for c in sample.columns]
    for row, values in enumerate(sample.itertuples(index=False, name=None)):
        if row:
            parts.append("\n")
            position += 1
        for column, value in enumerate(values):
            if column:
                parts.append(", ")
                position += 2
            header.append((position, position + len(names[column])))
            lead = f"{names[column]} is "
            shown = _plain_value(value)
            parts.append(lead + shown)
            cells.append(CellSpan(position + len(lead), position + len(lead) + len(shown), row, column))
            position += len(lead) + len(shown)
    return SampleText("".join(parts), tuple(cells), tuple(header), tuple(names), len(sample), "great")


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text


def csv_text(sample: pd.DataFrame) -> SampleText:
    """The sample as CSV: the column names on one line, then one line per row, no padding, no index.

    Whole floats print without ``.0``, missing values as an empty field; a name or value holding ``,`` or ``"`` is
    quoted (RFC 4180; its span includes the quotes).

    Raises:
        DataError: an empty sample or a value with a newline.
    """
    _check_values(sample, "csv")
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    position = 0
    lines = [[str(c) for c in sample.columns]] + [[_plain_value(v) for v in values]
                                                  for values in sample.itertuples(index=False, name=None)]
    for line_no, fields in enumerate(lines):
        if line_no:
            parts.append("\n")
            position += 1
        for column, field in enumerate(map(_csv_field, fields)):
            if column:
                parts.append(",")
                position += 1
            parts.append(field)
            spans.append((position, position + len(field)))
            position += len(field)
    n_columns = sample.shape[1]
    cells = tuple(CellSpan(start, end, k // n_columns - 1, k % n_columns)
                  for k, (start, end) in enumerate(spans) if k >= n_columns)
    return SampleText("".join(parts), cells, tuple(spans[:n_columns]), tuple(lines[0]), len(sample), "csv")


HEADER_LINES = {"markdown": 2, "great": 0, "csv": 1}
"""Lines before the first row in each serialisation."""


def serialise(sample: pd.DataFrame, serialisation: str = "markdown") -> SampleText:
    """The sample in one of :data:`SERIALISATIONS`."""
    if serialisation == "markdown":
        return markdown_text(sample)
    if serialisation == "great":
        return great_text(sample)
    if serialisation == "csv":
        return csv_text(sample)
    raise ConfigError(f"serialisation {serialisation!r} is not known; fix: use one of {', '.join(SERIALISATIONS)}")


@dataclass(frozen=True)
class PlacedText:
    """The whole text given to the scorer, and where the sample text sits in it."""

    text: str
    start: int
    """First character of the sample text in :attr:`text`."""
    sample: SampleText
    context: str

    @property
    def end(self) -> int:
        """One past the sample text's last character."""
        return self.start + len(self.sample.text)


def place(sample: pd.DataFrame, sample_text: SampleText, *, context: str, chat_text=None,  # noqa: ANN001
          variant: str = "neutral", n_total: int | None = None) -> PlacedText:
    """Put the sample text in its context.

    Args:
        sample: The rows (to build the C1 prompt exactly as a trial would).
        sample_text: :func:`serialise` of ``sample``.
        context: ``c1_prompt`` or ``none``.
        chat_text: ``scorer.chat_text(system, user)`` (required for ``c1_prompt``).
        variant: Prompt variant of the C1 prompt (``neutral`` or ``paper``).
        n_total: Rows of the source table (the ``paper`` variant prints it).

    Raises:
        ConfigError: an unknown context, or ``c1_prompt`` without ``chat_text``.
    """
    if context == "none":
        return PlacedText(sample_text.text, 0, sample_text, context)
    if context != "c1_prompt":
        raise ConfigError(f"context {context!r} is not known; fix: use one of {', '.join(CONTEXTS)}")
    if chat_text is None:
        raise ConfigError("context='c1_prompt' needs the scorer's chat template; fix: pass chat_text=scorer.chat_text")
    request = build_prompt(sample, condition="C1", variant=variant, n_total=n_total)
    table = render_table(sample)
    if request.user.count(table) != 1:
        raise DataError("the C1 prompt does not show the rendered table exactly once; fix: check the C1 template")
    user = request.user.replace(table, sample_text.text)
    text = chat_text(request.system, user)
    if text.count(user) != 1:
        raise DataError("the chat template changed the user text; fix: use a model whose template keeps messages "
                        "verbatim, or context='none'")
    start = text.index(user) + user.index(sample_text.text)
    return PlacedText(text, start, sample_text, context)
