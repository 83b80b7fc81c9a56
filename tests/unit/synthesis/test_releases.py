"""Fast tests of stage 02 (no model fits; those are in tests/integration/test_synth.py): validation,
error messages, OOV counting, table hashing, column kinds, thread settings."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import llmdisc
from llmdisc.data.datasets import load_adult
from llmdisc.errors import ConfigError, DataError
from llmdisc.synthesis.fit import torch_threads
from llmdisc.synthesis.model_cache import table_sha256
from llmdisc.synthesis.releases import (
    METADATA_MODES,
    SYNTHESIZERS,
    load_synthetic,
    out_of_vocabulary,
    resolve_column_kinds,
    synthesize,
    synthetic_path,
)


@pytest.fixture(scope="module")
def adult_small() -> pd.DataFrame:
    """200 real Adult rows (seeded subsample of the tracked, checksum-verified raw file)."""
    table, _ = load_adult()
    return table.sample(n=200, random_state=7).reset_index(drop=True)


def test_vocabulary_matches_package_constants() -> None:
    assert SYNTHESIZERS == llmdisc.SYNTHESIZERS == ("gaussian_copula", "ctgan", "tvae")
    assert METADATA_MODES == ("declared", "detected")


def test_unknown_synthesizer_lists_valid_ones(adult_small: pd.DataFrame) -> None:
    msg = "unknown synthesizer 'copulagan'; valid synthesizers: gaussian_copula, ctgan, tvae"
    with pytest.raises(ConfigError, match=re.escape(msg)):
        synthesize(adult_small, dataset_key="adult", synthesizer="copulagan")


def test_unknown_metadata_mode_lists_valid_ones(adult_small: pd.DataFrame) -> None:
    msg = "unknown metadata mode 'auto'; valid metadata modes: declared, detected"
    with pytest.raises(ConfigError, match=re.escape(msg)):
        synthesize(adult_small, dataset_key="adult", synthesizer="ctgan", metadata_mode="auto")


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"epochs": 0}, r"epochs=0 must be a positive integer"),
    ({"fit_rows": 0}, r"fit_rows=0 must be a positive integer of rows"),
    ({"num_rows": -5}, r"num_rows=-5 must be a positive integer of rows"),
    ({"seed": 1.5}, r"seed=1.5 must be an integer in \[0, 2\*\*32\)"),
    ({"seed": -1}, r"seed=-1 must be an integer in \[0, 2\*\*32\)"),
    ({"column_kinds": {"age": "numerical"}}, r"column_kinds has no kind for columns \['workclass'"),
])
def test_bad_parameters_name_the_fix(adult_small: pd.DataFrame, kwargs: dict, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        synthesize(adult_small, dataset_key="adult", synthesizer="ctgan", **kwargs)


def test_empty_train_is_a_data_error() -> None:
    with pytest.raises(DataError, match="train must be a non-empty DataFrame"):
        synthesize(pd.DataFrame(), dataset_key="adult", synthesizer="gaussian_copula")


def test_column_kinds_come_from_the_data_layer_for_known_keys(adult_small: pd.DataFrame) -> None:
    codes = pd.DataFrame({"age": [30, 40], "occupation": [4700, 10], "place_of_birth": [36, 6]})
    kinds = resolve_column_kinds(codes, "census-codes", None)
    assert kinds == {"age": "numerical", "occupation": "categorical", "place_of_birth": "categorical"}
    # An unknown key falls back to dtypes: integer columns numerical, strings categorical.
    assert resolve_column_kinds(codes, "my-table", None)["occupation"] == "numerical"
    assert resolve_column_kinds(adult_small, "adult", None)["workclass"] == "categorical"
    with pytest.raises(ConfigError, match="valid kinds: categorical, numerical"):
        resolve_column_kinds(codes, "x", {"age": "ordinal", "occupation": "categorical", "place_of_birth": "categorical"})


def test_out_of_vocabulary_counts_invented_values() -> None:
    real = pd.DataFrame({"occupation": [10, 20, 20, 30], "sex": ["F", "M", "M", "F"]})
    synthetic = pd.DataFrame({"occupation": [10, 11, 12, 12, 20], "sex": ["F", "M", "M", "F", "M"]})
    oov = out_of_vocabulary(real, synthetic)
    assert list(oov.columns) == ["n_synthetic_values_not_in_real", "n_distinct_synthetic", "n_distinct_real",
                                 "share_rows_oov"]
    assert oov.loc["occupation"].tolist() == [2, 4, 3, 0.6]  # 11 and 12 invented; 3 of 5 rows
    assert oov.loc["sex"].tolist() == [0, 2, 2, 0.0]
    with pytest.raises(DataError, match=r"columns \['race'\] are not in both tables"):
        out_of_vocabulary(real, synthetic, columns=["race"])


def test_table_hash_follows_content_names_and_dtypes() -> None:
    table = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert table_sha256(table) == table_sha256(table.copy())
    assert table_sha256(table) == table_sha256(table.set_index(pd.Index([7, 8, 9])))  # index ignored
    assert table_sha256(table) != table_sha256(table.assign(a=[1, 2, 4]))
    assert table_sha256(table) != table_sha256(table.astype({"a": "float64"}))
    assert table_sha256(table) != table_sha256(table.rename(columns={"b": "c"}))


def test_torch_threads_default_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLMDISC_TORCH_THREADS", raising=False)
    assert torch_threads() == 1
    monkeypatch.setenv("LLMDISC_TORCH_THREADS", "2")
    assert torch_threads() == 2
    monkeypatch.setenv("LLMDISC_TORCH_THREADS", "many")
    with pytest.raises(ConfigError, match="LLMDISC_TORCH_THREADS='many' is not a positive integer"):
        torch_threads()


def test_load_synthetic_names_the_command_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    assert synthetic_path("adult", "ctgan") == tmp_path / "data" / "synthetic" / "adult" / "ctgan.parquet"
    with pytest.raises(DataError, match=r"no synthetic release at data/synthetic/adult/ctgan.parquet; fix: run "
                                        r"`llmdisc synth --dataset-key adult --synthesizers ctgan`"):
        load_synthetic("adult", "ctgan")


def _census_train() -> pd.DataFrame:
    from llmdisc.data.reference import load_paper_census

    return load_paper_census().head(500)


def test_the_papers_release_is_published_as_a_cell_of_its_own(reference, tmp_path, monkeypatch) -> None:
    import json

    from llmdisc import PAPER_RELEASES
    from llmdisc.synthesis.releases import paper_releases_for, publish_paper_release

    monkeypatch.setenv("LLMDISC_REFERENCE", str(reference))  # before the root moves: ../shared is found from it
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    assert paper_releases_for("census-codes") == list(PAPER_RELEASES)
    assert paper_releases_for("adult") == [] and paper_releases_for("census-labels") == []
    path = publish_paper_release("census-codes", "paper_ctgan", _census_train())
    assert path == synthetic_path("census-codes", "paper_ctgan")
    release = load_synthetic("census-codes", "paper_ctgan")
    assert len(release) == 32_561 and list(release.columns) == list(_census_train().columns)
    manifest = json.loads(path.with_name("paper_ctgan.manifest.json").read_text())
    assert manifest["holdout_in_training"] is True
    assert manifest["parameters"]["source"] == "data/census/synthetic/ctgan/synthetic.csv"
    assert any(name.endswith("census/synthetic/ctgan/synthetic.csv") for name in manifest["inputs"])


def test_a_paper_release_that_does_not_fit_the_split_is_refused_with_the_fix(reference, tmp_path,
                                                                              monkeypatch) -> None:
    from llmdisc.synthesis.releases import publish_paper_release

    monkeypatch.setenv("LLMDISC_REFERENCE", str(reference))  # before the root moves: ../shared is found from it
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    train = _census_train().rename(columns={"sex": "gender"})
    with pytest.raises(DataError, match="fix: re-run notebooks/01_data_prep.ipynb"):
        publish_paper_release("census-codes", "paper_tvae", train)
    with pytest.raises(ConfigError, match="not 'adult'; fix: add them to a census-codes run"):
        publish_paper_release("adult", "paper_tvae", train)
    with pytest.raises(ConfigError, match="is not one of the paper's releases"):
        publish_paper_release("census-codes", "ctgan", train)
    with pytest.raises(ConfigError, match="unknown release 'paper_gan'"):
        synthetic_path("census-codes", "paper_gan")
    with pytest.raises(DataError, match="with paper_releases"):
        load_synthetic("census-codes", "paper_gaussian_copula")


def test_the_releases_table_gives_each_published_file_its_checksum(reference, tmp_path, monkeypatch) -> None:
    """Notebook 07's ``releases`` table: one row per published release, ours with the fit's settings, the paper's
    without, each with the sha256 of the file on disk (what a reader on another CPU compares)."""
    from llmdisc.figures.figure_data import RELEASE_COLUMNS, release_checksums
    from llmdisc.manifest import sha256_file
    from llmdisc.synthesis.releases import publish_paper_release, publish_release, synthesize

    monkeypatch.setenv("LLMDISC_REFERENCE", str(reference))  # before the root moves: ../shared is found from it
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    assert list(release_checksums().columns) == RELEASE_COLUMNS and release_checksums().empty
    train = _census_train()
    ours = publish_release(synthesize(train, dataset_key="census-codes", synthesizer="gaussian_copula", seed=3,
                                      fit_rows=200, num_rows=50, show_progress=False))
    paper = publish_paper_release("census-codes", "paper_ctgan", train)
    table = release_checksums().set_index("release")
    assert list(table.index) == ["gaussian_copula", "paper_ctgan"]
    fitted, read = table.loc["gaussian_copula"], table.loc["paper_ctgan"]
    assert (fitted["origin"], fitted["rows"], fitted["fit_rows"], fitted["seed"]) == ("fitted", 50, 200, 3)
    assert fitted["sha256"] == sha256_file(ours) and fitted["kernels"] in ("avx2", "strict", "off")
    assert (read["origin"], read["synthesizer"], read["rows"]) == ("paper", "ctgan", 32_561)
    assert read["sha256"] == sha256_file(paper) and pd.isna(read["seed"]) and pd.isna(read["kernels"])
