"""From a provider's :class:`~llmdisc.discrimination.providers.base.LabelScores` to a trial record's score fields.

The verdict as a probability (lm-evaluation-harness' multiple-choice reading): each label's log-probability (nats)
as the answer's first value and their softmax ``p_synthetic``; the per-character forms (``acc_norm``) keep a longer
label from being penalised for having more tokens. Nothing here decides or calibrates: unusable numbers make the
scores invalid with the reason, and every derived field None, never 0.
"""

from __future__ import annotations

import math
from typing import Any

from llmdisc import LABELS
from llmdisc.discrimination.providers.base import LabelScores

SCORING_MODES = ("verdict", "probability", "both")
"""``verdict``: generate the JSON answer; ``probability``: only score the labels (one prompt evaluation, at most a
few generated tokens); ``both``: do both on the same prompt."""

SCORE_FIELDS = ("logprob_real", "logprob_synthetic", "logprob_real_per_char", "logprob_synthetic_per_char",
                "p_synthetic", "label_mass", "label_n_tokens", "score_status", "score_invalid_reason",
                "score_latency_s")
"""The trial record's fields that :func:`score_fields` fills."""


def empty_score_fields() -> dict[str, Any]:
    """The score fields of a trial that did not ask for label scores (all None)."""
    return dict.fromkeys(SCORE_FIELDS)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value))


def score_problem(scores: LabelScores) -> str | None:
    """The reason ``scores`` cannot be used (the provider's own reason first), or None when both labels carry a
    finite log-probability <= 0 and the label mass is in [0, 1]."""
    if scores.invalid_reason:
        return scores.invalid_reason
    for label in LABELS:
        if label not in scores.logprobs:
            return f"label {label} has no score (the provider returned {sorted(scores.logprobs)})"
        value = scores.logprobs[label]
        if not _finite(value):
            return f"log P({label}) is {value!r}, not a finite number"
        if float(value) > 1e-6:
            return f"log P({label}) = {value} is positive: not a log-probability"
    if not (_finite(scores.label_mass) and -1e-9 <= float(scores.label_mass) <= 1 + 1e-9):
        return f"label mass {scores.label_mass!r} is not a probability in [0, 1]"
    return None


def p_synthetic_from_logprobs(logprob_real: float, logprob_synthetic: float) -> float:
    """Softmax over the two labels' log-probabilities (nats): ``P(SYNTHETIC) / (P(REAL) + P(SYNTHETIC))`` in [0, 1],
    0.5 = no preference (computed stably as a logistic of the log-odds)."""
    log_odds = float(logprob_synthetic) - float(logprob_real)
    if log_odds >= 0:
        return 1.0 / (1.0 + math.exp(-log_odds))
    z = math.exp(log_odds)
    return z / (1.0 + z)


def score_fields(scores: LabelScores) -> dict[str, Any]:
    """The trial record's score fields (:data:`SCORE_FIELDS`) from one provider answer.

    Invalid scores give ``score_status`` ``"invalid"``, the reason, and None log-probabilities (label mass and
    token counts are kept when they are numbers, so a format failure stays visible).
    """
    problem = score_problem(scores)
    fields = empty_score_fields()
    fields["score_latency_s"] = scores.latency_s
    fields["label_n_tokens"] = dict(scores.n_tokens) if scores.n_tokens else None
    fields["label_mass"] = float(scores.label_mass) if _finite(scores.label_mass) else None
    if problem is not None:
        fields.update(score_status="invalid", score_invalid_reason=problem)
        return fields
    real, synthetic = float(scores.logprobs["REAL"]), float(scores.logprobs["SYNTHETIC"])
    fields.update(
        logprob_real=real, logprob_synthetic=synthetic,
        logprob_real_per_char=real / len("REAL"), logprob_synthetic_per_char=synthetic / len("SYNTHETIC"),
        p_synthetic=p_synthetic_from_logprobs(real, synthetic), score_status="valid")
    return fields


def verdict_agrees(predicted_label: str | None, p_synthetic: float | None) -> bool | None:
    """Whether a generated verdict is the label the scores prefer (None unless both exist).

    A tie (``p_synthetic == 0.5`` exactly) prefers neither label and agrees with neither verdict.
    """
    if predicted_label not in LABELS or p_synthetic is None:
        return None
    preferred = "SYNTHETIC" if p_synthetic > 0.5 else "REAL" if p_synthetic < 0.5 else None
    return predicted_label == preferred
