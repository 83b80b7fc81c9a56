"""The audit's outcome rule (only instruments that pass their controls decide) and the gate statistic D, on
hand-built readings."""

from __future__ import annotations

import pytest

from llmdisc.audit.decision import EXAMPLE_THRESHOLD, decide, headline
from llmdisc.audit.instruments.base import (
    NEGATIVE,
    POSITIVE,
    RELEASE,
    Comparison,
    Reading,
    control_check,
    discrimination,
)


@pytest.mark.parametrize(("auc", "low", "high", "expected"), [
    (0.7, 0.55, 0.85, (0.4, 0.1, 0.7)),  # above chance: both bounds fold to distances from 0.5
    (0.6, 0.4, 0.8, (0.2, 0.0, 0.6)),  # the interval holds 0.5: the lower bound is chance
    (0.2, 0.05, 0.35, (0.6, 0.3, 0.9)),  # the wrong way round counts the same
    (0.5, 0.5, 0.5, (0.0, 0.0, 0.0)),  # a constant score
    (0.45, 0.1, 0.6, (0.1, 0.0, 0.8)),  # the upper bound is the farther end of the interval
])
def test_discrimination_folds_the_auc_and_its_interval(auc: float, low: float, high: float,
                                                      expected: tuple[float, float, float]) -> None:
    assert discrimination(auc, low, high) == pytest.approx(expected)


def test_discrimination_of_an_undefined_auc_or_interval() -> None:
    assert discrimination(None, None, None) == (None, None, None)
    assert discrimination(float("nan"), 0.4, 0.6) == (None, None, None)
    assert discrimination(0.75, None, None) == (pytest.approx(0.5), None, None)
    assert discrimination(0.75, float("nan"), 0.9) == (pytest.approx(0.5), None, None)


def _c(group: str, auc: float | None, low: float | None = None, high: float | None = None) -> Comparison:
    """A comparison with the given AUC interval (default: a point interval at the AUC)."""
    low = auc if low is None else low
    high = auc if high is None else high
    return Comparison(group, auc, low, high, p_value=None, n_real=100, n_other=100)


SEES_SHUFFLED = (0.95, 0.9, 1.0)
AT_CHANCE = (0.5, 0.4, 0.6)


def _reading(name: str, release: tuple | None, positive: tuple | None = SEES_SHUFFLED,
             negative: tuple | None = AT_CHANCE, status: str = "measured") -> Reading:
    comparisons = {g: _c(g, *v) for g, v in ((RELEASE, release), (POSITIVE, positive), (NEGATIVE, negative))
                   if v is not None}
    return Reading(instrument=name, title=name.upper(), unit="rows", status=status, comparisons=comparisons)


def test_control_check_names_each_failure() -> None:
    assert control_check(_reading("a", (0.5,))) == (True, [])
    passed, reasons = control_check(_reading("a", (0.5,), positive=(0.55, 0.45, 0.65), negative=(0.8, 0.7, 0.9)))
    assert not passed and len(reasons) == 2
    assert reasons[0].startswith("A missed its positive control (rows with every column shuffled: AUC 0.55 "
                                 "(95 % CI 0.45–0.65), n = 100 vs 100)")
    assert reasons[1].startswith("A failed its negative control (real rows against real rows: AUC 0.80")
    assert control_check(_reading("a", (0.5,), positive=None))[1] == ["A: no positive control measured"]
    assert control_check(_reading("a", (0.5,), negative=(None,)))[1] == ["A: no negative control measured"]
    assert control_check(_reading("a", (0.5,), status="unavailable")) == (False, ["A: unavailable"])
    # stopped early, the controls it measured still count
    assert control_check(_reading("a", (0.5,), status="stopped")) == (True, [])


def test_an_instrument_that_misses_its_positive_control_does_not_decide() -> None:
    blind = _reading("blind", release=(1.0,), positive=(0.52, 0.45, 0.6))  # it "sees" the release only
    decision = decide([blind], fail_above=0.5)
    assert decision.outcome == "inconclusive" and decision.deciding == () and decision.upper_bound is None
    assert "BLIND missed its positive control" in decision.reasons[0]
    # an AUC below chance, whose interval excludes 0.5, is a detection as well (D is two-sided)
    assert decide([_reading("low", (0.5,), positive=(0.1, 0.05, 0.2))], fail_above=0.5).outcome == "pass"


def test_an_instrument_that_fails_its_negative_control_does_not_decide() -> None:
    biased = _reading("biased", release=(0.5,), negative=(0.7, 0.6, 0.8))
    decision = decide([biased], fail_above=0.5)
    assert decision.outcome == "inconclusive" and decision.deciding == ()
    assert "BIASED failed its negative control" in decision.reasons[0]


def test_inconclusive_only_when_no_instrument_decides() -> None:
    blind = _reading("blind", release=(0.5,), positive=(0.5, 0.4, 0.6))
    biased = _reading("biased", release=(0.5,), negative=(0.3, 0.2, 0.4))
    broken = _reading("broken", release=None, positive=None, negative=None, status="unavailable")
    for fail_above in (None, 0.0, 0.5, 1.0):  # never a pass, whatever the gate
        decision = decide([blind, biased, broken], fail_above=fail_above)
        assert decision.outcome == "inconclusive" and decision.upper_bound is None
        assert len(decision.reasons) == 3
    assert decide([], fail_above=None).outcome == "inconclusive"
    good = _reading("good", release=(0.5, 0.45, 0.55))
    decision = decide([blind, biased, broken, good], fail_above=None)
    assert (decision.outcome, decision.deciding, decision.told_apart_by) == ("conclusive", ("good",), ())
    assert len(decision.reasons) == 3  # why the others do not decide is still said
    # one that passes its controls but measured no release does not decide either
    decision = decide([_reading("no_release", release=None)], fail_above=None)
    assert decision.outcome == "inconclusive"
    assert decision.reasons == ("NO_RELEASE passed its controls but measured no release comparison",)


def test_an_instrument_that_passes_its_controls_and_separates_the_release_decides_whatever_a_blind_one_says(
) -> None:
    blind = _reading("blind", release=(0.5, 0.5, 0.5), positive=(0.5, 0.5, 0.5))  # the gate alone would pass
    seer = _reading("seer", release=(0.9, 0.85, 0.95))
    for order in ([blind, seer], [seer, blind]):
        decision = decide(order, fail_above=0.5)
        assert (decision.outcome, decision.deciding, decision.told_apart_by) == ("fail", ("seer",), ("seer",))
        assert (decision.upper_bound, decision.bound_by) == (pytest.approx(0.9), "seer")
    decision = decide([blind, seer], fail_above=None)
    assert decision.outcome == "conclusive" and decision.told_apart_by == ("seer",)
    text = headline(decision, {"seer": "Seer", "blind": "Blind"})
    assert text.startswith("The release is told apart from real data by Seer")


def test_the_gate_reads_the_largest_upper_bound_of_d_over_deciding_instruments() -> None:
    a = _reading("a", release=(0.55, 0.45, 0.65))  # D 0.1, upper 0.3
    b = _reading("b", release=(0.4, 0.3, 0.5))  # D 0.2, upper 0.4: the larger bound, below chance
    ignored = _reading("ignored", release=(1.0, 1.0, 1.0), positive=(0.5, 0.45, 0.55))  # blind: not counted
    decision = decide([a, b, ignored], fail_above=0.5)
    assert (decision.outcome, decision.upper_bound, decision.bound_by) == ("pass", pytest.approx(0.4), "b")
    assert decision.deciding == ("a", "b") and decision.told_apart_by == ()
    assert decide([a, b, ignored], fail_above=0.39).outcome == "fail"
    assert decide([a, b, ignored], fail_above=0.4).outcome == "pass"  # the bound itself is not above
    # a deciding instrument without an interval bounds nothing: it counts as 1
    unsure = _reading("unsure", release=(0.5,))
    unsure.comparisons[RELEASE] = Comparison(RELEASE, 0.5, None, None, None, 10, 10)
    decision = decide([a, unsure], fail_above=0.99)
    assert (decision.outcome, decision.upper_bound, decision.bound_by) == ("fail", 1.0, "unsure")


def test_headline_and_as_dict_state_the_outcome() -> None:
    titles = {"a": "A", "blind": "Blind"}
    passed = decide([_reading("a", (0.55, 0.45, 0.65))], fail_above=EXAMPLE_THRESHOLD)
    assert headline(passed, titles) == ("PASS: No instrument that passed its controls (A) told the release apart "
                                        "from real data; largest 95 % upper bound of D 0.30 (A) ≤ --fail-above 0.5.")
    failed = decide([_reading("a", (0.9, 0.8, 1.0))], fail_above=EXAMPLE_THRESHOLD)
    assert headline(failed, titles).startswith("FAIL: The release is told apart from real data by A; "
                                               "largest 95 % upper bound of D 1.00 (A) > --fail-above 0.5")
    none = decide([_reading("blind", (0.5,), positive=(0.5,))], fail_above=EXAMPLE_THRESHOLD)
    assert headline(none, titles).startswith("INCONCLUSIVE: no instrument passed its controls")
    record = passed.as_dict()
    assert record["outcome"] == "pass" and record["fail_above"] == 0.5 and record["deciding"] == ["a"]
    assert "0 = indistinguishable from real data, 1 = every sample told apart" in record["gate_statistic"]


@pytest.mark.parametrize(("auc", "low", "high", "expected"), [
    (0.7, 0.55, 0.85, (0.4, 0.1, 0.7)),  # above chance: as two-sided
    (0.6, 0.4, 0.8, (0.2, 0.0, 0.6)),
    (0.3, 0.16, 0.45, (0.0, 0.0, 0.0)),  # a classifier below chance has found nothing
    (0.45, 0.3, 0.6, (0.0, 0.0, 0.2)),
])
def test_a_one_sided_score_counts_only_separation_upwards(auc: float, low: float, high: float,
                                                         expected: tuple[float, float, float]) -> None:
    assert discrimination(auc, low, high, one_sided=True) == pytest.approx(expected)
    assert discrimination(0.3, None, None, one_sided=True) == (0.0, None, None)
    below = Comparison(NEGATIVE, auc, low, high, None, 100, 100, one_sided=True)
    assert below.separated is (expected[1] > 0) and below.as_dict()["one_sided"] is True
    # a C2ST of real rows against real rows below chance (seen on 100 vs 100 rows) does not fail its control
    reading = _reading("c2st", release=(0.9, 0.85, 0.95))
    reading.comparisons[NEGATIVE] = Comparison(NEGATIVE, 0.30, 0.16, 0.45, None, 100, 100, one_sided=True)
    assert control_check(reading) == (True, [])


def test_too_few_units_neither_separate_nor_vouch() -> None:
    from llmdisc.audit.instruments.base import MIN_UNITS

    few = MIN_UNITS - 1

    def tiny(group: str, auc: float, n: int = few) -> Comparison:
        return Comparison(group, auc, auc, auc, None, n, n)  # one sample each: a zero-width interval

    lucky = Reading(instrument="llm", title="LLM", unit="20-row samples", comparisons={
        RELEASE: tiny(RELEASE, 1.0), POSITIVE: tiny(POSITIVE, 1.0), NEGATIVE: tiny(NEGATIVE, 0.5)})
    assert not lucky.comparisons[POSITIVE].separated  # AUC 1 with a zero-width interval, but on 4 vs 4
    passed, reasons = control_check(lucky)
    assert not passed and reasons == [
        f"LLM: too few 20-row samples to judge its positive control (AUC 1.00 (95 % CI 1.00–1.00), n = {few} vs "
        f"{few}; at least {MIN_UNITS} per side are needed)",
        f"LLM: too few 20-row samples to judge its negative control (AUC 0.50 (95 % CI 0.50–0.50), n = {few} vs "
        f"{few}; at least {MIN_UNITS} per side are needed)"]
    assert decide([lucky], fail_above=0.5).outcome == "inconclusive"  # whatever the figures
    # enough units for the controls, too few of the release: it does not decide either
    release_few = _reading("x", release=(0.5,))
    release_few.comparisons[RELEASE] = tiny(RELEASE, 0.5)
    decision = decide([release_few], fail_above=0.5)
    assert decision.outcome == "inconclusive" and "too few rows of the release to decide" in decision.reasons[0]
    enough = _reading("y", release=(0.5,))
    enough.comparisons[RELEASE] = tiny(RELEASE, 0.5, n=MIN_UNITS)
    assert decide([enough], fail_above=None).outcome == "conclusive"
    # it decides, but MIN_UNITS units cannot vouch for a release at the example threshold
    gated = decide([enough], fail_above=0.5)
    assert gated.outcome == "inconclusive" and gated.deciding == ("y",) and gated.vouching == ()


def _sized(name: str, release: tuple, n: int) -> Reading:
    reading = _reading(name, release=release)
    reading.comparisons[RELEASE] = Comparison(RELEASE, *release, None, n, n)
    return reading


def test_only_an_instrument_with_enough_units_vouches_for_a_pass_but_a_small_one_can_fail_a_release() -> None:
    from llmdisc.audit.decision import can_vouch, units_to_vouch

    assert units_to_vouch(0.5) == 22  # 20-row samples: the embedded model's 10 or 20 per group are too few
    assert (units_to_vouch(0.3), units_to_vouch(0.08), units_to_vouch(0)) == (59, 818, None)
    strict = decide([_sized("joint", (0.5, 0.4, 0.6), 10_000)], fail_above=0.0)
    assert strict.outcome == "inconclusive" and "(no number of units can)" in strict.reasons[0]
    assert can_vouch(Comparison(RELEASE, 0.5, 0.4, 0.6, None, 22, 22), 0.5)
    assert not can_vouch(Comparison(RELEASE, 0.5, 0.4, 0.6, None, 21, 21), 0.5)
    rows = _sized("c2st", (0.51, 0.49, 0.53), 3000)  # a fresh release read on rows: D ≤ 0.06
    samples = _sized("joint", (0.62, 0.36, 0.88), 10)  # at chance on 10 samples: D's upper bound 0.76
    fresh = decide([rows, samples], fail_above=EXAMPLE_THRESHOLD)
    assert fresh.outcome == "pass" and fresh.vouching == ("c2st",) and fresh.bound_by == "c2st"
    assert any(r.startswith("JOINT: 10 vs 10 rows are too few to vouch for D below 0.5 (it takes 22 per side)")
               for r in fresh.reasons)
    # the small instrument is sure the release is above the threshold (lower bound of D 0.8): it fails it alone
    found = _sized("joint", (0.05, 0.0, 0.1), 10)
    failed = decide([rows, found], fail_above=EXAMPLE_THRESHOLD)
    assert failed.outcome == "fail" and failed.sure_above == ("joint",) and failed.bound_by == "c2st"
    assert headline(failed, {}).endswith("the 95 % lower bound of D of joint is above --fail-above 0.5.")
    # with only small instruments and nothing sure, the gate cannot be passed
    alone = decide([samples], fail_above=EXAMPLE_THRESHOLD)
    assert alone.outcome == "inconclusive" and alone.upper_bound is None
    assert headline(alone, {}).startswith("INCONCLUSIVE: No instrument that passed its controls (joint) told the "
                                          "release apart from real data, but none has enough units to vouch")
    # without a gate every deciding instrument bounds D, as before
    assert decide([rows, samples], fail_above=None).bound_by == "joint"


def test_the_report_tells_controls_measured_on_too_few_units_from_failed_ones() -> None:
    from llmdisc.audit.instruments.base import MIN_UNITS
    from llmdisc.audit.report import _controls_word

    few = Reading(instrument="joint", title="Joint", unit="20-row samples", status="stopped", comparisons={
        RELEASE: Comparison(RELEASE, 1.0, 1.0, 1.0, None, 3, 3),
        POSITIVE: Comparison(POSITIVE, 0.0, 0.0, 0.0, None, MIN_UNITS - 1, MIN_UNITS - 1),
        NEGATIVE: Comparison(NEGATIVE, 0.5, 0.2, 0.8, None, MIN_UNITS, MIN_UNITS)})
    cut = few.as_dict()
    assert not cut["controls_passed"] and not cut["controls_judged"]
    assert _controls_word(cut) == "too few samples to judge its controls"
    blind = _reading("x", release=(0.5,), positive=(0.5, 0.4, 0.6)).as_dict()  # enough units, misses the control
    assert not blind["controls_passed"] and blind["controls_judged"]
    assert _controls_word(blind) == "failed its controls"
    assert _reading("y", release=(0.5,)).as_dict()["controls_judged"]


def test_samples_drawn_from_a_small_table_count_for_the_rows_they_share() -> None:
    from llmdisc.audit.decision import can_vouch
    from llmdisc.audit.instruments.samples import effective_samples, shared_rows_comparison, shared_rows_note
    from llmdisc.errors import DataError

    # a group mean's variance σ²·n·(f + (1 − f)/s), f = n / pool: checked against its closed form
    assert effective_samples(20, 97, 20) == pytest.approx(1 / (20 / 97 + (1 - 20 / 97) / 20))
    assert effective_samples(20, 97, 20) < 97 / 20  # never more than the pool's disjoint samples
    assert effective_samples(20, 20, 20) == 1.0  # every sample is the whole pool
    assert effective_samples(20, 1_000_000, 20) == pytest.approx(20, rel=1e-3)  # a large pool: independent
    with pytest.raises(DataError, match="each must be at least 1"):
        effective_samples(0, 97, 20)

    drawn = Comparison(NEGATIVE, 0.28, 0.10, 0.46, 0.01, 20, 10)
    assert shared_rows_comparison(drawn, 30_000, 30_000, 20) is drawn  # nearly independent: unchanged
    shared = shared_rows_comparison(drawn, 97, 97, 20)
    e1, e2 = shared.effective
    assert (e1, e2) == (pytest.approx(effective_samples(20, 97, 20)), pytest.approx(effective_samples(10, 97, 20)))
    factor = ((1 / e1 + 1 / e2) / (1 / 20 + 1 / 10)) ** 0.5
    assert shared.auc_low == pytest.approx(max(0.0, 0.28 - 0.18 * factor))
    assert shared.auc_high == pytest.approx(0.28 + 0.18 * factor)
    assert shared.p_value > drawn.p_value and shared.auc == drawn.auc
    assert not shared.enough and not shared.separated  # worth fewer than MIN_UNITS a side
    reading = _reading("joint", release=(0.5,))
    reading.unit = "20-row samples"
    reading.comparisons[NEGATIVE] = shared
    view = reading.as_dict()
    assert not view["controls_passed"] and not view["controls_judged"]  # unjudged, not "biased"
    assert "(sharing rows: worth 4.1 vs 3.5)" in view["control_reasons"][0]
    assert view["comparisons"][NEGATIVE]["effective_real"] == pytest.approx(e1, abs=0.01)
    # the gate reads what the samples are worth: 30 samples from 600-row pools do not vouch at 0.5
    big = Comparison(RELEASE, 0.5, 0.4, 0.6, 0.9, 30, 30)
    assert can_vouch(big, 0.5) and not can_vouch(shared_rows_comparison(big, 600, 600, 20), 0.5)
    note = shared_rows_note({NEGATIVE: (e1, e2)}, {"real": 97, NEGATIVE: 97}, 20, 20)
    assert "real class 97" in note and "4.1 vs 3.5" in note and "3,420 rows" in note
