"""DCR against a real holdout, exact copies and the paper's linkage, on real Adult rows and made-up tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from llmdisc.baselines import dcr_baseline, exact_copy_rate, gower_dcr, paper_linkage, resolve_schema
from llmdisc.data.datasets import column_kinds, load_dataset
from llmdisc.errors import DataError

KINDS = column_kinds("adult")


@pytest.fixture(scope="module")
def adult_parts() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Disjoint real Adult rows: train (3,000), holdout (800), fresh real rows (800)."""
    adult = load_dataset("adult")
    order = np.random.default_rng(0).permutation(len(adult))
    parts = (order[:3000], order[3000:3800], order[3800:4600])
    return tuple(adult.iloc[p].reset_index(drop=True) for p in parts)  # type: ignore[return-value]


def naive_gower_dcr(queries: pd.DataFrame, reference: pd.DataFrame, numerical: list[str],
                    categorical: list[str]) -> np.ndarray:
    """Reference implementation, pair by pair, for small tables only (the definition, spelled out)."""
    lo, hi = reference[numerical].min(), reference[numerical].max()
    span = (hi - lo).where(hi - lo > 0, 1.0)
    out = []
    for _, q in queries.iterrows():
        best = np.inf
        for _, r in reference.iterrows():
            total = 0.0
            for c in numerical:
                if pd.isna(q[c]) and pd.isna(r[c]):
                    d = 0.0
                elif pd.isna(q[c]) or pd.isna(r[c]):
                    d = 1.0
                else:
                    d = min(abs(q[c] - r[c]) / span[c], 1.0)
                total += d
            for c in categorical:
                same = (pd.isna(q[c]) and pd.isna(r[c])) or (q[c] == r[c])
                total += 0.0 if same else 1.0
            best = min(best, total / (len(numerical) + len(categorical)))
        out.append(best)
    return np.array(out)


class TestGowerDistance:
    def test_matches_the_pairwise_definition_with_missing_values_and_out_of_range(self):
        rng = np.random.default_rng(0)
        reference = pd.DataFrame({"x": rng.normal(0, 1, 40), "y": rng.integers(0, 5, 40).astype(float),
                                  "c": rng.choice(["a", "b", None], 40), "d": rng.choice(["u", "v"], 40)})
        reference.loc[[3, 7], "x"] = np.nan
        queries = pd.DataFrame({"x": rng.normal(0, 3, 25), "y": rng.integers(0, 8, 25).astype(float),
                                "c": rng.choice(["a", "b", "new", None], 25),
                                "d": rng.choice(["u", "v"], 25)})
        queries.loc[[0, 5], "x"] = np.nan
        schema = resolve_schema(reference, queries)
        expected = naive_gower_dcr(queries, reference, ["x", "y"], ["c", "d"])
        for block_rows in (1, 7, 1024):
            got = gower_dcr(queries, reference, schema, block_rows=block_rows)
            np.testing.assert_allclose(got, expected, atol=1e-6)

    def test_exact_copies_have_distance_zero_and_copy_rate_one(self, adult_parts):
        train, holdout, _ = adult_parts
        copies = train.sample(500, random_state=1).reset_index(drop=True)
        res = dcr_baseline(train, copies, holdout, seed=0, kinds=KINDS)
        assert np.all(res.dcr_synthetic == 0.0)
        assert res.exact_copy_rate.value == 1.0 and res.exact_copy_rate.n == 500
        assert res.share_closer.value == 1.0  # every copy is closer than the typical real record
        assert res.median_holdout > 0

    def test_copy_rate_counts_int_and_float_forms_as_the_same_record(self, adult_parts):
        train = adult_parts[0]
        as_float = train.head(50).astype({"age": "float64", "hours_per_week": "float64"})
        schema = resolve_schema(train, as_float, KINDS)
        assert exact_copy_rate(as_float, train, schema).value == 1.0
        nudged = as_float.assign(age=as_float["age"] + 0.5)
        assert exact_copy_rate(nudged, train, schema).value == 0.0


class TestHoldoutBaseline:
    def test_fresh_real_records_sit_at_the_holdout_median(self, adult_parts):
        train, holdout, fresh = adult_parts
        res = dcr_baseline(train, fresh, holdout, seed=0, kinds=KINDS)
        assert res.share_closer.ci_low <= 0.5 <= res.share_closer.ci_high
        assert res.median_synthetic == pytest.approx(res.median_holdout, rel=0.25)
        assert res.exact_copy_rate.value < 0.01  # real Adult repeats a few records, no more

    def test_subsample_is_seeded(self, adult_parts):
        train, holdout, fresh = adult_parts
        first = dcr_baseline(train, fresh, holdout, seed=5, kinds=KINDS, max_rows=200)
        again = dcr_baseline(train, fresh, holdout, seed=5, kinds=KINDS, max_rows=200)
        assert len(first.dcr_synthetic) == 200 and len(first.dcr_holdout) == 200
        np.testing.assert_array_equal(first.dcr_synthetic, again.dcr_synthetic)
        assert first.share_closer == again.share_closer


class TestPaperLinkage:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_about_84_percent_on_any_normal_data(self, seed):
        rng = np.random.default_rng(seed)
        real = pd.DataFrame(rng.normal(size=(2000, 4)), columns=list("abcd"))
        synthetic = pd.DataFrame(rng.normal(size=(2000, 4)), columns=list("abcd"))
        res = paper_linkage(real, synthetic)
        assert 0.78 < res.success_rate < 0.90

    def test_equals_the_papers_loop_definition(self, adult_parts):
        train, _, fresh = adult_parts
        real, synthetic = train.head(400), fresh.head(150)
        numeric = real.select_dtypes("number")
        mean, sd = numeric.mean(), numeric.std(ddof=0)
        distances = cdist(((synthetic[numeric.columns] - mean) / sd).to_numpy(),
                          ((numeric - mean) / sd).to_numpy()).min(axis=1)
        threshold = distances.mean() + distances.std()
        res = paper_linkage(real, synthetic)
        assert res.threshold == pytest.approx(threshold)
        assert res.success_rate == pytest.approx((distances < threshold).mean())
        # fresh real records, never seen by anything, "link" at >= 84 %: the score measures its own threshold
        # (heavy-tailed capital_gain pushes it above the normal-data 84 % on a small sample)
        assert res.success_rate > 0.80


class TestBadInput:
    def test_different_columns_are_named(self, adult_parts):
        train, holdout, fresh = adult_parts
        with pytest.raises(DataError, match=r"only in real train: \['income'\]; only in synthetic: \[\]"):
            dcr_baseline(train, fresh.drop(columns=["income"]), holdout, seed=0)

    def test_holdout_with_other_columns_is_refused(self, adult_parts):
        train, holdout, fresh = adult_parts
        with pytest.raises(DataError, match=r"only in real train: \['sex'\]"):
            dcr_baseline(train, fresh, holdout.drop(columns=["sex"]), seed=0)

    def test_constant_and_all_missing_columns_do_not_crash(self, adult_parts):
        train, holdout, fresh = (t.head(300) for t in adult_parts)
        extra = {"constant": 7, "empty": np.nan}
        res = dcr_baseline(train.assign(**extra), fresh.assign(**extra), holdout.assign(**extra), seed=0)
        assert any("'constant' dropped" in n for n in res.notes)
        assert any("'empty' dropped" in n for n in res.notes)
        assert np.isfinite(res.dcr_synthetic).all()
        res = dcr_baseline(train.assign(half=np.nan), fresh.assign(half=1.0), holdout.assign(half=np.nan),
                           seed=0)
        # missing in train, present in the release: a full mismatch on 1 of 16 columns for every record
        assert res.dcr_synthetic.min() >= 1 / 16 - 1e-6
        assert res.share_closer.ci_high < 0.5

    def test_nothing_left(self):
        table = pd.DataFrame({"a": [1, 1, 1], "b": [np.nan] * 3})
        with pytest.raises(DataError, match="no informative column is left"):
            dcr_baseline(table, table, table, seed=0)


def test_a_release_fitted_on_the_holdout_gets_no_distance_figures_but_says_why() -> None:
    from llmdisc.baselines.report import HOLDOUT_IN_TRAINING, headline, run_baselines

    rng = np.random.default_rng(0)
    real = pd.DataFrame({"a": rng.integers(0, 5, 300), "b": rng.normal(size=300)})
    synthetic = pd.DataFrame({"a": rng.integers(0, 5, 300), "b": rng.normal(size=300)})
    table = run_baselines(real.iloc[:200], real.iloc[200:], synthetic, dataset_key="k", synthesizer="paper_ctgan",
                          seed=0, c2st_rows_per_table=200, n_attacks=10, classifiers=("logistic",),
                          holdout_in_training=True)
    distances = table[table["baseline"].isin(["dcr", "linkage", "anonymeter"])]
    assert len(distances) == 6 and distances["value"].isna().all()
    assert (distances["note"] == HOLDOUT_IN_TRAINING).all()
    row = headline(table).iloc[0]
    assert np.isnan(row["dcr_share_closer"]) and np.isnan(row["inference_risk"])
    assert 0.0 <= row["c2st_auc_logistic"] <= 1.0  # the C2ST does not read the holdout: still computed
