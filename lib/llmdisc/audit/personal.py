"""Columns that hold personal information: detected, left out of the discriminators, and checked for copies.

A synthesizer that copies real people's names or e-mail addresses leaks them whatever any discriminator says,
and such columns tell a discriminator nothing while costing thousands of levels. A column is personal when
``--metadata`` gives it a personal sdtype or when :func:`detect_personal` finds it; :func:`personal_summary`
reports the share of the release's values that are real values.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import unicodedata
from typing import Any, Mapping, Sequence

import pandas as pd
import phonenumbers

MATCH_SHARE = 0.8
"""Share of a column's values that must be e-mails, phone numbers or names."""
MIN_DISTINCT_SHARE = 0.2
"""Distinct values among the values read for a column to hold many distinct values ..."""
MIN_DISTINCT = 20
"""... with at least this many of them ..."""
MANY_DISTINCT = 200
"""... or at least this many, whatever their share."""
GIVEN_SHARE = 0.5
"""Share of values holding a given name that makes a name- or person-headed column of few distinct values names."""
KNOWN_SHARE = 0.7
"""Share of values holding a known given name (or surname, single words) for a neutral header's names."""
MIN_GIVEN_DISTINCT = 10
"""Distinct given names a neutral-headed column needs when not many (fewer could be a category named after people)."""
DEFAULT_PHONE_REGIONS = ("US", "GB")
"""Regions whose national phone numbers are recognised without a ``+``; their numbering plans reject most
digit groups, amounts and ids (a region such as DE or FR accepts most strings of 7 to 11 digits)."""
MAX_CHECKED = 5000
"""At most this many distinct values (the most frequent) are parsed as phone numbers."""

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$")
_PHONE_SHAPE = re.compile(r"^(?:\+|00)?[\d\s().\-/]{7,24}$")
_EXTENSION = re.compile(r"\s*(?:x|ext\.?|extension|#)\s*\d{1,6}$", re.IGNORECASE)
_NOT_PHONE = (
    re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$"),  # ISO and year-first dates
    re.compile(r"^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$"),  # day- or month-first dates
    re.compile(r"^\d{5}-\d{4}$"),  # ZIP+4
    re.compile(r"^\d{8}$"),  # 20240115
)
_WORD = re.compile(r"^[^\W\d_]+(?:['’\-][^\W\d_]+)*\.?$")
"""One word of a name: letters of any script (``José``, ``Ğül``), ``'`` or ``-`` inside, an initial's dot."""
_DOTTED = re.compile(r"^[^\W\d_]+(?:\.[^\W\d_]+){1,3}$")
"""``first.last`` (no spaces)."""

_NAME_WORDS = frozenset({
    "name", "names", "surname", "surnames", "firstname", "lastname", "fullname", "givenname", "forename",
    "forenames", "nickname",
    "nom", "noms", "prenom", "prenoms",  # French
    "nombre", "nombres", "apellido", "apellidos",  # Spanish
    "nome", "nomi", "cognome", "sobrenome",  # Italian, Portuguese
    "vorname", "vornamen", "nachname", "familienname",  # German
    "naam", "voornaam", "achternaam",  # Dutch
    "imie", "nazwisko", "soyad", "soyadi", "isim", "fornavn", "efternavn", "etternavn", "fornamn", "efternamn",
    "etunimi", "sukunimi", "имя", "фамилия", "отчество", "фио",
})
"""Words of a header that say it holds names (folded: ``prénom`` -> ``prenom``)."""
_PERSON_WORDS = frozenset({
    "customer", "customers", "patient", "patients", "person", "persons", "people", "employee", "employees",
    "student", "students", "owner", "contact", "client", "member", "applicant", "passenger", "driver", "author",
    "respondent", "subscriber", "guest", "worker", "teacher", "doctor", "physician", "nurse", "user", "username",
    "kunde", "cliente", "paciente", "mitarbeiter", "empleado", "persona", "personne", "alumno", "estudiante",
    "etudiant",
})
"""Words of a header that say it holds people."""
_NAME_QUALIFIERS = frozenset({"first", "last", "full", "given", "middle", "family", "maiden", "sur", "nick",
                              "legal", "birth", "preferred", "display", "de", "famille", "complet", "completo",
                              "completa"})
"""Words that may stand beside ``name`` in a person-name column's header (``first_name``, ``FullName``)."""
_THING_WORDS = frozenset({
    "city", "cities", "town", "village", "country", "countries", "state", "states", "county", "province",
    "region", "place", "location", "district", "municipality", "capital", "street", "road", "airport", "station",
    "destination", "origin", "birthplace", "hometown", "nationality", "language", "team", "club", "company",
    "employer", "brand", "product", "item", "title", "school", "university", "college", "hospital",
    "department", "occupation", "job", "species", "breed", "genre", "category", "type", "label", "tag", "model",
    "make", "manufacturer", "workclass", "education", "relationship", "race", "sex", "gender", "status",
    "ville", "pays", "stadt", "land", "ciudad", "pais", "citta", "cidade",
})
"""Words of a header that say it holds places or things: its values are never taken for names by content."""
_PHONE_HINT = frozenset({"phone", "phones", "telephone", "tel", "mobile", "cell", "cellphone", "fax", "telefon",
                         "telefono", "portable", "handy", "movil", "celular", "telefone"})
_CONTACT_HINT = re.compile(r"(^|_|\b)(e-?mail|mail|phone|telephone|tel|mobile|address|street|ssn|passport)"
                           r"(_|\b|$)", re.IGNORECASE)
_NOT_NAMES = frozenset({"male", "female", "man", "woman", "other", "others", "unknown", "none", "yes", "no",
                        "true", "false", "null", "missing", "not", "and", "or", "of", "the"})
"""Category words that Faker's name lists happen to hold (``Male`` is an English given name there)."""
_FOLD_EXTRA = str.maketrans({"ø": "o", "Ø": "o", "ł": "l", "Ł": "l", "đ": "d", "Đ": "d", "æ": "ae", "Æ": "ae",
                             "œ": "oe", "Œ": "oe", "ı": "i", "ß": "ss", "þ": "th", "ð": "d"})


def _strip_accents(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD_EXTRA))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fold(text: str) -> str:
    """``text`` without case and diacritics: ``Ğül Müller-Øst`` -> ``gul muller-ost``."""
    return _strip_accents(text).casefold()


def fold_value(text: str) -> str:
    """A value as a person compares it: case, diacritics, punctuation and word order folded (``García, María``,
    ``maria garcia`` and ``maria.garcia`` all give ``garcia maria``)."""
    return " ".join(sorted(re.findall(r"[^\W_]+", fold(text))))


def _header_words(name: str) -> list[str]:
    """The words of a header, lower case, diacritics folded: ``customerName`` and ``Prénom client`` -> customer,
    name; prenom, client."""
    words: list[str] = []
    for piece in re.findall(r"[^\W\d_]+|\d+", _strip_accents(name)):
        if piece.isascii():
            words += [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", piece)]
        else:
            words.append(piece.casefold())
    return words


def _header_kind(name: str) -> str | None:
    """``"name"`` (the header says names), ``"person"`` (it names people, such as ``patient``), ``"mentions"``
    (a person word beside other words: ``patient_id``, ``emergency_contact``) or None."""
    words = set(_header_words(name))
    others = {w for w in words - _NAME_WORDS - _PERSON_WORDS - _NAME_QUALIFIERS if not w.isdigit()}
    if words & _NAME_WORDS and not others:
        return "name"
    if words & _PERSON_WORDS:
        return "mentions" if others else "person"
    return None


def name_words(value: str) -> list[str] | None:
    """The words of a value that looks like a person's name, or None: ``First Last`` (1 to 4 words of :data:`_WORD`,
    one of two letters or more), ``Last, First`` or ``first.last``, in any case and script."""
    text = " ".join(value.split())
    if not text or len(text) > 80:
        return None
    if text.count(",") == 1:
        last, first = (part.strip() for part in text.split(","))
        if not last or not first:
            return None
        words = first.split(" ") + last.split(" ")
    elif "," in text:
        return None
    elif " " not in text and _DOTTED.match(text):
        words = text.split(".")
    else:
        words = text.split(" ")
    shaped = 1 <= len(words) <= 4 and all(_WORD.match(w) and len(w) <= 25 for w in words)
    return words if shaped and any(len(w.rstrip(".")) >= 2 for w in words) else None


@functools.lru_cache(maxsize=1)
def _known_names() -> tuple[frozenset[str], frozenset[str]]:
    """Given names and surnames of Faker's person providers (every locale), folded; empty without Faker."""
    try:
        import faker.providers.person as persons
    except ImportError:  # Faker ships with rdt; without it only the shape and the header decide
        return frozenset(), frozenset()
    given: set[str] = set()
    family: set[str] = set()
    for module in pkgutil.iter_modules(persons.__path__):
        try:
            provider = importlib.import_module(f"{persons.__name__}.{module.name}").Provider
        except (ImportError, AttributeError):
            continue
        for attribute in dir(provider):
            if "name" not in attribute or not attribute.startswith(("first_", "last_")):
                continue
            values = getattr(provider, attribute)
            if isinstance(values, (dict, list, tuple, set, frozenset)):
                (given if attribute.startswith("first_") else family).update(fold(str(v)) for v in values)
    return frozenset(given), frozenset(family)


def _is_known_name(words: list[str], *, given_only: bool = False) -> bool:
    """Whether a name's words hold a known given name (or, for a single word, a surname unless
    ``given_only``)."""
    given, family = _known_names()
    folded = [fold(w.rstrip(".")) for w in words]
    if any(w in _NOT_NAMES for w in folded):
        return False
    if len(folded) == 1 and not given_only:
        return folded[0] in given or folded[0] in family
    return any(w in given for w in folded)


def _varied(n_distinct: int, n_values: int) -> bool:
    """Many distinct values: see :data:`MIN_DISTINCT_SHARE`, :data:`MIN_DISTINCT` and :data:`MANY_DISTINCT`."""
    return n_distinct >= MANY_DISTINCT or (n_distinct >= MIN_DISTINCT and n_distinct >= MIN_DISTINCT_SHARE * n_values)


def _phone_shaped(value: str) -> bool:
    text = _EXTENSION.sub("", value.strip())
    if not _PHONE_SHAPE.match(text) or any(p.match(text) for p in _NOT_PHONE):
        return False
    return 7 <= sum(ch.isdigit() for ch in text) <= 15


def is_phone_number(value: str, region: str | None = None) -> bool:
    """Whether ``value`` is a phone number: phone-shaped (7 to 15 digits) and valid for :mod:`phonenumbers`,
    international (``+44 20 7946 0958``, ``0044 ...``) for its own country, national (``(415) 555-2671``) for
    ``region`` (ISO 3166 code; None: international only). Dates, timestamps, ZIP+4 codes and digit groups that no
    numbering plan of ``region`` assigns (``1234 5678`` for US or GB) are not.
    """
    if not _phone_shaped(value):
        return False
    text = value.strip()
    if text.startswith("00"):
        text = "+" + text[2:]
    if not text.startswith("+") and region is None:
        return False
    try:
        number = phonenumbers.parse(text, None if text.startswith("+") else region)
    except phonenumbers.NumberParseException:
        return False
    return bool(phonenumbers.is_valid_number(number))


def _weighted_share(counts: pd.Series, test: Any) -> float:
    """Share of the values (rows) whose distinct value passes ``test``; ``counts`` = value -> rows."""
    return sum(int(n) for value, n in counts.items() if test(value)) / int(counts.sum())


def _phone_share(counts: pd.Series, regions: Sequence[str]) -> float:
    """Share of the values that are valid phone numbers in the region explaining most of them."""
    checked = counts.iloc[:MAX_CHECKED]
    return max(_weighted_share(checked, lambda v, r=region: is_phone_number(v, r))
               for region in regions or (None,))


def detect_personal(values: pd.Series, name: str, *, phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS
                    ) -> str | None:
    """Why a column (its values in the real rows read, its header ``name``) holds personal information, as a
    short reason (``e-mail addresses``, ``phone numbers``, ``person names``, ``free-text identifiers (named
    'owner')``), or None:

    - **e-mail addresses**: at least :data:`MATCH_SHARE` of the values are e-mail addresses;
    - **phone numbers**: at least :data:`MATCH_SHARE` are valid phone numbers (:func:`is_phone_number`) in one of
      ``phone_regions`` (national numbers; international ones for every country); a header saying phone needs
      only the shape, so made-up numbers are found too;
    - **person names**: at least :data:`MATCH_SHARE` look like names (:func:`name_words`), and either the header
      says names or people (``first_name``, ``customer``) and the values are :func:`_varied` or hold given names
      (:data:`GIVEN_SHARE`), or the header is neutral (not :data:`_THING_WORDS`) and enough values hold names
      Faker knows (:data:`KNOWN_SHARE`, :data:`MIN_GIVEN_DISTINCT`);
    - **free-text identifiers**: the header says names or people (``patient_id``, ``owner``) or addresses,
      e-mails or phones, and the values are varied.

    City names are the known grey zone: a place header is never taken for names by content; a neutral one passes
    only when most values hold given names (``San Francisco`` does, most cities do not).
    """
    if pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        return None
    text = values.dropna().astype(str).str.strip()
    text = text[text != ""]
    if len(text) < 2:
        return None
    counts = text.value_counts(sort=True)
    varied = _varied(len(counts), len(text))
    header = _header_kind(name)
    header_words = set(_header_words(name))
    if _weighted_share(counts, _EMAIL.match) >= MATCH_SHARE:
        return "e-mail addresses"
    if _weighted_share(counts.iloc[:MAX_CHECKED], _phone_shaped) >= MATCH_SHARE:
        if header_words & _PHONE_HINT or _phone_share(counts, tuple(phone_regions)) >= MATCH_SHARE:
            return "phone numbers"
    words = {value: name_words(value) for value in counts.index}
    if _weighted_share(counts, lambda v: words[v] is not None) >= MATCH_SHARE:

        def share_of(test: Any) -> float:
            return _weighted_share(counts, lambda v: words[v] is not None and test(words[v]))

        given = share_of(functools.partial(_is_known_name, given_only=True))
        if header in ("name", "person") and (varied or given >= GIVEN_SHARE):
            return "person names"
        if header is None and not header_words & _THING_WORDS and (
                (varied and share_of(_is_known_name) >= KNOWN_SHARE)
                or (len(counts) >= MIN_GIVEN_DISTINCT and given >= MATCH_SHARE)):
            return "person names"
    if (header is not None or _CONTACT_HINT.search(name)) and varied:
        return f"free-text identifiers (named {name!r})"
    return None


def _copies(values: pd.Series, real: set[str], real_folded: set[str]) -> dict[str, Any]:
    """How many of ``values`` are real values, exactly and folded (:func:`fold_value`)."""
    exact = values.isin(real)
    folded_values = values.map(fold_value)
    folded = folded_values.isin(real_folded)
    return {"share": float(exact.mean()) if len(values) else None,
            "share_folded": float(folded.mean()) if len(values) else None,
            "distinct": int(values.nunique()), "distinct_copied": int(values[exact].nunique()),
            "distinct_folded": int(folded_values.nunique()),
            "distinct_copied_folded": int(folded_values[folded].nunique())}


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def personal_summary(rows: Mapping[str, pd.DataFrame], columns: Mapping[str, str]) -> list[dict[str, Any]]:
    """For each personal column (column -> why), how many of the release's values are values of the real table
    (``rows``: ``{"real", "synthetic"[, "holdout"]}``): ``column``, ``reason``, ``n_release`` (values
    present), ``copied_share`` (0–1), ``distinct_release``, ``distinct_copied``, ``distinct_copied_share``,
    ``holdout_copied_share`` (what fresh real rows share with the real table by chance; None without a
    holdout), the shares also ``…_folded`` (values compared by :func:`fold_value`), and ``sentence``."""
    out = []
    for column, reason in columns.items():
        real_values = rows["real"][column].dropna().astype(str)
        real = set(real_values)
        real_folded = {fold_value(v) for v in real}
        release = rows["synthetic"][column].dropna().astype(str)
        copies = _copies(release, real, real_folded)
        entry: dict[str, Any] = {
            "column": column, "reason": reason, "n_release": int(len(release)),
            "copied_share": copies["share"], "copied_share_folded": copies["share_folded"],
            "distinct_release": copies["distinct"], "distinct_copied": copies["distinct_copied"],
            "distinct_copied_share": (copies["distinct_copied"] / copies["distinct"]) if copies["distinct"] else None,
            "distinct_copied_share_folded": ((copies["distinct_copied_folded"] / copies["distinct_folded"])
                                             if copies["distinct_folded"] else None),
            "holdout_copied_share": None, "holdout_copied_share_folded": None,
        }
        if "holdout" in rows:
            holdout = _copies(rows["holdout"][column].dropna().astype(str), real, real_folded)
            entry["holdout_copied_share"] = holdout["share"]
            entry["holdout_copied_share_folded"] = holdout["share_folded"]
        if entry["copied_share"] is None:
            entry["sentence"] = f"{column!r} ({reason}): no values in the release"
        else:
            exact, folded = entry["copied_share"], entry["copied_share_folded"]
            base = ("" if entry["holdout_copied_share"] is None else
                    f" (fresh real rows: {_percent(entry['holdout_copied_share'])})")
            loose = ""
            if _percent(folded) != _percent(exact):
                fresh = entry["holdout_copied_share_folded"]
                loose = (f", {_percent(folded)} once case, accents and word order are set aside"
                         + ("" if fresh is None else f" (fresh real rows: {_percent(fresh)})"))
            entry["sentence"] = (f"{_percent(exact)} of the release's values of {column!r} ({reason}) are values of "
                                 f"the real table{base}{loose}: {entry['distinct_copied']:,} distinct real values "
                                 f"appear in the release, {_percent(entry['distinct_copied_share'])} of its "
                                 f"{entry['distinct_release']:,} distinct values"
                                 + (" — the synthesizer copies them; they leak whatever the discriminators say"
                                    if max(exact, folded) > 0.5 else ""))
        out.append(entry)
    return out
