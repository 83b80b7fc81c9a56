"""The audit's outcome: conclusive (and, with ``--fail-above``, pass or fail) or inconclusive.

The rule, applied in this order over every condition run:

1. **Inconclusive: too few valid trials.** The release cell or the positive-control cell has fewer than
   :data:`MIN_VALID_PER_LABEL` (5) valid trials of either label in the *decision reading* — valid label
   scores under ``--scoring probability`` or ``both``, valid verdicts under ``--scoring verdict`` — or, with
   ``--gate drs``, fewer than 5 valid verdicts of either label.
2. **Inconclusive: the discriminator failed its positive control.** The 95 % DeLong interval of the
   positive-control AUC (the real rows with every column shuffled independently, against real rows) does not
   lie entirely above 0.5 (its lower bound is at most 0.5). The AUC is that of ``p_synthetic`` under
   ``probability``/``both``, and that of the verdict (SYNTHETIC = 1, REAL = 0, i.e. the balanced accuracy)
   under ``verdict``. A discriminator that cannot rank rows whose joint structure was destroyed above real
   rows cannot vouch for a release; one that ranks them the wrong way round fails too, since its DRS would
   not show what it perceives.
3. **Otherwise conclusive.** With ``--fail-above X`` the release *fails* when the 95 % upper bound of the
   ``--gate`` statistic exceeds X in any condition (a condition where it is undefined counts as 1), and
   *passes* otherwise.

Inconclusive is neither a pass nor a fail, with or without ``--fail-above``: it has its own exit status
(:data:`llmdisc.audit.errors.EXIT_INCONCLUSIVE`). The negative control (real holdout samples in the synthetic
class) is reported beside the release but does not enter the rule: its departure from chance is a warning
about the discriminator's bias, printed in the verdict.

Gate statistics (:data:`GATES`), each a fraction in [0, 1] where 0 = not told apart:

- ``drs``: the verdict's DRS = min(p_REAL, p_SYN) (bootstrap 95 % upper bound);
- ``calibrated-drs``: the DRS of the label-free calibrated decisions on ``p_synthetic``: the larger upper bound
  of the batch-calibrated DRS and, where the content-free score exists, the contextually calibrated DRS;
- ``auc``: 2·|AUC − 0.5| of ``p_synthetic`` (the two-sided discrimination max(AUC, 1 − AUC) mapped so that
  0 = chance, 1 = perfect ranking either way), upper bound folded from the DeLong interval.

Default gate: ``calibrated-drs``; ``drs`` under ``--scoring verdict`` (the only one it has).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from llmdisc.errors import ConfigError

MIN_VALID_PER_LABEL = 5
"""Fewer valid trials than this of either label, in the release or positive-control cell of a condition:
too few to decide (inconclusive)."""
GATES = ("drs", "calibrated-drs", "auc")
GATE_NAMES = {"drs": "verdict DRS", "calibrated-drs": "calibrated DRS", "auc": "AUC discrimination 2·|AUC − 0.5|"}
OUTCOMES = ("pass", "fail", "inconclusive", "conclusive")
"""``conclusive`` = decided, without a gate to pass or fail."""


def default_gate(scoring: str) -> str:
    """``drs`` under ``--scoring verdict``, ``calibrated-drs`` otherwise."""
    return "drs" if scoring == "verdict" else "calibrated-drs"


def check_gate(gate: str, scoring: str) -> None:
    """Refuse a gate the scoring cannot give.

    Raises:
        ConfigError: an unknown gate, ``drs`` under ``probability`` (no verdict) or ``calibrated-drs``/``auc``
            under ``verdict`` (no label scores).
    """
    if gate not in GATES:
        raise ConfigError(f"--gate {gate!r} is not known; fix: use one of {', '.join(GATES)}")
    if gate == "drs" and scoring == "probability":
        raise ConfigError("--gate drs reads generated verdicts, which --scoring probability does not ask for; fix: "
                          "use --gate calibrated-drs or auc, or --scoring both")
    if gate != "drs" and scoring == "verdict":
        raise ConfigError(f"--gate {gate} reads label scores, which --scoring verdict does not ask for; fix: use "
                          "--gate drs, or --scoring both")


def reading(scoring: str) -> str:
    """The decision reading: ``probability`` when label scores exist, else ``verdict``."""
    return "verdict" if scoring == "verdict" else "probability"


def valid_per_label(row: dict[str, Any], which: str) -> tuple[int, int]:
    """(valid REAL, valid SYNTHETIC) trials of a cell × condition row in the ``verdict``/``probability`` reading."""
    if which == "probability":
        prob = row.get("probability") or {}
        return int(prob.get("n_real") or 0), int(prob.get("n_syn") or 0)
    return int(row.get("n_valid_real") or 0), int(row.get("n_valid_syn") or 0)


def control_auc(row: dict[str, Any], which: str) -> tuple[float | None, float | None, float | None]:
    """(AUC, 95 % low, 95 % high) of a row in the reading (``p_synthetic``, or the verdict as a score)."""
    if which == "probability":
        prob = row.get("probability") or {}
        return prob.get("auc"), prob.get("auc_ci_low"), prob.get("auc_ci_high")
    auc = row.get("verdict_auc") or {}
    return auc.get("auc"), auc.get("ci_low"), auc.get("ci_high")


def gate_upper_bound(row: dict[str, Any], gate: str) -> float | None:
    """The release row's 95 % upper bound of the gate statistic (None when undefined)."""
    if gate == "drs":
        return row.get("drs_ci_high")
    prob = row.get("probability") or {}
    if gate == "calibrated-drs":
        return prob.get("calibrated_drs_ci_high")
    return (prob.get("discrimination") or {}).get("ci_high")


@dataclass(frozen=True)
class Decision:
    """What the audit concludes.

    Attributes:
        outcome: one of :data:`OUTCOMES`.
        reasons: why it is inconclusive (one sentence each; empty otherwise).
        reading: ``probability`` or ``verdict``.
        gate: the gate statistic (:data:`GATES`).
        upper_bound: max over conditions of the gate statistic's 95 % upper bound (1.0 where undefined).
        fail_above: the threshold (None: no gate).
        positive_control: per condition, ``{"condition", "auc", "ci_low", "ci_high", "passed"}``.
    """

    outcome: str
    reasons: tuple[str, ...]
    reading: str
    gate: str
    upper_bound: float | None
    fail_above: float | None
    positive_control: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, with the rule in words."""
        return {"outcome": self.outcome, "reasons": list(self.reasons), "reading": self.reading,
                "gate": self.gate, "gate_statistic": GATE_NAMES[self.gate], "upper_bound": self.upper_bound,
                "fail_above": self.fail_above, "positive_control": list(self.positive_control),
                "min_valid_per_label": MIN_VALID_PER_LABEL, "rule": RULE}


RULE = (f"inconclusive when, in any condition, the release or positive-control cell has fewer than "
        f"{MIN_VALID_PER_LABEL} valid trials of either label (label scores under --scoring probability/both, "
        "verdicts under --scoring verdict or --gate drs), or when the positive control's AUC 95 % interval does "
        "not lie entirely above 0.5 (AUC of p_synthetic; of the verdict under --scoring verdict); otherwise "
        "conclusive, and with --fail-above the release fails when the gate statistic's 95 % upper bound exceeds "
        "it in any condition. Inconclusive is never a pass, with or without --fail-above.")


def decide(release: Sequence[dict[str, Any]], positive: Sequence[dict[str, Any]] | None, *, scoring: str,
           gate: str, fail_above: float | None) -> Decision:
    """Apply the rule of the module docstring.

    Args:
        release: the release cell's rows, one per condition (:func:`llmdisc.audit.scores.cell_rows`).
        positive: the positive-control cell's rows (None: no positive control could be built).
        scoring: ``verdict``, ``probability`` or ``both``.
        gate: the gate statistic.
        fail_above: the gate's threshold in [0, 1], or None.

    Returns:
        The :class:`Decision`.
    """
    which = reading(scoring)
    reasons: list[str] = []
    control: list[dict[str, Any]] = []
    if positive is None:
        reasons.append("no positive control could be built (it needs at least 2 columns and 2 rows)")
    readings = [which] + (["verdict"] if gate == "drs" and which != "verdict" else [])
    for cell_name, rows in (("release", release), ("positive control", positive or [])):
        for row in rows:
            for part in readings:
                n_real, n_syn = valid_per_label(row, part)
                if min(n_real, n_syn) < MIN_VALID_PER_LABEL:
                    what = "label scores" if part == "probability" else "verdicts"
                    reasons.append(f"too few valid trials to decide: the {cell_name} cell of {row['condition']} has "
                                   f"{n_real} REAL and {n_syn} SYNTHETIC valid {what}, fewer than "
                                   f"{MIN_VALID_PER_LABEL} of each (run more --trials)")
    for row in positive or []:
        auc, low, high = control_auc(row, which)
        passed = low is not None and low > 0.5
        control.append({"condition": row["condition"], "auc": auc, "ci_low": low, "ci_high": high,
                        "passed": passed})
        if not passed:
            shown = ("undefined" if auc is None else f"{auc:.2f}" if low is None or high is None
                     else f"{auc:.2f} (95 % CI {low:.2f}–{high:.2f})")
            reasons.append(f"the discriminator failed its positive control in {row['condition']}: rows with every "
                           f"column shuffled independently get AUC {shown}, an interval not entirely above 0.5, so "
                           "it cannot vouch for the release")
    bounds = [gate_upper_bound(row, gate) for row in release]
    upper = max((1.0 if b is None else float(b)) for b in bounds) if bounds else None
    if reasons:
        outcome = "inconclusive"
    elif fail_above is None:
        outcome = "conclusive"
    else:
        outcome = "pass" if upper is not None and upper <= fail_above else "fail"
    return Decision(outcome=outcome, reasons=tuple(dict.fromkeys(reasons)), reading=which, gate=gate,
                    upper_bound=upper, fail_above=fail_above, positive_control=tuple(control))
