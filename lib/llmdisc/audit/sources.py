"""Bounded-memory readers of a user's ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` tables:
:func:`open_table` counts the rows (Parquet from the footer, CSV in one streaming pass) and
:func:`read_rows_at` streams the file again keeping only the rows asked for, so memory is one block or row
group plus the rows kept. Kept CSV rows are parsed by ``pandas.read_csv`` (types inferred from the kept rows);
Parquet rows keep the file's types."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from llmdisc.audit.errors import InputMissingError, InputUnparsableError, TooFewRowsError
from llmdisc.errors import ConfigError
from llmdisc.paths import relative_to_root

CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
EXCEL_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".xlsb", ".ods")
CSV_BLOCK_BYTES = 256 << 10
"""Bytes per block of the streaming CSV reader: small blocks and the system allocator keep its memory flat
whatever the file's length (docs/audit.md, reading memory and planning figures)."""
PARQUET_BATCH_ROWS = 65_536
"""Rows per decoded batch when scanning a Parquet row group."""


@dataclass(frozen=True)
class TableSource:
    """A checked input table: where it is, its format (``csv`` or ``parquet``), its columns and its data rows."""

    path: Path
    format: str
    columns: tuple[str, ...]
    n_rows: int


def table_format(path: Path | str) -> str:
    """``csv`` or ``parquet`` from the file name; :class:`InputUnparsableError` for an Excel workbook or any
    other extension (the message names the fix)."""
    name = Path(path).name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(EXCEL_SUFFIXES):
        raise InputUnparsableError(f"{Path(path).name} is an Excel/OpenDocument workbook, which llmdisc "
                                   "audit does not read; fix: export the sheet to CSV (File > Save as > CSV) "
                                   "or Parquet and pass that file")
    raise InputUnparsableError(f"{Path(path).name} is neither CSV nor Parquet (by its extension); fix: pass "
                               f"a file ending in {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}")


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _csv_header(path: Path) -> list[str]:
    try:
        with _open_text(path) as fh:
            header = next(csv.reader(fh), None)
    except (UnicodeDecodeError, OSError, csv.Error) as exc:
        raise InputUnparsableError(f"{path.name} cannot be read as UTF-8 CSV ({type(exc).__name__}: {exc}); "
                                   "fix: save it as UTF-8 CSV with a header row") from None
    if not header or not any(h.strip() for h in header):
        raise InputUnparsableError(f"{path.name} has no header row; fix: the first line must name the "
                                   "columns")
    duplicates = sorted({h for h in header if header.count(h) > 1})
    if duplicates or any(not h.strip() for h in header):
        raise InputUnparsableError(f"{path.name} has duplicate or empty column names {duplicates or ['']}; "
                                   "fix: give every column a unique name in the header row")
    return header


def _csv_batches(path: Path, columns: Sequence[str], block_size: int = CSV_BLOCK_BYTES) -> Iterator["object"]:
    """Stream a CSV as Arrow record batches with every column read as raw text."""
    import pyarrow as pa
    from pyarrow import csv as pacsv

    yield from pacsv.open_csv(
        str(path), read_options=pacsv.ReadOptions(block_size=block_size, use_threads=False),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in columns},
                                             strings_can_be_null=False, quoted_strings_can_be_null=False),
        memory_pool=pa.system_memory_pool(),  # returns freed blocks; the default pool kept growing
    )


def _parse_error(path: Path, exc: BaseException) -> InputUnparsableError:
    return InputUnparsableError(f"{path.name} cannot be parsed ({type(exc).__name__}: {str(exc)[:300]}); "
                                "fix: check that every row has as many fields as the header and the file is "
                                "a complete, uncorrupted CSV or Parquet file")


def open_table(path: Path | str) -> TableSource:
    """Check a ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` file and count its rows without loading it;
    :class:`InputMissingError` when it does not exist, :class:`InputUnparsableError` when not CSV/Parquet, not
    parseable, or without a header."""
    import pyarrow as pa

    path = Path(path)
    if not path.is_file():
        raise InputMissingError(f"input file {path.name!r} does not exist (looked at "
                                f"{relative_to_root(path)}); fix: check the path passed to "
                                "--real/--synthetic/--holdout")
    fmt = table_format(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(path)
            columns = tuple(_parquet_data_columns(meta))
            return TableSource(path, fmt, columns, int(meta.metadata.num_rows))
        except (pa.ArrowException, OSError) as exc:
            raise _parse_error(path, exc) from None
    columns = tuple(_csv_header(path))
    try:
        n_rows = sum(batch.num_rows for batch in _csv_batches(path, columns))  # type: ignore[attr-defined]
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _parse_error(path, exc) from None
    return TableSource(path, fmt, columns, n_rows)


def _parquet_data_columns(parquet_file: "object") -> list[str]:
    """Column names without pandas' stored index columns (``__index_level_0__``)."""
    schema = parquet_file.schema_arrow  # type: ignore[attr-defined]
    index_columns = {e for e in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(e, str)}
    return [name for name in schema.names if name not in index_columns]


def sample_positions(n_total: int, n: int, seed: int) -> np.ndarray:
    """Draw ``min(n, n_total)`` distinct 0-based row positions as a sorted int64 array (all rows when
    ``n >= n_total``), with ``numpy.random.default_rng(seed).choice(n_total, n, replace=False)``."""
    if n < 1:
        raise ConfigError(f"asked for {n} rows; fix: ask for at least 1")
    if n >= n_total:
        return np.arange(n_total, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n_total, size=n, replace=False)).astype(np.int64)


def read_rows_at(source: TableSource, positions: Sequence[int] | np.ndarray) -> pd.DataFrame:
    """The rows at ``positions`` (distinct 0-based data-row numbers, any order), streaming the file once: in
    the order of ``positions``, index ``0..len-1``, the values ``pandas.read_csv(path).iloc[positions]`` (or
    ``read_parquet``) gives. :class:`ConfigError` for positions out of range or repeated,
    :class:`InputUnparsableError` when the file cannot be parsed."""
    import pyarrow as pa

    wanted = np.asarray(positions, dtype=np.int64)
    if wanted.size and (wanted.min() < 0 or wanted.max() >= source.n_rows):
        raise ConfigError(f"row positions must lie in [0, {source.n_rows}); got {int(wanted.min())}.."
                          f"{int(wanted.max())}; fix: draw them with sample_positions(n_total, ...)")
    order = np.argsort(wanted, kind="stable")
    ordered = wanted[order]
    if np.any(np.diff(ordered) == 0):
        raise ConfigError("row positions repeat; fix: pass distinct positions")
    try:
        table = (_parquet_rows if source.format == "parquet" else _csv_rows)(source, ordered)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise _parse_error(source.path, exc) from None
    return table.iloc[np.argsort(order)].reset_index(drop=True)  # back to the order of positions


def _take_from_batches(
    batches: Iterator["object"], ordered: np.ndarray, convert: Callable[[Any], Any], start: int = 0
) -> list[Any]:
    """Keep the rows at sorted positions ``ordered`` from consecutive batches starting at row ``start``, each
    batch's passed through ``convert`` at once (Arrow arrays taken from a batch keep the allocator's pages of
    the whole stream alive)."""
    kept, offset = [], start
    for batch in batches:
        n = batch.num_rows  # type: ignore[attr-defined]
        lo, hi = np.searchsorted(ordered, [offset, offset + n])
        if hi > lo:
            kept.append(convert(batch.take(ordered[lo:hi] - offset)))  # type: ignore[attr-defined]
        offset += n
        if offset > ordered[-1]:
            break
    return kept


def _csv_rows(source: TableSource, ordered: np.ndarray) -> pd.DataFrame:
    if not ordered.size:
        return pd.read_csv(io.StringIO(",".join(source.columns) + "\n"))
    pieces = _take_from_batches(_csv_batches(source.path, source.columns), ordered, lambda b: b.to_pylist())
    # Parse the kept raw text exactly as pandas.read_csv parses the file: write it back as CSV (quoting
    # where needed, so every field round-trips) and read that.
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(source.columns)
    writer.writerows([row[c] for c in source.columns] for piece in pieces for row in piece)
    text.seek(0)
    return pd.read_csv(text)


def _parquet_rows(source: TableSource, ordered: np.ndarray) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet_file = pq.ParquetFile(source.path)
    columns = list(source.columns)
    groups = range(parquet_file.num_row_groups)
    starts = np.cumsum([0] + [parquet_file.metadata.row_group(i).num_rows for i in groups])
    kept = []
    for group in groups:
        lo, hi = np.searchsorted(ordered, [starts[group], starts[group + 1]])
        if hi == lo:
            continue  # no wanted row here: this row group is never read
        batches = parquet_file.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[group],
                                            columns=columns)
        kept += _take_from_batches(batches, ordered[lo:hi], lambda b: pa.Table.from_batches([b]).to_pandas(),
                                   start=int(starts[group]))
    if not kept:
        schema = parquet_file.schema_arrow
        schema = pa.schema([schema.field(c) for c in columns], metadata=schema.metadata)
        return schema.empty_table().to_pandas()
    return pd.concat(kept, ignore_index=True)


def read_sample(source: TableSource, max_rows: int, seed: int, *, min_rows: int = 1,
                what: str = "table") -> tuple[pd.DataFrame, np.ndarray]:
    """``(rows in file order, their 0-based positions in the file)``: a seeded sample of at most ``max_rows``
    rows (the whole table when it is that small); :class:`TooFewRowsError` when the table has fewer than
    ``min_rows`` rows (``what``, the table's role, names it)."""
    if source.n_rows < min_rows:
        raise TooFewRowsError(f"the {what} table {source.path.name} has {source.n_rows} data rows, fewer "
                              f"than the {min_rows} rows one sample shows the LLM; fix: pass a table of at "
                              f"least {min_rows} rows")
    positions = sample_positions(source.n_rows, max_rows, seed)
    return read_rows_at(source, positions), positions
