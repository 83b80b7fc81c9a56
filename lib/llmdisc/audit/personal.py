"""Columns that hold personal information: detected, left out of the discriminators, and checked for copies.

A synthesizer that copies real people's names or e-mail addresses into its release leaks them, whatever any
discriminator says of the rest. Such columns are also useless to a discriminator (a name says nothing about
whether a record is realistic) and costly (thousands of levels). So the audit leaves them out of every
instrument and reports them on their own: for each, the share of the release's values that are values of the
real table (:func:`personal_summary`).

A column is personal when ``--metadata`` gives it a personal-information sdtype
(:mod:`~llmdisc.audit.sdv_metadata`), or when it is text and (:func:`detect_personal`):

- at least :data:`MATCH_SHARE` of its values are e-mail addresses, or phone numbers;
- at least :data:`MATCH_SHARE` of its values look like a person's name (2–4 capitalised words) and its name says
  so (``name``, ``first_name``, ``surname``, ``customer``, ``patient``, ...: :func:`names_people`; not
  ``state_name`` or ``product_name``), or they look like names and at least :data:`MIN_DISTINCT_SHARE` of them
  are distinct;
- its name says it holds names, addresses, e-mails or phone numbers and at least :data:`MIN_DISTINCT_SHARE` of its
  values are distinct (free-text identifiers).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import pandas as pd

MATCH_SHARE = 0.8
MIN_DISTINCT_SHARE = 0.2
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_PHONE = re.compile(r"^\+?[\d\s().-]{7,20}$")
_NAME = re.compile(r"^[A-Z][a-zà-ÿ'’.-]+(?:[ -][A-Z][a-zà-ÿ'’.-]+){1,3}$")
_PERSON_WORDS = frozenset({"customer", "patient", "person", "employee", "owner", "contact", "surname", "firstname",
                           "lastname", "fullname"})
"""Words of a column name that say it holds people."""
_NAME_QUALIFIERS = frozenset({"first", "last", "full", "given", "middle", "family", "maiden", "sur", "nick"})
"""Words that may stand beside ``name`` in a person-name column's name (``first_name``, ``FullName``)."""
_CONTACT_HINT = re.compile(r"(^|_|\b)(e-?mail|mail|phone|telephone|tel|mobile|address|street|ssn|passport)"
                           r"(_|\b|$)", re.IGNORECASE)


def _name_words(name: str) -> list[str]:
    """The words of a column name, lower case: ``customerName`` and ``customer_name`` -> customer, name."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]


def names_people(name: str) -> bool:
    """Whether a column's name says it holds people: a person word (``customer``, ``patient``, ``surname``,
    ...), or ``name`` alone or with person words and qualifiers only (``name``, ``first_name``,
    ``customer_name``; not ``state_name`` or ``product_name``)."""
    words = _name_words(name)
    if _PERSON_WORDS & set(words):
        return True
    others = set(words) - {"name", "names"}
    return len(others) < len(set(words)) and others <= _NAME_QUALIFIERS


def _share(text: pd.Series, pattern: re.Pattern[str]) -> float:
    return float(text.str.match(pattern).mean()) if len(text) else 0.0


def detect_personal(values: pd.Series, name: str) -> str | None:
    """Why a column holds personal information, or None (module docstring for the rules).

    Args:
        values: the column's values in the real rows read.
        name: the column's name.

    Returns:
        A short reason (``e-mail addresses``, ``person names``, ...) or None.
    """
    if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return None
    text = values.dropna().astype(str).str.strip()
    text = text[text != ""]
    if len(text) < 2:
        return None
    distinct = text.nunique() / len(text)
    if _share(text, _EMAIL) >= MATCH_SHARE:
        return "e-mail addresses"
    digits = text.str.count(r"\d")
    if _share(text, _PHONE) >= MATCH_SHARE and (digits >= 7).mean() >= MATCH_SHARE:
        return "phone numbers"
    names = _share(text, _NAME)
    if names >= MATCH_SHARE and (names_people(name) or distinct >= MIN_DISTINCT_SHARE):
        return "person names"
    if (names_people(name) or _CONTACT_HINT.search(name)) and distinct >= MIN_DISTINCT_SHARE:
        return f"free-text identifiers (named {name!r})"
    return None


def personal_summary(rows: Mapping[str, pd.DataFrame], columns: Mapping[str, str]) -> list[dict[str, Any]]:
    """For each personal column: how many of the release's values are values of the real table.

    Args:
        rows: ``{"real", "synthetic"[, "holdout"]}`` rows read (every column).
        columns: personal column -> why it is personal.

    Returns:
        One dict per column: ``column``, ``reason``, ``n_release`` (values present), ``copied_share`` (share of
        the release's values that are real values; 0 = none), ``distinct_release``, ``distinct_copied``
        (distinct release values that are real values), ``holdout_copied_share`` (the same for holdout rows,
        the share a fresh real sample shares with the real table by chance; None without a holdout) and
        ``sentence``.
    """
    out = []
    for column, reason in columns.items():
        real = set(rows["real"][column].dropna().astype(str))
        release = rows["synthetic"][column].dropna().astype(str)
        copied = release.isin(real)
        entry: dict[str, Any] = {
            "column": column, "reason": reason, "n_release": int(len(release)),
            "copied_share": float(copied.mean()) if len(release) else None,
            "distinct_release": int(release.nunique()), "distinct_copied": int(release[copied].nunique()),
            "holdout_copied_share": None,
        }
        if "holdout" in rows:
            holdout = rows["holdout"][column].dropna().astype(str)
            entry["holdout_copied_share"] = float(holdout.isin(real).mean()) if len(holdout) else None
        if entry["copied_share"] is None:
            entry["sentence"] = f"{column!r} ({reason}): no values in the release"
        else:
            base = ("" if entry["holdout_copied_share"] is None else
                    f" (fresh real rows: {100 * entry['holdout_copied_share']:.0f} %)")
            entry["sentence"] = (f"{100 * entry['copied_share']:.0f} % of the release's values of {column!r} "
                                 f"({reason}) are values of the real table{base}: {entry['distinct_copied']:,} "
                                 f"distinct real values appear in the release"
                                 + (" — the synthesizer copies them; they leak whatever the discriminators say"
                                    if entry["copied_share"] > 0.5 else ""))
        out.append(entry)
    return out
