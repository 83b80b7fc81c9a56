"""Anonymeter's attacks in an audit (singling out, linkability, inference), with a holdout as control.

Not an instrument: the attacks measure a privacy risk, not whether the release can be told from real data, and
they need records the synthesizer never saw (``--holdout``). Reported beside the instruments.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def _estimate(est: Any) -> dict[str, Any]:
    return {
        "value": _num(est.value),
        "ci_low": _num(est.ci_low),
        "ci_high": _num(est.ci_high),
        "n": int(est.n),
    }


def _num(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def attack_checks(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    holdout: pd.DataFrame,
    kinds: dict[str, str],
    *,
    seed: int,
    n_attacks: int,
) -> list[dict[str, Any]]:
    """Anonymeter's risks, one dict per attack (excess success over the control: 0 = none, 1 = total)."""
    from llmdisc.baselines.attacks import anonymeter_attacks

    return [
        {
            "attack": r.attack,
            "risk": _estimate(r.risk),
            "attack_rate": _num(r.attack_rate),
            "control_rate": _num(r.control_rate),
            "baseline_rate": _num(r.baseline_rate),
            "n_attacks": r.n_attacks,
            "detail": r.detail,
        }
        for r in anonymeter_attacks(real, synthetic, holdout, seed=seed, n_attacks=n_attacks, kinds=kinds)
    ]
