"""The audit's outcome, decided by the instruments that pass their controls.

The gate statistic is the same for every instrument: the **discrimination** D = 2·|AUC − 0.5| of the release
against real data (:func:`llmdisc.audit.instruments.base.discrimination`): 0 = indistinguishable from real data,
1 = every sample (or row) told apart. ``--fail-above X`` reads D's 95 % upper bound.

The rule:

1. An instrument *decides* when it passed its controls: it told the shuffled-columns control from real data and
   did not tell real data from real data, each on at least :data:`~llmdisc.audit.instruments.base.MIN_UNITS`
   units per side (:func:`~llmdisc.audit.instruments.base.control_check`). An instrument blind to the positive
   control says nothing about a release, whatever it reads there.
2. **Inconclusive** when no instrument decides (never a pass, with or without ``--fail-above``).
3. Otherwise **conclusive**: the release is *told apart* when some deciding instrument separates it (D's lower
   bound above 0).
4. With ``--fail-above X``: a deciding instrument *can vouch* at X when it measured enough units that a release at
   chance would keep its 95 % upper bound of D below X four times in five (:func:`can_vouch`); a smaller one
   (20-row samples of the embedded model in a 10-minute audit) can still find a release out but cannot vouch
   for it. The release **fails** when a vouching instrument's upper bound of D exceeds X, or when any deciding
   instrument's *lower* bound does (it is sure the release is above X); it **passes** when at least one instrument
   vouches and none fails — so a pass means every instrument large enough to bound D at X bounds it below X, and
   no smaller one is sure of more. With no instrument able to vouch and none sure of a failure, the gate is
   **inconclusive** (exit 3, never a pass): run more samples (``--samples``) or rows.

Example threshold: :data:`EXAMPLE_THRESHOLD` (0.5: no instrument may rank release units above real ones more
than three times in four, AUC 0.75). The paper's DRS = min(p_REAL, p_SYN) stays in the tables of the instruments
that give labels: 0 for a discriminator that always says one label, about 0.5 for a coin, 1 when every sample
is labelled right — a different scale, not the gate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from llmdisc.audit.instruments.base import (MIN_UNITS, RELEASE, Comparison, Reading, auc_text, control_check,
                                           units_text)

OUTCOMES = ("pass", "fail", "inconclusive", "conclusive")
"""``conclusive`` = decided, without a gate to pass or fail."""
EXAMPLE_THRESHOLD = 0.5
VOUCH_Z = 1.96 + 0.84
"""z of the 95 % interval's bound plus z of 80 % power: how far D's upper bound at chance may spread (in standard
errors) and still sit below the threshold four times in five."""

GATE_SENTENCE = ("D = 2·|AUC − 0.5| of each instrument that passed its controls: 0 = indistinguishable from real "
                 "data, 1 = every sample told apart; --fail-above reads its 95 % upper bound (example: "
                 f"--fail-above {EXAMPLE_THRESHOLD:g} fails a release that some instrument may rank above real data "
                 "more than three times in four); only an instrument with enough units vouches for a pass (22 per "
                 "side at 0.5), a smaller one can only fail a release")
RULE = ("an instrument decides when it passed its controls (it detects the shuffled-columns control and sits at "
        "chance on real vs real); the audit is inconclusive when none decides; otherwise the release is told apart "
        "when a deciding instrument separates it (D's 95 % lower bound above 0); with --fail-above it fails when "
        "the 95 % upper bound of D of an instrument with enough units to vouch at the threshold exceeds it, or when "
        "any deciding instrument's lower bound does, passes when some instrument vouches and none fails, and is "
        "inconclusive when none can vouch")


def can_vouch(comparison: Comparison, threshold: float) -> bool:
    """True when ``comparison`` has enough units to bound D below ``threshold`` for a release at chance: 2 ×
    :data:`VOUCH_Z` × the AUC's standard error under no difference (Mann–Whitney: √((n₁ + n₂ + 1) / (12 n₁ n₂)))
    is at most ``threshold``. At 0.5 that takes 22 units per side (20-row samples); 1,000 rows per side vouch
    down to 0.08."""
    n1, n2 = comparison.units  # samples that share rows count for what they are worth
    return min(n1, n2) >= 1 and _spread_at_chance(n1, n2) <= threshold


def _spread_at_chance(n1: float, n2: float) -> float:
    """2 × :data:`VOUCH_Z` × the Mann–Whitney AUC's standard error under no difference, on D's scale."""
    return 2 * VOUCH_Z * math.sqrt((n1 + n2 + 1) / (12 * n1 * n2))


def units_to_vouch(threshold: float) -> int | None:
    """The fewest units per side (equal sides) with which an instrument can vouch at ``threshold`` (None at 0: no
    size can). Solves 2 × :data:`VOUCH_Z` × √((2n + 1) / (12 n²)) <= threshold for n."""
    if threshold <= 0:
        return None
    c = (threshold / (2 * VOUCH_Z)) ** 2
    n = math.ceil((2 + math.sqrt(4 + 48 * c)) / (24 * c))
    while n > 1 and _spread_at_chance(n - 1, n - 1) <= threshold:
        n -= 1  # guard against rounding up one too far
    return n


@dataclass(frozen=True)
class Decision:
    """What the audit concludes.

    Attributes:
        outcome: one of :data:`OUTCOMES`.
        deciding: the instruments that passed their controls.
        told_apart_by: the deciding instruments that separate the release.
        upper_bound: the largest 95 % upper bound of D over the deciding instruments — with a gate, over those
            that can vouch at it (None when there are none; 1.0 for an instrument without an interval).
        bound_by: the instrument that gives ``upper_bound``.
        fail_above: the threshold (None: no gate).
        reasons: why an instrument does not decide, or cannot vouch (one sentence each).
        vouching: with a gate, the deciding instruments with enough units to vouch at it (:func:`can_vouch`).
        sure_above: with a gate, the deciding instruments whose 95 % *lower* bound of D exceeds it.
    """

    outcome: str
    deciding: tuple[str, ...]
    told_apart_by: tuple[str, ...]
    upper_bound: float | None
    bound_by: str | None
    fail_above: float | None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    vouching: tuple[str, ...] = field(default_factory=tuple)
    sure_above: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, with the rule and the gate statistic in words."""
        return {"outcome": self.outcome, "deciding": list(self.deciding), "told_apart_by": list(self.told_apart_by),
                "upper_bound": self.upper_bound, "bound_by": self.bound_by, "fail_above": self.fail_above,
                "vouching": list(self.vouching), "sure_above": list(self.sure_above),
                "reasons": list(self.reasons), "gate_statistic": GATE_SENTENCE, "rule": RULE}


def decide(readings: Sequence[Reading], *, fail_above: float | None) -> Decision:
    """Apply the rule of the module docstring to the instruments' readings."""
    deciding, reasons, told, bounds, vouching, sure = [], [], [], [], [], []
    for reading in readings:
        passed, why = control_check(reading)
        if not passed:
            reasons += why
            continue
        release = reading.comparisons.get(RELEASE)
        if release is None or release.auc is None:
            reasons.append(f"{reading.title} passed its controls but measured no release comparison")
            continue
        if not release.enough:
            reasons.append(f"{reading.title}: too few {reading.unit} of the release to decide "
                           f"({auc_text(release)}; at least {MIN_UNITS} per side are needed)")
            continue
        deciding.append(reading.instrument)
        if release.separated:
            told.append(reading.instrument)
        _, low, high = release.discrimination
        high = 1.0 if high is None else float(high)
        if fail_above is None or can_vouch(release, fail_above):
            bounds.append((high, reading.instrument))
            if fail_above is not None:
                vouching.append(reading.instrument)
        else:
            need = units_to_vouch(fail_above)
            reasons.append(f"{reading.title}: {units_text(release)} {reading.unit} are too few to "
                           f"vouch for D below {fail_above:g} ("
                           + (f"it takes {need} per side" if need else "no number of units can") +
                           "); it can only find the release out")
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
    return Decision(outcome=outcome, deciding=tuple(deciding), told_apart_by=tuple(told), upper_bound=upper,
                    bound_by=bound_by, fail_above=fail_above, reasons=tuple(dict.fromkeys(reasons)),
                    vouching=tuple(vouching), sure_above=tuple(sure))


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
