"""Probability scores per cell: AUC, raw vs calibrated DRS, and calibration that never reads the labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmdisc.errors import DataError
from llmdisc.scoring.auc import auc_test, auc_with_interval
from llmdisc.scoring.probability import (
    batch_threshold,
    decide,
    score_probability_cell,
    score_probability_cells,
)


def cell(log_odds_real: list[float], log_odds_syn: list[float], *, invalid: int = 0, **key: str) -> pd.DataFrame:
    """A cell of probability trials whose log-odds (SYNTHETIC vs REAL) are given; log P(REAL) fixed at -0.1."""
    rows = []
    for label, values in (("REAL", log_odds_real), ("SYNTHETIC", log_odds_syn)):
        for s in values:
            lp_real = -0.1
            rows.append({"true_label": label, "scoring": "probability", "score_status": "valid",
                         "logprob_real": lp_real, "logprob_synthetic": lp_real + s,
                         "logprob_real_per_char": lp_real / 4, "logprob_synthetic_per_char": (lp_real + s) / 9,
                         "p_synthetic": 1 / (1 + math.exp(-s)), "label_mass": 0.9})
    for _ in range(invalid):
        rows.append({"true_label": "REAL", "scoring": "probability", "score_status": "invalid",
                     "logprob_real": None, "logprob_synthetic": None, "logprob_real_per_char": None,
                     "logprob_synthetic_per_char": None, "p_synthetic": None, "label_mass": 0.2})
    df = pd.DataFrame(rows)
    defaults = {"dataset_key": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "local",
                "model": "m"}
    return df.assign(**{**defaults, **key})


class TestAUC:
    def test_a_perfect_ranking_the_wrong_way_round_is_auc_zero_and_separation_one(self) -> None:
        test = auc_test(np.r_[0, 0, 0, 1, 1, 1], np.r_[5.0, 6, 7, 1, 2, 3], seed=0, permutations=500)
        assert test.auc.value == 0.0 and test.separation == 1.0 and test.direction == "lower"
        assert test.p_value < 0.2

    def test_a_constant_score_gives_auc_one_half(self) -> None:
        test = auc_test(np.r_[0, 0, 1, 1], np.full(4, -2.0), seed=0, permutations=200)
        assert test.auc.value == 0.5 and test.direction == "none" and test.p_value == 1.0

    def test_permutation_p_values_are_reproducible_for_a_seed(self) -> None:
        rng = np.random.default_rng(1)
        labels, scores = rng.integers(0, 2, 40), rng.normal(size=40)
        a, b = auc_test(labels, scores, seed=7), auc_test(labels, scores, seed=7)
        c = auc_test(labels, scores, seed=8)
        assert a.p_value == b.p_value and a.seed == 7
        assert a.auc == c.auc  # the AUC itself does not depend on the seed
        assert 0 < a.p_value <= 1

    def test_bad_input_is_named(self) -> None:
        with pytest.raises(DataError, match="both classes"):
            auc_test(np.ones(3), np.arange(3.0), seed=0)
        with pytest.raises(DataError, match="NaN or infinite"):
            auc_test(np.r_[0, 1], np.r_[0.0, np.nan], seed=0)

    def test_delong_agrees_with_the_rank_formula(self) -> None:
        rng = np.random.default_rng(2)
        labels, scores = rng.integers(0, 2, 60), rng.normal(size=60)
        pos, neg = scores[labels == 1], scores[labels == 0]
        pairwise = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
        assert auc_with_interval(labels, scores).value == pytest.approx(pairwise)


class TestCalibratedDecisions:
    def test_constant_margin_for_real_with_perfect_ranking(self) -> None:
        """Prefers REAL everywhere (every log-odds < 0) yet ranks perfectly: raw 0, AUC 1, calibrated 1."""
        scores = score_probability_cell(cell([-5, -4.5, -4.2, -4.1], [-3.9, -3.5, -3.2, -3.0]), seed=0,
                                        context_threshold=-4.0, permutations=200)
        assert scores["raw_drs"] == 0.0 and scores["raw_p_real"] == 1.0 and scores["raw_p_syn"] == 0.0
        assert scores["auc"] == 1.0
        assert scores["batch_drs"] == 1.0 and scores["context_drs"] == 1.0
        assert scores["batch_drs_ci_low"] <= 1.0 <= scores["batch_drs_ci_high"]

    def test_a_constant_score_cannot_pass_as_discrimination(self) -> None:
        scores = score_probability_cell(cell([-2.0] * 5, [-2.0] * 5), seed=0, permutations=100)
        assert scores["auc"] == 0.5 and scores["batch_drs"] == 0.0 and scores["raw_drs"] == 0.0
        assert math.isnan(scores["context_drs"])  # no content-free score: no contextual decision

    def test_calibration_never_reads_the_labels_of_the_cell_it_calibrates(self) -> None:
        rng = np.random.default_rng(3)
        df = cell(list(rng.normal(-1, 1, 10)), list(rng.normal(0, 1, 10)))
        scores = (df["logprob_synthetic"] - df["logprob_real"]).to_numpy()
        threshold = batch_threshold(scores)
        for seed in range(5):
            permuted = df.assign(true_label=np.random.default_rng(seed).permutation(df["true_label"].to_numpy()))
            assert batch_threshold(permuted["logprob_synthetic"] - permuted["logprob_real"]) == threshold
            assert score_probability_cell(permuted, seed=0, permutations=10)["batch_threshold"] == threshold
        assert (decide(scores, threshold) == (scores > threshold)).all()

    def test_invalid_scores_are_counted_not_scored(self) -> None:
        scores = score_probability_cell(cell([-1.0, -0.5], [0.5, 1.0], invalid=3), seed=0, permutations=10)
        assert scores["n_invalid"] == 3 and scores["n_real"] == 2 and scores["n_syn"] == 2

    def test_brier_and_ece_of_a_confident_perfect_discriminator_are_near_zero(self) -> None:
        scores = score_probability_cell(cell([-20.0] * 4, [20.0] * 4), seed=0, permutations=10)
        assert scores["brier"] == pytest.approx(0.0, abs=1e-6) and scores["ece"] == pytest.approx(0.0, abs=1e-6)


def test_cells_are_kept_apart_and_contextual_thresholds_matched() -> None:
    trials = pd.concat([cell([-3, -2], [2, 3], synthetic_method="ctgan"),
                        cell([-1, 1], [-1, 1], synthetic_method="tvae"),
                        cell([0.0], [0.0], synthetic_method="ctgan").assign(scoring="verdict")])
    content_free = pd.DataFrame([{"dataset_key": "adult", "condition": "C1", "provider": "local", "model": "m",
                                  "log_odds": 0.0}])
    table = score_probability_cells(trials, content_free=content_free, seed=0, permutations=50)
    assert table["synthetic_method"].tolist() == ["ctgan", "tvae"]
    ctgan = table.set_index("synthetic_method").loc["ctgan"]
    assert ctgan["n_real"] == 2 and ctgan["auc"] == 1.0 and ctgan["context_drs"] == 1.0
    assert table["seed"].nunique() == 2


def test_a_cells_contextual_threshold_comes_from_its_own_run_file() -> None:
    # two protocols of one model: each run file scored its own content-free prompt
    trials = pd.concat([cell([-3, -2], [2, 3]).assign(run_id="neutral_run", prompt_variant="neutral"),
                        cell([-3, -2], [2, 3]).assign(run_id="paper_run", prompt_variant="paper")])
    content_free = pd.DataFrame([
        {"dataset_key": "adult", "condition": "C1", "provider": "local", "model": "m", "log_odds": 0.0,
         "run_id": "neutral_run"},
        {"dataset_key": "adult", "condition": "C1", "provider": "local", "model": "m", "log_odds": 5.0,
         "run_id": "paper_run"}])
    table = score_probability_cells(trials, content_free=content_free, seed=0, permutations=20)
    assert table.set_index("prompt_variant")["context_threshold"].to_dict() == {"neutral": 0.0, "paper": 5.0}
    assert len(table) == 2


def test_a_probability_runs_verdict_trials_count_in_its_probability_cell() -> None:
    # the first trial per label also generated a verdict (scoring "both"); its label scores are the same reading
    run = pd.concat([cell([-3], [3]).assign(scoring="both"), cell([-2, -1], [1, 2])]).assign(run_id="r")
    both_only = cell([-3, -2], [2, 3], synthetic_method="tvae").assign(scoring="both", run_id="s")
    table = score_probability_cells(pd.concat([run, both_only]), seed=0, permutations=50)
    assert table[["synthetic_method", "scoring", "n_real"]].values.tolist() == [
        ["ctgan", "probability", 3], ["tvae", "both", 2]]  # a protocol scored both ways keeps its name
