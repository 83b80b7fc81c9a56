"""The time budget sizes the embedded model's samples from the timing probe (no model: the probe's speed is set)."""

from __future__ import annotations

import time

from llmdisc.audit.instruments.base import WorkPlan
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
    sizing = _fit_to_budget([joint, likelihood], plans, time.monotonic(), max_minutes=8)
    budget = BUDGET_MARGIN * (8 * 60 - 120)
    assert sizing is not None and sizing["samples"] == passes.samples < 20
    assert plans["joint"].units == passes.passes and plans["joint"].seconds <= budget + 1e-6
    assert plans["joint"].description == "d"


def test_fit_to_budget_needs_a_probe() -> None:
    passes = SamplePasses(20, k=2)  # never probed (the model was unavailable)
    plans = {"joint": WorkPlan(units=0, what="passes", seconds_per_unit=0.0)}
    assert _fit_to_budget([JointInstrument(passes)], plans, time.monotonic(), max_minutes=10) is None
    assert passes.samples == 20
