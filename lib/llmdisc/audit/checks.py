"""Anonymeter's attacks in an audit (singling out, linkability, inference), with a holdout as control.

Not an instrument: the attacks measure a privacy risk, not whether the release can be told from real data, and
they need records the synthesizer never saw (``--holdout``). Reported beside the instruments.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from llmdisc.audit.instruments.base import finite_or_none


def _estimate(est: Any) -> dict[str, Any]:
    return {"value": finite_or_none(est.value), "ci_low": finite_or_none(est.ci_low),
            "ci_high": finite_or_none(est.ci_high), "n": int(est.n)}


def attack_checks(real: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame,
                  kinds: dict[str, str], *, seed: int, n_attacks: int) -> list[dict[str, Any]]:
    """Anonymeter's risks, one dict per attack (excess success over the control: 0 = none, 1 = total)."""
    from llmdisc.baselines.attacks import anonymeter_attacks

    return [{"attack": r.attack, "risk": _estimate(r.risk), "attack_rate": finite_or_none(r.attack_rate),
             "control_rate": finite_or_none(r.control_rate), "baseline_rate": finite_or_none(r.baseline_rate),
             "n_attacks": r.n_attacks, "detail": r.detail}
            for r in anonymeter_attacks(real, synthetic, holdout, seed=seed, n_attacks=n_attacks,
                                        kinds=kinds)]
