"""The audit's outcome rule and the two-sided AUC reading, on hand-checkable rows."""

from __future__ import annotations

import re

import pytest

from llmdisc.audit.decision import MIN_VALID_PER_LABEL, check_gate, decide, default_gate
from llmdisc.audit.scores import discrimination
from llmdisc.errors import ConfigError


@pytest.mark.parametrize(("auc", "low", "high", "expected"), [
    (0.7, 0.55, 0.85, (0.4, 0.1, 0.7)),  # above chance: both bounds fold to distances from 0.5
    (0.6, 0.4, 0.8, (0.2, 0.0, 0.6)),  # the interval holds 0.5: the lower bound is chance
    (0.2, 0.05, 0.35, (0.6, 0.3, 0.9)),  # the wrong way round counts the same
    (0.5, 0.5, 0.5, (0.0, 0.0, 0.0)),  # a constant score
])
def test_discrimination_folds_the_auc_and_its_interval(auc: float, low: float, high: float,
                                                      expected: tuple[float, float, float]) -> None:
    got = discrimination(auc, low, high)
    assert (got["value"], got["ci_low"], got["ci_high"]) == pytest.approx(expected)
    assert discrimination(None, None, None) == {"value": None, "ci_low": None, "ci_high": None}


def _row(condition: str = "C1", *, auc: float = 0.9, low: float = 0.7, high: float = 1.0, n: int = 10,
         batch_high: float = 0.2, drs_high: float = 0.1, n_verdicts: int = 10) -> dict:
    """One cell × condition row as :func:`llmdisc.audit.scores.cell_rows` writes it."""
    return {"condition": condition, "n_total": 2 * n_verdicts, "n_valid_real": n_verdicts, "n_valid_syn": n_verdicts,
            "drs": drs_high / 2, "drs_ci_high": drs_high,
            "verdict_auc": {"auc": auc, "ci_low": low, "ci_high": high},
            "probability": {"n_real": n, "n_syn": n, "auc": auc, "auc_ci_low": low, "auc_ci_high": high,
                            "calibrated_drs_ci_high": batch_high,
                            "discrimination": discrimination(auc, low, high)}}


def test_a_passed_positive_control_lets_the_gate_decide() -> None:
    release, positive = [_row(auc=0.6, low=0.45, high=0.75)], [_row(auc=1.0, low=1.0, high=1.0)]
    passed = decide(release, positive, scoring="both", gate="calibrated-drs", fail_above=0.3)
    assert (passed.outcome, passed.upper_bound, passed.reasons) == ("pass", 0.2, ())
    failed = decide(release, positive, scoring="both", gate="auc", fail_above=0.3)
    assert failed.outcome == "fail" and failed.upper_bound == pytest.approx(0.5)  # 2·|0.75 − 0.5|
    assert decide(release, positive, scoring="both", gate="auc", fail_above=None).outcome == "conclusive"


@pytest.mark.parametrize(("low", "high"), [(0.5, 0.5), (0.45, 0.9), (0.0, 0.2)])
def test_a_positive_control_interval_not_above_chance_is_inconclusive(low: float, high: float) -> None:
    positive = [_row(auc=(low + high) / 2, low=low, high=high)]
    decision = decide([_row(auc=0.5, low=0.5, high=0.5, batch_high=0.0)], positive, scoring="both",
                      gate="calibrated-drs", fail_above=0.3)
    assert decision.outcome == "inconclusive" and decision.upper_bound == 0.0  # the gate alone would pass
    assert decision.positive_control[0]["passed"] is False
    assert re.search(r"failed its positive control in C1: .* not entirely above 0\.5", decision.reasons[0])


def test_too_few_valid_trials_are_inconclusive_whatever_the_figures() -> None:
    few = MIN_VALID_PER_LABEL - 1
    decision = decide([_row(n=few)], [_row()], scoring="probability", gate="auc", fail_above=0.9)
    assert decision.outcome == "inconclusive"
    assert decision.reasons == (f"too few valid trials to decide: the release cell of C1 has {few} REAL and {few} "
                                f"SYNTHETIC valid label scores, fewer than {MIN_VALID_PER_LABEL} of each (run more "
                                "--trials)",)
    # the drs gate reads verdicts too: enough label scores but too few verdicts
    decision = decide([_row(n_verdicts=few)], [_row()], scoring="both", gate="drs", fail_above=0.9)
    assert decision.outcome == "inconclusive" and "valid verdicts" in decision.reasons[0]
    assert decide([_row()], None, scoring="both", gate="drs", fail_above=0.9).outcome == "inconclusive"


def test_verdict_scoring_reads_the_verdict_auc_and_gates_on_drs() -> None:
    assert default_gate("verdict") == "drs" and default_gate("both") == "calibrated-drs"
    release = [_row(drs_high=0.4)]
    release[0]["probability"] = None
    positive = [dict(_row(), probability=None)]
    decision = decide(release, positive, scoring="verdict", gate="drs", fail_above=0.3)
    assert (decision.reading, decision.outcome, decision.upper_bound) == ("verdict", "fail", 0.4)


@pytest.mark.parametrize(("gate", "scoring", "message"), [
    ("drs", "probability", "--gate drs reads generated verdicts"),
    ("auc", "verdict", "--gate auc reads label scores"),
    ("calibrated-drs", "verdict", "--gate calibrated-drs reads label scores"),
    ("brier", "both", "--gate 'brier' is not known"),
])
def test_a_gate_the_scoring_cannot_give_is_refused(gate: str, scoring: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_gate(gate, scoring)
