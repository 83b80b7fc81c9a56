"""Cue validity: parse the cues that name a checkable fact about the shown rows and check each against them.

A discriminator that writes "row 7 has relationship = Husband and sex = Female" makes a claim about the 20 rows
it was shown. :func:`parse_claims` finds such claims in one cue string; :func:`check_claim` checks one against
the shown sample and returns ``true``, ``false`` or ``not_checkable`` with the reason. Claim kinds:

* ``row_values``: rows named by number (1-based, as the models count them) with column values
  ("Row 8: marital_status is Divorced, but relationship is Husband").
* ``combination``: two values of two columns said to occur together in some row, without a row number
  ("Husband and Female"); negated ("no Female Husband") it claims that no row has them.
* ``range``: a column's range ("age ranges from 18 to 57"): the sample's min and max must equal the bounds;
  under C2 without the word "sample" the range may describe the metadata block, so it is checked against
  the table the metadata described when that table is given, else not checkable.
* ``listed_values``: values listed for a column ("occupation values like 410, 2001, 7315"): each must occur.
* ``single_value``: a column with one value only ("race is uniformly 1 across all 20 rows").
* ``no_missing``: no missing values; ``duplicates``: duplicate rows (or their absence).
* ``mapping``: education and education_num consistent (or not) with the real table's one-to-one mapping.
* ``invalid_values``: values said not to exist: each must occur in the sample and be absent from the
  valid vocabulary (the distinct values of the real table).
* ``every_row``: every shown row has the values ("every row has race White", "all rows are Married-civ-spouse").
* ``one_row``: exactly one shown row has them ("only one row has income >50K", "Masters appears only once").
* ``appears``: some row has them ("Self-emp-not-inc appears"), exactly N rows when a count is given ("Husband
  appears in 3 rows", "occupation 2001 appears twice"); negated ("no row is Divorced") it claims none has them.
* ``most_rows``: more than half of the shown rows have them ("most rows have capital_gain 0").
* ``row_count``: the number of rows shown ("the sample has 20 rows").

Kinds in :data:`TRIVIAL_KINDS` state what the protocol fixes for every table it shows, real or synthetic: they
are counted apart and kept out of the headline validity (:func:`validity_table`).

The parser is rule-based and deliberately conservative: what it cannot tie to a column and a value is not a
claim. Its accuracy is measured on two hand-checked sets: claims of real cue strings
(:func:`parser_agreement`) and paraphrased cues on small tables with known truth (:func:`paraphrase_accuracy`);
how many cue strings it finds any claim in is :func:`parser_coverage`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.errors import DataError

VERDICTS = ("true", "false", "not_checkable")
CLAIM_KINDS = ("row_values", "combination", "range", "listed_values", "single_value", "no_missing",
               "duplicates", "mapping", "invalid_values", "every_row", "one_row", "appears", "most_rows",
               "row_count")
TRIVIAL_KINDS: Mapping[str, str] = {
    "no_missing": "every table the study shows is complete: the paper dropped Adult's rows with '?', its Census "
                  "file and our tables have no missing cells, and the synthesizers write none; 'no missing "
                  "values' is true of every table, real or synthetic, and says nothing about which it is",
    "row_count": "the protocol fixes the number of rows shown (20); stating it is true of every table",
}
"""Claim kinds that are trivially true: the protocol fixes the fact for every table it shows, whatever its
label, so a model that states it has looked at nothing. Why each is trivial is its value. They are counted in
their own rows of :func:`validity_table` (``claim_set = "trivial"``), never in the headline. ``duplicates`` and
``mapping`` are not trivial: synthesizers can repeat rows and break the education mapping."""


def is_trivial(kind: str) -> bool:
    """True for a claim kind of :data:`TRIVIAL_KINDS`."""
    return kind in TRIVIAL_KINDS

_NEGATION = re.compile(r"\b(no|not|never|none|without|absence|absent|lack|lacks|cannot|free of)\b", re.I)
_INCONSISTENT = re.compile(r"inconsisten|mismatch|incorrect|violat|not making sense|n[o']t make sense|breakdown|"
                           r"broken|problem|wrong|does not match|failure", re.I)
_CONSISTENT = re.compile(r"consisten|perfect|one-to-one|well-maintained|always map|maintain", re.I)
_LINK = re.compile(r"\b(with|but|paired|combination|combined|together|contradict\w*)\b", re.I)
_STOP_VALUES = {"other", "none", "?", "private", "white", "black", "other-service"}
"""Category values too common as English words to be read as a cited value when they stand alone."""


@dataclass(frozen=True)
class Claim:
    """One checkable claim.

    Attributes:
        kind: one of :data:`CLAIM_KINDS`.
        values: ``{column: value}`` (row_values, combination, single_value), or ``{column: [values]}``
            (listed_values, invalid_values), or ``{column: (low, high)}`` (range).
        rows: 1-based row numbers (row_values).
        negated: the text denies the fact (combination, no_missing, duplicates) or, for mapping, claims
            an inconsistency.
        scope: ``sample`` (the shown rows) or ``unclear`` (a range under C2 that may describe the metadata).
        text: the segment the claim came from.
        count: the number of rows claimed (appears, row_count); None when no number is given.
    """

    kind: str
    values: Mapping[str, Any] = field(default_factory=dict)
    rows: tuple[int, ...] = ()
    negated: bool = False
    scope: str = "sample"
    text: str = ""
    count: int | None = None

    def describe(self) -> str:
        """A short stable description, e.g. ``combination relationship=Husband;sex=Female``."""
        parts = ";".join(f"{k}={_fmt(v)}" for k, v in sorted(self.values.items()))
        rows = f" rows={','.join(map(str, self.rows))}" if self.rows else ""
        count = f" n={self.count}" if self.count is not None else ""
        return " ".join(f"{'not ' if self.negated else ''}{self.kind} {parts}{rows}{count}".split())


def _fmt(value: Any) -> str:
    if isinstance(value, tuple):
        return f"{_fmt(value[0])}-{_fmt(value[1])}"
    if isinstance(value, list):
        return "|".join(_fmt(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --------------------------------------------------------------------------- vocabulary of a table
@dataclass(frozen=True)
class TableVocabulary:
    """Column names and category values of a table, compiled for matching in free text."""

    columns: tuple[str, ...]
    numeric: frozenset[str]
    column_patterns: Mapping[str, re.Pattern]
    value_index: Mapping[str, tuple[str, Any]]
    value_pattern: re.Pattern | None
    column_values: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """``{category column: {lower-case value: value}}``, every value (common words too): a value written right
    after its column's name ("race White") is read even when it is too common to be read alone."""

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> "TableVocabulary":
        """Build from the real table (its columns, dtypes and distinct category values)."""
        columns = tuple(str(c) for c in table.columns)
        numeric = frozenset(c for c in columns if pd.api.types.is_numeric_dtype(table[c]))
        patterns = {}
        for col in columns:
            variants = {col, col.replace("_", " "), col.replace("_", "-")}
            alt = "|".join(re.escape(v) for v in sorted(variants, key=len, reverse=True))
            # 'education' must not match inside 'education_num'
            longer = [c for c in columns if c != col and c.startswith(col)]
            guard = "".join(f"(?![ _-]?{re.escape(c[len(col):].lstrip('_'))})" for c in longer)
            patterns[col] = re.compile(rf"(?<![\w-])(?:{alt}){guard}s?(?![\w])", re.I)  # 'ages', 'capital gains'
        owners: dict[str, list[tuple[str, Any]]] = {}
        column_values: dict[str, dict[str, Any]] = {}
        for col in columns:
            if col in numeric:
                continue
            for value in pd.unique(table[col].dropna()):
                text = str(value).strip()
                if text:
                    column_values.setdefault(col, {})[text.lower()] = value
                if len(text) < 3 or text.lower() in _STOP_VALUES:
                    continue
                owners.setdefault(text.lower(), []).append((col, value))
        index = {k: v[0] for k, v in owners.items() if len(v) == 1}  # a value of two columns is ambiguous
        pattern = None
        if index:
            alt = "|".join(re.escape(k) for k in sorted(index, key=len, reverse=True))
            # a plural of a word value is the value ("Husbands", "Males")
            pattern = re.compile(rf"(?<![\w-])({alt})(?:(?<=[a-z])s)?(?![\w-])", re.I)
        return cls(columns, numeric, patterns, index, pattern, column_values)

    def columns_in(self, text: str) -> list[tuple[int, str]]:
        """(position, column) of every column name in ``text``."""
        found = []
        for col, pat in self.column_patterns.items():
            found.extend((m.start(), col) for m in pat.finditer(text))
        return sorted(found)


# --------------------------------------------------------------------------- parsing
_ROWS = re.compile(r"\b(?:rows?|records?|entry|entries)\s*#?\s*((?:\d+\s*(?:,|and|&|-)?\s*)+)", re.I)
_ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                  "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
                  "eighteenth", "nineteenth", "twentieth")
_ORDINAL_ROW = re.compile(rf"\b(?:(\d{{1,3}})(?:st|nd|rd|th)|({'|'.join(_ORDINAL_WORDS)}))\s+(?:row|record|entry)\b",
                          re.I)
_NUMBER_WORDS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                             "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                             "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_COUNT_WORD = rf"(\d+|{'|'.join(_NUMBER_WORDS)})"
_NUMBER = r"-?\d+(?:\.\d+)?"


def cue_segments(text: str) -> list[str]:
    """Split a cue string into bullet lines and sentences, and after each "(row N)" of a sentence."""
    parts = re.split(r"\n+|(?<=[.!?])\s+(?=[A-Z*])|\s\*\s+", text)
    out = []
    for part in parts:
        out.extend(re.split(r"(?<=\(row \d\))|(?<=\(row \d\d\))", part, flags=re.I))
    return [p.strip(" *-\t,;") for p in out if p and p.strip(" *-\t,;")]


def _clean(text: str) -> str:
    return text.replace("`", "'").replace("**", "").replace("\u2019", "'")


def _numeric_attrs(seg: str, vocab: TableVocabulary) -> dict[str, float]:
    """Column-number pairs: ``education_num 10``, ``age = 20``, ``18-year-old``, ``5 hours``."""
    out: dict[str, float] = {}
    for col in vocab.numeric:
        pat = vocab.column_patterns[col]
        for m in pat.finditer(seg):
            after = seg[m.end():m.end() + 14]
            after = seg[m.end():m.end() + 30]
            hit = re.match(rf"['\"]?\s*(?:=|:|is|are|of|was)?\s*(?:mostly |predominantly |always )?['\"]?"
                           rf"({_NUMBER}|zero\b)(?![\d.]*\s*(?:-|to)\s*\d)", after, re.I)
            if hit and not re.match(r"\s*\(", after):
                out[col] = 0.0 if hit.group(1).lower() == "zero" else float(hit.group(1))
    if "age" in vocab.numeric:
        m = re.search(r"\b(\d{1,3})-year-old|\baged (\d{1,3})\b", seg)
        if m:
            out["age"] = float(m.group(1) or m.group(2))
    if "education_num" in vocab.numeric and "education_num" not in out:
        m = re.search(r"mapped to\s*'?(?:education[ _-]num'?\s*)?(\d+)", seg, re.I)
        if m:
            out["education_num"] = float(m.group(1))
    if "hours_per_week" in vocab.numeric:
        m = re.search(r"\b(?:works?|working)\s+(\d{1,2})\s+hours", seg, re.I)
        if m:
            out["hours_per_week"] = float(m.group(1))
    return out


def _linked_pair(seg: str, vocab: TableVocabulary) -> bool:
    """True when the segment's two category values are written as one pair ("Female with Husband")."""
    spans = [m.span() for m in vocab.value_pattern.finditer(seg)] if vocab.value_pattern else []
    if len(spans) != 2:
        return False
    between = seg[spans[0][1]:spans[1][0]]
    return len(between) <= 25 or bool(_LINK.search(between))


def _category_attrs(seg: str, vocab: TableVocabulary) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if vocab.value_pattern is None:
        return out
    for m in vocab.value_pattern.finditer(seg):
        col, value = vocab.value_index[m.group(1).lower()]
        if col in out and out[col] != value:
            out[col] = None  # two values of one column in one segment: not one row's claim
        else:
            out[col] = value
    for col, values in vocab.column_values.items():  # "race White", "workclass = 'Private'"
        for name in vocab.column_patterns[col].finditer(seg):
            m = re.match(r"['\"]?\s*(?:=|:|is|are|of|was)?\s*['\"]?([^\s'\",.;:()]+)", seg[name.end():])
            if m and m.group(1).lower() in values and col not in out:
                out[col] = values[m.group(1).lower()]
    return {k: v for k, v in out.items() if v is not None}


def _row_numbers(seg: str) -> tuple[int, ...]:
    rows: list[int] = []
    for m in _ROWS.finditer(seg):
        body = m.group(1)
        for a, b in re.findall(r"(\d+)\s*-\s*(\d+)", body):
            rows.extend(range(int(a), int(b) + 1))
        body = re.sub(r"\d+\s*-\s*\d+", " ", body)
        rows.extend(int(x) for x in re.findall(r"\d+", body))
    for m in _ORDINAL_ROW.finditer(seg):
        rows.append(int(m.group(1)) if m.group(1) else _ORDINAL_WORDS.index(m.group(2).lower()) + 1)
    return tuple(sorted(set(r for r in rows if 1 <= r <= 1000)))


def parse_claims(text: Any, vocab: TableVocabulary, *, condition: str | None = None) -> list[Claim]:
    """Every checkable claim in one cue string.

    Args:
        text: the cue string (non-strings give no claim).
        vocab: the vocabulary of the table the sample came from (:meth:`TableVocabulary.from_table` on the
            real table).
        condition: ``C1``/``C2``: under C2 a range without the word "sample" has ``scope="unclear"``.

    Returns:
        Claims in order of appearance (possibly none).
    """
    if not isinstance(text, str) or not text.strip():
        return []
    claims: list[Claim] = []
    whole = _clean(text)
    low = whole.lower()
    if re.search(r"missing values?|missing data|\bnulls?\b", low):
        negated = bool(re.search(r"\b(no|lack|lacks|absence|absent|without|zero|none)\b[^.]{0,40}missing|"
                                 r"missing[^.]{0,20}\b(none|absent)\b", low))
        claims.append(Claim("no_missing", negated=not negated, text=whole[:200]))
    if _DUPLICATES.search(low):
        claims.append(Claim("duplicates", negated=bool(_NEGATION.search(_blank_values(low, vocab))),
                            text=whole[:200]))
    for seg in cue_segments(whole):
        seg_low = seg.lower()
        if re.search(r"education'?\s*(and|vs\.?|versus|with|/|-)\s*'?education[ _-]?num", seg_low):
            inconsistent = bool(_INCONSISTENT.search(seg_low)) and not re.search(r"\bno (\w+ )?inconsisten", seg_low)
            if (inconsistent or _CONSISTENT.search(seg_low)) and not any(c.kind == "mapping" for c in claims):
                claims.append(Claim("mapping", values={"education": "education_num"}, negated=inconsistent,
                                    text=seg[:200]))
        claims.extend(_segment_claims(seg, vocab, condition))
    return claims


_SINGLE = re.compile(r"uniformly|only (a )?single|single unique|consistent value of|all \d+ (displayed |provided |"
                     r"sample )?rows|same value|(?:has|have|takes?|shows?) (?:only )?(?:a|one) single value|"
                     r"(?:has|have|takes?|shows?) (?:only|just) (?:one|a single) (?:unique |distinct )?value")
"""A column with one value ("race is uniformly 1", "takes only a single value"); "skewed towards a single value"
is not one."""
_DUPLICATES = re.compile(r"duplicat|\b(?:rows?|records?)\b[^.]{0,40}\b(?:are|is)\s+identical|"
                         r"identical\s+(?:rows|records)|repeated\s+(?:rows|records)", re.I)
_ROW_NOUN = r"(?:row|record|entry|person|individual|respondent)"
_EVERY = re.compile(rf"\b(?:every|each)\s+(?:single\s+)?{_ROW_NOUN}\b|\ball\s+(?:of\s+)?(?:the\s+)?(?:\d+\s+)?"
                    r"(?:shown\s+|displayed\s+|sample\s+|provided\s+)?(?:rows|records|entries|people|individuals|"
                    r"respondents)\b", re.I)
_ONE = re.compile(rf"\b(?:only|just|exactly)\s+(?:one|1|a\s+single)\s+{_ROW_NOUN}\b|\ba\s+single\s+{_ROW_NOUN}\b|"
                  rf"\bthe\s+only\s+{_ROW_NOUN}\b|\b(?:only|exactly|just)\s+once\b|"
                  r"\b(?:appears?|occurs?|shows?\s+up)\s+once\b", re.I)
_MOST = re.compile(r"\b(?:most|the\s+majority\s+of|a\s+majority\s+of|the\s+bulk\s+of)\s+(?:of\s+)?(?:the\s+)?\w+s\b|"
                   r"\bmostly\b|\bpredominantly\b", re.I)
_APPEARS = re.compile(r"\b(?:appears?|appeared|appearing|occurs?|occurred|occurring|shows?\s+up|is\s+present|"
                      r"are\s+present)\b(?=\s*(?:$|[.,;:)]|in\b|\d|once|twice|only|exactly|just|at least|several|"
                      r"multiple|times|\w+\s+times))", re.I)
_COUNT = re.compile(rf"\b{_COUNT_WORD}\s+times\b|\b(twice|thrice)\b|"
                    rf"\bin\s+{_COUNT_WORD}\s+(?:rows|records|entries|cases)\b|"
                    rf"\b{_COUNT_WORD}\s+(?:rows|records|entries|people|individuals|persons|respondents)\s+"
                    r"(?:have|has|with|are|show|contain|list)\b", re.I)
_NONE = re.compile(rf"\bno\s+(?:\S+\s+)?{_ROW_NOUN}s?\b|\bnobody\b|\bno\s+one\b|\bnone\s+of\s+the\b|"
                   r"\bnever\s+(?:appears?|occurs?)\b|\bdo(?:es)?(?:n't|\s+not)\s+(?:appear|occur)\b|\bnot\s+present\b",
                   re.I)
_NOT_ALL = re.compile(r"\bnot\s+(?:every|all|each|most|only)\b", re.I)
_ROW_COUNT = re.compile(rf"\b(?:sample|there)\b[^.\d]{{0,25}}?\b(?:has|have|contains?|consists\s+of|of|are|is|with|"
                        rf"shows?|includes?)\s+{_COUNT_WORD}\s+(?:rows|records|entries)\b", re.I)
"""The rows shown ("the sample has 20 rows", "there are 20 rows"); "a dataset of 32561 rows" is the source table."""
_GENERAL = re.compile(r"\b(?:typically|usually|commonly|in real|real-world|in the original|would be|expected)\b", re.I)
"""Words of a statement about data in general ("in real census data gains are typically 15024, 7688"), whose
values are no claim about the rows shown."""


def _number(text: str) -> int:
    """An integer written in digits or words ("3", "three", "twice"); -1 for anything else."""
    text = text.lower()
    return int(text) if text.isdigit() else {"twice": 2, "thrice": 3, **_NUMBER_WORDS}.get(text, -1)


def _count(seg: str) -> int | None:
    """The number of rows a segment says have a value ("3 times", "twice", "in 4 rows"), None if none."""
    m = _COUNT.search(seg)
    if not m:
        return None
    return _number(next(g for g in m.groups() if g))


def _blank_values(text: str, vocab: TableVocabulary) -> str:
    """``text`` with every category value blanked, so that 'Never-married' or 'Not-in-family' is no negation."""
    return vocab.value_pattern.sub("VALUE", text) if vocab.value_pattern is not None else text


def _quantified(seg: str, attrs: Mapping[str, Any], vocab: TableVocabulary) -> Claim | None:
    """A claim on how many shown rows have ``attrs``: every_row, one_row, most_rows or appears; None if none."""
    plain = _blank_values(seg, vocab)
    if _NOT_ALL.search(plain):
        return None  # "not every row ...": no claim the checker can state
    if _ONE.search(plain):
        return Claim("one_row", values=dict(attrs), text=seg[:200])
    if _EVERY.search(plain):
        return Claim("every_row", values=dict(attrs), text=seg[:200])
    if _MOST.search(plain):
        return Claim("most_rows", values=dict(attrs), text=seg[:200])
    if _NONE.search(plain) or (_APPEARS.search(plain) and _NEGATION.search(plain)):
        return Claim("appears", values=dict(attrs), negated=True, text=seg[:200])
    if _APPEARS.search(plain) or _COUNT.search(plain):
        count = _count(plain)
        if count == 1:
            return Claim("one_row", values=dict(attrs), text=seg[:200])
        return Claim("appears", values=dict(attrs), count=count if count and count > 0 else None, text=seg[:200])
    return None


_LIST = re.compile(r"(?:e\.g\.,?|like|such as|values? of|values?|has|have|are(?: predominantly)?|exclusively)\s*:?\s*"
                   r"\(?((?:'?-?\d+(?:\.\d+)?'?\s*,\s*)*(?:and\s+|or\s+)?'?-?\d+(?:\.\d+)?'?)(?!\d|\.\d)(?!-year)"
                   r"(?!\s*(?:%|rows|hours|unique|distinct|years|out of))")
_STATISTIC = re.compile(r"\b(max|maximum|min|minimum|mean|median|average|std|unique|distinct|count|number of|"
                        r"percentile|p\d\d|skewness|kurtosis|shapiro|p-?values?|correlat\w*)\b|\br\s*=", re.I)
"""Words of a statistic (of the C2 metadata block: "Shapiro-Wilk p=0.4529", "r=0.33"), whose number is no shown
value."""


def _owner_of_list(seg: str, start: int, cols: list[tuple[int, str]]) -> str | None:
    """The column a list of numbers belongs to: the last column named before it, skipping one that is
    only a comparison ("Similar to 'occupation', this column ...")."""
    owner = None
    for pos, col in cols:
        if pos >= start:
            break
        if re.search(r"(similar to|like|as in|unlike)\s*'?$", seg[max(0, pos - 14):pos], re.I):
            continue
        owner = col
    return owner


def _segment_claims(seg: str, vocab: TableVocabulary, condition: str | None) -> list[Claim]:
    out: list[Claim] = []
    cols = vocab.columns_in(seg)
    low = seg.lower()
    # ranges and listed values are tied to the nearest column named before them
    for pos, col in cols:
        window = seg[pos:pos + 140]
        if col in vocab.numeric:
            m = (re.search(rf"(?:range[sd]?|spans?|spanning|from|\()\s*(?:from|of|:)?\s*\(?({_NUMBER})\s*"
                           rf"(?:-|–|to|up to|through)\s*({_NUMBER})(?!\.?\d)", window)
                 or re.search(rf"between\s+({_NUMBER})\s+and\s+({_NUMBER})(?!\.?\d)", window))
            if m and not re.search(r"\d-year", window[m.start():m.end() + 6]):
                scope = "sample" if ("sample" in window.lower() or condition != "C2") else "unclear"
                out.append(Claim("range", values={col: (float(m.group(1)), float(m.group(2)))}, scope=scope,
                                 text=seg[:200]))
                continue
        m = _LIST.search(window)
        if (m and _owner_of_list(seg, pos + m.start(1), cols) == col
                and not _STATISTIC.search(window[:m.start(1)])  # a statistic's value, not a shown value
                and not _GENERAL.search(window[:m.start(1)])):
            values = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", m.group(1))]
            kind = "invalid_values" if re.search(r"not (a )?valid|invalid|do(es)? not exist|non-?existent|"
                                                 r"outside", low) else "listed_values"
            if col in vocab.numeric or kind == "invalid_values":
                out.append(Claim(kind, values={col: values}, text=seg[:200]))
        if _SINGLE.search(low) and col in vocab.columns:
            v = re.search(r"(?:value of|uniformly|value)\s*'?(-?\d+)'?", seg)
            value = float(v.group(1)) if v and col in vocab.numeric else None
            if not any(c.kind == "single_value" for c in out):
                out.append(Claim("single_value", values={col: value}, text=seg[:200]))
    attrs = {**_category_attrs(seg, vocab), **_numeric_attrs(seg, vocab)}
    rows = _row_numbers(seg)
    if rows and attrs:
        out.append(Claim("row_values", values=attrs, rows=rows, text=seg[:200]))
        return out
    if rows:
        return out
    if not attrs:
        m = _ROW_COUNT.search(seg)
        if m:
            out.append(Claim("row_count", count=_number(next(g for g in m.groups() if g)), text=seg[:200]))
        return out
    if not any(c.kind in ("range", "listed_values", "invalid_values") for c in out):
        quantified = _quantified(seg, attrs, vocab)
        if quantified is not None:  # it says what single_value would, with the value
            out = [c for c in out if not (c.kind == "single_value" and set(c.values) <= set(quantified.values))]
            return [*out, quantified]
    cats = _category_attrs(seg, vocab)
    if len(cats) == 2 and _linked_pair(seg, vocab):
        out.append(Claim("combination", values=cats, negated=bool(_NEGATION.search(_blank_values(seg, vocab))),
                         text=seg[:200]))
    return out


# --------------------------------------------------------------------------- checking
def _equal(series: pd.Series, value: Any) -> pd.Series:
    if isinstance(value, (int, float)) and pd.api.types.is_numeric_dtype(series):
        return pd.Series(np.isclose(series.astype(float), float(value)), index=series.index)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return series.astype(str).str.strip().str.lower() == str(value).strip().lower()


def _canonical_mapping(real: pd.DataFrame) -> dict[str, Any] | None:
    if not {"education", "education_num"} <= set(real.columns):
        return None
    return real.groupby("education")["education_num"].agg(lambda s: s.mode().iloc[0]).to_dict()


def check_claim(claim: Claim, sample: pd.DataFrame | None, *, real: pd.DataFrame | None = None,
                metadata_table: pd.DataFrame | None = None) -> tuple[str, str]:
    """Check one claim against the shown sample.

    Args:
        claim: a parsed claim.
        sample: the rows shown, in the order shown (None when the sample cannot be rebuilt).
        real: the real table (valid vocabulary for ``invalid_values``, canonical mapping for ``mapping``).
        metadata_table: the table the C2 metadata described, for ranges of ``scope="unclear"``.

    Returns:
        ``(verdict, detail)``: verdict in :data:`VERDICTS`, detail says what was compared.
    """
    if sample is None:
        return "not_checkable", "the shown sample cannot be rebuilt"
    unknown = [c for c in claim.values if c not in sample.columns and claim.kind != "mapping"]
    if unknown:
        return "not_checkable", f"column(s) {unknown} not in the sample"
    if claim.kind == "row_values":
        bad = [r for r in claim.rows if r > len(sample)]
        if bad:
            return "false", f"row(s) {bad} beyond the {len(sample)} rows shown"
        misses = []
        for r in claim.rows:
            row = sample.iloc[[r - 1]]
            for col, value in claim.values.items():
                if not bool(_equal(row[col], value).iloc[0]):
                    misses.append(f"row {r} {col}={row[col].iloc[0]!r}, not {_fmt(value)!r}")
        return ("false", "; ".join(misses[:3])) if misses else ("true", "every named row has the values")
    if claim.kind == "combination":
        mask = np.ones(len(sample), dtype=bool)
        for col, value in claim.values.items():
            mask &= np.asarray(_equal(sample[col], value))
        present = bool(mask.any())
        rows = [int(i) + 1 for i in np.flatnonzero(mask)]
        if claim.negated:
            return ("false", f"rows {rows} have it") if present else ("true", "no shown row has it")
        return ("true", f"rows {rows}") if present else ("false", "no shown row has this combination")
    if claim.kind in ("every_row", "one_row", "appears", "most_rows"):
        mask = np.ones(len(sample), dtype=bool)
        for col, value in claim.values.items():
            mask &= np.asarray(_equal(sample[col], value))
        k, n = int(mask.sum()), len(sample)
        detail = f"{k} of {n} shown rows have it"
        if claim.kind == "every_row":
            return ("true" if k == n else "false"), detail
        if claim.kind == "one_row":
            return ("true" if k == 1 else "false"), detail
        if claim.kind == "most_rows":
            return ("true" if 2 * k > n else "false"), detail
        if claim.negated:
            return ("true" if k == 0 else "false"), detail
        if claim.count is not None:
            return ("true" if k == claim.count else "false"), detail
        return ("true" if k > 0 else "false"), detail
    if claim.kind == "row_count":
        return ("true" if claim.count == len(sample) else "false"), f"{len(sample)} rows shown"
    if claim.kind == "range":
        (col, (low, high)), = claim.values.items()
        table = sample
        if claim.scope == "unclear":
            if metadata_table is None:
                return "not_checkable", "a C2 range that may describe the metadata block"
            values = pd.concat([sample[col], metadata_table[col]])
            ok = any(np.isclose(t[col].min(), low) and np.isclose(t[col].max(), high)
                     for t in (sample, metadata_table))
            return ("true" if ok else "false",
                    f"sample {sample[col].min()}-{sample[col].max()}, table {values.min()}-{values.max()}")
        ok = np.isclose(table[col].min(), low) and np.isclose(table[col].max(), high)
        return ("true" if ok else "false", f"sample {table[col].min()}-{table[col].max()}")
    if claim.kind in ("listed_values", "invalid_values"):
        (col, values), = claim.values.items()
        absent = [v for v in values if not bool(_equal(sample[col], v).any())]
        if absent:
            return "false", f"{col} shows no {', '.join(_fmt(v) for v in absent[:5])}"
        if claim.kind == "invalid_values":
            if real is None:
                return "not_checkable", "no real table to define the valid codes"
            valid = [v for v in values if bool(_equal(real[col], v).any())]
            if valid:
                return "false", f"{', '.join(_fmt(v) for v in valid[:5])} are valid {col} values of the real table"
        return "true", f"every listed {col} value is shown"
    if claim.kind == "single_value":
        (col, value), = claim.values.items()
        distinct = sample[col].nunique(dropna=False)
        if distinct != 1:
            return "false", f"{col} shows {distinct} distinct values"
        if value is not None and not bool(_equal(sample[col], value).all()):
            return "false", f"{col} is {sample[col].iloc[0]!r}, not {_fmt(value)}"
        return "true", f"{col} has one value"
    if claim.kind == "no_missing":
        n_missing = int(sample.isna().sum().sum() + (sample.astype(str) == "?").sum().sum())
        if claim.negated:  # claims missing values are present
            return ("true" if n_missing else "false"), f"{n_missing} missing cells"
        return ("true" if n_missing == 0 else "false"), f"{n_missing} missing cells"
    if claim.kind == "duplicates":
        n_dup = int(sample.duplicated().sum())
        if claim.negated:
            return ("true" if n_dup == 0 else "false"), f"{n_dup} duplicate rows"
        return ("true" if n_dup else "false"), f"{n_dup} duplicate rows"
    if claim.kind == "mapping":
        mapping = _canonical_mapping(real if real is not None else sample)
        if mapping is None or not {"education", "education_num"} <= set(sample.columns):
            return "not_checkable", "no education/education_num columns"
        expected = sample["education"].map(mapping)
        n_off = int((expected != sample["education_num"]).sum())
        if claim.negated:
            return ("true" if n_off else "false"), f"{n_off} rows off the real mapping"
        return ("true" if n_off == 0 else "false"), f"{n_off} rows off the real mapping"
    return "not_checkable", f"unknown claim kind {claim.kind!r}"


# --------------------------------------------------------------------------- tables of claims
def check_cues(cues: pd.DataFrame, samples: Mapping[Any, pd.DataFrame | None], *,
               vocabularies: Mapping[str, TableVocabulary], reals: Mapping[str, pd.DataFrame] | None = None,
               metadata_tables: Mapping[Any, pd.DataFrame | None] | None = None,
               unavailable_reasons: Mapping[Any, str] | None = None) -> pd.DataFrame:
    """Parse and check every cue string of a cue table; one row per claim.

    Args:
        cues: cue strings (:func:`llmdisc.scoring.cues.cue_strings`) with ``dataset_key``, ``condition``, ``text``.
        samples: ``{trial key: shown rows or None}``; the trial key is ``(source, run_id, trial_id, line_no)``.
        vocabularies: ``{dataset_key: TableVocabulary}`` (from the real table).
        reals: ``{dataset_key: real table}`` for the valid codes and the education mapping.
        metadata_tables: ``{trial key: table the C2 metadata described}`` (optional).
        unavailable_reasons: ``{trial key: why its sample cannot be rebuilt}``, shown as the detail.

    Returns:
        Columns: the cue columns, cue_row (the index label of the claim's cue string in ``cues``), claim_kind,
        claim, verdict, detail. Cue strings without a claim do not appear: :func:`parser_coverage` counts them.
    """
    rows = []
    reals = reals or {}
    metadata_tables = metadata_tables or {}
    unavailable_reasons = unavailable_reasons or {}
    for cue_row, rec in zip(cues.index, cues.to_dict("records")):
        vocab = vocabularies.get(rec.get("dataset_key"))
        if vocab is None:
            continue
        key = tuple(rec.get(k) for k in ("source", "run_id", "trial_id", "line_no"))
        sample = samples.get(key)
        for claim in parse_claims(rec.get("text"), vocab, condition=rec.get("condition")):
            if sample is None:
                verdict, detail = "not_checkable", unavailable_reasons.get(key, "the shown sample cannot be rebuilt")
            else:
                verdict, detail = check_claim(claim, sample, real=reals.get(rec.get("dataset_key")),
                                              metadata_table=metadata_tables.get(key))
            rows.append({**rec, "cue_row": cue_row, "claim_kind": claim.kind, "claim": claim.describe(),
                         "verdict": verdict, "detail": detail})
    return pd.DataFrame(rows)


def verified_cues(trials: pd.DataFrame, samples: Mapping[str, pd.DataFrame], *,
                  real: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The cited cues of trial records that are verified true of the rows each trial was shown (for the audit).

    Args:
        trials: trial records (``trial_id``, ``condition``, ``reasoning``, ``red_flags``,
            ``supporting_evidence``, ``status``).
        samples: ``{trial_id: the rows shown, in the order shown}``.
        real: the real table (column vocabulary, valid codes, education mapping); default: the union of the
            samples.

    Returns:
        One dict per verified claim: trial_id, true_label, predicted_label, field, text (the cue string),
        claim (its description) and detail (what was compared). Claims that are false or not checkable are
        left out; :func:`check_cues` gives all of them.
    """
    from llmdisc.scoring.cues import cue_strings

    if not samples:
        return []
    base = real if real is not None else pd.concat(list(samples.values()), ignore_index=True)
    vocab = TableVocabulary.from_table(base)
    cues = cue_strings(trials).assign(dataset_key="_audit")
    out = []
    for rec in cues.to_dict("records"):
        sample = samples.get(rec["trial_id"])
        if sample is None:
            continue
        for claim in parse_claims(rec["text"], vocab, condition=rec.get("condition")):
            verdict, detail = check_claim(claim, sample, real=base)
            if verdict == "true" and not is_trivial(claim.kind):  # "no missing values" verifies nothing
                out.append({"trial_id": rec["trial_id"], "true_label": rec.get("true_label"),
                            "predicted_label": rec.get("predicted_label"), "field": rec["field"],
                            "text": rec["text"], "claim": claim.describe(), "detail": detail})
    return out


def parser_agreement(reference: pd.DataFrame, vocabularies: Mapping[str, TableVocabulary]) -> pd.DataFrame:
    """Claim-level agreement of :func:`parse_claims` with hand-written expected claims.

    Args:
        reference: columns text, condition and ``expected_claims`` (`` || ``-joined :meth:`Claim.describe`
            strings; empty when the string holds no checkable claim).
        vocabularies: ``{dataset_key: vocabulary}``; each string is parsed with that of its ``dataset_key``.

    Returns:
        One row per string (parsed, expected, exact) and, as attributes of the frame (``.attrs``), the
        claim-level precision, recall, the share of strings parsed exactly, and the counts n_strings,
        n_expected, n_parsed, n_correct.
    """
    rows, tp, n_pred, n_exp = [], 0, 0, 0
    for rec in reference.to_dict("records"):
        vocab = vocabularies[rec["dataset_key"]]
        parsed = {c.describe() for c in parse_claims(rec["text"], vocab, condition=rec.get("condition"))}
        expected = {e.strip() for e in str(rec.get("expected_claims") or "").split(" || ") if e.strip()}
        tp += len(parsed & expected)
        n_pred += len(parsed)
        n_exp += len(expected)
        rows.append({**rec, "parsed_claims": " || ".join(sorted(parsed)), "exact": parsed == expected})
    out = pd.DataFrame(rows)
    out.attrs["precision"] = tp / n_pred if n_pred else float("nan")
    out.attrs["recall"] = tp / n_exp if n_exp else float("nan")
    out.attrs["exact_share"] = float(out["exact"].mean()) if len(out) else float("nan")
    out.attrs["n_strings"], out.attrs["n_expected"], out.attrs["n_parsed"] = len(out), n_exp, n_pred
    out.attrs["n_correct"] = tp
    return out


DISTINCT_KEY = ("dataset_key", "claim", "verdict")
"""What makes a claim distinct: its table (``dataset_key``: Census codes and labels differ), its description
(:meth:`Claim.describe`) and its verdict. Trials at temperature 0 on one fixed sample repeat one answer, so one
claim can be mentioned a hundred times; counted by distinct claim it counts once per verdict it received (true
of one sample and false of another: twice)."""


def _verdict_counts(frame: pd.DataFrame, prefix: str) -> dict[str, Any]:
    """n and share (Wilson 95 %) of each verdict, and true among the checked, with column names under ``prefix``."""
    from llmdisc.scoring.metrics import wilson_interval

    counts = frame["verdict"].value_counts()
    n = len(frame)
    row: dict[str, Any] = {f"{prefix}n_claims" if prefix else "n_claims": n}
    for verdict in VERDICTS:
        k = int(counts.get(verdict, 0))
        est = wilson_interval(k, n)
        row.update({f"{prefix}n_{verdict}": k, f"{prefix}share_{verdict}": est.value,
                    f"{prefix}share_{verdict}_ci_low": est.ci_low, f"{prefix}share_{verdict}_ci_high": est.ci_high})
    n_checked = row[f"{prefix}n_true"] + row[f"{prefix}n_false"]
    est = wilson_interval(row[f"{prefix}n_true"], n_checked)
    row.update({f"{prefix}n_checked": n_checked, f"{prefix}true_of_checked": est.value,
                f"{prefix}true_of_checked_ci_low": est.ci_low, f"{prefix}true_of_checked_ci_high": est.ci_high})
    return row


def validity_table(checked: pd.DataFrame, by: Sequence[str] = ("source", "provider", "model", "true_label"),
                   ) -> pd.DataFrame:
    """Share of claims true, false and not checkable per group, by mention and by distinct claim.

    Claims of a kind in :data:`TRIVIAL_KINDS` are counted in their own row (``claim_set = "trivial"``), the rest
    in the headline row (``claim_set = "substantive"``); every group has both rows (n 0 where it has none).

    Args:
        checked: :func:`check_cues` output (``claim_kind``, ``claim``, ``verdict`` and the ``by`` columns; without
            ``claim_kind`` every claim is substantive; without ``claim`` every mention is its own claim).
        by: the grouping columns.

    Returns:
        Columns ``by``, claim_set; by mention: n_claims, n_true, n_false, n_not_checkable, share_true (of all
        claims) with its interval, share_false, share_not_checkable (each with its interval), n_checked and
        true_of_checked (true among the checkable ones) with its interval; by distinct claim
        (:data:`DISTINCT_KEY`) the same columns prefixed ``distinct_`` (``distinct_n_claims``, …,
        ``distinct_true_of_checked``). Shares are fractions in [0, 1]; intervals are Wilson 95 %.
    """
    if checked.empty:
        return pd.DataFrame(columns=[*by, "claim_set", "n_claims", "distinct_n_claims"])
    kinds = checked["claim_kind"] if "claim_kind" in checked else pd.Series("", index=checked.index)
    frame = checked.assign(claim_set=np.where(kinds.map(is_trivial), "trivial", "substantive"))
    key = [c for c in DISTINCT_KEY if c in frame.columns]
    if "claim" not in frame:
        frame = frame.assign(_mention=np.arange(len(frame)))
        key = [*key, "_mention"]
    rows = []
    for group, grp in frame.groupby(list(by), dropna=False, sort=True):
        group = group if isinstance(group, tuple) else (group,)
        for claim_set in ("substantive", "trivial"):
            part = grp[grp["claim_set"] == claim_set]
            rows.append({**dict(zip(by, group)), "claim_set": claim_set, **_verdict_counts(part, ""),
                         **_verdict_counts(part.drop_duplicates(key), "distinct_")})
    return pd.DataFrame(rows)


def parser_coverage(cues: pd.DataFrame, checked: pd.DataFrame, by: Sequence[str] = ("source", "true_label"), *,
                    themes: Sequence[str] = ()) -> pd.DataFrame:
    """How many cue strings the parser found a checkable claim in: overall, per field, per theme, per claim kind.

    Args:
        cues: the cue strings the parser read (every one, with or without a claim), with the ``by``
            columns, ``field`` and, for ``themes``, the coder's ``theme_<id>`` columns.
        checked: :func:`check_cues` output for those strings (its ``cue_row`` names the string of each claim).
        by: grouping columns.
        themes: theme ids of the codebook, for one row per theme.

    Returns:
        Columns ``by``, breakdown (``all``, ``field``, ``theme`` or ``claim_kind``), part (the field, theme or
        kind; ``all``; a theme no string of the group has gets no row), n_cue_strings (strings in the part; for
        ``claim_kind`` every string of the group),
        n_with_claim (of them, strings with a parsed claim; for ``claim_kind``, with a claim of that kind),
        coverage = n_with_claim / n_cue_strings with its Wilson 95 % interval, and n_claims. Strings without a
        claim are counted, never dropped.
    """
    from llmdisc.scoring.metrics import wilson_interval

    claims_of = checked.groupby("cue_row").size() if "cue_row" in checked and not checked.empty else pd.Series(
        dtype=int)
    kinds_of = (checked.groupby(["claim_kind", "cue_row"]).size() if "cue_row" in checked and not checked.empty
                else pd.Series(dtype=int))
    frame = cues.assign(_n_claims=pd.Series(cues.index, index=cues.index).map(claims_of).fillna(0).astype(int))
    rows = []

    def add(group: dict, breakdown: str, part: str, n: int, k: int, n_claims: int) -> None:
        est = wilson_interval(k, n)
        rows.append({**group, "breakdown": breakdown, "part": part, "n_cue_strings": n, "n_with_claim": k,
                     "coverage": est.value, "coverage_ci_low": est.ci_low, "coverage_ci_high": est.ci_high,
                     "n_claims": n_claims})

    for key, grp in frame.groupby(list(by), dropna=False, sort=True):
        group = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        has = grp["_n_claims"] > 0
        add(group, "all", "all", len(grp), int(has.sum()), int(grp["_n_claims"].sum()))
        for fld, sub in grp.groupby("field", sort=True):
            add(group, "field", str(fld), len(sub), int((sub["_n_claims"] > 0).sum()), int(sub["_n_claims"].sum()))
        for theme in themes:
            sub = grp[grp[f"theme_{theme}"].astype(bool)] if f"theme_{theme}" in grp else grp.iloc[:0]
            if sub.empty:
                continue
            add(group, "theme", theme, len(sub), int((sub["_n_claims"] > 0).sum()), int(sub["_n_claims"].sum()))
        for kind in CLAIM_KINDS:
            per = kinds_of.xs(kind, level="claim_kind") if kind in kinds_of.index.get_level_values(0) else \
                pd.Series(dtype=int)
            per = per[per.index.isin(grp.index)]
            add(group, "claim_kind", kind, len(grp), len(per), int(per.sum()))
    return pd.DataFrame(rows)


def flatten_keys(keys: Iterable[tuple]) -> list[str]:
    """Trial keys as strings (for tables)."""
    return ["|".join("" if v is None else str(v) for v in k) for k in keys]


def row_fact_conflicts(checked: pd.DataFrame,
                       by: Sequence[str] = ("source", "dataset_key", "synthetic_method", "true_label")) -> pd.DataFrame:
    """Row facts that contradict each other among trials that were shown the same rows.

    The paper drew every trial of a cell with ``random_state=42``, so all trials of one dataset × synthesizer ×
    label (both conditions) saw the same 20 rows. Two ``row_values`` claims naming the same row and column
    with different values cannot both be true: at least one is false even where the sample itself is not
    available (the paper's Adult synthetic tables; its Census releases that are not the files the trials saw).
    Pass only claims of trials known to share their sample.

    Returns:
        One row per group ``by``: n_row_facts (distinct row × column pairs named), n_conflicting (pairs named
        with two or more values) and share_conflicting with its Wilson 95 % interval.
    """
    from llmdisc.scoring.metrics import wilson_interval

    facts = []
    for rec in checked[checked["claim_kind"] == "row_values"].to_dict("records"):
        body, _, rows = rec["claim"].partition(" rows=")
        pairs = body.split(" ", 1)[1].split(";") if " " in body else []
        for row in rows.split(","):
            for pair in pairs:
                col, _, value = pair.partition("=")
                facts.append({**{k: rec.get(k) for k in by}, "row": row, "column": col, "value": value})
    if not facts:
        return pd.DataFrame(columns=[*by, "n_row_facts", "n_conflicting", "share_conflicting"])
    frame = pd.DataFrame(facts)
    out = []
    for key, grp in frame.groupby(list(by), dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        values = grp.groupby(["row", "column"])["value"].nunique()
        est = wilson_interval(int((values > 1).sum()), len(values))
        out.append({**dict(zip(by, key)), "n_row_facts": len(values), "n_conflicting": int((values > 1).sum()),
                    "share_conflicting": est.value, "share_conflicting_ci_low": est.ci_low,
                    "share_conflicting_ci_high": est.ci_high})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the paraphrase set
def load_paraphrase_set(folder: Path | str) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Read a hand-checked set of paraphrased cues and the small tables they refer to.

    Args:
        folder: holds ``cues.csv`` (cue_id, fold, table_id, expected_kind, expected_truth, text, hand_check) and
            ``tables/<table_id>.csv``; the real table of ``<dataset>_<x>`` is ``tables/<dataset>_real.csv``
            (the vocabulary, the valid codes and the education mapping, as the real table is in a study).

    Returns:
        ``(cues, shown, reals)``: the cue lines, ``{table_id: the shown rows}``, ``{table_id: its real table}``.
    """
    folder = Path(folder)
    path = folder / "cues.csv"
    if not path.is_file():
        raise DataError(f"no paraphrase set at {path}; fix: point at the folder holding cues.csv and tables/")
    cues = pd.read_csv(path, keep_default_na=False, dtype=str)
    shown, reals = {}, {}
    for table_id in sorted(set(cues["table_id"])):
        real_path = folder / "tables" / f"{table_id.split('_')[0]}_real.csv"
        if not (folder / "tables" / f"{table_id}.csv").is_file() or not real_path.is_file():
            raise DataError(f"table {table_id!r} of {path} or its real table {real_path.name} is missing; "
                            "fix: add both under tables/")
        shown[table_id] = pd.read_csv(folder / "tables" / f"{table_id}.csv")
        reals[table_id] = pd.read_csv(real_path)
    return cues, shown, reals


def paraphrase_accuracy(cues: pd.DataFrame, shown: Mapping[str, pd.DataFrame],
                        reals: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Parse and check every cue of a hand-checked paraphrase set; say which parses are right.

    Each line of the set holds at most one checkable claim, labelled by hand with its kind (``none`` when the
    parser should find no claim) and its truth of the shown table. A parse is *correct* when the parser's claim
    has the expected kind and :func:`check_claim` gives the expected truth; every other claim the parser emits
    (a wrong kind, a wrong truth, any claim on a ``none`` line, a second claim on one line) is a wrong parse.

    Args:
        cues, shown, reals: :func:`load_paraphrase_set`'s output (the vocabulary of each line is its real
            table's).

    Returns:
        One row per cue line: its columns plus parsed (the claims' descriptions), parsed_kinds, verdicts,
        n_parses (claims emitted) and correct (one of them is the expected claim with the expected truth).
        Summarise with :func:`paraphrase_summary`.
    """
    vocabularies = {t: TableVocabulary.from_table(r) for t, r in reals.items()}
    rows = []
    for rec in cues.to_dict("records"):
        sample, real = shown[rec["table_id"]], reals[rec["table_id"]]
        claims = parse_claims(rec["text"], vocabularies[rec["table_id"]], condition=rec.get("condition") or "C1")
        verdicts = [check_claim(c, sample, real=real)[0] for c in claims]
        correct = rec["expected_kind"] != "none" and any(
            c.kind == rec["expected_kind"] and v == rec["expected_truth"] for c, v in zip(claims, verdicts))
        rows.append({**rec, "parsed": " || ".join(c.describe() for c in claims),
                     "parsed_kinds": " ".join(c.kind for c in claims), "verdicts": " ".join(verdicts),
                     "n_parses": len(claims), "correct": bool(correct)})
    return pd.DataFrame(rows)


def paraphrase_summary(result: pd.DataFrame) -> pd.DataFrame:
    """Recall and precision of the parser on a paraphrase set, overall, per fold and per expected kind.

    recall = correct parses / lines that hold a claim (expected kind not ``none``); precision = correct parses /
    all claims emitted (each line can contribute one correct parse). Both with Wilson 95 % intervals.

    Args:
        result: :func:`paraphrase_accuracy`'s output.

    Returns:
        Columns subset (``all`` or a fold), expected_kind (``all`` or a kind), n_strings, n_expected, n_parsed,
        n_correct, recall (+ interval), precision (+ interval); fractions in [0, 1].
    """
    from llmdisc.scoring.metrics import wilson_interval

    parts = [("all", result)] + [(f, g) for f, g in result.groupby("fold", sort=True)] if "fold" in result else \
        [("all", result)]
    rows = []
    for subset, frame in parts:
        kinds = [("all", frame)] + [(k, g) for k, g in frame.groupby("expected_kind", sort=True)]
        for kind, grp in kinds:
            n_expected = int((grp["expected_kind"] != "none").sum())
            n_parsed, n_correct = int(grp["n_parses"].sum()), int(grp["correct"].sum())
            rec, prec = wilson_interval(n_correct, n_expected), wilson_interval(n_correct, n_parsed)
            rows.append({"subset": subset, "expected_kind": kind, "n_strings": len(grp), "n_expected": n_expected,
                         "n_parsed": n_parsed, "n_correct": n_correct, "recall": rec.value,
                         "recall_ci_low": rec.ci_low, "recall_ci_high": rec.ci_high, "precision": prec.value,
                         "precision_ci_low": prec.ci_low, "precision_ci_high": prec.ci_high})
    return pd.DataFrame(rows)
