"""Bounded readers, schema rule and column checks of ``llmdisc audit`` (llmdisc.audit.sources / .schema)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.audit.errors import (
    ColumnMismatchError,
    InputMissingError,
    InputUnparsableError,
    TooFewRowsError,
    exit_status_for,
)
from llmdisc.audit.schema import check_same_columns, harmonise, infer_column_kinds
from llmdisc.audit.sources import open_table, read_rows_at, read_sample, sample_positions
from llmdisc.baselines.encoding import infer_kind  # the project's one kind rule
from llmdisc.errors import ConfigError


@pytest.fixture(scope="module")
def mixed() -> pd.DataFrame:
    """A 2,500-row table with the awkward cases: missing values, quotes, commas, newlines in text, codes."""
    rng = np.random.default_rng(7)
    n = 2500
    text = rng.choice(["plain", "with, comma", 'with "quote"', "two\nlines", "ünïcode"], size=n)
    income = rng.normal(50_000, 9_000, size=n).round(2)
    income[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "age": rng.integers(18, 90, n),
            "rating": rng.integers(1, 6, n),
            "income": income,
            "note": text,
            "flag": rng.random(n) < 0.3,
        }
    )


@pytest.fixture(scope="module")
def files(mixed: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sources")
    paths = {"csv": root / "t.csv", "csv.gz": root / "t.csv.gz", "parquet": root / "t.parquet"}
    mixed.to_csv(paths["csv"], index=False)
    mixed.to_csv(paths["csv.gz"], index=False)
    mixed.to_parquet(paths["parquet"], index=False, row_group_size=300)  # several row groups
    return paths


@pytest.mark.parametrize("kind", ["csv", "csv.gz", "parquet"])
def test_row_count_and_columns_are_exact(files: dict[str, Path], mixed: pd.DataFrame, kind: str) -> None:
    source = open_table(files[kind])
    assert source.n_rows == len(mixed) == 2500  # quoted newlines do not count as rows
    assert source.columns == tuple(mixed.columns)
    assert source.format == ("parquet" if kind == "parquet" else "csv")


@pytest.mark.parametrize("kind", ["csv", "csv.gz", "parquet"])
def test_rows_at_positions_equal_pandas_full_read(files: dict[str, Path], kind: str) -> None:
    source = open_table(files[kind])
    full = pd.read_parquet(files[kind]) if kind == "parquet" else pd.read_csv(files[kind])
    positions = np.array([2499, 0, 17, 301, 300, 299, 1234, 2000])  # any order, across blocks and row groups
    got = read_rows_at(source, positions)
    pd.testing.assert_frame_equal(got, full.iloc[positions].reset_index(drop=True))


def test_sampling_is_seeded_exact_and_in_file_order(files: dict[str, Path]) -> None:
    first = sample_positions(2500, 40, seed=3)
    assert np.array_equal(first, sample_positions(2500, 40, seed=3))
    assert not np.array_equal(first, sample_positions(2500, 40, seed=4))
    assert len(set(first.tolist())) == 40 and np.all(np.diff(first) > 0)
    expected = np.sort(np.random.default_rng(3).choice(2500, size=40, replace=False))
    assert np.array_equal(first, expected)
    assert np.array_equal(sample_positions(30, 100, seed=0), np.arange(30))  # small table: every row
    rows_csv, pos_csv = read_sample(open_table(files["csv"]), 40, seed=3)
    rows_pq, pos_pq = read_sample(open_table(files["parquet"]), 40, seed=3)
    assert np.array_equal(pos_csv, first) and np.array_equal(pos_pq, first)
    assert rows_csv["id"].tolist() == first.tolist() == rows_pq["id"].tolist()


def test_a_record_longer_than_a_read_block_is_read_whole(tmp_path: Path) -> None:
    from llmdisc.audit.sources import CSV_BLOCK_BYTES

    long_text = "x" * (CSV_BLOCK_BYTES + 1000)
    table = pd.DataFrame({"id": range(30), "text": ["short"] * 29 + [long_text]})
    table.to_csv(tmp_path / "long.csv", index=False)
    source = open_table(tmp_path / "long.csv")
    assert source.n_rows == 30
    got = read_rows_at(source, [29, 3])
    assert got["text"].tolist() == [long_text, "short"] and got["id"].tolist() == [29, 3]


def test_read_rows_refuses_bad_positions(files: dict[str, Path]) -> None:
    source = open_table(files["parquet"])
    with pytest.raises(ConfigError, match=r"row positions must lie in \[0, 2500\)"):
        read_rows_at(source, [0, 2500])
    with pytest.raises(ConfigError, match="row positions repeat"):
        read_rows_at(source, [5, 5])


def test_input_errors_name_the_problem_and_fix(tmp_path: Path, files: dict[str, Path]) -> None:
    with pytest.raises(InputMissingError, match="'nope.csv' does not exist.*fix: check the path") as missing:
        open_table(tmp_path / "nope.csv")
    (tmp_path / "book.xlsx").write_bytes(b"PK\x03\x04")
    with pytest.raises(
        InputUnparsableError, match="book.xlsx is an Excel.*fix: export the sheet to CSV"
    ) as excel:
        open_table(tmp_path / "book.xlsx")
    (tmp_path / "ragged.csv").write_text("a,b,c\n1,2,3\n4,5\n", encoding="utf-8")
    with pytest.raises(InputUnparsableError, match="ragged.csv cannot be parsed.*fix: check that every row"):
        open_table(tmp_path / "ragged.csv")
    (tmp_path / "junk.parquet").write_bytes(b"not a parquet file at all")
    with pytest.raises(InputUnparsableError, match="junk.parquet cannot be parsed"):
        open_table(tmp_path / "junk.parquet")
    (tmp_path / "dup.csv").write_text("a,a\n1,2\n", encoding="utf-8")
    with pytest.raises(InputUnparsableError, match=r"duplicate or empty column names \['a'\]"):
        open_table(tmp_path / "dup.csv")
    (tmp_path / "short.csv").write_text("a,b\n" + "1,2\n" * 5, encoding="utf-8")
    with pytest.raises(TooFewRowsError, match="has 5 data rows, fewer than the 20 rows") as short:
        read_sample(open_table(tmp_path / "short.csv"), 100, seed=0, min_rows=20, what="synthetic")
    assert [exit_status_for(e.value) for e in (missing, excel, short)] == [4, 5, 7]


def test_kind_rule_numbers_codes_and_text() -> None:
    rng = np.random.default_rng(0)
    n = 1000
    assert infer_kind(pd.Series(rng.normal(size=n))) == "numerical"
    assert infer_kind(pd.Series(rng.integers(18, 90, n))) == "numerical"  # 72 levels > 20
    assert infer_kind(pd.Series(rng.integers(1, 6, n))) == "categorical"  # a 1-5 code
    assert infer_kind(pd.Series(rng.integers(0, 2, 30))) == "categorical"  # 0/1 flag even in a tiny table
    assert infer_kind(pd.Series(rng.integers(1, 16, 100))) == "numerical"  # 15 levels > 5 % of 100 rows
    assert infer_kind(pd.Series([1.5, 2.0, 2.5] * 10)) == "numerical"  # not integral
    assert infer_kind(pd.Series([True, False] * 10)) == "categorical"
    assert infer_kind(pd.Series(["a", "b"] * 10)) == "categorical"


def test_known_dataset_kinds_and_overrides() -> None:
    from llmdisc.data.datasets import ADULT_COLUMNS, column_kinds

    adult_like = pd.DataFrame({c: [1, 2] if c == "age" else ["x", "y"] for c in ADULT_COLUMNS})
    kinds, how = infer_column_kinds(adult_like)
    assert kinds == column_kinds("adult") and how["age"] == "declared for a known dataset"
    table = pd.DataFrame({"zip": [10115, 10117, 20095] * 10, "score": np.linspace(0, 1, 30)})
    kinds, how = infer_column_kinds(table, categorical=["zip"])
    assert kinds == {"zip": "categorical", "score": "numerical"} and how["zip"] == "--categorical"
    with pytest.raises(
        ConfigError, match=r"--numerical names column\(s\) \['nope'\] that the real table lacks"
    ):
        infer_column_kinds(table, numerical=["nope"])
    with pytest.raises(ConfigError, match=r"\['zip'\] are given to both --categorical and --numerical"):
        infer_column_kinds(table, categorical=["zip"], numerical=["zip"])


def test_column_checks_and_harmonise() -> None:
    with pytest.raises(
        ColumnMismatchError, match=r"synthetic table s.csv differ .*missing \['b'\], extra \['c'\]"
    ):
        check_same_columns(["a", "b"], ["a", "c"], other="synthetic", real_name="r.csv", other_name="s.csv")
    check_same_columns(["a", "b"], ["b", "a"], other="synthetic", real_name="r.csv", other_name="s.csv")
    real = pd.DataFrame({"code": [1, 2, 3], "x": [1, 2, 3], "t": ["a", "b", None]})
    syn = pd.DataFrame({"t": ["a", "c", "b"], "code": [1.0, np.nan, 3.0], "x": [1.5, 2.0, 2.0]})
    out = harmonise(
        {"real": real, "synthetic": syn}, {"code": "categorical", "x": "numerical", "t": "categorical"}
    )
    assert list(out["synthetic"].columns) == ["code", "x", "t"]  # the real table's order
    assert out["synthetic"]["code"].tolist()[0::2] == ["1", "3"] and out["real"]["code"].tolist() == [
        "1",
        "2",
        "3",
    ]
    assert out["real"]["x"].dtype == "float64"  # the synthetic side is not integral
    bad = pd.DataFrame({"code": [1, 2, 3], "x": ["1", "two", "3"], "t": ["a", "b", "c"]})
    with pytest.raises(
        ColumnMismatchError,
        match="column 'x' is numerical but the synthetic table holds non-numbers such as 'two'",
    ) as err:
        harmonise(
            {"real": real, "synthetic": bad}, {"code": "categorical", "x": "numerical", "t": "categorical"}
        )
    assert exit_status_for(err.value) == 6
