"""Which columns hold personal information (issue 25, item 5): names, e-mails, phones, name-hinted free text
are detected; ordinary categories (Adult's workclass and education, US states) are not."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from llmdisc.audit.personal import detect_personal, personal_summary

FIRST = ["Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiroshi", "Ines", "Jonas", "Katja",
         "Liam", "Maria", "Nikolai", "Olga", "Pedro"]
LAST = ["Andersen", "Bianchi", "Costa", "Dubois", "Eriksson", "Fischer", "García", "Horvat", "Ivanova", "Jensen",
        "Kowalski", "Lopez", "Müller", "Novak", "O'Brien", "Petrov"]
STATES = ["Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
          "Florida", "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana",
          "Maine", "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana",
          "Nebraska", "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina",
          "North Dakota", "Ohio", "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina",
          "South Dakota", "Tennessee", "Texas", "Utah", "Vermont", "Virginia", "Washington", "West Virginia",
          "Wisconsin", "Wyoming"]


def people(n: int) -> list[str]:
    """``n`` person names, deterministic: every first name with every last name, in a fixed order."""
    pairs = itertools.islice(itertools.cycle(itertools.product(FIRST, LAST)), n)
    return [f"{first} {last}" for first, last in pairs]


def _draw(values: list[str], n: int, seed: int = 0) -> pd.Series:
    return pd.Series(np.random.default_rng(seed).choice(values, size=n))


@pytest.mark.parametrize("column", ["full_name", "patient", "customerName", "x"])
def test_person_names_are_detected(column: str) -> None:
    # with a name hint, or without one when the values are many distinct names
    assert detect_personal(pd.Series(people(200)), column) == "person names"


def test_a_few_names_repeated_need_the_column_name_to_say_so() -> None:
    few = _draw(people(5), 300)  # 5 distinct names: could be a category ("Team Alpha", "New York", ...)
    assert detect_personal(few, "team") is None
    assert detect_personal(few, "employee") == "person names"


def test_e_mail_addresses_and_phone_numbers_are_detected() -> None:
    mails = pd.Series([f"{n.lower().replace(' ', '.')}@example.org" for n in people(100)])
    assert detect_personal(mails, "contact") == "e-mail addresses"
    assert detect_personal(mails, "c7") == "e-mail addresses"  # whatever the column is called
    phones = pd.Series([f"+1 (555) {100 + i:03d}-{(i * 37) % 10_000:04d}" for i in range(100)])
    assert detect_personal(phones, "c8") == "phone numbers"
    assert detect_personal(pd.Series([f"0{i:09d}" for i in range(100)], dtype=object), "mobile") == "phone numbers"


def test_name_hinted_free_text_is_detected() -> None:
    addresses = pd.Series([f"{i} {s} Street, Springfield" for i, s in zip(range(1, 101), itertools.cycle(LAST))])
    assert detect_personal(addresses, "home_address") == "free-text identifiers (named 'home_address')"
    handles = pd.Series([f"user{i:04d}" for i in range(100)])
    assert detect_personal(handles, "owner") == "free-text identifiers (named 'owner')"
    assert detect_personal(handles, "sku") is None  # the same values, no hint: a code, not a person


@pytest.mark.parametrize(("column", "values"), [
    ("workclass", ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                   "Without-pay", "?"]),
    ("education", ["Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college", "Assoc-acdm", "Doctorate",
                   "Prof-school", "5th-6th"]),
    ("native_country", ["United-States", "Mexico", "Philippines", "Germany", "Puerto-Rico", "El-Salvador"]),
    ("state", STATES),
    ("state_name", STATES),
    ("relationship", ["Husband", "Not-in-family", "Own-child", "Unmarried", "Wife", "Other-relative"]),
])
@pytest.mark.parametrize("n", [60, 2000])
def test_ordinary_categories_are_not_personal(column: str, values: list[str], n: int) -> None:
    assert detect_personal(_draw(values, n), column) is None


def test_numbers_booleans_and_empty_columns_are_not_personal() -> None:
    assert detect_personal(pd.Series(range(100)), "patient") is None
    assert detect_personal(pd.Series([True, False] * 50), "name") is None
    assert detect_personal(pd.Series([None, "", "  "], dtype=object), "name") is None


def test_personal_summary_counts_release_values_copied_from_the_real_table() -> None:
    real = pd.DataFrame({"name": people(100), "mail": [f"p{i}@example.org" for i in range(100)]})
    release = pd.DataFrame({"name": people(100)[::-1][:40] + ["Zoe Zed"] * 10,
                            "mail": [f"new{i}@example.org" for i in range(50)]})
    holdout = pd.DataFrame({"name": people(120)[100:], "mail": [f"h{i}@example.org" for i in range(20)]})
    summary = personal_summary({"real": real, "synthetic": release, "holdout": holdout},
                               {"name": "detected: person names", "mail": "detected: e-mail addresses"})
    name, mail = summary
    assert (name["column"], name["n_release"], name["copied_share"]) == ("name", 50, 0.8)
    assert (name["distinct_release"], name["distinct_copied"]) == (41, 40)
    assert name["holdout_copied_share"] == 0.0  # people(120)[100:] are 20 names the first 100 do not hold
    assert name["sentence"].startswith("80 % of the release's values of 'name' (detected: person names) are "
                                       "values of the real table (fresh real rows: 0 %): 40 distinct real values")
    assert name["sentence"].endswith("they leak whatever the discriminators say")
    assert (mail["copied_share"], mail["distinct_copied"]) == (0.0, 0)
    assert "leak" not in mail["sentence"]


@pytest.mark.parametrize(("column", "says"), [
    ("name", True), ("Name", True), ("full_name", True), ("FullName", True), ("last-name", True),
    ("customer_name", True), ("customerName", True), ("surname", True), ("patient", True),
    ("state_name", False), ("product_name", False), ("file_name", False), ("company", False), ("state", False),
])
def test_a_column_name_says_people_only_with_person_words(column: str, says: bool) -> None:
    from llmdisc.audit.personal import names_people

    assert names_people(column) is says
