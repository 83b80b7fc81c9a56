"""A sample as the text a likelihood scorer reads, with the character span of every cell.

Serialisations (:func:`serialise`): ``markdown`` (byte for byte the table the LLM is shown), ``great`` (``age is 39,
workclass is State-gov``, Borisov et al. 2023) and ``csv`` (the fewest tokens, and a row's text never depends on
the other rows, unlike Markdown's padding). Contexts (:func:`place`): ``c1_prompt`` (where the table sits in the C1
prompt under the model's chat template) or ``none`` (the text alone). Every character is a cell's, a column
name's or layout: :meth:`SampleText.character_owners`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

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
            owners[start:end] = [(HEADER, j % len(self.columns))] * (end - start)
        for cell in self.cells:
            owners[cell.start:cell.end] = [(cell.row, cell.column)] * (cell.end - cell.start)
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
    """The sample as :func:`~llmdisc.discrimination.prompts.render_table` renders it, with its cell spans. Raises
    DataError for an empty sample, or a value containing ``|`` or a newline."""
    _check_values(sample, "markdown")
    text = render_table(sample)
    lines = text.split("\n")
    n_columns = sample.shape[1]
    if len(lines) != len(sample) + 2:
        raise DataError(f"the rendered table has {len(lines)} lines for {len(sample)} rows; fix: remove newlines "
                        "from the values before scoring")
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    header = tuple(_pipe_cells(lines[0], n_columns, 1))  # the header line starts at character 0
    cells = [CellSpan(starts[row + 2] + s, starts[row + 2] + e, row, column)
             for row, line in enumerate(lines[2:])
             for column, (s, e) in enumerate(_pipe_cells(line, n_columns, row + 3))]
    return SampleText(text, tuple(cells), header, tuple(str(c) for c in sample.columns), len(sample), "markdown")


def _plain_value(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if pd.isna(value) else str(value)


def great_text(sample: pd.DataFrame) -> SampleText:
    """The sample as GReaT text: one row per line, ``column is value`` joined by ``", "`` (whole floats without
    ``.0``, missing values empty). Raises DataError for an empty sample or a value with a newline."""
    _check_values(sample, "great")
    text, cells, header = "", [], []
    names = [str(c) for c in sample.columns]
    for row, values in enumerate(sample.itertuples(index=False, name=None)):
        for column, (name, value) in enumerate(zip(names, values)):
            text += ", " if column else "\n" if row else ""
            header.append((len(text), len(text) + len(name)))
            text += f"{name} is "
            shown = _plain_value(value)
            cells.append(CellSpan(len(text), len(text) + len(shown), row, column))
            text += shown
    return SampleText(text, tuple(cells), tuple(header), tuple(names), len(sample), "great")


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if "," in text or '"' in text else text


def csv_text(sample: pd.DataFrame) -> SampleText:
    """The sample as CSV: a header line, then one line per row, no padding; whole floats without ``.0``, missing
    values empty, RFC 4180 quoting (a cell's span includes its quotes). Errors as :func:`great_text`."""
    _check_values(sample, "csv")
    text, spans = "", []
    lines = [[str(c) for c in sample.columns]] + [[_plain_value(v) for v in values]
                                                  for values in sample.itertuples(index=False, name=None)]
    for line_no, fields in enumerate(lines):
        for column, field in enumerate(map(_csv_field, fields)):
            text += "," if column else "\n" if line_no else ""
            spans.append((len(text), len(text) + len(field)))
            text += field
    n_columns = sample.shape[1]
    cells = tuple(CellSpan(start, end, k // n_columns - 1, k % n_columns)
                  for k, (start, end) in enumerate(spans) if k >= n_columns)
    return SampleText(text, cells, tuple(spans[:n_columns]), tuple(lines[0]), len(sample), "csv")


HEADER_LINES = {"markdown": 2, "great": 0, "csv": 1}
"""Lines before the first row in each serialisation."""


def serialise(sample: pd.DataFrame, serialisation: str = "markdown") -> SampleText:
    """The sample in one of :data:`SERIALISATIONS`."""
    makers = {"markdown": markdown_text, "great": great_text, "csv": csv_text}
    if serialisation in makers:
        return makers[serialisation](sample)
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
        sample: The rows (to build the C1 prompt exactly as a trial would); ``sample_text`` its serialisation.
        chat_text: ``scorer.chat_text`` (required for ``c1_prompt``).
        variant, n_total: C1 prompt variant and the source table's rows (the ``paper`` variant prints them).

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
