"""The audit's outcome, decided by the instruments that pass their controls (:func:`decide`, by :data:`RULE`;
docs/audit.md, The decision): none deciding is **inconclusive**, never a pass. With ``--fail-above X`` an
instrument *vouches* at X when its positive control's D lower bound is above X and a release at chance would
pass with probability at least :data:`VOUCH_PASS_PROBABILITY`; the release fails when a vouching instrument's
upper bound of D, or any deciding instrument's lower bound, exceeds X, and passes when one vouches and none
fails. The paper's DRS = min(p_REAL, p_SYN) stays in the label-giving instruments' tables: another scale, not
the gate."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

from llmdisc.audit.instruments.base import (MIN_UNITS, NEGATIVE, NEGATIVE_MARGIN_FLOOR, POSITIVE, RELEASE,
                                           Comparison, Reading, auc_text, control_check, control_status,
                                           units_text)
from llmdisc.scoring.separation import auc_interval, null_standard_error
from llmdisc.scoring.separation import fail_probability as _fail_probability
from llmdisc.scoring.separation import pass_probability_at_chance as _pass_probability_at_chance

EXAMPLE_THRESHOLD = 0.5
"""The ``--fail-above`` the help, the report and the docs quote: D 0.5 is AUC 0.75, release units ranked above
real ones three times in four."""
VOUCH_PASS_PROBABILITY = 0.8
"""The least probability with which a release at chance must pass an instrument's gate for it to vouch."""
POWER_AT = 1.5
"""The gate's power is stated against a release at this multiple of the threshold."""


# pure functions of a threshold and two sizes, each a nested root search: cached, since the threshold scan
# (:mod:`llmdisc.audit.thresholds`) asks the same ones for every instrument and every reading of the gate
pass_probability_at_chance = functools.lru_cache(maxsize=8192)(_pass_probability_at_chance)
fail_probability = functools.lru_cache(maxsize=8192)(_fail_probability)
_score_interval = functools.lru_cache(maxsize=8192)(auc_interval)


def _inflation(comparison: Comparison) -> float:
    """How much wider the comparison's own interval is than the AUC's score interval at its units (>= 1): a
    fold-corrected C2ST interval is; the sample instruments' intervals are the score interval itself. Read best near
    chance (an interval clipped at 0 or 1 says little of its width), so the negative control is the one to pass."""
    if comparison.auc is None or comparison.auc_low is None or comparison.auc_high is None:
        return 1.0
    low, high = _score_interval(float(comparison.auc), *map(float, comparison.units))
    return max(1.0, (comparison.auc_high - comparison.auc_low) / (high - low)) if high > low else 1.0


def gate_probabilities(comparison: Comparison, threshold: float,
                       width_from: Comparison | None = None) -> tuple[float, float]:
    """``(pass_at_chance, fail_at)``: the probabilities that a release at chance passes the gate at ``threshold``
    on this comparison's units, and that one at D = :data:`POWER_AT` × ``threshold`` fails it, from the score
    interval. An interval r times wider (:func:`_inflation`, read on ``width_from``, the negative control, which
    sits near chance) is read as a normal AUC with r times the standard error."""
    n1, n2 = comparison.units
    if min(n1, n2) < 1:
        return 0.0, 1.0
    target = min(1.0, POWER_AT * threshold)
    r = max(_inflation(comparison), _inflation(width_from) if width_from is not None else 1.0)
    if r <= 1.0 + 1e-6:
        return pass_probability_at_chance(threshold, n1, n2), fail_probability(target, threshold, n1, n2)
    from scipy import stats

    se = r * null_standard_error(n1, n2)
    room = threshold / 2 - 1.96 * se
    if room <= 0:
        return 0.0, 1.0
    shift = target / 2
    inside = stats.norm.cdf((room - shift) / se) - stats.norm.cdf((-room - shift) / se)
    return float(2 * stats.norm.cdf(room / se) - 1), float(1 - inside)


def chance_pass_probability(comparison: Comparison, threshold: float, width_from: Comparison | None = None) -> float:
    """The probability that a release at chance passes the gate at ``threshold`` (:func:`gate_probabilities`)."""
    return gate_probabilities(comparison, threshold, width_from)[0]


def vouch_reason(release: Comparison, positive: Comparison | None, threshold: float, title: str,
                 unit: str, directions: tuple[str, str], negative: Comparison | None = None) -> str | None:
    """Why an instrument cannot vouch for a pass at ``threshold`` (None: it can): its positive control does not
    show D above the threshold, or a release at chance would pass it less than 4 times in 5 at its units."""
    low = None if positive is None else positive.discrimination[1]
    if low is None or low <= threshold:
        shown = ("measured no positive control" if positive is None
                 else f"its positive control shows {positive.words(*directions)}, a lower bound not above "
                      f"{threshold:g}")
        return (f"{title}: {shown}, so it has not shown it would see a release at the threshold; it can only find "
                "the release out")
    chance = chance_pass_probability(release, threshold, negative)
    if chance < VOUCH_PASS_PROBABILITY:
        need = units_to_vouch(threshold)
        return (f"{title}: at {units_text(release)} {unit} a release at chance would pass at --fail-above "
                f"{threshold:g} only {100 * chance:.0f} % of the time (it takes "
                + (f"{need} per side for 80 %" if need else "more units than any audit has") +
                "); it can only find the release out")
    return None


def _first_size(ok: Any, start: int, limit: int = 100_000) -> int | None:
    """The smallest n in [start, limit] with ``ok(n)`` (doubling, then bisection; ``ok`` monotone), else None."""
    if ok(start):
        return start
    low, high = start, start * 2
    while not ok(high):
        low, high = high, high * 2
        if high > limit:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


@functools.lru_cache(maxsize=1024)
def units_to_vouch(threshold: float) -> int | None:
    """The fewest units per side (equal sides, score interval) at which a release at chance passes the gate at
    ``threshold`` with probability >= :data:`VOUCH_PASS_PROBABILITY` (None at 0 or past a million)."""
    if threshold <= 0:
        return None
    return _first_size(lambda n: pass_probability_at_chance(threshold, n, n) >= VOUCH_PASS_PROBABILITY, 2,
                       limit=1_000_000)


GATE_SENTENCE = ("D = 2·|AUC − 0.5| of each instrument that passed its controls: 0 = indistinguishable from real "
                 "data, 1 = every sample told apart; --fail-above reads its 95 % upper bound (example: "
                 f"--fail-above {EXAMPLE_THRESHOLD:g} fails a release that some instrument may rank above real data "
                 "more than three times in four); an instrument vouches for a pass only when its positive control's D "
                 "lower bound exceeds the threshold and a release at chance would pass it at least 4 times in 5 "
                 f"({units_to_vouch(EXAMPLE_THRESHOLD)} units per side at 0.5); a smaller one can only fail a "
                 "release")
RULE = ("an instrument decides when it passed its controls (it tells the shuffled-columns control apart in its "
        "expected direction by more than the D the release comparison could detect, and real vs real is shown at "
        "chance within that D); the audit is inconclusive when none decides; otherwise the release is told apart "
        "when a deciding instrument separates it (D's 95 % lower bound above 0); with --fail-above X it fails when "
        "the 95 % upper bound of D of an instrument that vouches at X exceeds it (vouching: its positive control's "
        "D lower bound above X, and a release at chance passing it with probability >= 0.8), or when any deciding "
        "instrument's lower bound does, passes when some instrument vouches and none fails, and is inconclusive "
        "when none can vouch")


def _flag(reading: Reading, size: int) -> str:
    """The option that gives ``reading``'s instrument ``size`` units a side."""
    if reading.instrument.startswith("llm"):
        return f"--trials-per-label {size}"
    if reading.unit == "rows":
        return f"about {size:,} real and synthetic rows a side (--max-rows, or a larger real table)"
    return f"--samples {size}"


def next_step(reading: Reading) -> str | None:
    """What would let an instrument that does not decide decide: the size at which both its controls would pass at
    the figures they read, or another instrument when it does not see the positive control at all. None when it
    decides or cannot run."""
    from llmdisc.scoring.separation import equivalent_to_chance, minimum_detectable_separation, separation

    status, _ = control_status(reading)
    if status == "passed" or reading.status not in ("measured", "stopped"):
        return None
    positive, negative = reading.comparisons.get(POSITIVE), reading.comparisons.get(NEGATIVE)
    if positive is None or positive.auc is None:
        return None
    d = positive.discrimination[0] or 0.0
    right_way = (positive.auc > 0.5) == (reading.expected_direction == "higher")
    if d < 0.2 or not right_way:
        return (f"{reading.title} does not see the shuffled-columns control (D {d:.2f}); more samples will not help: "
                "add an instrument that does (the C2ST sees it on rows)")
    auc = positive.auc
    release = reading.comparisons.get(RELEASE)
    release_low = (release.discrimination[1] or 0.0) if release is not None and release.auc is not None else 0.0

    def positive_ok(n: int) -> bool:
        return separation(auc, *auc_interval(auc, n, n)).low > minimum_detectable_separation(n, n)

    def negative_ok(n: int) -> bool:
        if negative is None or negative.auc is None:
            return True
        margin = max(minimum_detectable_separation(n, n), release_low, NEGATIVE_MARGIN_FLOOR)
        return equivalent_to_chance(negative.auc, n, n, margin)

    now = int(min(positive.units))
    size = _first_size(lambda n: positive_ok(n) and negative_ok(n), max(now, MIN_UNITS))
    if size is None:
        return f"{reading.title}: no size this audit can reach would let its controls pass at the figures it read"
    shared = positive.effective is not None
    return (f"{reading.title}: at the separations its controls showed, they would pass at about {size} independent "
            f"{reading.unit} a group (now {now}): " + ("a larger real table (its samples share rows)" if shared
                                                         else _flag(reading, size)))


@dataclass(frozen=True)
class Decision:
    """What the audit concludes: ``outcome`` (``pass``, ``fail``, ``inconclusive`` or ``conclusive``: decided,
    without a gate); ``deciding``, the instruments that passed their controls, and ``told_apart_by``, those
    that separate the release; ``upper_bound``, the largest 95 % upper bound of D over the deciding
    instruments — with a gate, over those that vouch at it (None when there are none; 1.0 for an instrument
    without an interval) — and its ``bound_by``; ``reasons`` why an instrument does not decide, or cannot
    vouch (one sentence each). With a gate: ``vouching`` (:func:`vouch_reason`), ``sure_above`` (95 % *lower*
    bound of D above it) and ``gate``, per deciding instrument ``pass_probability_at_chance``,
    ``fail_probability`` at D = ``fail_probability_at_D`` (:func:`gate_probabilities`) and whether it
    ``vouches``. ``next_steps``: what would make an inconclusive audit conclusive (:func:`next_step`,
    :func:`units_to_vouch`)."""

    outcome: str
    deciding: tuple[str, ...]
    told_apart_by: tuple[str, ...]
    upper_bound: float | None
    bound_by: str | None
    fail_above: float | None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    vouching: tuple[str, ...] = field(default_factory=tuple)
    sure_above: tuple[str, ...] = field(default_factory=tuple)
    gate: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_steps: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, with the rule and the gate statistic in words."""
        return {"outcome": self.outcome, "deciding": list(self.deciding), "told_apart_by": list(self.told_apart_by),
                "upper_bound": self.upper_bound, "bound_by": self.bound_by, "fail_above": self.fail_above,
                "vouching": list(self.vouching), "sure_above": list(self.sure_above), "gate": self.gate,
                "next_steps": list(self.next_steps),
                "reasons": list(self.reasons), "gate_statistic": GATE_SENTENCE, "rule": RULE}


def decide(readings: Sequence[Reading], *, fail_above: float | None, next_steps: bool = True) -> Decision:
    """Apply the rule of the module docstring to the readings (``next_steps``: also say what would make an
    inconclusive outcome conclusive; :mod:`llmdisc.audit.thresholds` scans thresholds without)."""
    deciding, reasons, told, bounds, vouching, sure = [], [], [], [], [], []
    gate: dict[str, dict[str, Any]] = {}
    for reading in readings:
        release = reading.comparisons.get(RELEASE)
        if release is not None and release.auc is not None and not release.enough:
            # first: the effect its controls are judged against is the release comparison's, undefined here
            reasons.append(f"{reading.title}: too few {reading.unit} of the release to decide "
                           f"({auc_text(release)}; at least {MIN_UNITS} per side are needed)")
            continue
        passed, why = control_check(reading)
        if not passed:
            reasons += why
            continue
        if release is None or release.auc is None:
            reasons.append(f"{reading.title} passed its controls but measured no release comparison")
            continue
        deciding.append(reading.instrument)
        if release.separated:
            told.append(reading.instrument)
        _, low, high = release.discrimination
        high = 1.0 if high is None else float(high)
        negative = reading.comparisons.get(NEGATIVE)
        why_not = None if fail_above is None else vouch_reason(
            release, reading.comparisons.get(POSITIVE), fail_above, reading.title, reading.unit, reading.directions,
            negative)
        if fail_above is not None:
            chance, power = gate_probabilities(release, fail_above, negative)
            gate[reading.instrument] = {"pass_probability_at_chance": round(chance, 3),
                                        "fail_probability_at_D": round(min(1.0, POWER_AT * fail_above), 3),
                                        "fail_probability": round(power, 3), "vouches": why_not is None}
        if why_not is None:
            bounds.append((high, reading.instrument))
            if fail_above is not None:
                vouching.append(reading.instrument)
        else:
            reasons.append(why_not)
        if fail_above is not None and low is not None and low > fail_above:
            sure.append(reading.instrument)
    upper, bound_by = max(bounds) if bounds else (None, None)
    if not deciding:
        outcome = "inconclusive"
    elif fail_above is None:
        outcome = "conclusive"
    elif sure or (upper is not None and upper > fail_above):
        outcome = "fail"
    else:
        outcome = "pass" if vouching else "inconclusive"
    steps = []
    if outcome == "inconclusive" and next_steps:
        steps = [step for reading in readings if reading.instrument not in deciding
                 and (step := next_step(reading)) is not None]
        if fail_above is not None and deciding and not vouching:
            need = units_to_vouch(fail_above)
            steps.append(f"to vouch for a pass at --fail-above {fail_above:g} an instrument needs "
                         + (f"about {need} independent units a side" if need else "a threshold above 0")
                         + " and a positive control whose D lower bound is above the threshold")
    return Decision(outcome=outcome, deciding=tuple(deciding), told_apart_by=tuple(told), upper_bound=upper,
                    bound_by=bound_by, fail_above=fail_above, reasons=tuple(dict.fromkeys(reasons)),
                    vouching=tuple(vouching), sure_above=tuple(sure), gate=gate, next_steps=tuple(steps))


def headline(decision: Decision, titles: dict[str, str]) -> str:
    """The report's one verdict line."""
    def names(keys: Sequence[str]) -> str:
        return ", ".join(titles.get(k, k) for k in keys)

    if decision.outcome == "inconclusive" and not decision.deciding:
        return ("INCONCLUSIVE: no instrument passed its controls, so none can vouch for the release "
                "(see why below); this is not a pass.")
    if decision.told_apart_by:
        what = f"The release is told apart from real data by {names(decision.told_apart_by)}"
    else:
        what = (f"No instrument that passed its controls ({names(decision.deciding)}) told the release apart from "
                "real data")
    if decision.outcome == "inconclusive":
        return (f"INCONCLUSIVE: {what}, but none has enough units to vouch for D below --fail-above "
                f"{decision.fail_above:g} (see why below); this is not a pass.")
    bound = (f"largest 95 % upper bound of D {decision.upper_bound:.2f} ({titles.get(decision.bound_by, '')})"
             if decision.upper_bound is not None else "")
    if decision.outcome == "conclusive":
        return f"{what}; {bound}."
    if decision.outcome == "pass":
        return f"PASS: {what}; {bound} ≤ --fail-above {decision.fail_above:g}."
    if decision.upper_bound is not None and decision.upper_bound > decision.fail_above:
        return f"FAIL: {what}; {bound} > --fail-above {decision.fail_above:g}."
    return (f"FAIL: {what}; the 95 % lower bound of D of {names(decision.sure_above)} is above --fail-above "
            f"{decision.fail_above:g}.")
