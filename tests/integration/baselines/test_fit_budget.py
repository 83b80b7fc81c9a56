"""The fit-budget comparison (quick against default epochs) on real SDV fits of a small real table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.baselines.fit_budget import FIT_BUDGET_COLUMNS, compare_fit_budgets, write_fit_budget
from llmdisc.data.datasets import load_adult
from llmdisc.errors import ConfigError

pytestmark = pytest.mark.slow
SYNTHESIZERS = ["gaussian_copula", "ctgan", "tvae"]
BUDGETS = {"quick": 1, "default": 2}


@pytest.fixture(scope="module")
def adult_split() -> tuple[pd.DataFrame, pd.DataFrame]:
    """300 train and 150 holdout rows of real Adult (seeded, disjoint), 6 columns."""
    table, _ = load_adult()
    rows = table.sample(n=450, random_state=11).reset_index(drop=True)
    rows = rows[["age", "workclass", "education", "sex", "hours_per_week", "native_country"]]
    return rows.head(300).reset_index(drop=True), rows.tail(150).reset_index(drop=True)


@pytest.fixture(scope="module")
def compared(adult_split, tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame]:  # noqa: ANN001
    train, holdout = adult_split
    cache = tmp_path_factory.mktemp("fit-cache")
    kwargs = dict(dataset_key="adult", synthesizers=SYNTHESIZERS, seed=3, budgets=BUDGETS, fit_rows=250,
                  c2st_rows=300, dcr_rows=120, likelihood=False, cache_root=cache)
    first = compare_fit_budgets(train, holdout, **kwargs)
    second = compare_fit_budgets(train, holdout, **kwargs)  # the fits come from the cache
    return first, second


def test_one_row_per_synthesizer_and_budget(compared) -> None:  # noqa: ANN001
    first, _ = compared
    assert list(first.columns) == list(FIT_BUDGET_COLUMNS)
    assert list(zip(first["synthesizer"], first["budget"])) == [(s, b) for s in SYNTHESIZERS for b in BUDGETS]
    neural = first[first["synthesizer"] != "gaussian_copula"]
    assert neural["epochs"].tolist() == [1, 2, 1, 2]
    assert first.loc[first["synthesizer"] == "gaussian_copula", "epochs"].isna().all()
    assert (first["fit_rows"] == 250).all() and (first["fit_seconds"] > 0).all()
    for column in ("c2st_auc", "dcr_share", "exact_copy_rate"):
        assert first[column].between(0, 1).all(), column
    assert (first["c2st_rows"] == 300).all() and (first["dcr_rows"] == 120).all()
    assert first["likelihood_auc"].isna().all() and (first["likelihood_samples"] == 0).all()
    assert first["notes"].str.contains("likelihood AUC not asked for").all()


def test_budgets_fit_different_releases_measured_on_the_same_draws(compared) -> None:  # noqa: ANN001
    first, _ = compared
    by = first.set_index(["synthesizer", "budget"])
    for name in ("ctgan", "tvae"):
        assert by.loc[(name, "quick"), "cache_key"] != by.loc[(name, "default"), "cache_key"]
        assert by.loc[(name, "quick"), "c2st_seed"] == by.loc[(name, "default"), "c2st_seed"]
    gc = by.loc["gaussian_copula"]
    assert gc.loc["quick", "cache_key"] == gc.loc["default", "cache_key"]
    assert gc.loc["quick", "c2st_auc"] == gc.loc["default", "c2st_auc"]
    assert "one release for every budget" in gc.loc["quick", "notes"]


def test_seeded_two_calls_give_the_same_figures(compared) -> None:  # noqa: ANN001
    first, second = compared
    columns = ["cache_key", "fit_seconds", "c2st_auc", "c2st_auc_low", "dcr_share", "exact_copy_rate", "c2st_seed",
               "dcr_seed"]
    pd.testing.assert_frame_equal(first[columns], second[columns])


def test_write_keeps_other_datasets_and_replaces_its_own(compared, tmp_path: Path) -> None:  # noqa: ANN001
    first, _ = compared
    other = first.assign(dataset_key="census-codes", c2st_auc=0.75)
    write_fit_budget(other, tmp_path)
    write_fit_budget(first, tmp_path)
    paths = write_fit_budget(first.assign(c2st_auc=0.6), tmp_path)
    table = pd.read_csv(paths["csv"])
    assert paths["tex"].exists()
    assert table["dataset_key"].tolist() == ["adult"] * 6 + ["census-codes"] * 6
    assert np.allclose(table.loc[table["dataset_key"] == "adult", "c2st_auc"], 0.6)
    assert np.allclose(table.loc[table["dataset_key"] == "census-codes", "c2st_auc"], 0.75)


def test_bad_budget_names_the_fix(adult_split) -> None:  # noqa: ANN001
    train, holdout = adult_split
    with pytest.raises(ConfigError, match="budget 'quick' has epochs=0; fix"):
        compare_fit_budgets(train, holdout, dataset_key="adult", synthesizers=["ctgan"], budgets={"quick": 0},
                        likelihood=False)
