"""The figures of ``llmdisc bench joint-calibration`` from planted records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmdisc.scoring.joint import calibration_summary, calibration_table


def _records(observed: list[float], permuted: list[list[float]], p_randomised: list[float]) -> pd.DataFrame:
    permuted_arr = np.array(permuted, float)
    return pd.DataFrame({"logprob": observed, "permuted_logprobs": permuted,
                         "contrast": np.array(observed) - permuted_arr.mean(axis=1),
                         "p_randomised": p_randomised, "seconds": [2.0] * len(observed)})


def test_rank_counts_say_how_many_permutations_scored_below_each_sample() -> None:
    # sample 1 below both permutations, sample 2 above one, samples 3 and 4 above both
    frame = _records([-10.0, -10.0, -10.0, -10.0], [[-9.0, -8.0], [-11.0, -9.0], [-12.0, -11.0], [-20.0, -30.0]],
                     [0.9, 0.5, 0.1, 0.2])
    row = calibration_summary(frame, k=2)
    assert row["rank_counts"] == "1 / 1 / 2" and row["samples"] == 4
    assert row["mean_C"] == pytest.approx(np.mean([-1.5, 0.0, 1.5, 15.0]))
    assert row["s_per_sample"] == pytest.approx(2.0)


def test_uniform_p_values_pass_and_piled_up_ones_fail() -> None:
    rng = np.random.default_rng(0)
    n = 200
    observed = rng.normal(size=n).tolist()
    permuted = rng.normal(size=(n, 2)).tolist()
    calibrated = calibration_summary(_records(observed, permuted, rng.random(n).tolist()), k=2)
    assert calibrated["ks_p"] > 0.01 and calibrated["rank_chi2_p"] > 0.01
    piled = calibration_summary(_records([5.0] * n, [[0.0, 0.0]] * n, (rng.random(n) / 3).tolist()), k=2)
    assert piled["ks_p"] < 1e-6 and piled["rank_chi2_p"] < 1e-6 and piled["rank_counts"] == f"0 / 0 / {n}"


def test_the_calibration_table_has_a_row_per_seed_and_one_pooled_row_per_dataset(tmp_path, monkeypatch) -> None:
    from llmdisc.cli.benchmarks.joint_calibration import write_calibration_table

    rng = np.random.default_rng(1)

    def planted(n: int) -> pd.DataFrame:
        return _records(rng.normal(size=n).tolist(), rng.normal(size=(n, 2)).tolist(), rng.random(n).tolist())

    frames = {("adult", 1): planted(30), ("adult", 2): planted(20), ("census-codes", 1): planted(25)}
    table = calibration_table(frames, k=2)
    assert list(zip(table["dataset_key"], table["run_seed"])) == [
        ("adult", "1"), ("adult", "2"), ("census-codes", "1"), ("adult", "all"), ("census-codes", "all")]
    pooled = table[(table["dataset_key"] == "adult") & (table["run_seed"] == "all")].iloc[0]
    assert pooled["samples"] == 50 and pooled["seeds"] == "1 2"
    both = pd.concat([frames[("adult", 1)], frames[("adult", 2)]])
    assert pooled["mean_C"] == pytest.approx(both["contrast"].mean())
    # the bench's writer finds the record files of one design and one backend, and writes the table
    from llmdisc.discrimination.likelihood.records import load_joint  # noqa: F401 - the reader the writer uses

    folder = tmp_path / "calibration"
    folder.mkdir()
    monkeypatch.setattr("llmdisc.discrimination.likelihood.records.load_joint",
                        lambda path: frames[(path.name.split("-csv")[0], int(path.name.split("-s")[1].split("-")[0]))])
    for (key, seed) in frames:
        (folder / f"{key}-csv-m20-k2-n25-s{seed}-transformers-float32.jsonl").write_text("{}\n")
    (folder / "adult-csv-m0-k2-n25-s9-transformers-float32.jsonl").write_text("{}\n")  # another design: left out
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    written = write_calibration_table(folder, k=2, reference_rows=20)
    assert written is not None and written.name == "joint_calibration.csv"
    assert len(pd.read_csv(written)) == 5
