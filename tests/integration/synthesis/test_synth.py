"""Real SDV fits on small real subsamples: determinism, declared vs detected metadata, all three synthesizers,
the cache (hit, corruption), the CLI and notebook 02 (quick)."""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.cli.main import main as cli_main
from llmdisc.data.datasets import column_kinds, load_adult
from llmdisc.errors import ChecksumError, LlmdiscWarning
from llmdisc.paths import project_root
from llmdisc.synthesis.fit import seeded
from llmdisc.synthesis.model_cache import MODEL_FILE, TABLE_FILE
from llmdisc.synthesis.releases import (
    SyntheticRelease,
    load_synthetic,
    out_of_vocabulary,
    publish_release,
    quality_report,
    synthesize,
    synthetic_path,
)

pytestmark = pytest.mark.slow
ROOT = project_root()


@pytest.fixture(scope="module")
def census_small(reference: Path) -> pd.DataFrame:
    """600 real Census rows (PUMS integer codes), a seeded subsample of the paper's file."""
    table = pd.read_csv(reference / "data" / "census" / "real" / "census.csv")
    return table.sample(n=600, random_state=3).reset_index(drop=True)


@pytest.fixture(scope="module")
def census_narrow(census_small: pd.DataFrame) -> pd.DataFrame:
    """400 of those rows, 7 of the 11 columns (both numericals, the two many-code columns): faster fits."""
    return census_small.head(400)[["age", "education", "occupation", "place_of_birth", "hours_per_week", "sex",
                                   "income_above_50k"]]


@pytest.fixture(scope="module")
def adult_tiny() -> pd.DataFrame:
    """120 real Adult rows, 4 columns (fast GaussianCopula fits for the cache tests)."""
    table, _ = load_adult()
    return table.sample(n=120, random_state=7).reset_index(drop=True)[["age", "workclass", "sex", "hours_per_week"]]


def _gc(train: pd.DataFrame, cache_root: Path, **kwargs: object) -> SyntheticRelease:
    return synthesize(train, dataset_key="adult", synthesizer="gaussian_copula", cache_root=cache_root,
                      show_progress=False, **{"seed": 0, **kwargs})


def test_seeded_block_restores_global_state() -> None:
    import torch

    np.random.seed(123)
    torch.manual_seed(123)
    expected = (np.random.rand(), torch.rand(1).item())
    np.random.seed(123)
    torch.manual_seed(123)
    with seeded(5):
        inner = (np.random.rand(), torch.rand(1).item())
    assert (np.random.rand(), torch.rand(1).item()) == expected  # the caller's generators are untouched
    with seeded(5):
        assert (np.random.rand(), torch.rand(1).item()) == inner


def test_same_seed_same_gaussian_copula_table_other_seed_another(census_narrow: pd.DataFrame, tmp_path: Path) -> None:
    kinds = column_kinds("census-codes")
    common = {"dataset_key": "census-codes", "synthesizer": "gaussian_copula", "column_kinds": kinds,
              "show_progress": False}
    first = synthesize(census_narrow, seed=11, cache_root=tmp_path / "a", **common)
    again = synthesize(census_narrow, seed=11, cache_root=tmp_path / "b", **common)  # separate cache: a real refit
    other = synthesize(census_narrow, seed=12, cache_root=tmp_path / "a", **common)
    assert not again.cache_hit and again.cache_key == first.cache_key
    pd.testing.assert_frame_equal(again.table, first.table)
    assert other.cache_key != first.cache_key
    assert not other.table.equals(first.table)
    assert (other.table["age"] != first.table["age"]).mean() > 0.5  # not a near copy
    assert len(first.table) == len(census_narrow) and list(first.table.columns) == list(census_narrow.columns)


def test_declared_metadata_invents_no_codes_detected_does(census_narrow: pd.DataFrame, tmp_path: Path) -> None:
    kinds = column_kinds("census-codes")
    common = {"dataset_key": "census-codes", "seed": 0, "cache_root": tmp_path, "show_progress": False}
    declared = synthesize(census_narrow, synthesizer="gaussian_copula", metadata_mode="declared",
                          column_kinds=kinds, **common)
    detected = synthesize(census_narrow, synthesizer="gaussian_copula", metadata_mode="detected", **common)
    codes = [c for c in census_narrow.columns if kinds[c] == "categorical"]
    oov_declared = out_of_vocabulary(census_narrow, declared.table, codes)
    oov_detected = out_of_vocabulary(census_narrow, detected.table, codes)
    assert oov_declared["n_synthetic_values_not_in_real"].sum() == 0
    # SDV 2 detects integer columns with <= 10 values as ordinal (no invention) and the rest as numerical.
    assert oov_detected.loc["occupation", "n_synthetic_values_not_in_real"] > 100
    assert oov_detected.loc["place_of_birth", "n_synthetic_values_not_in_real"] > 10
    assert oov_detected.loc["occupation", "n_distinct_synthetic"] > oov_detected.loc["occupation", "n_distinct_real"]
    sdtypes = {c: v["sdtype"] for c, v in detected.manifest["sdv_metadata"]["tables"]["table"]["columns"].items()}
    assert sdtypes["occupation"] == "numerical" and sdtypes["sex"] == "ordinal"
    assert declared.manifest["metrics"]["n_oov_values_categorical"] == 0
    assert detected.manifest["metrics"]["n_oov_values_categorical"] >= oov_detected.loc["occupation"].iloc[0]
    recorded = {row["column"]: row["n_synthetic_values_not_in_real"] for row in detected.manifest["oov"]}
    assert recorded["occupation"] == oov_detected.loc["occupation", "n_synthetic_values_not_in_real"]


@pytest.mark.parametrize(("name", "fit_rows"), [("ctgan", 200), ("tvae", 550)])
def test_neural_synthesizers_fit_for_real_and_repeat(census_small: pd.DataFrame, census_narrow: pd.DataFrame,
                                                     tmp_path: Path, name: str, fit_rows: int,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # TVAE fits >= 500 rows: ctgan's data transformer then takes its joblib path (run in-process by us).
    train = census_narrow if name == "ctgan" else census_small
    kinds = column_kinds("census-codes")
    common = {"dataset_key": "census-codes", "synthesizer": name, "seed": 4, "epochs": 2, "fit_rows": fit_rows,
              "num_rows": 250, "column_kinds": kinds}
    first = synthesize(train, cache_root=tmp_path / "a", show_progress=True, **common)
    progress = capsys.readouterr().err
    epoch_bar = "Gen. (" if name == "ctgan" else "Loss:"  # ctgan's per-epoch bar with its losses
    assert epoch_bar in progress and re.search(r"\|\s*2/2 \[", progress), "the per-epoch progress bar is shown"
    assert f"{name}: sample" in progress and "3/3" in progress  # the stage bar
    again = synthesize(train, cache_root=tmp_path / "b", show_progress=False, **common)
    assert len(first.table) == 250 and first.manifest["metrics"]["n_fit_rows"] == fit_rows
    pd.testing.assert_frame_equal(again.table, first.table)  # torch + NumPy + SDV seeded: identical refit
    assert out_of_vocabulary(train, first.table, ["occupation"]).iloc[0, 0] == 0
    losses = first.manifest["final_losses"]
    assert losses and all(np.isfinite(v) for v in losses.values())  # the last epoch's losses are recorded
    assert first.manifest["parameters"]["epochs"] == 2


def test_second_request_loads_without_fitting(adult_tiny: pd.DataFrame, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    first = _gc(adult_tiny, tmp_path)
    assert not first.cache_hit and first.fit_seconds is not None and first.fit_seconds > 0
    entry = first.path.parent
    assert entry.parent == tmp_path / "adult" / "cache" and entry.name == f"gaussian_copula-{first.cache_key[:16]}"
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", MODEL_FILE, TABLE_FILE]
    pickle_mtime = (entry / MODEL_FILE).stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="llmdisc"):
        second = _gc(adult_tiny, tmp_path)
    assert second.cache_hit and second.fit_seconds is None and second.sample_seconds is None
    assert not any("fitting gaussian_copula" in r.getMessage() for r in caplog.records)
    assert any("cache hit" in r.getMessage() for r in caplog.records)
    assert (entry / MODEL_FILE).stat().st_mtime_ns == pickle_mtime
    pd.testing.assert_frame_equal(second.table, first.table)
    manifest = second.manifest
    assert manifest["cache_key"] == first.cache_key
    assert manifest["parameters"]["seed"] == 0 and manifest["parameters"]["epochs"] is None
    assert manifest["metrics"]["n_rows"] == 120 and manifest["metrics"]["fit_seconds"] > 0
    assert {row["column"] for row in manifest["oov"]} == set(adult_tiny.columns)
    assert manifest["versions"]["sdv"] == "2.0.0" and manifest["cache_key_payload"]["versions"]["sdv"] == "2.0.0"
    other = _gc(adult_tiny, tmp_path, num_rows=50)  # another parameter: another key, another fit
    assert not other.cache_hit and other.cache_key != first.cache_key and len(other.table) == 50


def test_truncated_table_is_detected_and_refitted(adult_tiny: pd.DataFrame, tmp_path: Path) -> None:
    first = _gc(adult_tiny, tmp_path)
    data = first.path.read_bytes()
    first.path.write_bytes(data[: len(data) // 2])
    with pytest.warns(LlmdiscWarning, match=r"synthetic.parquet does not match its recorded sha256 .*refitted"):
        again = _gc(adult_tiny, tmp_path)
    assert not again.cache_hit and again.fit_seconds is not None
    pd.testing.assert_frame_equal(again.table, first.table)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LlmdiscWarning)
        assert _gc(adult_tiny, tmp_path).cache_hit  # the refitted entry is valid again


def test_truncated_pickle_and_foreign_manifest_are_refitted(adult_tiny: pd.DataFrame, tmp_path: Path) -> None:
    first = _gc(adult_tiny, tmp_path)
    model = first.path.parent / MODEL_FILE
    model.write_bytes(model.read_bytes()[:100])
    with pytest.warns(LlmdiscWarning, match=r"synthesizer.pkl does not match its recorded sha256"):
        assert not _gc(adult_tiny, tmp_path).cache_hit
    manifest_path = first.path.parent / "manifest.json"
    manifest_path.write_text(manifest_path.read_text().replace(first.cache_key, "0" * 64))
    with pytest.warns(LlmdiscWarning, match=r"its manifest records key 0000000000000000…, expected"):
        assert not _gc(adult_tiny, tmp_path).cache_hit


def test_publish_then_load_checks_the_hash(adult_tiny: pd.DataFrame, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    release = _gc(adult_tiny, tmp_path / "cache")
    path = publish_release(release)
    assert path == synthetic_path("adult", "gaussian_copula")
    published = (path.parent / "gaussian_copula.manifest.json").read_text()
    assert release.cache_key in published and str(tmp_path) not in published  # no machine path
    pd.testing.assert_frame_equal(load_synthetic("adult", "gaussian_copula"), release.table)
    report = quality_report(adult_tiny, release.table, column_kinds(adult_tiny))
    assert 0.5 < report["score"] <= 1.0
    assert report["column_shapes"]["Score"].is_monotonic_increasing  # worst first
    release.table.head(10).to_parquet(path, index=False)
    with pytest.raises(ChecksumError, match=r"gaussian_copula.parquet has sha256 .* its manifest records"):
        load_synthetic("adult", "gaussian_copula")


def test_cli_fits_publishes_then_hits_the_cache(adult_tiny: pd.DataFrame, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    train_file = tmp_path / "train.csv"
    adult_tiny.to_csv(train_file, index=False)
    argv = ["synth", "--dataset-key", "adult", "--synthesizers", "gaussian_copula", "--train", str(train_file),
            "--quiet"]
    assert cli_main(argv) == 0
    assert "fit " in capsys.readouterr().out and synthetic_path("adult", "gaussian_copula").exists()
    assert cli_main(argv) == 0
    assert "cache hit (no fit)" in capsys.readouterr().out
    assert cli_main(["synth", "--dataset-key", "adult", "--synthesizer", "copulagan"]) == 2
    assert "valid synthesizers: gaussian_copula, ctgan, tvae" in capsys.readouterr().err


def test_notebook_02_quick_publishes_and_records_key_numbers(census_small: pd.DataFrame, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import papermill

    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    processed = tmp_path / "data" / "processed" / "census-codes"
    processed.mkdir(parents=True)
    census_small.head(450).to_parquet(processed / "train.parquet", index=False)
    census_small.tail(150).to_parquet(processed / "holdout.parquet", index=False)
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "02_synthesis.ipynb"), str(tmp_path / "02.out.ipynb"), kernel_name="llmdisc",
        parameters={"dataset": "census", "encoding": "codes", "synthesizers": ["gaussian_copula"],
                    "metadata_mode": "detected", "quick": True},
        cwd=str(ROOT / "notebooks"), progress_bar=False)
    manifest = json.loads((tmp_path / "data" / "synthetic" / "census-codes" / "manifest.json").read_text())
    metrics = manifest["metrics"]
    assert set(metrics) == {"gaussian_copula"}
    assert 0 < metrics["gaussian_copula"]["quality_score"] <= 1
    assert metrics["gaussian_copula"]["oov_values_by_column"]["occupation"] > 0  # detected metadata invents codes
    assert metrics["gaussian_copula"]["rows"] == 2000 and not metrics["gaussian_copula"]["cache_hit"]
    assert manifest["parameters"]["epochs"] == 1 and manifest["parameters"]["metadata_mode"] == "detected"
    assert len(load_synthetic("census-codes", "gaussian_copula")) == 2000
    assert os.fspath(tmp_path) not in (tmp_path / "data" / "synthetic" / "census-codes" / "manifest.json").read_text()
    assert not (tmp_path / "results" / "tables" / "fit_budget.csv").exists()  # `llmdisc bench fit-budget` writes it


def test_bench_fit_budget_compares_a_configurations_fits_with_the_quick_budget(
        census_small: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    # Setup: a processed Census table and a configuration fitting 2 epochs on 300 rows
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    processed = tmp_path / "data" / "processed" / "census-codes"
    processed.mkdir(parents=True)
    census_small.head(450).to_parquet(processed / "train.parquet", index=False)
    census_small.tail(150).to_parquet(processed / "holdout.parquet", index=False)
    config = yaml.safe_load((ROOT / "configs" / "tiny.yaml").read_text(encoding="utf-8"))
    config["datasets"] = ["census-codes"]
    config["synthesis"].update(synthesizers=["gaussian_copula", "ctgan"], epochs=2, fit_rows=300)
    config_path = tmp_path / "budget.yaml"
    config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
    argv = ["bench", "fit-budget", "--config", str(config_path), "--quick-epochs", "1", "--no-likelihood"]
    # Run
    assert cli_main(argv) == 0
    first = pd.read_csv(tmp_path / "results" / "tables" / "fit_budget.csv")
    assert cli_main(argv) == 0  # every fit from the cache
    second = pd.read_csv(tmp_path / "results" / "tables" / "fit_budget.csv")
    # Assert
    assert first[["synthesizer", "budget"]].values.tolist() == [
        ["gaussian_copula", "quick"], ["gaussian_copula", "default"], ["ctgan", "quick"], ["ctgan", "default"]]
    ctgan = first[first["synthesizer"] == "ctgan"].set_index("budget")
    assert ctgan.loc["quick", "epochs"] == 1 and ctgan.loc["default", "epochs"] == 2
    assert ctgan.loc["quick", "cache_key"] != ctgan.loc["default", "cache_key"]
    copula = first[first["synthesizer"] == "gaussian_copula"]
    assert copula["cache_key"].nunique() == 1 and copula["epochs"].isna().all()  # no epochs: one release
    assert first["c2st_auc"].between(0, 1).all() and first["dcr_share"].between(0, 1).all()
    assert first["likelihood_auc"].isna().all() and (first["fit_rows"] == 300).all()
    pd.testing.assert_frame_equal(first, second)  # same seeds, same cached fits: the same table
    assert "census-codes: wrote results/tables/fit_budget.csv" in capsys.readouterr().out
    # a quick budget that is not below the configuration's is refused with the fix
    assert cli_main([*argv[:4], "--quick-epochs", "2", "--no-likelihood"]) == 2
    assert "must be at least 1 and below the configuration's 2 epochs" in capsys.readouterr().err


def test_ctgan_and_tvae_train_with_fused_adam(adult_tiny: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    # fused Adam takes exact square roots; ctgan's default Adam takes MKL's, refined from the CPU's rsqrtps
    import ctgan.synthesizers.tvae as tvae_module
    import torch.optim

    from llmdisc.synthesis.fit import fit_and_sample

    seen: list[object] = []

    class Recording(torch.optim.Adam):
        def __init__(self, params, **kwargs):  # noqa: ANN001, ANN003
            seen.append(kwargs.get("fused"))
            super().__init__(params, **kwargs)

    monkeypatch.setattr(torch.optim, "Adam", Recording)
    monkeypatch.setattr(tvae_module, "Adam", Recording)
    kinds = column_kinds("adult")
    for name in ("ctgan", "tvae"):
        fit_and_sample(adult_tiny, synthesizer=name, seed=0, epochs=1, metadata_mode="declared",
                       column_kinds={c: kinds[c] for c in adult_tiny.columns}, num_rows=20, show_progress=False)
    assert seen == [True, True, True]  # CTGAN's generator and discriminator, TVAE's autoencoder
    assert torch.optim.Adam is Recording and tvae_module.Adam is Recording  # put back after each fit
