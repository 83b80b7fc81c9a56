"""The time budget sizes the embedded model's samples from the timing probe (no model: the probe's speed is set)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from llmdisc.audit.instruments.base import WorkPlan
from llmdisc.audit.instruments.rows import C2STInstrument
from llmdisc.audit.instruments.samples import JointInstrument, LikelihoodInstrument, SamplePasses
from llmdisc.audit.run import BUDGET_MARGIN, _fit_to_budget


def _passes(seconds_per_pass: float, samples: int = 20) -> SamplePasses:
    passes = SamplePasses(samples, k=2)
    passes.probe_seconds = seconds_per_pass
    return passes


def test_the_controls_follow_the_size_and_passes_count_k_plus_one_per_sample() -> None:
    passes = SamplePasses(20, k=2)
    assert passes.counts == {"real": 20, "release": 20, "shuffled_columns": 10, "real_holdout": 10}
    assert passes.passes == 3 * 60
    passes.resize(30)
    assert passes.counts["shuffled_columns"] == 15 and passes.passes == 3 * 90


def test_fit_keeps_the_size_when_it_fits_and_shrinks_it_when_not() -> None:
    assert _passes(1.0).fit(3 * 60 * 1.0) == 20  # exactly fits
    slow = _passes(1.2)
    size = slow.fit(3 * 60 * 1.0)  # 216 s needed for 20 a group, 180 s given
    assert size == 15 and slow.passes * 1.2 <= 180.0  # 3 × (15 + 15 + 10 + 10) passes
    slow.resize(size + 1)
    assert slow.passes * 1.2 > 180.0  # the largest size that fits


def test_fit_never_goes_below_the_floor_nor_above_the_asked_size() -> None:
    assert _passes(100.0).fit(1.0) == 10
    assert _passes(0.001).fit(10_000.0) == 20
    assert _passes(100.0, samples=6).fit(1.0) == 6  # a size below the floor stays as asked


def test_fit_to_budget_leaves_the_other_instruments_their_time_and_replans() -> None:
    passes = _passes(2.0)
    joint, likelihood = JointInstrument(passes), LikelihoodInstrument(passes)
    plans = {"c2st": WorkPlan(units=1, what="fit", seconds_per_unit=120.0),
             "joint": WorkPlan(units=passes.passes, what="model passes", seconds_per_unit=2.0, description="d"),
             "likelihood": WorkPlan(units=0, what="model passes (shared)", seconds_per_unit=0.0)}
    sizing = _fit_to_budget([C2STInstrument(), joint, likelihood], plans, time.monotonic(), max_minutes=8)
    budget = BUDGET_MARGIN * (8 * 60 - 120)
    assert sizing is not None and sizing["samples"] == passes.samples < 20
    assert plans["joint"].units == passes.passes and plans["joint"].seconds <= budget + 1e-6
    assert plans["joint"].description == "d"


def test_fit_to_budget_needs_a_probe() -> None:
    passes = SamplePasses(20, k=2)  # never probed (the model was unavailable)
    plans = {"joint": WorkPlan(units=0, what="passes", seconds_per_unit=0.0)}
    assert _fit_to_budget([JointInstrument(passes)], plans, time.monotonic(), max_minutes=10) is None
    assert passes.samples == 20


def test_fit_to_budget_counts_only_the_instruments_given_and_the_time_already_spent() -> None:
    plans = {"c2st": WorkPlan(units=1, what="fit", seconds_per_unit=300.0),
             "joint": WorkPlan(units=0, what="model passes", seconds_per_unit=0.0)}
    after_c2st = _passes(1.0)
    sizing = _fit_to_budget([JointInstrument(after_c2st)], plans, time.monotonic(),
                            max_minutes=4)  # the C2ST has run: its 300 s estimate is not taken again
    assert sizing is not None and sizing["seconds_for_samples"] > BUDGET_MARGIN * 4 * 60 - 1
    late = _passes(1.0)
    sizing = _fit_to_budget([JointInstrument(late)], plans, time.monotonic() - 60.0, max_minutes=4)
    assert sizing is not None and sizing["seconds_for_samples"] <= BUDGET_MARGIN * 3 * 60 + 1e-6
    assert late.samples < after_c2st.samples


def test_the_probe_times_samples_as_the_run_scores_them_and_reads_the_median(monkeypatch) -> None:
    import llmdisc.audit.instruments.samples as samples_module

    clock = [0.0]
    durations = iter([27.0, 6.0, 90.0, 6.6])  # warm-up, then a sample slowed by a transient load
    scored = []
    passes = SamplePasses(20, k=2)
    passes.scorer = object()
    draws = {group: [(1000 * n + i, f"{group} {i}") for i in range(20)]
             for n, group in enumerate(("real", "release", "shuffled_columns", "real_holdout"))}
    monkeypatch.setattr(passes, "draws", lambda data: draws)

    def score(scorer, data, sample, *, seed, k, cached=True):
        scored.append((seed, sample, k, cached))
        clock[0] += next(durations)
        return {}

    monkeypatch.setattr(passes, "_score", score)
    monkeypatch.setattr(samples_module.time, "perf_counter", lambda: clock[0])
    plan = passes.plan(data=None)
    # samples the run scores (their seeds and k: the run finds them in the cache), of groups whose rows differ
    assert scored == [(0, "real 0", 2, False), (1000, "release 0", 2, False), (1, "real 1", 2, False),
                      (2000, "shuffled_columns 0", 2, False)]
    assert passes.probe_seconds == pytest.approx(6.6 / 3)  # a sample is k + 1 = 3 passes
    assert plan.units == passes.passes - 3 * 4  # the probed samples are not planned again
    assert plan.fixed_seconds == pytest.approx(27.0 - 6.6)


def test_the_deadline_looks_one_unit_ahead(monkeypatch) -> None:
    import llmdisc.audit.progress as base_module
    from llmdisc.audit.instruments.base import Progress

    now = [100.0]
    monkeypatch.setattr(base_module.time, "monotonic", lambda: now[0])
    progress = Progress(deadline=130.0, enabled=False)
    progress.start("passes", 10, "samples")
    assert not progress.out_of_time()
    now[0] = 120.0
    progress.advance(2)  # 10 s a sample: the next one would end at 130
    assert progress.out_of_time()
    now[0] = 111.0
    assert not progress.out_of_time()


def test_anonymeter_is_skipped_with_its_reason_without_a_holdout_or_attacks() -> None:
    from llmdisc.audit.run import _anonymeter

    none = _anonymeter({}, {}, seed=0, n_attacks=100, has_holdout=False)
    assert none["status"] == "skipped" and "--holdout" in none["reason"]
    zero = _anonymeter({}, {}, seed=0, n_attacks=0, has_holdout=True)
    assert zero == {"status": "skipped", "reason": "--n-attacks 0"}
    broken = _anonymeter({}, {}, seed=0, n_attacks=5, has_holdout=True)
    assert broken["status"] == "unavailable" and "KeyError" in broken["reason"]


@pytest.mark.slow  # Anonymeter's neighbour search is compiled by numba on first use
def test_anonymeter_says_why_linkability_is_missing_on_a_two_column_table() -> None:
    from llmdisc.audit.report import _anonymeter as report_section
    from llmdisc.audit.run import _anonymeter

    rng = np.random.default_rng(0)
    tables = {name: pd.DataFrame({"age": rng.integers(18, 80, 60).astype(float),
                                  "job": rng.choice(["a", "b", "c"], 60)}) for name in ("real", "synthetic", "holdout")}
    kinds = {"age": "numerical", "job": "categorical"}
    two = _anonymeter(tables, kinds, seed=0, n_attacks=10, has_holdout=True)
    assert two["status"] == "measured"
    assert [r["attack"] for r in two["risks"]] == ["singling_out", "inference"]
    assert two["reason"].startswith("linkability not run")
    assert report_section({"anonymeter": two})["reason"] == two["reason"]
    tables = {name: t.assign(hours=rng.integers(1, 60, 60).astype(float)) for name, t in tables.items()}
    three = _anonymeter(tables, {**kinds, "hours": "numerical"}, seed=0, n_attacks=10, has_holdout=True)
    assert [r["attack"] for r in three["risks"]] == ["singling_out", "linkability", "inference"]
    assert "reason" not in three


def test_the_probed_samples_are_read_back_but_not_counted_as_work(monkeypatch) -> None:
    from llmdisc.audit.instruments.base import Progress

    passes = SamplePasses(5, k=2)
    passes.scorer = object()
    passes.probed = {"real": 2, "release": 1}
    draws = {group: [(i, pd.DataFrame({"a": [i, i + 1]})) for i in range(passes.counts.get(group, 5))]
             for group in ("real", "release", "shuffled_columns", "real_holdout")}
    monkeypatch.setattr(passes, "draws", lambda data: draws)
    monkeypatch.setattr(passes, "_score", lambda scorer, data, sample, *, seed, k, cached=True: {"logprob": -1.0})
    progress = Progress(enabled=False)
    records = passes.run(data=None, progress=progress)
    assert {g: len(r) for g, r in records.items()} == {g: len(v) for g, v in draws.items()}  # every sample read
    assert progress._total == progress._done == sum(len(v) for v in draws.values()) - 3  # the ETA's work
