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
   bound above 0). With ``--fail-above X`` the release **fails** when the largest upper bound of D over the
   deciding instruments exceeds X, and **passes** otherwise — so a pass means every instrument that can see
   something bounds what it sees below X.

Example threshold: :data:`EXAMPLE_THRESHOLD` (0.5: no instrument may rank release units above real ones more
than three times in four, AUC 0.75). The paper's DRS = min(p_REAL, p_SYN) stays in the tables of the instruments
that give labels: 0 for a discriminator that always says one label, about 0.5 for a coin, 1 when every sample
is labelled right — a different scale, not the gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from llmdisc.audit.instruments.base import MIN_UNITS, RELEASE, Reading, auc_text, control_check

OUTCOMES = ("pass", "fail", "inconclusive", "conclusive")
"""``conclusive`` = decided, without a gate to pass or fail."""
EXAMPLE_THRESHOLD = 0.5
GATE_SENTENCE = ("D = 2·|AUC − 0.5| of each instrument that passed its controls: 0 = indistinguishable from real "
                 "data, 1 = every sample told apart; --fail-above reads its 95 % upper bound (example: "
                 f"--fail-above {EXAMPLE_THRESHOLD:g} fails a release that some instrument may rank above real data "
                 "more than three times in four)")
RULE = ("an instrument decides when it passed its controls (it detects the shuffled-columns control and sits at "
        "chance on real vs real); the audit is inconclusive when none decides; otherwise the release is told apart "
        "when a deciding instrument separates it (D's 95 % lower bound above 0), and with --fail-above it fails "
        "when the largest 95 % upper bound of D over the deciding instruments exceeds the threshold")


@dataclass(frozen=True)
class Decision:
    """What the audit concludes.

    Attributes:
        outcome: one of :data:`OUTCOMES`.
        deciding: the instruments that passed their controls.
        told_apart_by: the deciding instruments that separate the release.
        upper_bound: the largest 95 % upper bound of D over the deciding instruments (None when none decides;
            1.0 for a deciding instrument without an interval).
        bound_by: the instrument that gives ``upper_bound``.
        fail_above: the threshold (None: no gate).
        reasons: why an instrument does not decide (one sentence each).
    """

    outcome: str
    deciding: tuple[str, ...]
    told_apart_by: tuple[str, ...]
    upper_bound: float | None
    bound_by: str | None
    fail_above: float | None
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, with the rule and the gate statistic in words."""
        return {"outcome": self.outcome, "deciding": list(self.deciding), "told_apart_by": list(self.told_apart_by),
                "upper_bound": self.upper_bound, "bound_by": self.bound_by, "fail_above": self.fail_above,
                "reasons": list(self.reasons), "gate_statistic": GATE_SENTENCE, "rule": RULE}


def decide(readings: Sequence[Reading], *, fail_above: float | None) -> Decision:
    """Apply the rule of the module docstring to the instruments' readings."""
    deciding, reasons, told, bounds = [], [], [], []
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
        high = release.discrimination[2]
        bounds.append((1.0 if high is None else float(high), reading.instrument))
    upper, bound_by = max(bounds) if bounds else (None, None)
    if not deciding:
        outcome = "inconclusive"
    elif fail_above is None:
        outcome = "conclusive"
    else:
        outcome = "pass" if upper <= fail_above else "fail"
    return Decision(outcome=outcome, deciding=tuple(deciding), told_apart_by=tuple(told), upper_bound=upper,
                    bound_by=bound_by, fail_above=fail_above, reasons=tuple(dict.fromkeys(reasons)))


def headline(decision: Decision, titles: dict[str, str]) -> str:
    """The report's one verdict line."""
    def names(keys: Sequence[str]) -> str:
        return ", ".join(titles.get(k, k) for k in keys)

    if decision.outcome == "inconclusive":
        return ("INCONCLUSIVE: no instrument passed its controls, so none can vouch for the release "
                "(see why below); this is not a pass.")
    if decision.told_apart_by:
        what = f"The release is told apart from real data by {names(decision.told_apart_by)}"
    else:
        what = (f"No instrument that passed its controls ({names(decision.deciding)}) told the release apart from "
                "real data")
    bound = f"largest 95 % upper bound of D {decision.upper_bound:.2f} ({titles.get(decision.bound_by, '')})"
    if decision.outcome == "conclusive":
        return f"{what}; {bound}."
    verb = "PASS" if decision.outcome == "pass" else "FAIL"
    sign = "≤" if decision.outcome == "pass" else ">"
    return f"{verb}: {what}; {bound} {sign} --fail-above {decision.fail_above:g}."
