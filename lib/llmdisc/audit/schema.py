"""Each column's kind (categorical, numerical, datetime), keys and personal information, and table agreement
checks.

Kinds come from the project's one rule, :func:`llmdisc.baselines.encoding.infer_kinds`, overridden by
``--categorical`` / ``--numerical``; dates, keys and personal information are the audit's own
(:func:`plan_columns`). :func:`harmonise` gives all tables one representation per kind, integral numbers in
categorical columns written without ``.0`` so a code reads the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.audit.errors import ColumnMismatchError, DateParseError
from llmdisc.audit.personal import detect_personal
from llmdisc.audit.sdv_metadata import SDTYPE_ROLES
from llmdisc.baselines.encoding import declared_kinds, infer_kinds
from llmdisc.baselines.encoding import is_integral as _integral
from llmdisc.baselines.encoding import is_number as _is_number_column
from llmdisc.errors import ConfigError


def infer_column_kinds(table: pd.DataFrame, *, categorical: Sequence[str] = (),
                       numerical: Sequence[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """``(kinds, how)`` of every column of the real rows read: column -> ``categorical``/``numerical``, and
    column -> why (``inferred``, ``--numerical``…), with the ``--categorical`` / ``--numerical`` overrides;
    :class:`ConfigError` when an override names an unknown column, or a column is given both kinds."""
    columns = [str(c) for c in table.columns]
    for flag, names in (("--categorical", categorical), ("--numerical", numerical)):
        unknown = [n for n in names if n not in columns]
        if unknown:
            raise ConfigError(f"{flag} names column(s) {unknown} that the real table lacks; fix: use names "
                              f"from its header: {columns}")
    both = sorted(set(categorical) & set(numerical))
    if both:
        raise ConfigError(f"column(s) {both} are given to both --categorical and --numerical; fix: name each "
                          "once")
    kinds = infer_kinds(table)  # the project's one rule (llmdisc.baselines.encoding)
    why = "declared for a known dataset" if declared_kinds(table) is not None else "inferred"
    how = {c: why for c in columns}
    for name in categorical:
        kinds[name], how[name] = "categorical", "--categorical"
    for name in numerical:
        kinds[name], how[name] = "numerical", "--numerical"
    return kinds, how


def check_same_columns(real_columns: Sequence[str], other_columns: Sequence[str], *, other: str,
                       real_name: str, other_name: str) -> None:
    """Raise :class:`ColumnMismatchError` when the two tables' sets of columns differ (order may);
    ``other`` is the second table's role (``synthetic`` or ``holdout``)."""
    missing = [c for c in real_columns if c not in other_columns]
    extra = [c for c in other_columns if c not in real_columns]
    if missing or extra:
        raise ColumnMismatchError(f"the columns of the {other} table {other_name} differ from the real table "
                                  f"{real_name}: missing {missing}, extra {extra}; fix: give both tables the "
                                  "same columns (same names; order may differ)")


def _numeric(values: pd.Series, column: str, role: str) -> pd.Series:
    converted = pd.to_numeric(values, errors="coerce") if not _is_number_column(values) else values
    if pd.api.types.is_bool_dtype(converted.dtype):
        converted = converted.astype("int64")
    bad = converted.isna() & values.notna()
    if bad.any():
        example = str(values[bad].iloc[0])[:40]
        raise ColumnMismatchError(f"column {column!r} is numerical but the {role} table holds non-numbers "
                                  f"such as {example!r}; fix: clean that column, or declare it categorical "
                                  f"with --categorical {column}")
    return converted.astype("float64")


def _as_text(value: object) -> object:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return np.nan
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (np.integer, np.bool_)):
        return str(value.item())
    return str(value)


def harmonise(tables: Mapping[str, pd.DataFrame], kinds: Mapping[str, str]) -> dict[str, pd.DataFrame]:
    """Every table (role -> rows read, same column set) in the real column order, as a converted copy with one
    representation per kind: numerical ``int64`` when every value in every table is integral and present, else
    ``float64``; categorical text, missing kept as NaN. :class:`ColumnMismatchError` when a numerical column
    holds text in some table (names the column and a value)."""
    order = list(kinds)
    converted = {role: table.loc[:, order].copy() for role, table in tables.items()}
    for column, kind in kinds.items():
        if kind == "numerical":
            for role, table in converted.items():
                table[column] = _numeric(table[column], column, role)
            if all(t[column].notna().all() and _integral(t[column]) for t in converted.values()):
                for table in converted.values():
                    table[column] = table[column].astype("int64")
        else:
            for table in converted.values():
                table[column] = table[column].map(_as_text).astype(object)
    return converted


# --------------------------------------------------------------------------- identifiers, dates, SDV metadata
DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d",
                "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%m-%Y")
"""Formats tried, in this order, on a text column of the real rows read; the first that parses every
non-missing value makes it a datetime column (``--metadata`` gives the format instead)."""
_DATE_LIKE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$")
_KEY_NAME = re.compile(r"(^|[^a-z])(id|key|uuid|guid|pk|idx)([^a-z]|$)", re.IGNORECASE)
_CAMEL_KEY_NAME = re.compile(r"[a-z](Id|ID|Key)$")  # studentId, rowID, recordKey
KEY_SPAN_FACTOR = 2
"""An integer column unique per row whose name does not say key is still a key when its values span at most
this many times the table's row count (a running number, e.g. 17264–17478 for 215 rows)."""


def _present_text(values: pd.Series) -> pd.Series:
    return values.dropna().astype(str).str.strip()


def detect_date_format(values: pd.Series) -> str | None:
    """The :data:`DATE_FORMATS` entry that parses every non-missing value of a text column, or None (also for
    numbers, booleans and all-missing columns)."""
    if _is_number_column(values) or pd.api.types.is_bool_dtype(values.dtype):
        return None
    text = _present_text(values)
    if text.empty or not text.str.match(_DATE_LIKE).all():
        return None
    parses = (fmt for fmt in DATE_FORMATS if pd.to_datetime(text, format=fmt, errors="coerce").notna().all())
    return next(parses, None)


def parse_dates(values: pd.Series, column: str, fmt: str | None, role: str, how: str) -> pd.Series:
    """Parse one datetime column with its strftime ``fmt`` (None: pandas' inference) to ``datetime64[ns]``,
    NaT kept; :class:`DateParseError` for a value the format does not parse (``column``, ``role`` and ``how``,
    where the format came from, are for its message)."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return pd.to_datetime(values)
    text = values.map(lambda v: v if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip())
    text = text.where(text.ne(""), None)
    parsed = pd.to_datetime(text, format=fmt if fmt else "mixed", errors="coerce")
    bad = parsed.isna() & text.notna()
    if bad.any():
        raise DateParseError(
            f"column {column!r} is a date ({how}, format {fmt or 'inferred'}) but the {role} table holds "
            f"{text[bad].iloc[0]!r}, which that format does not parse; fix: correct the value, give the "
            "column's datetime_format in --metadata, or audit it as text with --categorical " + column)
    return parsed


def _integral_numbers(values: pd.Series) -> bool:
    return _is_number_column(values) and _integral(values)


def is_identifier(values: pd.Series, name: str, n_rows_in_file: int) -> bool:
    """Whether a column of the real rows read is a key: present and distinct in every row, integer or text.

    Integer columns must also be named like a key (``id``, ``student_id``, ``uuid``) or span at most
    :data:`KEY_SPAN_FACTOR` × ``n_rows_in_file``, so a measurement that happens to be distinct in a small table is
    not taken for one. Fractional numbers, booleans and dates are never keys.
    """
    if len(values) < 2 or values.isna().any() or pd.api.types.is_bool_dtype(values.dtype):
        return False
    if _is_number_column(values):
        if not _integral_numbers(values) or values.nunique() != len(values):
            return False
        span = float(values.max()) - float(values.min()) + 1
        return bool(_KEY_NAME.search(name) or _CAMEL_KEY_NAME.search(name)) or span <= KEY_SPAN_FACTOR * max(n_rows_in_file, len(values))
    text = _present_text(values)
    if detect_date_format(values) is not None or (text == "").any():
        return False
    return bool(text.nunique() == len(text))


@dataclass(frozen=True)
class ColumnPlan:
    """What the audit does with each column: ``kinds``, the columns every discriminator uses -> ``numerical``,
    ``categorical`` or ``datetime``; ``how``, every column -> why (``inferred``, ``--metadata metadata.json:
    sdtype datetime``, …); ``date_formats``, datetime column -> strftime format (None: inferred by pandas);
    ``identifiers``, key columns (unique per row; excluded from ``kinds`` unless ``--keep-ids``);
    ``excluded``, column -> why it is left out of every discriminator; ``personal``, column -> why it holds
    personal information (always excluded, reported on its own)."""

    kinds: dict[str, str]
    how: dict[str, str]
    date_formats: dict[str, str | None]
    identifiers: tuple[str, ...]
    excluded: dict[str, str]
    personal: dict[str, str] = field(default_factory=dict)

    def schema_rows(self, columns: Sequence[str]) -> list[dict[str, str]]:
        """One row per column of the table for the report: name, kind (or ``excluded: …``), how."""
        return [{"name": c, "kind": self.kinds.get(c, f"excluded ({self.excluded.get(c, '')})"), "how": self.how[c]}
                for c in columns]


def plan_columns(real_rows: pd.DataFrame, *, n_rows_in_file: int, metadata: Any = None,
                 categorical: Sequence[str] = (), numerical: Sequence[str] = (),
                 keep_identifiers: bool = False) -> ColumnPlan:
    """Decide each column's kind, which columns are keys or personal information, and the date formats.

    Without ``metadata``: :func:`infer_column_kinds`, then dates (:func:`detect_date_format`), personal
    information (:func:`~llmdisc.audit.personal.detect_personal`) and keys (:func:`is_identifier`) are
    detected (not for a dataset the compendium knows). With ``metadata`` each column's sdtype decides, and a
    ``categorical`` column not marked ``"pii": false`` is still checked for personal information.
    ``--categorical`` / ``--numerical`` override the kind of a used column. Raises :class:`ConfigError` as
    :func:`infer_column_kinds`, and :class:`ColumnMismatchError` when every column is excluded.
    """
    columns = [str(c) for c in real_rows.columns]
    kinds, how = infer_column_kinds(real_rows, categorical=categorical, numerical=numerical)
    forced = set(categorical) | set(numerical)
    formats: dict[str, str | None] = {}
    identifiers: list[str] = []
    excluded: dict[str, str] = {}
    personal: dict[str, str] = {}
    if metadata is not None:
        source = f"--metadata {metadata.file}"
        for column in columns:
            declared = metadata.columns[column]
            how[column] = f"{source}: sdtype {declared.sdtype}"
            if declared.role in ("identifier",) or column == metadata.primary_key:
                identifiers.append(column)
                how[column] += " (primary key)" if column == metadata.primary_key else ""
            elif declared.role == "pii":
                said = f"sdtype {declared.sdtype}" + (", pii true" if declared.sdtype in SDTYPE_ROLES else "")
                excluded[column] = f"personal information ({said})"
                personal[column] = said
            elif column in forced:
                how[column] += f", overridden by --{kinds[column]}"
            elif declared.role == "datetime":
                kinds[column] = "datetime"
                formats[column] = declared.datetime_format or detect_date_format(real_rows[column])
            elif (declared.sdtype == "categorical" and declared.pii is not False
                  and (why := detect_personal(real_rows[column], column)) is not None):
                # SDV's own detection calls a column of names categorical: what the column is decides
                personal[column] = f"detected: {why}"
                excluded[column] = f"personal information (detected: {why}; --metadata says categorical)"
                how[column] += f"; detected: personal information ({why})"
            else:
                kinds[column] = declared.role
    else:
        known = all(h == "declared for a known dataset" for c, h in how.items() if c not in forced)
        for column in columns:
            if column in forced:
                continue
            fmt = detect_date_format(real_rows[column])
            why = None if known else detect_personal(real_rows[column], column)
            if fmt is not None:
                kinds[column], formats[column] = "datetime", fmt
                how[column] = f"detected: dates ({fmt})"
            elif why is not None:
                personal[column] = f"detected: {why}"
                excluded[column] = f"personal information (detected: {why})"
                how[column] = f"detected: personal information ({why})"
            elif not known and is_identifier(real_rows[column], column, n_rows_in_file):
                identifiers.append(column)
                how[column] = "detected: unique in every row (a key)"
    for column in identifiers:
        if keep_identifiers:
            how[column] += "; kept (--keep-ids)"
            if column not in forced:  # a key is compared as what it is: a number or a text label
                kinds[column] = "numerical" if _integral_numbers(real_rows[column]) else "categorical"
        else:
            excluded[column] = "key column, unique per row"
    for column in excluded:
        kinds.pop(column, None)
    if not kinds:
        raise ColumnMismatchError(
            f"every column is excluded ({', '.join(f'{c}: {r}' for c, r in excluded.items())}); fix: audit "
            "tables with at least one other column, or keep the keys with --keep-ids")
    return ColumnPlan(kinds=kinds, how=how, date_formats=formats, identifiers=tuple(identifiers),
                      excluded=excluded, personal=personal)


def prepare_tables(rows: Mapping[str, pd.DataFrame], plan: ColumnPlan
                   ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame], dict[str, str]]:
    """``(llm_tables, check_tables, check_kinds)``: the tables each discriminator sees (role -> rows read,
    excluded columns left out), harmonised (:func:`harmonise`): for the LLM, datetime columns as date text in
    their format (categorical); for the C2ST, distances and Anonymeter, as days since 1970-01-01 (numerical).
    Raises :class:`DateParseError` (exit 6) or :class:`ColumnMismatchError` as :func:`harmonise`."""
    used = list(plan.kinds)
    parsed: dict[str, dict[str, pd.Series]] = {role: {} for role in rows}
    for column, kind in plan.kinds.items():
        if kind == "datetime":
            fmt = plan.date_formats.get(column)
            for role, table in rows.items():
                parsed[role][column] = parse_dates(table[column], column, fmt, role, plan.how[column])
    llm_rows = {role: table.loc[:, used].copy() for role, table in rows.items()}
    check_rows = {role: table.loc[:, used].copy() for role, table in rows.items()}
    for role in rows:
        for column, values in parsed[role].items():
            fmt = plan.date_formats.get(column) or "%Y-%m-%d"
            llm_rows[role][column] = values.dt.strftime(fmt).where(values.notna(), np.nan)
            days = (values - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)
            check_rows[role][column] = days.astype("float64")
    llm_kinds = {c: ("categorical" if k == "datetime" else k) for c, k in plan.kinds.items()}
    check_kinds = {c: ("numerical" if k == "datetime" else k) for c, k in plan.kinds.items()}
    return harmonise(llm_rows, llm_kinds), harmonise(check_rows, check_kinds), check_kinds


def identifier_summary(rows: Mapping[str, pd.DataFrame], identifiers: Sequence[str]) -> list[dict[str, Any]]:
    """Per key column: ``column``, ``numeric``, per role (``rows``: role -> rows read) ``{"n", "n_distinct",
    "min", "max"}`` (text keys: three sorted ``examples`` instead of min/max), ``synthetic_in_real`` (share of
    synthetic keys that are real keys, 0–1), ``separates`` (integer keys whose real and synthetic ranges do
    not overlap; None for text keys) and ``sentence``."""
    out = []
    for column in identifiers:
        numeric = all(_integral_numbers(t[column].dropna()) for t in rows.values() if t[column].notna().any())
        entry: dict[str, Any] = {"column": column, "numeric": numeric}
        for role, table in rows.items():
            values = table[column].dropna()
            info: dict[str, Any] = {"n": int(len(values)), "n_distinct": int(values.nunique())}
            if numeric and len(values):
                info["min"], info["max"] = int(values.min()), int(values.max())
            else:
                info["examples"] = sorted(values.astype(str).unique().tolist())[:3]
            entry[role] = info
        real_keys = set(rows["real"][column].dropna().astype(str))
        synthetic = rows["synthetic"][column].dropna().astype(str) if "synthetic" in rows else pd.Series([], dtype=str)
        entry["synthetic_in_real"] = float(synthetic.isin(real_keys).mean()) if len(synthetic) else None
        if numeric and "min" in entry["real"] and "min" in entry.get("synthetic", {}):
            r, s = entry["real"], entry["synthetic"]
            entry["separates"] = bool(r["max"] < s["min"] or s["max"] < r["min"])
            ranges = f"real {r['min']}–{r['max']}, synthetic {s['min']}–{s['max']}"
            entry["sentence"] = (f"the key column {column!r} alone separates the tables: ranges {ranges} do not "
                                 "overlap" if entry["separates"] else
                                 f"key column {column!r}: ranges {ranges} overlap")
        else:
            entry["separates"] = None
            share = entry["synthetic_in_real"]
            entry["sentence"] = (f"key column {column!r} (text): "
                                 + (f"{100 * share:.0f} % of the synthetic keys are real keys" if share is not None
                                    else "no synthetic keys"))
        out.append(entry)
    return out
