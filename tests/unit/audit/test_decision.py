"""The audit's outcome rule (only instruments that pass their controls decide) and the gate statistic D, on
hand-built readings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

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
    # its interval reaches 0: no direction is claimed for it
    assert reasons[0] == ("A missed its positive control (rows with every column shuffled: D 0.10 [0.00, 0.30], not "
                          "told apart, n = 100 vs 100): it is blind to what that control breaks")
    assert reasons[1].startswith("A failed its negative control (real rows against real rows: D 0.60 [0.40, 0.80]")
    assert control_check(_reading("a", (0.5,), positive=None))[1] == ["A: no positive control measured"]
    assert control_check(_reading("a", (0.5,), negative=(None,)))[1] == ["A: no negative control measured"]
    assert control_check(_reading("a", (0.5,), status="unavailable")) == (False, ["A: unavailable"])
    # stopped early, the controls it measured still count
    assert control_check(_reading("a", (0.5,), status="stopped")) == (True, [])
    # stopped before it measured anything: the stop is named, once, not as two missing controls
    stopped = Reading(instrument="a", title="A", unit="rows", status="stopped",
                      reason="--max-minutes reached before it started")
    assert control_check(stopped) == (False, ["A: stopped (--max-minutes reached before it started)"])


def test_an_instrument_that_misses_its_positive_control_does_not_decide() -> None:
    blind = _reading("blind", release=(1.0,), positive=(0.52, 0.45, 0.6))  # it "sees" the release only
    decision = decide([blind], fail_above=0.5)
    assert decision.outcome == "inconclusive" and decision.deciding == () and decision.upper_bound is None
    assert decision.reasons[0].startswith("BLIND missed its positive control")


def test_a_positive_control_passes_only_in_its_expected_direction_and_above_the_effect_needed() -> None:
    wrong_way = _reading("low", (0.5,), positive=(0.1, 0.05, 0.2))  # expects higher, reads lower
    passed, reasons = control_check(wrong_way)
    assert not passed and "reads its positive control the wrong way" in reasons[0]
    assert "expected: scores higher" in reasons[0]
    wrong_way.expected_direction = "lower"  # the same figures for an instrument built to read lower
    assert control_check(wrong_way) == (True, [])
    assert decide([wrong_way], fail_above=0.5).outcome == "pass"
    # a weak control (Census codes' joint contrast: AUC 0.305 [0.17, 0.48] on 20 vs 20) is separated, the right
    # way, but its lower bound (D 0.03) is below the 0.52 a release comparison of 20 vs 20 needs to be seen: of a
    # release it does not tell apart it cannot say anything
    weak = Reading(instrument="joint", title="Joint", unit="20-row samples", expected_direction="lower",
                   directions=("less structured", "more structured"), comparisons={
                       RELEASE: Comparison(RELEASE, 0.45, 0.27, 0.63, 0.6, 20, 20),
                       POSITIVE: Comparison(POSITIVE, 0.305, 0.17, 0.48, 0.03, 20, 20),
                       NEGATIVE: Comparison(NEGATIVE, 0.49, 0.31, 0.67, 0.9, 20, 20)})
    assert weak.comparisons[POSITIVE].separated
    passed, reasons = control_check(weak)
    assert not passed and "reaches D 0.39 [0.03, 0.66], less structured" in reasons[0]
    assert "not above the D 0.52 the release comparison needs" in reasons[0]
    assert weak.as_dict()["controls_judged"]  # judged, and failed: it cannot say a release was not seen
    # a release it does tell apart needs only that it sees its control the right way (and is unbiased)
    weak.comparisons[RELEASE] = Comparison(RELEASE, 0.1, 0.02, 0.2, 0.001, 20, 20)
    assert control_check(weak) == (True, [])
    assert decide([weak], fail_above=None).told_apart_by == ("joint",)


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
    unsure.comparisons[RELEASE] = Comparison(RELEASE, 0.5, None, None, None, 100, 100)
    decision = decide([a, unsure], fail_above=0.7)
    assert (decision.outcome, decision.upper_bound, decision.bound_by) == ("fail", 1.0, "unsure")


def test_headline_and_as_dict_state_the_outcome() -> None:
    titles = {"a": "A", "blind": "Blind"}
    passed = decide([_reading("a", (0.55, 0.45, 0.65))], fail_above=EXAMPLE_THRESHOLD)
    assert headline(passed, titles) == ("PASS: No instrument that passed its controls (A) told the release apart "
                                        "from real data; largest 95 % upper bound of D 0.30 (A) ≤ --fail-above 0.5.")
    failed = decide([_reading("a", (0.9, 0.85, 0.95))], fail_above=EXAMPLE_THRESHOLD)
    assert headline(failed, titles).startswith("FAIL: The release is told apart from real data by A; "
                                               "largest 95 % upper bound of D 0.90 (A) > --fail-above 0.5")
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
    assert not lucky.comparisons[POSITIVE].separated  # AUC 1, but on 4 vs 4
    # the given zero-width interval is widened to the score interval at 4 vs 4: a perfect split of 4 is not sure
    assert lucky.comparisons[POSITIVE].auc_low == pytest.approx(0.58, abs=0.01)
    passed, reasons = control_check(lucky)
    assert not passed and reasons == [
        f"LLM: too few 20-row samples to judge its positive control (AUC 1.00 (95 % CI 0.58–1.00), n = {few} vs "
        f"{few}; at least {MIN_UNITS} per side are needed)",
        f"LLM: too few 20-row samples to judge its negative control (AUC 0.50 (95 % CI 0.18–0.82), n = {few} vs "
        f"{few}; at least {MIN_UNITS} per side are needed)"]
    assert decide([lucky], fail_above=0.5).outcome == "inconclusive"  # whatever the figures
    # enough units for the controls, too few of the release: it does not decide either
    release_few = _reading("x", release=(0.5,))
    release_few.comparisons[RELEASE] = tiny(RELEASE, 0.5)
    decision = decide([release_few], fail_above=0.5)
    assert decision.outcome == "inconclusive" and "too few rows of the release to decide" in decision.reasons[0]
    # MIN_UNITS release units are enough to be read, but nothing below D 1 could be detected at 5 vs 5, so no
    # positive control can show the instrument would see it: it does not decide
    bare = _reading("y", release=(0.5,))
    bare.comparisons[RELEASE] = tiny(RELEASE, 0.5, n=MIN_UNITS)
    assert decide([bare], fail_above=None).outcome == "inconclusive"
    enough = _reading("y", release=(0.5,))
    enough.comparisons[RELEASE] = tiny(RELEASE, 0.5, n=20)
    assert decide([enough], fail_above=None).outcome == "conclusive"
    # it decides, but 20 units cannot vouch for a release at the example threshold (24 can)
    gated = decide([enough], fail_above=0.5)
    assert gated.outcome == "inconclusive" and gated.deciding == ("y",) and gated.vouching == ()


def _sized(name: str, release: tuple, n: int) -> Reading:
    """A reading whose release and controls are all measured on ``n`` units a side (controls at their figures)."""
    reading = _reading(name, release=release)
    reading.comparisons[RELEASE] = Comparison(RELEASE, *release, None, n, n)
    for group, auc in ((POSITIVE, SEES_SHUFFLED[0]), (NEGATIVE, AT_CHANCE[0])):
        reading.comparisons[group] = Comparison(group, auc, auc, auc, None, n, n)
    return reading


def test_only_an_instrument_with_enough_units_vouches_for_a_pass_but_a_small_one_can_fail_a_release() -> None:
    from llmdisc.audit.decision import units_to_vouch, vouch_reason

    # a release at chance passes at least 4 times in 5 from these sizes (score interval; simulated below)
    assert units_to_vouch(0.5) == 24
    assert (units_to_vouch(0.3), units_to_vouch(0.08), units_to_vouch(0)) == (74, 1090, None)
    strict = decide([_sized("joint", (0.5, 0.49, 0.51), 10_000)], fail_above=0.0)
    assert strict.outcome == "inconclusive" and "would pass at --fail-above 0 only 0 % of the time" in strict.reasons[0]
    positive = _c(POSITIVE, *SEES_SHUFFLED)
    assert vouch_reason(Comparison(RELEASE, 0.5, 0.4, 0.6, None, 24, 24), positive, 0.5, "J", "samples",
                        ("lower", "higher")) is None
    assert "only 7" in vouch_reason(Comparison(RELEASE, 0.5, 0.4, 0.6, None, 23, 23), positive, 0.5, "J",
                                    "samples", ("lower", "higher"))
    rows = _sized("c2st", (0.51, 0.49, 0.53), 3000)  # a fresh release read on rows: D ≤ 0.06
    samples = _sized("joint", (0.62, 0.36, 0.88), 20)  # at chance on 20 samples: D's upper bound 0.76
    fresh = decide([rows, samples], fail_above=EXAMPLE_THRESHOLD)
    assert fresh.outcome == "pass" and fresh.vouching == ("c2st",) and fresh.bound_by == "c2st"
    assert any(r.startswith("JOINT: at 20 vs 20 rows a release at chance would pass at --fail-above 0.5 only")
               and "(it takes 24 per side for 80 %)" in r for r in fresh.reasons)
    assert fresh.gate["c2st"]["pass_probability_at_chance"] > 0.99 and fresh.gate["c2st"]["vouches"]
    assert fresh.gate["joint"]["vouches"] is False and fresh.gate["joint"]["fail_probability_at_D"] == 0.75
    # the small instrument is sure the release is above the threshold (lower bound of D above 0.5): it fails it
    found = _sized("joint", (0.05, 0.0, 0.1), 20)
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


def _planted(n: int, true_d: float, rng: np.random.Generator) -> Comparison:
    """The release comparison of an instrument whose scores are planted: normal, shifted to a true D."""
    from llmdisc.scoring.auc import auc_with_interval

    shift = np.sqrt(2) * stats.norm.ppf(0.5 + true_d / 2)
    estimate = auc_with_interval(np.r_[np.zeros(n), np.ones(n)], np.r_[rng.normal(size=n), rng.normal(shift, size=n)])
    return Comparison(RELEASE, estimate.value, estimate.ci_low, estimate.ci_high, None, n, n)


def test_the_gates_error_rates_are_what_it_states_on_planted_scores() -> None:
    from llmdisc.audit.decision import units_to_vouch

    rng = np.random.default_rng(0)
    for threshold in (0.5, 0.3):
        n = units_to_vouch(threshold)

        def outcomes(true_d: float, runs: int = 2000) -> list[str]:
            return [decide([_reading_with(_planted(n, true_d, rng))], fail_above=threshold).outcome
                    for _ in range(runs)]

        at_chance = outcomes(0.0)
        assert set(at_chance) <= {"pass", "fail"}  # it vouches: never inconclusive
        assert at_chance.count("pass") / len(at_chance) >= 0.8, threshold  # what the gate promises
        assert outcomes(threshold, 500).count("fail") / 500 >= 0.9  # at the threshold: held back
        assert outcomes(1.5 * threshold, 500).count("fail") / 500 >= 0.8  # its stated power
        assert set(outcomes(1.0, 50)) == {"fail"}  # a perfect split always fails
        stated = decide([_reading_with(_planted(n, 0.0, rng))], fail_above=threshold).gate["x"]
        assert stated["pass_probability_at_chance"] >= 0.8 and stated["fail_probability"] >= 0.8


def test_a_weak_instrument_does_not_vouch_however_many_units_it_has() -> None:
    # its positive control reaches only D 0.39 [0.30, 0.48] (400 samples a side): a release with its columns fully
    # independent could read at chance on it, so it must not vouch at 0.5 although a chance release is narrow there
    weak = _reading_with(Comparison(RELEASE, 0.51, 0.47, 0.55, None, 400, 400),
                         positive=Comparison(POSITIVE, 0.695, 0.65, 0.74, None, 400, 400))
    weak.comparisons[NEGATIVE] = Comparison(NEGATIVE, 0.5, 0.5, 0.5, None, 400, 400)  # at chance, judged
    decision = decide([weak], fail_above=0.5)
    assert decision.outcome == "inconclusive" and decision.vouching == ()
    assert "its positive control shows D 0.39 [0.30, 0.48]" in decision.reasons[0]
    assert decision.gate["x"]["pass_probability_at_chance"] > 0.99  # size alone would have vouched
    assert decide([weak], fail_above=0.25).vouching == ("x",)  # its control does show more than 0.25


def _reading_with(release: Comparison, positive: Comparison | None = None) -> Reading:
    reading = _reading("x", release=(0.5,))
    reading.comparisons[RELEASE] = release
    # a negative control whose interval is the score interval: the gate reads the instrument's width there
    reading.comparisons[NEGATIVE] = Comparison(NEGATIVE, 0.5, 0.5, 0.5, None, 100, 100)
    if positive is not None:
        reading.comparisons[POSITIVE] = positive
    return reading


def test_the_report_tells_controls_measured_on_too_few_units_from_failed_ones() -> None:
    from llmdisc.audit.instruments.base import MIN_UNITS
    from llmdisc.audit.report import _controls_word

    few = Reading(instrument="joint", title="Joint", unit="20-row samples", status="stopped", comparisons={
        RELEASE: Comparison(RELEASE, 1.0, 1.0, 1.0, None, 3, 3),
        POSITIVE: Comparison(POSITIVE, 0.0, 0.0, 0.0, None, MIN_UNITS - 1, MIN_UNITS - 1),
        NEGATIVE: Comparison(NEGATIVE, 0.5, 0.2, 0.8, None, MIN_UNITS, MIN_UNITS)})
    cut = few.as_dict()
    assert not cut["controls_passed"] and not cut["controls_judged"]
    assert _controls_word(cut) == "its controls unjudged"
    blind = _reading("x", release=(0.5,), positive=(0.5, 0.4, 0.6)).as_dict()  # enough units, misses the control
    assert not blind["controls_passed"] and blind["controls_judged"]
    assert _controls_word(blind) == "failed its controls"
    assert _reading("y", release=(0.5,)).as_dict()["controls_judged"]


def test_samples_drawn_from_a_small_table_count_for_the_rows_they_share() -> None:
    from llmdisc.audit.decision import chance_pass_probability
    from llmdisc.audit.instruments.samples import effective_samples, shared_rows_comparison, shared_rows_note
    from llmdisc.errors import DataError

    # a group mean's variance σ²·n·(f + (1 − f)/s), f = n / pool: checked against its closed form
    assert effective_samples(20, 97, 20) == pytest.approx(1 / (20 / 97 + (1 - 20 / 97) / 20))
    assert effective_samples(20, 97, 20) < 97 / 20  # never more than the pool's disjoint samples
    assert effective_samples(20, 20, 20) == 1.0  # every sample is the whole pool
    assert effective_samples(20, 1_000_000, 20) == pytest.approx(20, rel=1e-3)  # a large pool: independent
    with pytest.raises(DataError, match="each must be at least 1"):
        effective_samples(0, 97, 20)

    from llmdisc.scoring.separation import auc_interval

    drawn = Comparison(NEGATIVE, 0.28, 0.10, 0.46, 0.01, 20, 10)
    assert shared_rows_comparison(drawn, 30_000, 30_000, 20) is drawn  # nearly independent: unchanged
    shared = shared_rows_comparison(drawn, 97, 97, 20)
    e1, e2 = shared.effective
    assert (e1, e2) == (pytest.approx(effective_samples(20, 97, 20)), pytest.approx(effective_samples(10, 97, 20)))
    # the score interval at what the samples are worth (wider than the one at 20 vs 10)
    assert (shared.auc_low, shared.auc_high) == pytest.approx(auc_interval(0.28, e1, e2))
    assert shared.auc_high - shared.auc_low > drawn.auc_high - drawn.auc_low
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
    assert chance_pass_probability(big, 0.5) >= 0.8 > chance_pass_probability(shared_rows_comparison(big, 600, 600, 20), 0.5)
    note = shared_rows_note({NEGATIVE: (e1, e2)}, {"real": 97, NEGATIVE: 97}, 20, 20)
    assert "real class 97" in note and "4.1 vs 3.5" in note and "3,420 rows" in note


def test_an_inconclusive_audit_says_what_would_make_it_conclusive() -> None:
    from llmdisc.audit.decision import next_step

    # a joint contrast whose control reads D 0.6 at 10 samples a group: it cannot clear the 0.74 that 10 vs 10 needs
    weak = _sized("joint", (0.5, 0.3, 0.7), 10)
    weak.unit = "20-row samples"
    weak.comparisons[POSITIVE] = Comparison(POSITIVE, 0.2, 0.2, 0.2, None, 10, 10)
    weak.expected_direction = "lower"
    decision = decide([weak], fail_above=None)
    assert decision.outcome == "inconclusive"
    (step,) = decision.next_steps
    size = int(step.split("pass at about ")[1].split()[0])
    assert step.endswith(f"--samples {size}") and "(now 10)" in step
    # at that size the same figures pass the control rule, one fewer they do not
    for n, passes in ((size, True), (size - 1, False)):
        grown = _sized("joint", (0.5, 0.3, 0.7), n)
        grown.comparisons[POSITIVE] = Comparison(POSITIVE, 0.2, 0.2, 0.2, None, n, n)
        grown.expected_direction = "lower"
        assert control_check(grown)[0] is passes, n
    # an instrument blind to the control is told to add another, not to grow
    blind = _reading("blind", (0.5,), positive=(0.52, 0.45, 0.6))
    assert "add an instrument that does" in next_step(blind)
    assert decide([blind], fail_above=None).as_dict()["next_steps"] == [next_step(blind)]
