"""The memorisation control: a "release" that is the generator's training rows resampled with a little noise must
fail the gate through some instrument, and the report must name which.

With ``--holdout`` the audit's real class is the holdout (rows the generator never saw) and the distance and copy
checks measure against the training rows (:mod:`llmdisc.audit.data`); a copied release is indistinguishable from
real rows to a classifier, so the distances are what must catch it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llmdisc.audit.errors import EXIT_GATE
from llmdisc.cli.main import main


def _memorised(train, seed: int):
    """The training rows resampled with replacement, each integer column nudged by at most ±1 on a third of the
    rows (so few records are exact copies, all are near-copies)."""
    rng = np.random.default_rng(seed)
    release = train.sample(len(train), replace=True, random_state=seed).reset_index(drop=True)
    for column in release.select_dtypes("number").columns:
        nudge = rng.integers(-1, 2, len(release)) * (rng.random(len(release)) < 1 / 3)
        release[column] = release[column] + nudge
    return release


@pytest.fixture(scope="module")
def memorised_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from llmdisc.data.datasets import load_dataset, train_holdout_split

    root = tmp_path_factory.mktemp("memorised")
    train, holdout = train_holdout_split(load_dataset("adult", n_rows=3000, seed=11), holdout_fraction=0.3, seed=11)
    files = {"real": root / "train.csv", "synthetic": root / "memorised.csv", "holdout": root / "holdout.csv"}
    train.to_csv(files["real"], index=False)
    _memorised(train, seed=12).to_csv(files["synthetic"], index=False)
    holdout.to_csv(files["holdout"], index=False)
    return files


def test_a_release_that_copies_its_training_rows_fails_the_gate_through_the_distances(
        memorised_files: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "audit"
    status = main(["audit", "--real", str(memorised_files["real"]), "--synthetic", str(memorised_files["synthetic"]),
                   "--holdout", str(memorised_files["holdout"]), "--instruments", "c2st", "distances",
                   "--fail-above", "0.3", "--out", str(out), "--no-progress", "--n-attacks", "0"])
    audit = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    decision = audit["decision"]
    assert status == EXIT_GATE and decision["outcome"] == "fail", decision
    assert "distances" in decision["told_apart_by"] and "distances" in decision["deciding"]
    distances = {i["instrument"]: i for i in audit["instruments"]}["distances"]
    release = distances["comparisons"]["release"]
    assert release["auc"] > 0.9  # the release sits closer to the training rows than the holdout does
    assert distances["controls_passed"], distances["control_reasons"]
    # the real class is the holdout, and the report says so
    assert audit["groups"]["notes"]["real"].startswith("the 900 --holdout rows")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "FAIL: The release is told apart from real data by" in html
    assert "Distance to the closest real record" in html.split("FAIL:")[1].split("</strong>")[0]
    assert "closer to the real records than fresh real records do" in html


def test_without_a_holdout_the_audit_says_what_its_real_class_is(memorised_files: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "audit"
    main(["audit", "--real", str(memorised_files["real"]), "--synthetic", str(memorised_files["synthetic"]),
          "--instruments", "c2st", "--out", str(out), "--no-progress"])
    notes = json.loads((out / "audit.json").read_text(encoding="utf-8"))["groups"]["notes"]
    assert "no --holdout, so the real class is the generator's own training rows" in notes["real"]
