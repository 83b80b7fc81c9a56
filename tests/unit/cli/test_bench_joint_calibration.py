"""The figures of ``llmdisc bench joint-calibration`` from planted records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmdisc.cli.benchmarks.joint_calibration import calibration_row


def _records(observed: list[float], permuted: list[list[float]], p_randomised: list[float]) -> pd.DataFrame:
    permuted_arr = np.array(permuted, float)
    return pd.DataFrame({"logprob": observed, "permuted_logprobs": permuted,
                         "contrast": np.array(observed) - permuted_arr.mean(axis=1),
                         "p_randomised": p_randomised, "seconds": [2.0] * len(observed)})


def test_rank_counts_say_how_many_permutations_scored_below_each_sample() -> None:
    # sample 1 below both permutations, sample 2 above one, samples 3 and 4 above both
    frame = _records([-10.0, -10.0, -10.0, -10.0], [[-9.0, -8.0], [-11.0, -9.0], [-12.0, -11.0], [-20.0, -30.0]],
                     [0.9, 0.5, 0.1, 0.2])
    row = calibration_row(frame, k=2)
    assert row["rank_counts"] == "1 / 1 / 2" and row["samples"] == 4
    assert row["mean_C"] == pytest.approx(np.mean([-1.5, 0.0, 1.5, 15.0]))
    assert row["s_per_sample"] == pytest.approx(2.0)


def test_uniform_p_values_pass_and_piled_up_ones_fail() -> None:
    rng = np.random.default_rng(0)
    n = 200
    observed = rng.normal(size=n).tolist()
    permuted = rng.normal(size=(n, 2)).tolist()
    calibrated = calibration_row(_records(observed, permuted, rng.random(n).tolist()), k=2)
    assert calibrated["ks_p"] > 0.01 and calibrated["rank_chi2_p"] > 0.01
    piled = calibration_row(_records([5.0] * n, [[0.0, 0.0]] * n, (rng.random(n) / 3).tolist()), k=2)
    assert piled["ks_p"] < 1e-6 and piled["rank_chi2_p"] < 1e-6 and piled["rank_counts"] == f"0 / 0 / {n}"
