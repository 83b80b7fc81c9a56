"""Statistics of a whole table quoted in the paper's records, and their check against a file.

A C2 prompt of the paper showed the metadata block of the whole table, so the records quote its statistics
("occupation has 9291 unique values", "r=0.3280", "age ranges from 17 to 90"). :func:`quoted_statistics` reads
them from a cue string, :func:`table_statistic` computes the same statistic of a file (the paper's
:func:`llmdisc.discrimination.metadata.metadata_statistics`), :func:`statistic_matches` compares the two.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from llmdisc.scoring.cue_validity import TableVocabulary, cue_segments
@dataclass(frozen=True)
class QuotedStatistic:
    """One statistic of a whole table quoted in a cue string: its name (``n_unique``, ``mean``, ``median``,
    ``std``, ``min``, ``max``, ``p25``, ``p75``, ``skewness``, ``kurtosis``, ``shapiro_p``, ``correlation`` or
    ``range``), its column (two for a correlation), the number quoted (``(low, high)`` for a range), its
    ``decimals`` as quoted (the precision it is compared to) and the clause it came from."""

    statistic: str
    columns: tuple[str, ...]
    value: Any
    decimals: int
    text: str

    def describe(self) -> str:
        """``mean age=42.5``, ``correlation age×income_above_50k=0.2462``, ``range age=17-90``."""
        value = f"{format_number(self.value[0])}-{format_number(self.value[1])}" if self.statistic == "range" else \
            format_number(self.value)
        return f"{self.statistic} {'×'.join(self.columns)}={value}"


def format_number(value: float) -> str:
    """A quoted number as the records write it: ``17`` for a whole number, else Python's ``str``."""
    return str(int(value)) if float(value).is_integer() else str(value)


_NUM = r"-?\d+(?:\.\d+)?"
_STAT_NAMES = {"mean": "mean", "average": "mean", "median": "median", "std": "std",
               "standard deviation": "std", "min": "min", "minimum": "min", "max": "max", "maximum": "max",
               "p25": "p25", "p75": "p75", "skewness": "skewness", "skew": "skewness", "kurtosis": "kurtosis"}
_STAT = re.compile(r"\b(standard deviation|skewness|kurtosis|average|maximum|minimum|median|mean|skew|std|min|max|"
                   r"p25|p75)\b\s*(?:of|=|:|is|was|at)?\s*\(?\s*(?:~|≈|about|around|approximately|roughly)?\s*"
                   rf"({_NUM})(?![\d.]*\s*(?:-|–|to)\s*\d)(?!\d)", re.I)
_INT = r"\d{1,3}(?:,\d{3})+(?!\d)|\d+"
_UNIQUE = re.compile(rf"\bunique\s*=\s*({_INT})|\b({_INT})\s+(?:unique|distinct)\b|"
                     rf"\bunique(?:\s+(?:values?|codes?|categories))?\s*\(({_INT})\)", re.I)
_SHAPIRO = re.compile(r"shapiro[- ]wilk\s*(?:test\s*)?p(?:-?values?)?\s*(?:of|=|:|is)?\s*(\d*\.\d+|\d+)", re.I)
_CORR = re.compile(r"\br\s*=\s*(-?\d*\.\d+)")
_RANGE = re.compile(rf"(?:range[sd]?|spans?|spanning|from|\()\s*(?:from|of|:)?\s*\(?({_NUM})\s*(?:-|–|to)\s*"
                    rf"({_NUM})(?![\d.])", re.I)
_ALL_COLUMNS = re.compile(r"\ball (?:the )?(?:columns|variables|features)\b|\bevery (?:column|variable)\b", re.I)
SAMPLE_WORDS = re.compile(r"\bsample\b|\brows? shown\b|\bdisplayed\b|\bshown rows\b", re.I)


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def _clauses(text: str) -> list[str]:
    return [p.strip() for seg in cue_segments(str(text).replace("`", "'").replace("**", ""))
            for p in seg.split(";") if p.strip()]


def _owner(cols: Sequence[tuple[int, str]], pos: int) -> str | None:
    before = [c for p, c in cols if p < pos]
    return before[-1] if before else None


def quoted_statistics(text: Any, vocab: TableVocabulary) -> list[QuotedStatistic]:
    """Statistics of a whole table quoted in one cue string (read from a C2 prompt's metadata block).

    A statistic belongs to the column named last before it in its clause (sentence, bullet or ``;`` part); one
    without a column, or said of "all columns", is not read. A correlation ``r=…`` belongs to the two columns
    named between it and the previous ``r=`` of the clause, or to the one named there and the clause's first
    column ("occupation … with education (r=-0.60) and income (r=-0.40)"); any other count of columns is not
    read ("a and b with c (r=…, r=… respectively)"). Returns the statistics in order of appearance.
    """
    if not isinstance(text, str) or not text.strip():
        return []
    out: list[QuotedStatistic] = []
    for clause in _clauses(text):
        cols = vocab.columns_in(clause)
        if not cols or _ALL_COLUMNS.search(clause):
            continue
        taken: list[tuple[int, int]] = []  # spans already read, so one number is read once
        for m in _SHAPIRO.finditer(clause):
            if col := _owner(cols, m.start()):
                out.append(QuotedStatistic("shapiro_p", (col,), float(m.group(1)), _decimals(m.group(1)), clause))
            taken.append(m.span())
        for m in _STAT.finditer(clause):
            if any(a <= m.start(2) < b for a, b in taken):
                continue
            if col := _owner(cols, m.start()):
                out.append(QuotedStatistic(_STAT_NAMES[m.group(1).lower()], (col,), float(m.group(2)),
                                           _decimals(m.group(2)), clause))
        for m in _UNIQUE.finditer(clause):
            number = next(g for g in m.groups() if g)
            if col := _owner(cols, m.start()):
                out.append(QuotedStatistic("n_unique", (col,), float(number.replace(",", "")), 0, clause))
        if not SAMPLE_WORDS.search(clause):
            for m in _RANGE.finditer(clause):
                col = _owner(cols, m.start())
                if col and col in vocab.numeric and float(m.group(1)) <= float(m.group(2)):
                    out.append(QuotedStatistic("range", (col,), (float(m.group(1)), float(m.group(2))),
                                               max(_decimals(m.group(1)), _decimals(m.group(2))), clause))
        subject = cols[0][1]
        previous = 0
        for m in _CORR.finditer(clause):
            between = list(dict.fromkeys(c for p, c in cols if previous <= p < m.start()))
            previous = m.end()
            pair = between if len(between) == 2 else [subject, between[0]] if (
                len(between) == 1 and between[0] != subject) else None
            if pair:
                out.append(QuotedStatistic("correlation", tuple(pair), float(m.group(1)), _decimals(m.group(1)),
                                           clause))
    return out


def table_statistic(stats: Mapping[str, Any], quoted: QuotedStatistic) -> Any:
    """A quoted statistic's value in a table's :func:`~llmdisc.discrimination.metadata.metadata_statistics`:
    a float (``(min, max)`` for a range), or None when the table has no such statistic."""
    if quoted.statistic == "correlation":
        return next((r for x, y, r in stats["correlations"] if {x, y} == set(quoted.columns)), None)
    info = stats["columns"].get(quoted.columns[0])
    if info is None:
        return None
    if quoted.statistic == "range":
        return (info["min"], info["max"]) if "min" in info else None
    return info.get(quoted.statistic)


def statistic_matches(quoted: QuotedStatistic, value: Any) -> bool:
    """True when ``value`` equals the quoted number to its precision (one unit of the last digit quoted).

    Counts (``n_unique``), minima, maxima and ranges of integer columns must be equal; a quoted ``0.0`` for a
    Shapiro p matches any p below 0.05 written with one decimal (the paper's block prints ``p=0.0``).
    """
    if value is None:
        return False
    if quoted.statistic == "range":
        return all(math.isclose(float(q), float(v), abs_tol=10.0 ** -quoted.decimals if quoted.decimals else 1e-9)
                   for q, v in zip(quoted.value, value))
    if quoted.statistic in ("n_unique", "min", "max") and quoted.decimals == 0:
        return math.isclose(float(quoted.value), float(value), abs_tol=1e-9)
    return abs(float(value) - float(quoted.value)) <= 10.0 ** -quoted.decimals + 1e-12
