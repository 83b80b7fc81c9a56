"""Stage 01 data layer.

Adult (verified), Census (local CSV, reference, folktables over loopback), encodings, the seeded stratified
split, the processed products and their manifest, and every bad-input error.
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import re
import shutil
import socket
import threading
import zipfile
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from llmdisc.cli.main import main as cli_main
from llmdisc.data import acs
from llmdisc.data.datasets import (
    ADULT_COLUMNS,
    ADULT_SHA256,
    CENSUS_COLUMNS,
    ENCODINGS,
    TARGET_COLUMN,
    add_manifest_metrics,
    column_kinds,
    dataset_key,
    load_adult,
    load_dataset,
    load_processed,
    parse_dataset_key,
    prepare_dataset,
    processed_dir,
    profile_table,
    split_balance,
    train_holdout_split,
)
from llmdisc.errors import ChecksumError, ConfigError, DataError
from llmdisc.manifest import read_manifest, sha256_file
from llmdisc.paths import project_root

ADULT_DIR = project_root() / "data" / "raw" / "adult"
# A few rows of valid 2018 PUMS codes (hand-written test input, in the schema's order).
SMALL_CENSUS = pd.DataFrame(
    [
        [28, 1, 18, 5, 4700, 37, 13, 50, 2, 1, 0],
        [56, 5, 18, 3, 4230, 36, 0, 40, 1, 2, 0],
        [23, 1, 21, 5, 1430, 36, 0, 40, 1, 1, 1],
        [33, 1, 21, 1, 4710, 17, 0, 50, 2, 1, 1],
        [45, 3, 22, 1, 2310, 6, 1, 45, 2, 6, 1],
        [61, 6, 16, 2, 9130, 303, 0, 30, 1, 8, 0],
        [38, 2, 24, 1, 1800, 210, 1, 60, 2, 9, 1],
        [19, 1, 19, 5, 4110, 48, 2, 20, 1, 2, 0],
        [50, 7, 20, 3, 10, 12, 0, 55, 1, 1, 1],
        [30, 4, 17, 4, 3930, 72, 0, 40, 2, 3, 0],
    ],
    columns=list(CENSUS_COLUMNS),
)


@pytest.fixture
def isolated_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root in tmp_path (Adult copied in), no census source, ACS downloads to a closed port."""
    root = tmp_path / "root"
    (root / "data" / "raw").mkdir(parents=True)
    shutil.copytree(ADULT_DIR, root / "data" / "raw" / "adult")  # a copy: paths must resolve inside the root
    empty_shared = tmp_path / "no_shared"
    empty_shared.mkdir()
    monkeypatch.setenv("LLMDISC_ROOT", str(root))
    monkeypatch.setenv("LLMDISC_SHARED", str(empty_shared))
    monkeypatch.delenv(acs.CENSUS_CSV_ENV, raising=False)
    with socket.socket() as sock:  # a port that nothing listens on: connection refused at once
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(acs.ACS_URL_ENV, f"http://127.0.0.1:{port}/pums")
    return root


@pytest.fixture
def small_census_csv(tmp_path: Path) -> Path:
    path = tmp_path / "census_small.csv"
    SMALL_CENSUS.to_csv(path, index=False)
    return path


# --- UCI Adult -----------------------------------------------------------------------------------------


def test_adult_has_30162_rows_15_columns_six_integers() -> None:
    table = load_dataset("adult")
    assert table.shape == (30_162, 15)
    assert tuple(table.columns) == ADULT_COLUMNS
    integers = [c for c, t in table.dtypes.items() if t == "int64"]
    assert integers == ["age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    assert all(table[c].map(type).eq(str).all() for c in ADULT_COLUMNS if c not in integers)
    assert table["income"].value_counts().to_dict() == {"<=50K": 22_654, ">50K": 7_508}
    assert not table.isna().any().any() and not table.isin(["?"]).any().any()


def test_adult_checksum_mismatch_names_file_hashes_and_fix(tmp_path: Path) -> None:
    content = bytearray(gzip.decompress((ADULT_DIR / "adult.data.gz").read_bytes()))
    content[5] = ord("9")  # "39, State-gov" -> "39, 9tate-gov": one byte changed
    (tmp_path / "adult.data.gz").write_bytes(gzip.compress(bytes(content)))
    bad = hashlib.sha256(bytes(content)).hexdigest()
    with pytest.raises(
        ChecksumError,
        match=re.escape(
            f"adult.data.gz: sha256 of its content is {bad}, expected {ADULT_SHA256['adult.data']}"
        ),
    ) as info:
        load_adult(tmp_path)
    assert "make data" in str(info.value) and "llmdisc data fetch-adult" in str(info.value)


def test_adult_plain_file_is_verified_too(tmp_path: Path) -> None:
    (tmp_path / "adult.data").write_bytes(gzip.decompress((ADULT_DIR / "adult.data.gz").read_bytes()))
    assert load_adult(tmp_path)[0].shape == (30_162, 15)
    (tmp_path / "adult.data").write_bytes(b"39, State-gov\n")
    with pytest.raises(ChecksumError, match="expected 5b0026"):
        load_adult(tmp_path)


def test_adult_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(
        DataError, match=r"adult\.data\.gz is missing; fix: restore the pristine file with `make data`"
    ):
        load_adult(tmp_path)


def test_adult_folder_records_checksums_and_licence() -> None:
    sums = dict(line.split("  ")[::-1] for line in (ADULT_DIR / "SHA256SUMS").read_text().splitlines())
    assert sums == ADULT_SHA256
    for name, digest in sums.items():
        assert hashlib.sha256(gzip.decompress((ADULT_DIR / f"{name}.gz").read_bytes())).hexdigest() == digest
    licence = (ADULT_DIR / "LICENSE.md").read_text()
    assert "CC BY 4.0" in licence and "10.24432/C5XW20" in licence and "Becker" in licence


# --- dataset keys and names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "encoding", "key"),
    [
        ("adult", None, "adult"),
        ("adult", "", "adult"),
        ("adult", "labels", "adult"),
        ("census", None, "census-codes"),
        ("census", "codes", "census-codes"),
        ("census", "labels", "census-labels"),
    ],
)
def test_dataset_key_round_trip(dataset: str, encoding: str | None, key: str) -> None:
    assert dataset_key(dataset, encoding) == key
    assert parse_dataset_key(key) == (dataset, encoding or ENCODINGS[dataset][0])


def test_unknown_dataset_and_encoding_list_the_valid_ones() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("unknown dataset 'german'; fix: use one of ['adult', 'census']")
    ):
        load_dataset("german")
    with pytest.raises(
        ConfigError,
        match=re.escape(
            "unknown encoding 'onehot' for dataset 'census'; fix: use one of ['codes', 'labels']"
        ),
    ):
        load_dataset("census", encoding="onehot")
    with pytest.raises(ConfigError, match=re.escape("fix: use one of ['labels']")):
        dataset_key("adult", "codes")
    with pytest.raises(ConfigError, match=re.escape("unknown dataset key 'census-x'")):
        parse_dataset_key("census-x")
    with pytest.raises(ConfigError, match="apply to dataset 'census' only"):
        load_dataset("adult", states=["CA"])


def test_column_kinds_declared_for_both_datasets() -> None:
    for key in ("census-codes", "census-labels"):
        kinds = column_kinds(key)
        assert [c for c, k in kinds.items() if k == "numerical"] == ["age", "hours_per_week"]
        assert kinds["occupation"] == kinds["income_above_50k"] == "categorical"
    adult = column_kinds("adult")
    assert sum(k == "numerical" for k in adult.values()) == 6 and adult["income"] == "categorical"
    assert column_kinds(SMALL_CENSUS)["occupation"] == "categorical"  # a census table, integer or not
    other = pd.DataFrame({"x": [1.5], "flag": [True], "name": ["a"]})
    assert column_kinds(other) == {"x": "numerical", "flag": "categorical", "name": "categorical"}


# --- ACS Census ----------------------------------------------------------------------------------------


def test_reference_census_file_loads_with_11_integer_columns(reference: Path) -> None:
    path = reference / "data" / "census" / "real" / "census.csv"
    n_lines = sum(1 for _ in path.open()) - 1
    table = load_dataset("census")
    assert table.shape == (n_lines, 11) and tuple(table.columns) == CENSUS_COLUMNS
    assert set(table.dtypes.astype(str)) == {"int64"}
    assert set(table["income_above_50k"].unique()) <= {0, 1}


def test_labels_decode_every_code_of_the_real_file(reference: Path) -> None:
    codes = load_dataset("census", "codes")
    labels = load_dataset("census", "labels")
    assert labels.shape == codes.shape
    assert not labels.isna().any().any()
    for column in acs.CODE_COLUMNS:
        assert labels[column].map(type).eq(str).all(), column
        # one label per code: decoding neither merges nor splits categories
        assert pd.crosstab(codes[column], labels[column]).gt(0).sum(axis=1).eq(1).all(), column
        assert labels[column].nunique() == codes[column].nunique(), column
    pd.testing.assert_frame_equal(
        labels[["age", "hours_per_week", "income_above_50k"]],
        codes[["age", "hours_per_week", "income_above_50k"]],
    )


def test_labels_spot_checks_and_unknown_code_error(small_census_csv: Path) -> None:
    labels = load_dataset("census", "labels", census_csv=small_census_csv)
    first = labels.iloc[0]
    assert first["occupation"] == "SAL-First-Line Supervisors Of Retail Sales Workers"  # OCCP 4700 ("4700")
    assert first["place_of_birth"] == "North Carolina/NC"  # POBP 37 ("037")
    assert first["relationship"] == "Unmarried partner" and first["sex"] == "Female"
    assert labels.iloc[8]["occupation"] == "MGR-Chief Executives And Legislators"  # OCCP 10 ("0010")
    assert labels.iloc[5]["place_of_birth"] == "Mexico"  # POBP 303
    bad = SMALL_CENSUS.assign(occupation=[4700] * 9 + [12])
    with pytest.raises(
        DataError, match=re.escape("column 'occupation' holds code(s) [12] that the OCCP code list")
    ):
        acs.decode_census(bad)


@pytest.mark.parametrize("variable", ["OCCP", "POBP"])
def test_copied_code_lists_equal_the_folktexts_wheel(variable: str) -> None:
    import importlib.metadata

    try:
        original = importlib.metadata.distribution("folktexts").locate_file(
            f"folktexts/acs/data/{variable}.txt"
        )
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("folktexts is not installed (requirements-nodeps.txt); nothing to compare with")
    ours = (project_root() / "lib" / "llmdisc" / "data" / "codebooks" / f"{variable}.txt").read_text().splitlines()
    assert [line for line in ours if not line.startswith("#")] == Path(original).read_text().splitlines()


def test_census_csv_from_environment_variable(
    small_census_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(acs.CENSUS_CSV_ENV, str(small_census_csv))
    pd.testing.assert_frame_equal(load_dataset("census"), SMALL_CENSUS)
    sub = load_dataset("census", n_rows=4, seed=3)
    assert len(sub) == 4 and sub.equals(load_dataset("census", n_rows=4, seed=3))
    other = tmp_path / "other.csv"
    SMALL_CENSUS.head(2).to_csv(other, index=False)
    assert len(load_dataset("census", census_csv=other)) == 2  # the argument wins over the variable
    with pytest.raises(ConfigError, match=r"has no state column; fix: omit states"):
        load_dataset("census", states=["CA"])
    with pytest.raises(ConfigError, match=re.escape("n_rows=11 is outside 1..10")):
        load_dataset("census", n_rows=11)
    monkeypatch.setenv(acs.CENSUS_CSV_ENV, str(tmp_path / "nope.csv"))
    with pytest.raises(DataError, match=r"nope\.csv \(from LLMDISC_CENSUS_CSV\) does not exist; fix"):
        load_dataset("census")


def test_census_csv_off_schema_names_missing_and_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "renamed.csv"
    SMALL_CENSUS.rename(columns={"race": "RAC1P"}).assign(PINCP=1).to_csv(path, index=False)
    with pytest.raises(
        DataError, match=re.escape("missing ['race'], extra ['RAC1P', 'PINCP']; fix: rename or drop")
    ):
        load_dataset("census", census_csv=path)
    SMALL_CENSUS.assign(age=["x"] * 10).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"column 'age' must hold integers"):
        load_dataset("census", census_csv=path)


def test_no_census_source_names_both_ways_to_supply_it(isolated_root: Path) -> None:
    with pytest.raises(DataError) as info:
        load_dataset("census", states=["WY"])
    message = str(info.value)
    assert "could not be downloaded" in message and "ConnectionError" in message
    assert (
        "census_csv=PATH" in message and "LLMDISC_CENSUS_CSV=PATH" in message and "network access" in message
    )
    assert not list((isolated_root / "data" / "raw" / "acs").rglob("*.part"))  # nothing half-written is left
    with pytest.raises(ConfigError, match=r"unknown ACS state code\(s\) \['ZZ'\]"):
        load_dataset("census", states=["ZZ"])


# A few hand-written PUMS person records (the columns folktables' ACSIncome reads, plus ids).
PUMS_CSV = """RT,SERIALNO,SPORDER,ST,PWGTP,AGEP,COW,SCHL,MAR,OCCP,POBP,RELP,WKHP,SEX,RAC1P,PINCP
P,2018GQ0000001,1,06,20,35,1,21,1,1020,6,0,40,2,6,85000
P,2018GQ0000002,1,06,15,52,3,16,3,2310,36,0,38,1,1,42000
P,2018HU0000003,1,06,30,16,1,13,5,4720,6,2,10,1,1,3000
P,2018HU0000004,1,06,25,44,6,19,1,6230,303,1,50,1,8,50000
P,2018HU0000005,2,06,10,70,,16,2,,6,6,,2,1,12000
P,2018HU0000006,1,06,12,29,2,22,5,1800,210,13,45,2,9,50001
"""


class _PumsServer(http.server.BaseHTTPRequestHandler):
    archive = b""
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        found = self.path == "/pums/2018/1-Year/csv_pca.zip"
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", str(len(self.archive) if found else 0))
        self.end_headers()
        if found:
            self.wfile.write(self.archive)

    def log_message(self, *args: object) -> None:
        return


def test_folktables_path_downloads_filters_and_caches(
    isolated_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("psam_p06.csv", PUMS_CSV)
    _PumsServer.archive, _PumsServer.requests = buffer.getvalue(), []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PumsServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(acs.ACS_URL_ENV, f"http://127.0.0.1:{server.server_address[1]}/pums")
    try:
        with pytest.warns(match="only 4 ACSIncome rows"):
            table = load_dataset("census", states=["CA"])
    finally:
        server.shutdown()
        server.server_close()
    # ACSIncome keeps age > 16, income > 100, hours > 0: rows 3 (age 16) and 5 (no hours) drop out.
    assert table.shape == (4, 11) and set(table.dtypes.astype(str)) == {"int64"}
    by_age = table.set_index("age").sort_index()
    assert by_age.loc[35, "occupation"] == 1020 and by_age.loc[35, "income_above_50k"] == 1
    assert (
        by_age.loc[44, "income_above_50k"] == 0 and by_age.loc[29, "income_above_50k"] == 1
    )  # > 50,000 only
    assert by_age.loc[52].tolist() == [3, 16, 3, 2310, 36, 0, 38, 1, 1, 0]
    assert (isolated_root / "data" / "raw" / "acs" / "2018" / "1-Year" / "psam_p06.csv").is_file()
    assert _PumsServer.requests == ["/pums/2018/1-Year/csv_pca.zip"]
    # Cached: the server is gone, the same rows come back; the subsample is seeded.
    again = load_dataset("census", "labels", states=["CA"], n_rows=2, seed=1)
    assert len(again) == 2 and again.equals(load_dataset("census", "labels", states=["CA"], n_rows=2, seed=1))
    assert set(again["sex"]) <= {"Male", "Female"}


# --- split, processed products, manifest ---------------------------------------------------------------


def test_split_is_seeded_stratified_disjoint_and_complete() -> None:
    table = load_dataset("adult").assign(row=lambda t: range(len(t)))
    train, holdout = train_holdout_split(table, holdout_fraction=0.2, seed=0)
    assert len(holdout) == 6_033 and len(train) + len(holdout) == len(table)
    assert set(train["row"]).isdisjoint(holdout["row"])
    assert set(train["row"]) | set(holdout["row"]) == set(table["row"])
    assert list(train.index) == list(range(len(train))) and list(holdout.index) == list(range(len(holdout)))
    share = (table["income"] == ">50K").mean()
    for part in (train, holdout):
        assert abs((part["income"] == ">50K").mean() - share) < 0.01
    same, _ = train_holdout_split(table, holdout_fraction=0.2, seed=0)
    other, _ = train_holdout_split(table, holdout_fraction=0.2, seed=1)
    assert same.equals(train) and not other["row"].equals(train["row"])
    balance = split_balance(train, holdout, "income")
    assert abs(balance.loc[">50K", "train"] - balance.loc[">50K", "holdout"]) < 1.0


def test_split_bad_input() -> None:
    with pytest.raises(ConfigError, match=re.escape("holdout_fraction=1.0 must be strictly between 0 and 1")):
        train_holdout_split(SMALL_CENSUS, holdout_fraction=1.0)
    with pytest.raises(ConfigError, match=re.escape("stratify_column 'nope' is not a column")):
        train_holdout_split(SMALL_CENSUS, stratify_column="nope")
    with pytest.raises(ConfigError, match=r"no target column .* fix: pass stratify_column="):
        train_holdout_split(pd.DataFrame({"x": range(10)}))


def test_prepare_writes_parquet_and_manifest_with_hashes(isolated_root: Path, small_census_csv: Path) -> None:
    big = pd.concat([SMALL_CENSUS] * 4, ignore_index=True)  # 40 rows: 8 held out, both classes in each part
    big.to_csv(small_census_csv, index=False)
    folder = prepare_dataset("census", "labels", seed=5, holdout_fraction=0.2, census_csv=small_census_csv)
    assert folder == processed_dir("census-labels") == isolated_root / "data" / "processed" / "census-labels"
    train, holdout = load_processed("census-labels"), load_processed("census-labels", "holdout")
    assert (len(train), len(holdout)) == (32, 8)
    manifest = read_manifest(folder)
    assert manifest["seed"] == 5 and manifest["parameters"]["holdout_fraction"] == 0.2
    assert manifest["inputs"] == {small_census_csv.name: sha256_file(small_census_csv)}
    assert manifest["outputs"] == {
        f"data/processed/census-labels/{s}.parquet": sha256_file(folder / f"{s}.parquet")
        for s in ("train", "holdout")
    }
    assert manifest["metrics"]["rows"] == 40 and manifest["metrics"]["columns"] == 11
    assert manifest["dtypes"]["occupation"] == "object" and manifest["dtypes"]["age"] == "int64"
    assert manifest["columns"] == list(CENSUS_COLUMNS)
    add_manifest_metrics("census-labels", {"n_numerical": 2})
    assert read_manifest(folder)["metrics"]["n_numerical"] == 2
    assert read_manifest(folder)["outputs"] == manifest["outputs"]
    assert profile_table(train).loc["age", "kind"] == "numerical"


def test_prepare_adult_records_pristine_hash(isolated_root: Path) -> None:
    folder = prepare_dataset("adult", seed=0)
    manifest = read_manifest(folder)
    assert manifest["inputs"] == {"data/raw/adult/adult.data.gz": sha256_file(ADULT_DIR / "adult.data.gz")}
    assert manifest["verified_content_sha256"] == {"adult.data": ADULT_SHA256["adult.data"]}
    assert (manifest["metrics"]["train_rows"], manifest["metrics"]["holdout_rows"]) == (24_129, 6_033)
    assert manifest["metrics"]["target"] == TARGET_COLUMN["adult"]


def test_load_processed_missing_names_the_command(isolated_root: Path) -> None:
    with pytest.raises(
        DataError,
        match=re.escape(
            "census-codes/train.parquet is missing; fix: run `llmdisc data "
            "prepare --dataset census --encoding codes`"
        ),
    ):
        load_processed("census-codes")
    with pytest.raises(
        ConfigError, match=re.escape("unknown split 'test'; fix: use one of ['train', 'holdout']")
    ):
        load_processed("adult", "test")


def test_cli_prepare_and_error_status(
    isolated_root: Path, small_census_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pd.concat([SMALL_CENSUS] * 2).to_csv(small_census_csv, index=False)
    status = cli_main(
        [
            "data",
            "prepare",
            "--dataset",
            "census",
            "--census-csv",
            str(small_census_csv),
            "--holdout-fraction",
            "0.5",
            "--seed",
            "2",
        ]
    )
    assert status == 0 and "train 10, holdout 10" in capsys.readouterr().out
    assert load_processed("census-codes", "holdout").shape == (10, 11)
    status = cli_main(["data", "prepare", "--dataset", "census", "--encoding", "words"])
    assert status == 2 and "unknown encoding 'words'" in capsys.readouterr().err
    shutil.rmtree(isolated_root / "data" / "processed")
