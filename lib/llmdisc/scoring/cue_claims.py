"""The cue checker's claim shape, the vocabulary a cue is read with, and the check of one claim.

A claim that counts shown rows is rows × attributes × quantifier: which rows (all shown, those named by number, or
those having some attributes: ``where``), what they have (``{column: value}``; a list of values means each) and how
many of them have it (:data:`QUANTIFIERS`): "row 8 is a Female Husband", "no row is Widowed", "every Husband is
Male". Facts of a column or table (a range, missing cells, duplicates, the code mapping) have no quantifier.
Dataset-specific words are ``claim_literals`` of ``cue_codebook.yaml``. Entry point :func:`check_claim`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, NamedTuple

import numpy as np
import pandas as pd
import yaml

from llmdisc.errors import DataError

QUANTIFIERS = ("every", "some", "none", "exactly", "at_least", "most")
"""How many (k) of the n rows in scope have the attributes: k = n, k ≥ 1, k = 0, k = count, k ≥ count, 2k > n."""
CLAIM_KINDS = ("row_values", "combination", "range", "listed_values", "single_value", "no_missing",
               "duplicates", "mapping", "invalid_values", "every_row", "one_row", "appears", "most_rows",
               "row_count", "conditional")
"""How a claim was phrased; ``conditional``: every row having some attributes has others ("every Husband is Male")."""
TRIVIAL_KINDS: Mapping[str, str] = {
    "no_missing": "every table the study shows is complete: the paper dropped Adult's rows with '?', its Census "
                  "file and our tables have no missing cells, and the synthesizers write none; 'no missing "
                  "values' is true of every table, real or synthetic, and says nothing about which it is",
    "row_count": "the protocol fixes the number of rows shown (20); stating it is true of every table",
}
"""Claim kinds true of every table the protocol shows, real or synthetic (why: the value): a model that states one
has looked at nothing, so they are counted apart (``claim_set = "trivial"``), never in the headline. ``duplicates``
and ``mapping`` are not trivial: synthesizers can repeat rows and break the education mapping."""


def is_trivial(kind: str) -> bool:
    """True for a claim kind of :data:`TRIVIAL_KINDS`."""
    return kind in TRIVIAL_KINDS


@dataclass(frozen=True)
class Claim:
    """One checkable claim: rows × attributes × quantifier, or a fact of the table without a quantifier.

    Attributes:
        kind: how it was phrased, one of :data:`CLAIM_KINDS`.
        values: the attributes ``{column: value}``; a list of values claims each; ``(low, high)`` for a range,
            None for a one-valued column, ``{"education": "education_num"}`` for the code mapping.
        rows: 1-based row numbers (as the models count) the claim is about; empty: every shown row.
        where: ``{column: value}`` selecting the rows the claim is about ("every Husband is Male").
        quantifier: one of :data:`QUANTIFIERS` (``count`` for exactly and at_least); None for a fact of the table.
        negated: the text denies the fact (``quantifier == "none"``); for mapping, claims it broken.
        scope: ``sample`` or ``unclear`` (a C2 range that may describe the metadata block).
        text: the segment the claim came from.
    """

    kind: str
    values: Mapping[str, Any] = field(default_factory=dict)
    rows: tuple[int, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)
    quantifier: str | None = None
    count: int | None = None
    negated: bool = False
    scope: str = "sample"
    text: str = ""

    def __post_init__(self) -> None:
        """Check the quantifier; a quantified claim is negated exactly when it claims none."""
        if self.quantifier not in (None, *QUANTIFIERS):
            raise ValueError(f"quantifier {self.quantifier!r} is not one of {QUANTIFIERS}")
        object.__setattr__(self, "negated", self.negated if self.quantifier is None else self.quantifier == "none")

    def describe(self) -> str:
        """A short stable description, e.g. ``combination relationship=Husband;sex=Female`` (the tables' key)."""
        where = f" where {_pairs(self.where)}" if self.where else ""
        rows = f" rows={','.join(map(str, self.rows))}" if self.rows else ""
        count = "" if self.count is None or self.kind == "one_row" else \
            f" n{'>=' if self.quantifier == 'at_least' else '='}{self.count}"
        text = f"{'not ' if self.negated else ''}{self.kind} {_pairs(self.values)}{where}{rows}{count}"
        return " ".join(text.split())


def _pairs(attrs: Mapping[str, Any]) -> str:
    return ";".join(f"{k}={_fmt(v)}" for k, v in sorted(attrs.items()))


def _fmt(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return ("-" if isinstance(value, tuple) else "|").join(_fmt(v) for v in value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# --------------------------------------------------------------------------- dataset literals
class Literals(NamedTuple):
    """Merged ``claim_literals``: English-word values, missing-cell markers, code mapping, number phrases."""

    common_values: frozenset[str] = frozenset()
    missing_values: tuple[str, ...] = ()
    mapping: tuple[str, str] | None = None
    number_phrases: Mapping[str, tuple[re.Pattern, ...]] = {}


@lru_cache(maxsize=64)
def claim_literals(columns: tuple[str, ...]) -> Literals:
    """The ``claim_literals`` (``cue_codebook.yaml``) of each entry whose ``columns`` are all among ``columns``."""
    have = set(columns)
    raw = yaml.safe_load(resources.files("llmdisc.scoring").joinpath("cue_codebook.yaml").read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("claim_literals"), dict):
        raise DataError("cue_codebook.yaml has no 'claim_literals' mapping; fix: restore it")
    common, missing, phrases, mapping = set(), [], {}, None
    for entry in (e for e in raw["claim_literals"].values() if set(e.get("columns", ())) <= have):
        common |= {str(v).lower() for v in entry.get("common_values", ())}
        missing += [str(v) for v in entry.get("missing_values", ())]
        mapping = tuple(entry["mapping"]) if set(entry.get("mapping") or [""]) <= have else mapping
        phrases.update({col: tuple(re.compile(p, re.I) for p in patterns)
                        for col, patterns in (entry.get("number_phrases") or {}).items() if col in have})
    return Literals(frozenset(common), tuple(missing), mapping, phrases)


# --------------------------------------------------------------------------- vocabulary of a table
@dataclass(frozen=True)
class TableVocabulary:
    """Column names and category values of a table, compiled for matching in free text.

    ``value_index`` (found by ``value_pattern``) holds the values of one column that are no common word,
    ``column_values`` every value of each category column (read after its column's name: "race White").
    """

    columns: tuple[str, ...]
    numeric: frozenset[str]
    column_patterns: Mapping[str, re.Pattern]
    value_index: Mapping[str, tuple[str, Any]]
    value_pattern: re.Pattern | None
    column_values: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    literals: Literals = field(default_factory=Literals)

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> "TableVocabulary":
        """Build from the real table (its columns, dtypes and distinct category values)."""
        columns = tuple(str(c) for c in table.columns)
        literals = claim_literals(columns)
        numeric = frozenset(c for c in columns if pd.api.types.is_numeric_dtype(table[c]))
        patterns = {}
        for col in columns:
            variants = {col, col.replace("_", " "), col.replace("_", "-")}
            alt = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
            longer = [c for c in columns if c != col and c.startswith(col)]
            guard = "".join(f"(?![ _-]?{re.escape(c[len(col):].lstrip('_'))})" for c in longer)
            patterns[col] = re.compile(rf"(?<![\w-])(?:{alt}){guard}s?(?![\w])", re.I)  # 'ages', 'capital gains'
        owners: dict[str, list[tuple[str, Any]]] = {}
        column_values: dict[str, dict[str, Any]] = {}
        for col in (c for c in columns if c not in numeric):
            for value in pd.unique(table[col].dropna()):
                if text := str(value).strip():
                    column_values.setdefault(col, {})[text.lower()] = value
                if len(text) >= 3 and text.lower() not in literals.common_values:
                    owners.setdefault(text.lower(), []).append((col, value))
        index = {k: v[0] for k, v in owners.items() if len(v) == 1}  # a value of two columns is ambiguous
        alt = "|".join(re.escape(k) for k in sorted(index, key=len, reverse=True))
        # a plural of a word value is the value ("Husbands", "Males")
        pattern = re.compile(rf"(?<![\w-])({alt})(?:(?<=[a-z])s)?(?![\w-])", re.I) if index else None
        return cls(columns, numeric, patterns, index, pattern, column_values, literals)

    def columns_in(self, text: str) -> list[tuple[int, str]]:
        """(position, column) of every column name in ``text``."""
        return sorted((m.start(), col) for col, pat in self.column_patterns.items() for m in pat.finditer(text))

    def blank_values(self, text: str) -> str:
        """``text`` with every category value masked by ``#`` (same length): 'Never-married' is no negation."""
        return text if self.value_pattern is None else self.value_pattern.sub(lambda m: "#" * len(m.group()), text)


# --------------------------------------------------------------------------- checking
VERDICTS = ("true", "false", "not_checkable")


def _equal(series: pd.Series, value: Any) -> np.ndarray:
    if isinstance(value, (int, float)) and pd.api.types.is_numeric_dtype(series):
        return np.isclose(series.astype(float), float(value))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return (series.astype(str).str.strip().str.lower() == str(value).strip().lower()).to_numpy()


def _having(frame: pd.DataFrame, attrs: Mapping[str, Any]) -> np.ndarray:
    """Which rows of ``frame`` have every attribute."""
    mask = np.ones(len(frame), dtype=bool)
    for col, value in attrs.items():
        mask &= _equal(frame[col], value)
    return mask


def holds(quantifier: str, k: int, n: int, count: int | None = None) -> bool:
    """Whether ``k`` of ``n`` rows in scope having the attributes makes the quantifier true."""
    return {"every": k == n, "some": k > 0, "none": k == 0, "exactly": k == count,
            "at_least": k >= (count or 1), "most": 2 * k > n}[quantifier]


def _check_count(claim: Claim, sample: pd.DataFrame) -> tuple[str, str]:
    """Rows × attributes × quantifier: count the rows in scope that have the attributes (each listed value apart)."""
    scope, label = sample, "shown rows"
    if claim.rows:
        if max(claim.rows) > len(sample):
            return "false", f"row(s) {[r for r in claim.rows if r > len(sample)]} beyond the {len(sample)} rows shown"
        scope = sample.iloc[[r - 1 for r in claim.rows]]
    if claim.where:
        scope, label = scope[_having(scope, claim.where)], f"rows with {_pairs(claim.where)}"
        if scope.empty:
            return "not_checkable", f"no shown {label}: nothing to count"
    listed = next((c for c, v in claim.values.items() if isinstance(v, list)), None)
    n, failed = len(scope), []
    for attrs in [{**claim.values, listed: v} for v in claim.values[listed]] if listed else [claim.values]:
        k = int(_having(scope, attrs).sum())
        failed += [] if holds(claim.quantifier, k, n, claim.count) else [attrs]
    if claim.rows:  # which named row differs, and how
        misses = [f"row {r} {c}={scope[c].iloc[i]!r}, not {_fmt(v)!r}" for i, r in enumerate(claim.rows)
                  for c, v in claim.values.items() if not _equal(scope[c].iloc[[i]], v)[0]]
        return ("false", "; ".join(misses[:3])) if misses else ("true", "every named row has the values")
    if listed:
        return ("false", f"{listed} shows no {', '.join(_fmt(a[listed]) for a in failed[:5])}") if failed else \
            ("true", f"every listed {listed} value is shown")
    return ("false" if failed else "true"), f"{k} of {n} {label} have it" if claim.values else f"{n} rows shown"


def check_claim(claim: Claim, sample: pd.DataFrame | None, *, real: pd.DataFrame | None = None,
                metadata_table: pd.DataFrame | None = None) -> tuple[str, str]:
    """Check one claim against the shown sample (in order; None when it cannot be rebuilt): ``(verdict in
    :data:`VERDICTS`, what was compared)``. ``real`` gives the valid values for ``invalid_values`` and the
    canonical mapping for ``mapping``; ``metadata_table`` (the table the C2 metadata described) the ranges of
    ``scope="unclear"``."""
    if sample is None:
        return "not_checkable", "the shown sample cannot be rebuilt"
    unknown = [c for c in [*claim.where, *([] if claim.kind == "mapping" else claim.values)] if c not in sample]
    if unknown:
        return "not_checkable", f"column(s) {unknown} not in the sample"
    if claim.quantifier is not None:
        verdict, detail = _check_count(claim, sample)
        if claim.kind != "invalid_values" or verdict != "true":
            return verdict, detail
        (col, values), = claim.values.items()  # shown, and none of them a value of the real table
        if real is None:
            return "not_checkable", "no real table to define the valid codes"
        valid = [_fmt(v) for v in values if _equal(real[col], v).any()]
        return ("false", f"{', '.join(valid[:5])} are valid {col} values of the real table") if valid else \
            ("true", detail)
    if claim.kind == "range":
        (col, (low, high)), = claim.values.items()
        tables = [sample] if claim.scope == "sample" else [sample, metadata_table]
        if tables[-1] is None:
            return "not_checkable", "a C2 range that may describe the metadata block"
        ok = any(np.isclose(t[col].min(), low) and np.isclose(t[col].max(), high) for t in tables)
        both = pd.concat([t[col] for t in tables])
        detail = f"sample {sample[col].min()}-{sample[col].max()}" + (
            f", table {both.min()}-{both.max()}" if len(tables) > 1 else "")
        return ("true" if ok else "false"), detail
    if claim.kind == "single_value":  # one value in the column (the one named, if any)
        (col, value), = claim.values.items()
        if (distinct := sample[col].nunique(dropna=False)) != 1:
            return "false", f"{col} shows {distinct} distinct values"
        if value is not None and not _equal(sample[col], value).all():
            return "false", f"{col} is {sample[col].iloc[0]!r}, not {_fmt(value)}"
        return "true", f"{col} has one value"
    if claim.kind == "no_missing":  # negated: "missing values are present"
        markers = claim_literals(tuple(map(str, sample.columns))).missing_values
        n = int(sample.isna().sum().sum() + sample.astype(str).isin(markers).sum().sum())
        return ("true" if bool(n) == claim.negated else "false"), f"{n} missing cells"
    if claim.kind == "duplicates":
        n = int(sample.duplicated().sum())
        return ("true" if bool(n) != claim.negated else "false"), f"{n} duplicate rows"
    if claim.kind == "mapping":  # negated: the mapping is broken
        (code, number), = claim.values.items()
        base = real if real is not None else sample
        if not {code, number} <= set(sample.columns) & set(base.columns):
            return "not_checkable", f"no {code}/{number} columns"
        canonical = base.groupby(code)[number].agg(lambda s: s.mode().iloc[0])
        n = int((sample[code].map(canonical) != sample[number]).sum())
        return ("true" if bool(n) == claim.negated else "false"), f"{n} rows off the real mapping"
    return "not_checkable", f"unknown claim kind {claim.kind!r}"
