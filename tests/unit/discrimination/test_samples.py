"""Sampling: seeded, fresh per trial, the paper's fixed draw, balanced and paired queues."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.samples import (
    PAPER_FIXED_SEED,
    TrialSpec,
    build_trial_queue,
    derive_seed,
    sample_rows,
)
from llmdisc.errors import ConfigError, DataError


@pytest.fixture()
def table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    # A non-default index: row ids must be positions, not labels.
    return pd.DataFrame({"b": rng.integers(0, 1000, 120), "a": rng.choice(list("xyz"), 120)},
                        index=range(1000, 1120))


class TestDeriveSeed:
    def test_matches_the_documented_formula(self):
        expected = int(hashlib.sha256("5||adult||ctgan||REAL||3".encode()).hexdigest()[:8], 16)
        assert derive_seed(5, "adult", "ctgan", "REAL", 3) == expected

    def test_is_pinned_and_stable_across_processes(self):
        # PYTHONHASHSEED differs per process; sha256 does not (the paper's hash() did).
        code = "from llmdisc.discrimination.samples import derive_seed; print(derive_seed(2026, 'adult', 'tvae', 'SYNTHETIC', 0))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": "123"})
        assert int(out.stdout) == derive_seed(2026, "adult", "tvae", "SYNTHETIC", 0) == 2281865119

    def test_every_part_changes_the_seed(self):
        base = derive_seed(0, "adult", "ctgan", "REAL", 0)
        for parts in [(1, "adult", "ctgan", "REAL", 0), (0, "census-codes", "ctgan", "REAL", 0),
                      (0, "adult", "tvae", "REAL", 0), (0, "adult", "ctgan", "SYNTHETIC", 0),
                      (0, "adult", "ctgan", "REAL", 1)]:
            assert derive_seed(*parts) != base


class TestSampleRows:
    def test_fresh_is_seeded_and_returns_positions(self, table):
        sample, ids = sample_rows(table, 20, seed=11)
        again, ids_again = sample_rows(table, 20, seed=11)
        assert ids == ids_again and sample.equals(again)
        expected_ids = [int(i) for i in np.random.default_rng(11).choice(120, size=20, replace=False)]
        assert ids == expected_ids
        assert len(set(ids)) == 20 and all(0 <= i < 120 for i in ids)
        pd.testing.assert_frame_equal(sample, table.iloc[ids].reset_index(drop=True))
        assert list(sample.columns) == ["b", "a"] and list(sample.index) == list(range(20))

    def test_fresh_differs_between_seeds(self, table):
        draws = {tuple(sample_rows(table, 20, seed=s)[1]) for s in range(10)}
        assert len(draws) == 10

    def test_fixed_is_the_papers_draw_whatever_the_seed(self, table):
        paper = table.reset_index(drop=True).sample(n=20, random_state=42).sort_index()
        for seed in (0, 1, 99):
            sample, ids = sample_rows(table, 20, seed=seed, sampling="fixed")
            assert ids == list(paper.index)
            pd.testing.assert_frame_equal(sample, paper.reset_index(drop=True))
        assert PAPER_FIXED_SEED == 42

    def test_whole_table_when_n_equals_rows(self, table):
        sample, ids = sample_rows(table, 120, seed=3)
        assert sorted(ids) == list(range(120))

    def test_table_smaller_than_sample_is_a_clear_error(self, table):
        with pytest.raises(DataError, match=r"the table has 5 rows, fewer than the 20 rows a sample needs; "
                                            r"fix: use a table of at least 20 rows or lower n_rows to at most 5"):
            sample_rows(table.head(5), 20, seed=0)

    def test_bad_mode_and_n(self, table):
        with pytest.raises(ConfigError, match=r"sampling='random' is not known; fix: use one of 'fresh', 'fixed'"):
            sample_rows(table, 20, seed=0, sampling="random")
        with pytest.raises(ConfigError, match=r"n=0 rows per sample is not allowed; fix: ask for at least 1 row"):
            sample_rows(table, 0, seed=0)


class TestTrialQueue:
    def test_exactly_n_per_label_per_cell_and_unique_ids(self):
        queue = build_trial_queue(["adult", "census-codes"], ["ctgan", "tvae", "gaussian_copula"], ["C1", "C2"],
                                  4, run_seed=0)
        assert len(queue) == 2 * 3 * 2 * 2 * 4
        cells = Counter((s.dataset_key, s.synthesizer, s.condition, s.true_label) for s in queue)
        assert len(cells) == 2 * 3 * 2 * 2 and set(cells.values()) == {4}
        assert len({s.trial_id for s in queue}) == len(queue)
        assert queue[0].trial_id == "adult|ctgan|C1|REAL|0|r0"
        assert all(isinstance(s, TrialSpec) for s in queue)

    def test_is_deterministic_and_depends_on_the_run_seed(self):
        args = (["adult"], ["ctgan"], ["C1"], 5)
        assert build_trial_queue(*args, run_seed=1) == build_trial_queue(*args, run_seed=1)
        seeds_1 = [s.sample_seed for s in build_trial_queue(*args, run_seed=1)]
        seeds_2 = [s.sample_seed for s in build_trial_queue(*args, run_seed=2)]
        assert seeds_1 != seeds_2 and len(set(seeds_1)) == 10

    def test_sample_seed_follows_the_documented_derivation(self):
        queue = build_trial_queue(["adult"], ["tvae"], ["C1", "C2"], 2, run_seed=9)
        for spec in queue:
            assert spec.sample_seed == derive_seed(9, "adult", "tvae", spec.true_label, spec.index)
            assert spec.run_seed == 9 and spec.sampling == "fresh"

    def test_paired_queue_shares_the_sample_across_conditions(self):
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1", "C2"], 3, run_seed=0, paired=True)
        by_key = {(s.true_label, s.index, s.condition): s.sample_seed for s in queue}
        for label in ("REAL", "SYNTHETIC"):
            for index in range(3):
                assert by_key[(label, index, "C1")] == by_key[(label, index, "C2")]

    def test_unpaired_queue_draws_per_condition(self):
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1", "C2"], 3, run_seed=0, paired=False)
        for spec in queue:
            assert spec.sample_seed == derive_seed(0, "adult", "ctgan", spec.true_label, spec.index, spec.condition)
        assert len({s.sample_seed for s in queue}) == len(queue)

    def test_replicates_share_the_sample_and_get_their_own_ids(self):
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 2, run_seed=0, replicates=3)
        assert len(queue) == 2 * 2 * 3
        groups = Counter((s.true_label, s.index, s.sample_seed) for s in queue)
        assert set(groups.values()) == {3}
        assert {s.trial_id.rsplit("|", 1)[1] for s in queue} == {"r0", "r1", "r2"}

    def test_fixed_queue_stores_the_papers_seed(self):
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=0, sampling="fixed")
        assert {s.sample_seed for s in queue} == {42} and {s.sampling for s in queue} == {"fixed"}

    @pytest.mark.parametrize("kwargs, message", [
        ({"synthesizers": ["copula"]}, r"synthesizer='copula' is not known; fix: use one of 'gaussian_copula'"),
        ({"conditions": ["C3"]}, r"condition='C3' is not known; fix: use one of 'C1', 'C2'"),
        ({"trials_per_label": 0}, r"trials_per_label=0, replicates=1; fix: both must be at least 1"),
        ({"conditions": ["C1", "C1"]}, r"conditions=\['C1', 'C1'\] holds duplicates; fix: list each value once"),
        ({"dataset_keys": []}, r"dataset_keys is empty; fix: give at least one value"),
        ({"sampling": "Fresh"}, r"sampling='Fresh' is not known"),
    ])
    def test_bad_arguments(self, kwargs, message):
        args = {"dataset_keys": ["adult"], "synthesizers": ["ctgan"], "conditions": ["C1"], "trials_per_label": 2}
        args.update(kwargs)
        sampling = args.pop("sampling", "fresh")
        with pytest.raises(ConfigError, match=message):
            build_trial_queue(**args, run_seed=0, sampling=sampling)
