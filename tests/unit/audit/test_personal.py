"""Which columns hold personal information (issue 25, item 5; issue 40, item 7; issue 42, item 7): names in any
case, order and script, e-mails, phones, name-hinted free text are detected, from the header, the SDV sdtype and
the values; ordinary categories (Adult's and the Census labels' columns, US states, cities, product codes),
dates, ZIP+4 codes and digit groups are not. The copied share is counted exactly and folded."""

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
    phones = pd.Series([f"+1 (415) {200 + i:03d}-{(i * 37) % 10_000:04d}" for i in range(100)])
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
                                       "values of the real table (fresh real rows: 0 %): 40 distinct real values "
                                       "appear in the release, 98 % of its 41 distinct values")
    assert (name["copied_share_folded"], name["holdout_copied_share_folded"]) == (0.8, 0.0)
    assert name["distinct_copied_share"] == name["distinct_copied_share_folded"] == 40 / 41
    assert name["sentence"].endswith("they leak whatever the discriminators say")
    assert (mail["copied_share"], mail["distinct_copied"]) == (0.0, 0)
    assert "leak" not in mail["sentence"]


@pytest.mark.parametrize(("column", "says"), [
    ("name", True), ("Name", True), ("full_name", True), ("FullName", True), ("last-name", True),
    ("customer_name", True), ("customerName", True), ("surname", True), ("patient", True),
    ("state_name", False), ("product_name", False), ("file_name", False), ("company", False), ("state", False),
    ("nome", True), ("Nachname", True), ("Prénom", True), ("nombre_cliente", True), ("first name", True),
    ("customer_type", False), ("patient_id", False), ("col7", False),
])
def test_a_column_name_says_people_only_with_person_words(column: str, says: bool) -> None:
    from llmdisc.audit.personal import _header_kind

    assert (_header_kind(column) in ("name", "person")) is says


# --- names as a person finds them (issue 40, item 7): any case, order, script; header, sdtype, distinct share ---

MORE_FIRST = FIRST + ["Ahmet", "Björn", "Céline", "Dorota", "Émile", "Fatma", "Gonçalo", "Håkon", "Ingrid", "Jürgen",
                      "Kemal", "Łukasz", "Matías", "Noémie", "Øyvind", "Paweł", "Renée", "Søren", "Tomás", "Zoë"]
MORE_LAST = LAST + ["Aydın", "Brontë", "Çelik", "Dvořák", "Egeland", "Fernández", "Gößling", "Høgh", "Iglesias",
                    "Jiménez", "Kovačević", "Lindqvist", "Nuñez", "Öztürk", "Pérez", "Rønning", "Şahin", "Szabó",
                    "Ürün", "Wałęsa"]


def many_people(n: int, seed: int = 0) -> list[str]:
    """``n`` rows of person names drawn from 36 x 36 = 1,296 people (about a thousand distinct in 3,000 rows),
    with diacritics (José, Ğ, Ø, ł)."""
    rng = np.random.default_rng(seed)
    return [f"{MORE_FIRST[i]} {MORE_LAST[j]}" for i, j in zip(rng.integers(0, len(MORE_FIRST), n),
                                                                rng.integers(0, len(MORE_LAST), n))]


def _last_first(name: str) -> str:
    first, last = name.split(" ", 1)
    return f"{last}, {first}"


def _ascii(name: str) -> str:
    from llmdisc.audit.personal import fold

    return fold(name)


SHAPES = {
    "lower first last": lambda n: n.lower(),
    "UPPER": lambda n: n.upper(),
    "Title": lambda n: n,
    "Last, First": _last_first,
    "lower last, first": lambda n: _last_first(n).lower(),
    "first.last": lambda n: n.lower().replace(" ", "."),
    "diacritics folded": _ascii,
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("column", ["name", "full_name", "customerName", "Nome", "nom_de_famille", "patient",
                                    "col7"])
def test_person_names_are_found_in_any_case_order_and_script(shape: str, column: str) -> None:
    values = pd.Series([SHAPES[shape](v) for v in many_people(3000)])
    assert values.nunique() > 900  # thousands of rows, about a thousand distinct people
    assert detect_personal(values, column) == "person names"


def test_single_names_are_found_by_header_or_by_the_name_lists() -> None:
    rng = np.random.default_rng(3)
    firsts = pd.Series(rng.choice([f.lower() for f in MORE_FIRST], 3000))  # 36 distinct first names, lower case
    assert detect_personal(firsts, "first_name") == "person names"
    assert detect_personal(firsts, "vorname") == "person names"
    assert detect_personal(firsts, "c3") == "person names"  # no header: known given names, 36 distinct
    few = pd.Series(rng.choice(["maria", "jonas", "elena"], 300))
    assert detect_personal(few, "first_name") == "person names"  # a few, but given names and the header says so
    assert detect_personal(few, "c3") is None  # a few repeated values and no header: a category


def test_names_made_into_a_category_by_sdv_metadata_are_still_found(tmp_path) -> None:
    """The issue's table: SDV's metadata calls the lower-case name column ``categorical``; an opaque ``col7`` is
    declared ``first_name``; ``"pii"`` is obeyed both ways."""
    import json

    from llmdisc.audit.schema import plan_columns
    from llmdisc.audit.sdv_metadata import read_sdv_metadata

    rng = np.random.default_rng(4)
    real = pd.DataFrame({"customer name": [v.lower() for v in many_people(3000, seed=5)],
                         "col7": rng.choice(MORE_FIRST, 3000), "nick": rng.choice(MORE_FIRST, 3000),
                         "tag": [v.lower() for v in many_people(3000, seed=6)],
                         "city": rng.choice(["Springfield", "Riverton", "Lakeside"], 3000),
                         "age": rng.integers(18, 90, 3000)})
    sdtypes = {"customer name": {"sdtype": "categorical"}, "col7": {"sdtype": "first_name"},
               "nick": {"sdtype": "categorical", "pii": True}, "tag": {"sdtype": "categorical", "pii": False},
               "city": {"sdtype": "categorical"}, "age": {"sdtype": "numerical"}}
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"columns": sdtypes, "METADATA_SPEC_VERSION": "SINGLE_TABLE_V1"}), encoding="utf-8")
    plan = plan_columns(real, n_rows_in_file=3000, metadata=read_sdv_metadata(path, list(real.columns)))
    assert plan.personal == {"customer name": "detected: person names", "col7": "sdtype first_name",
                             "nick": "sdtype categorical, pii true"}
    assert plan.excluded["customer name"] == ("personal information (detected: person names; --metadata says "
                                              "categorical)")
    assert plan.kinds == {"tag": "categorical", "city": "categorical", "age": "numerical"}  # "pii": false obeyed
    # the release copies every name, written in another case, order or with the accents dropped
    release = real.copy()
    release["customer name"] = [_last_first(v).upper() if i % 2 else v for i, v in
                                enumerate(real["customer name"].sample(frac=1, random_state=0))]
    release["col7"] = [_ascii(v) for v in real["col7"]]
    summary = {p["column"]: p for p in personal_summary({"real": real, "synthetic": release}, plan.personal)}
    name = summary["customer name"]
    assert name["copied_share"] == pytest.approx(0.5, abs=0.01)  # the lower-case half, copied exactly
    assert name["copied_share_folded"] == 1.0 and name["distinct_copied_share_folded"] == 1.0
    assert "100 % once case, accents and word order are set aside" in name["sentence"]
    assert name["sentence"].endswith("they leak whatever the discriminators say")
    first = summary["col7"]
    assert first["copied_share_folded"] == 1.0 and first["copied_share"] < 1.0  # Zoë -> zoe, José -> jose, ...


def test_folding_sets_aside_case_accents_punctuation_and_word_order() -> None:
    from llmdisc.audit.personal import fold_value

    assert (fold_value("García, María") == fold_value("maria garcia") == fold_value("MARIA.GARCIA")
            == fold_value("María  García") == "garcia maria")
    assert fold_value("Ğül Øst-Łukasz") == "gul lukasz ost"
    assert fold_value("Maria Garcia") != fold_value("Mario Garcia")


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    from llmdisc.data import load_dataset

    return load_dataset("adult")


def test_no_adult_column_is_personal(adult: pd.DataFrame) -> None:
    """Precision on the project's own data: none of Adult's columns, under its own header or an opaque one."""
    assert {c: detect_personal(adult[c], c) for c in adult.columns} == dict.fromkeys(adult.columns)
    assert {c: detect_personal(adult[c], "col") for c in adult.columns} == dict.fromkeys(adult.columns)
    # a person header on a category is not enough: Male/Female, White/Black, Husband/Wife are no names
    for header in ("name", "first_name", "patient", "customer"):
        assert {c: detect_personal(adult[c], header) for c in adult.columns} == dict.fromkeys(adult.columns)


def test_no_census_label_column_is_personal() -> None:
    from llmdisc.errors import LlmdiscError

    from llmdisc.data import load_dataset

    try:
        census = load_dataset("census", "labels", n_rows=5000, seed=0)
    except LlmdiscError as exc:  # no census source on this machine
        pytest.skip(str(exc))
    assert {c: detect_personal(census[c], c) for c in census.columns} == dict.fromkeys(census.columns)
    assert {c: detect_personal(census[c], "x") for c in census.columns} == dict.fromkeys(census.columns)


US_CITIES = ["Houston", "Phoenix", "Philadelphia", "San Antonio", "San Diego", "Dallas", "Austin", "Jacksonville",
             "Columbus", "Charlotte", "Indianapolis", "Seattle", "Denver", "Boston", "Nashville", "Detroit",
             "Portland", "Memphis", "Louisville", "Baltimore", "Milwaukee", "Albuquerque", "Tucson", "Fresno",
             "Sacramento", "Atlanta", "Omaha", "Raleigh", "Miami", "Oakland", "Minneapolis", "Tulsa", "Wichita",
             "Arlington", "Tampa", "New Orleans", "Cleveland", "Honolulu", "Anaheim", "Lexington", "Stockton",
             "Henderson", "Riverside", "Newark", "Lincoln", "Orlando", "Madison", "Durham", "Laredo", "Reno"]


@pytest.mark.parametrize("column", ["city", "home_town", "col4"])
@pytest.mark.parametrize("n", [60, 3000])
def test_cities_are_not_names(column: str, n: int) -> None:
    """The grey zone: city names look like names; a place header never makes them names, and a neutral one only
    when most hold given names (these do not)."""
    assert detect_personal(_draw(US_CITIES, n), column) is None
    assert detect_personal(_draw([c.lower() for c in US_CITIES], n), column) is None


@pytest.mark.parametrize("column", ["product", "sku", "code", "col9"])
def test_product_codes_and_names_are_not_personal(column: str) -> None:
    rng = np.random.default_rng(7)
    codes = pd.Series([f"{a}{b}-{n:04d}" for a, b, n in zip(rng.choice(list("ABCDEFGH"), 2000),
                                                              rng.choice(list("XYZ"), 2000),
                                                              rng.integers(0, 10_000, 2000))])
    assert detect_personal(codes, column) is None
    products = _draw(["Blue Widget", "Red Widget", "Gadget Pro", "Gadget Mini", "Super Blender", "Toaster Deluxe"],
                     2000)
    assert detect_personal(products, column) is None


def test_category_values_under_a_person_header_are_not_names() -> None:
    loyalty = _draw(["Loyal Customer", "disloyal Customer"], 1000)
    assert detect_personal(loyalty, "Customer Type") is None
    assert detect_personal(_draw(["yes", "no"], 500), "employee") is None
    assert detect_personal(_draw(["Male", "Female"], 500), "name") is None


# --- phone numbers (issue 42, item 7): phonenumbers, not a digit pattern ---

@pytest.mark.parametrize(("value", "region"), [
    ("+1 415 555 2671", None), ("(415) 555-2671", "US"), ("415-555-2671", "US"), ("415.555.2671", "US"),
    ("+44 20 7946 0958", None), ("0044 20 7946 0958", None), ("020 7946 0958", "GB"), ("030 1234567", "DE"),
    ("+49 30 1234567", None), ("+1 415 555 2671 x123", None),
])
def test_phone_numbers_in_common_formats_are_phone_numbers(value: str, region: str | None) -> None:
    from llmdisc.audit.personal import is_phone_number

    assert is_phone_number(value, region)


@pytest.mark.parametrize("value", ["12345-6789", "94105-1234", "1234 5678", "12 345 678", "2024-01-15",
                                   "15/01/2024", "01/15/2024", "15.01.2024", "2024-01-15T10:30:00",
                                   "2024-01-15 10:30:00", "20240115", "123", "Maria Garcia"])
@pytest.mark.parametrize("region", [None, "US", "GB", "DE", "FR"])
def test_zip4_digit_groups_dates_and_timestamps_are_not_phone_numbers(value: str, region: str | None) -> None:
    from llmdisc.audit.personal import is_phone_number

    assert not is_phone_number(value, region)


def test_a_national_number_needs_its_region() -> None:
    from llmdisc.audit.personal import is_phone_number

    assert not is_phone_number("020 7946 0958", None) and not is_phone_number("020 7946 0958", "US")


def _us_phones(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    area = rng.choice(["415", "212", "617", "312", "206", "303"], n)
    formats = ["({a}) {e}-{l:04d}", "{a}-{e}-{l:04d}", "+1 {a} {e} {l:04d}", "{a}.{e}.{l:04d}"]
    return [formats[i % 4].format(a=a, e=e, l=l) for i, (a, e, l) in
            enumerate(zip(area, rng.integers(200, 1000, n), rng.integers(0, 10_000, n)))]


def test_phone_columns_are_found_and_look_alikes_are_not() -> None:
    assert detect_personal(pd.Series(_us_phones(500)), "c8") == "phone numbers"
    uk = pd.Series([f"020 7{i:03d} {(i * 7919) % 10_000:04d}" for i in range(300)])
    assert detect_personal(uk, "c8") == "phone numbers"  # GB is one of the default regions
    berlin = pd.Series([f"030 {1_000_000 + i * 7919}" for i in range(300)])
    assert detect_personal(berlin, "c8") is None  # a DE national number needs the region ...
    assert detect_personal(berlin, "c8", phone_regions=["DE"]) == "phone numbers"  # ... as a hint
    assert detect_personal(berlin, "telefon") == "phone numbers"  # ... or a header that says phone
    rng = np.random.default_rng(1)
    looks_alike = {
        "zip": [f"{z:05d}-{p:04d}" for z, p in zip(rng.integers(10_000, 99_999, 500), rng.integers(0, 10_000, 500))],
        "amount": [f"{a} {b:04d}" for a, b in zip(rng.integers(1000, 9999, 500), rng.integers(0, 10_000, 500))],
        "ref": [f"{rng.integers(10**9, 10**10)}" for _ in range(500)],  # ten-digit ids: a third pass as US numbers
        "day": [str(d.date()) for d in pd.date_range("2020-01-01", periods=500)],
        "day_uk": [d.strftime("%d/%m/%Y") for d in pd.date_range("2020-01-01", periods=500)],
        "stamp": [d.isoformat() for d in pd.date_range("2020-01-01", periods=500, freq="h")],
    }
    for column, values in looks_alike.items():
        assert detect_personal(pd.Series(values), column) is None, column
        assert detect_personal(pd.Series(values), column, phone_regions=["US", "GB", "DE", "FR"]) is None, column
