"""The paper's analyses (fair cells, matched-N, seed stability, permutation test) and McNemar's exact test."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmdisc.errors import ConfigError, DataError
from llmdisc.scoring.analyses import (
    fair_cells,
    matched_n_sample,
    mcnemar_exact,
    paired_condition_tests,
    permutation_test,
    permutation_tests,
    seed_stability,
)
from llmdisc.scoring.metrics import cell_seed


def _cell(dataset: str, method: str, condition: str, model: str, n_real: int, ok_real: int, n_syn: int,
          ok_syn: int) -> list[dict]:
    rows = []
    for true, n, ok in (("REAL", n_real, ok_real), ("SYNTHETIC", n_syn, ok_syn)):
        other = "SYNTHETIC" if true == "REAL" else "REAL"
        for i in range(n):
            rows.append({"dataset": dataset, "synthetic_method": method, "condition": condition, "model": model,
                         "provider": "p", "true_label": true, "predicted_label": true if i < ok else other,
                         "confidence": 90})
    return rows


@pytest.fixture()
def trials() -> pd.DataFrame:
    rows = []
    rows += _cell("adult", "ctgan", "C1", "A", 6, 6, 6, 6) + _cell("adult", "ctgan", "C1", "B", 10, 10, 10, 0)
    rows += _cell("adult", "ctgan", "C2", "A", 5, 5, 4, 0) + _cell("adult", "ctgan", "C2", "B", 9, 9, 9, 0)
    rows += _cell("adult", "tvae", "C1", "A", 2, 2, 1, 1) + _cell("adult", "tvae", "C1", "B", 10, 10, 10, 0)
    return pd.DataFrame(rows)


class TestFairCells:
    def test_threshold(self, trials: pd.DataFrame) -> None:
        out = fair_cells(trials)
        assert list(out["n_min"]) == [12, 9, 3]
        assert list(out["fair"]) == [True, True, False]
        assert list(out.columns[-5:]) == ["n_valid_A", "n_valid_B", "n_min", "fair", "n_excluded"]
        assert list(out["n_excluded"]) == [0, 0, 0]

    def test_excluded_are_counted(self, trials: pd.DataFrame) -> None:
        broken = trials.copy()
        broken.loc[:2, "predicted_label"] = None  # three answers without a verdict
        out = fair_cells(broken)
        assert list(out["n_excluded"]) == [3, 0, 0] and list(out["n_min"]) == [9, 9, 3]
        perm = permutation_tests(broken, seed=1, n_perm=20)
        assert perm.set_index("model").loc["A", "n_excluded"] == 3

    def test_unlisted_model(self, trials: pd.DataFrame) -> None:
        with pytest.raises(ConfigError, match=re.escape("models ['B'] are in the trials but not in models=['A']")):
            fair_cells(trials, models=["A"])


class TestMatchedN:
    def test_equal_n_and_paper_draw(self, trials: pd.DataFrame) -> None:
        drawn = matched_n_sample(trials, seed=2026, models=["B", "A"])
        counts = drawn.groupby(["synthetic_method", "condition", "model"]).size()
        assert counts.to_dict() == {("ctgan", "C1", "A"): 12, ("ctgan", "C1", "B"): 12,
                                    ("ctgan", "C2", "A"): 9, ("ctgan", "C2", "B"): 9}
        # Model B is first in the draw order, so it uses s; A uses s + 1.
        s = cell_seed(2026, ("adult", "ctgan", "C1"))
        assert s == int(hashlib.sha256(b"2026||adult||ctgan||C1").hexdigest()[:8], 16)
        source = trials[(trials["condition"] == "C1") & (trials["synthetic_method"] == "ctgan")]
        expected_b = source[source["model"] == "B"].sample(n=12, random_state=s)
        got_b = drawn[(drawn["condition"] == "C1") & (drawn["model"] == "B")]
        assert got_b["true_label"].tolist() == expected_b["true_label"].tolist()
        assert set(drawn.loc[drawn["model"] == "A", "matched_seed"]) == {s + 1, cell_seed(2026, ("adult", "ctgan",
                                                                                                 "C2")) + 1}

    def test_reproducible(self, trials: pd.DataFrame) -> None:
        a = matched_n_sample(trials, seed=1, models=["A", "B"])
        b = matched_n_sample(trials, seed=1, models=["A", "B"])
        pd.testing.assert_frame_equal(a, b)


class TestSeedStability:
    def test_summary(self, trials: pd.DataFrame) -> None:
        out = seed_stability(trials, seeds=range(5), models=["A", "B"], model_labels={"A": "Model A"})
        assert set(out.draws["seed"]) == set(range(5))
        a_c1 = out.cells[(out.cells["model"] == "A") & (out.cells["condition"] == "C1")].iloc[0]
        assert (a_c1["drs_mean"], a_c1["n_seeds"]) == (1.0, 5)  # A is perfect in that cell
        b_c1 = out.cells[(out.cells["model"] == "B") & (out.cells["condition"] == "C1")].iloc[0]
        assert b_c1["drs_q025"] == b_c1["drs_q975"] == 0.0  # B always answers REAL: DRS 0 for every draw
        assert list(out.models["model"]) == ["A", "B"]


def _paper_loop(frame: pd.DataFrame, rng: np.random.Generator, n_perm: int) -> np.ndarray:
    """The paper notebook's permutation loop, written plainly, as the reference for the stream."""
    def drs(sub: pd.DataFrame) -> float:
        real, syn = sub[sub["true_label"] == "REAL"], sub[sub["true_label"] == "SYNTHETIC"]
        if not len(real) or not len(syn):
            return np.nan
        return min((real["predicted_label"] == "REAL").mean(), (syn["predicted_label"] == "SYNTHETIC").mean())

    cond = frame["condition"].to_numpy()
    out = np.empty(n_perm)
    for i in range(n_perm):
        shuffled = cond.copy()
        rng.shuffle(shuffled)
        out[i] = drs(frame[shuffled == "C2"]) - drs(frame[shuffled == "C1"])
    return out


class TestPermutation:
    def test_matches_the_paper_loop(self, trials: pd.DataFrame) -> None:
        frame = trials[(trials["model"] == "A") & (trials["synthetic_method"] == "ctgan")].reset_index(drop=True)
        ours = permutation_test(frame, seed=11, n_perm=120)
        null = _paper_loop(frame, np.random.default_rng(11), 120)
        finite = null[np.isfinite(null)]
        assert ours["perm_effective_n"] == len(finite)
        assert ours["delta"] == pytest.approx(-1.0)
        assert ours["p_two_sided"] == pytest.approx((np.sum(np.abs(finite) >= 1.0) + 1) / (len(finite) + 1))
        assert ours["perm_null_q025"] == pytest.approx(np.quantile(finite, 0.025))

    def test_reproducible_for_a_seed(self, trials: pd.DataFrame) -> None:
        frame = trials[(trials["model"] == "A") & (trials["synthetic_method"] == "ctgan")]
        first = permutation_test(frame, seed=20260531, n_perm=500)
        assert first == permutation_test(frame, seed=20260531, n_perm=500)
        assert first["p_two_sided"] < 0.05 and first["p_value"] == first["p_two_sided"]
        assert first["seed"] == 20260531

    def test_no_effect(self, trials: pd.DataFrame) -> None:
        frame = trials[(trials["model"] == "B") & (trials["synthetic_method"] == "ctgan")]
        out = permutation_test(frame, seed=1, n_perm=200)
        assert out["delta"] == 0.0 and out["p_two_sided"] == 1.0

    def test_shared_stream_and_skips(self, trials: pd.DataFrame) -> None:
        out = permutation_tests(trials, seed=3, n_perm=100, orders={"model": ["B", "A"]})
        # tvae has only C1: skipped; B is visited before A.
        assert list(zip(out["model"], out["synthetic_method"])) == [("B", "ctgan"), ("A", "ctgan")]
        rng = np.random.default_rng(3)
        first = permutation_test(trials[(trials["model"] == "B") & (trials["synthetic_method"] == "ctgan")],
                                 rng=rng, n_perm=100)
        second = permutation_test(trials[(trials["model"] == "A") & (trials["synthetic_method"] == "ctgan")],
                                  rng=rng, n_perm=100)
        assert out.iloc[1]["p_two_sided"] == second["p_two_sided"]
        assert out.iloc[0]["perm_effective_n"] == first["perm_effective_n"]

    def test_bad_input(self, trials: pd.DataFrame) -> None:
        with pytest.raises(ConfigError, match="n_perm must be >= 1, got 0"):
            permutation_test(trials, n_perm=0)
        bad = trials.assign(condition="C3")
        with pytest.raises(DataError, match=re.escape("condition has values ['C3']; fix: keep only C1 and C2")):
            permutation_test(bad, n_perm=10)


class TestMcNemar:
    def test_pinned(self) -> None:
        first = [True] * 8 + [False] * 2 + [True] * 5
        second = [False] * 8 + [True] * 2 + [True] * 5
        out = mcnemar_exact(first, second)
        assert (out["n_pairs"], out["b"], out["c"]) == (15, 8, 2)
        assert out["p_value"] == pytest.approx(0.109375)
        assert out["p_value"] == pytest.approx(stats.binomtest(8, 10, 0.5).pvalue)

    def test_no_discordant_pairs(self) -> None:
        assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0

    def test_length_mismatch(self) -> None:
        with pytest.raises(DataError, match=re.escape("paired arrays differ in length (2 vs 1)")):
            mcnemar_exact([True, False], [True])

    def test_pairs_on_sample(self) -> None:
        rows = []
        for seed in range(6):
            truth = "REAL" if seed % 2 else "SYNTHETIC"
            rows.append({"dataset": "d", "synthetic_method": "m", "provider": "p", "model": "x", "condition": "C1",
                         "sample_seed": seed, "true_label": truth, "predicted_label": truth, "confidence": 50})
            rows.append({**rows[-1], "condition": "C2", "predicted_label": "REAL"})
        rows.append({**rows[0], "sample_seed": 99})  # C1 only: unpaired
        out = paired_condition_tests(pd.DataFrame(rows))
        assert out.iloc[0][["n_pairs", "b", "c", "n_unpaired"]].tolist() == [6, 3, 0, 1]
        assert out.iloc[0]["p_value"] == pytest.approx(0.25)
