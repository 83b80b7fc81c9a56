"""Label scores from the top-k token lists a service returns (Ollama, Gemini, OpenAI-compatible servers).

With only the *top-k* alternatives of each generated token (k <= 20), a label's full token sequence cannot be
scored, so log P(label) is the log of its first-token mass: the summed probability of the top-k tokens at
the label's first position whose text begins it ("S", "SY", "SYN" … for SYNTHETIC), ``n_tokens`` 1. The
position is found by reading the generated text against ``ANSWER_PREFIX`` (whitespace ignored); a token
straddling the quote and the label (``"SY``) has the prefix's part (the *overlap*) removed from every
alternative first. Entry point: :func:`scores_from_positions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from llmdisc import LABELS
from llmdisc.discrimination.providers.base import ANSWER_PREFIX, LabelScores

SCORED_FIRST_TOKEN_MASS = "first-token mass: summed probability of the top-k tokens that begin the label"
"""``LabelScores.metadata["scored"]`` of the top-k providers."""
LABEL_TOP_LOGPROBS = 20
"""Alternatives per position asked for when scoring labels (the most Ollama, Gemini and OpenAI accept)."""
LABEL_ANSWER_TOKENS = 12
"""Answer tokens generated when scoring labels without a prefill: enough for ``{"verdict": "`` and the label's
first token."""

_PREFIX_CHARS = "".join(ANSWER_PREFIX.split())


@dataclass(frozen=True)
class TokenChoice:
    """One token the service reported with its natural-log probability."""

    token: str
    logprob: float


@dataclass(frozen=True)
class TokenPosition:
    """One generated position: the token chosen and the top-k alternatives the service listed."""

    chosen: TokenChoice
    top: tuple[TokenChoice, ...]


@dataclass(frozen=True)
class LabelPosition:
    """Where the label starts in the generated tokens."""

    index: int
    """Index of the position whose token holds the label's first character."""
    overlap: str
    """The start of that position's chosen token that still belongs to the prefix (``"`` in ``"SY``)."""


def common_prefix_length(left: Sequence[int], right: Sequence[int]) -> int:
    """How many leading token ids two sequences share."""
    return next((i for i, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))


def label_token_ids(tokenize: Callable[[str], list[int]], context_text: str, context_ids: list[int],
                    labels: Sequence[str] = LABELS) -> tuple[dict[str, list[int]], str | None]:
    """``(ids, reason)``: each label's token ids after ``context_text`` (ids ``context_ids``) by ``tokenize``;
    ``reason`` is None, or why the first label that is not whole tokens after the context stopped it."""
    found: dict[str, list[int]] = {}
    for label in labels:
        full = tokenize(context_text + label)
        shared = common_prefix_length(context_ids, full)
        if shared < len(context_ids) or shared == len(full):
            return found, (f"label {label} tokenises across the answer prefix in this model's vocabulary "
                           f"(the prefix's last tokens change when {label!r} follows), so its continuation "
                           "is not a sequence of whole tokens; fix: use scoring: verdict with this model")
        found[label] = full[shared:]
    return found, None


def positions_from_entries(entries: Iterable[Any]) -> list[TokenPosition]:
    """Answer positions from the per-token entries the Ollama and OpenAI SDKs return (``token``, ``logprob``,
    ``top_logprobs``)."""
    return [TokenPosition(TokenChoice(str(entry.token), float(entry.logprob)),
                          tuple(TokenChoice(str(t.token), float(t.logprob)) for t in entry.top_logprobs or ()))
            for entry in entries or ()]


def locate_label_position(positions: list[TokenPosition], *, prefilled: bool) -> LabelPosition | str:
    """Find the label's first :class:`LabelPosition`, or return the reason (a sentence) it cannot be found.

    ``prefilled``: the service continued :data:`ANSWER_PREFIX` given as an assistant prefill (the first generated
    token is the label's).
    """
    if not positions:
        return "the service returned no token log-probabilities for the answer (an empty logprobs list)"
    if prefilled:
        return LabelPosition(0, "")
    matched = 0
    seen = ""
    for index, position in enumerate(positions):
        text = position.chosen.token
        for offset, char in enumerate(text):
            if matched == len(_PREFIX_CHARS):
                return LabelPosition(index, text[:offset])
            if char.isspace():
                continue
            if char != _PREFIX_CHARS[matched]:
                return (f"the answer does not open with {ANSWER_PREFIX!r} (it begins {(seen + text)[:40]!r}), so "
                        "the label position is unknown; fix: give the answer's JSON schema with verdict first")
            matched += 1
        seen += text
        if matched == len(_PREFIX_CHARS):
            if index + 1 < len(positions):
                return LabelPosition(index + 1, "")
            break
    return (f"the answer ended before its verdict value (generated {seen[:40]!r}); fix: allow more answer tokens "
            "for label scoring")


def _begins(label: str, rest: str) -> bool:
    """Whether a token's text (after the overlap) begins ``label`` or is the label and its closing quote."""
    return bool(rest) and (label.startswith(rest) or rest.startswith(label + '"'))


def first_token_masses(candidates: Iterable[TokenChoice], overlap: str = "") -> tuple[dict[str, float], list[str]]:
    """Sum, per label, the probabilities of the candidates whose text (after ``overlap``) begins it.

    Duplicates by text count once. Returns ``({label: probability mass 0-1}, [problems])``; a label no candidate
    begins has mass 0 here (the caller turns that into an invalid reason). Problems name non-finite values.
    """
    masses = dict.fromkeys(LABELS, 0.0)
    problems: list[str] = []
    first_seen: dict[str, TokenChoice] = {}
    for candidate in candidates:
        first_seen.setdefault(candidate.token, candidate)
    for candidate in first_seen.values():
        rest = candidate.token[len(overlap):] if candidate.token.startswith(overlap) else ""
        for label in (label for label in LABELS if _begins(label, rest)):
            if math.isfinite(candidate.logprob):
                masses[label] += math.exp(min(candidate.logprob, 0.0))
            else:
                problems.append(f"token {candidate.token!r} has log-probability {candidate.logprob!r}")
    return masses, problems


def scores_from_positions(positions: list[TokenPosition], *, prefilled: bool, top_k: int, model: str,
                          model_version: str | None = None, prompt_tokens: int | None = None,
                          latency_s: float | None = None, metadata: dict[str, Any] | None = None) -> LabelScores:
    """Label scores (first-token masses) from the top-k lists of a generated answer, or NaN scores with the reason.

    ``top_k`` (alternatives asked for) is named in the reasons; ``metadata`` is merged into the result's.
    """
    extra = {"scored": SCORED_FIRST_TOKEN_MASS, "top_k": top_k, "prefilled": prefilled, **(metadata or {})}

    def invalid(reason: str, masses: dict[str, float] | None = None) -> LabelScores:
        mass = sum(masses.values()) if masses else float("nan")
        return LabelScores(logprobs=dict.fromkeys(LABELS, float("nan")), n_tokens=dict.fromkeys(LABELS, 1),
                           label_mass=mass, model=model, model_version=model_version, prompt_tokens=prompt_tokens,
                           latency_s=latency_s, invalid_reason=reason, metadata=extra)

    found = locate_label_position(positions, prefilled=prefilled)
    if isinstance(found, str):
        return invalid(found)
    position = positions[found.index]
    extra.update(label_position=found.index, overlap=found.overlap,
                 top_tokens=[[c.token, c.logprob] for c in position.top])
    if not position.top:
        return invalid(f"the top-k list at the answer position {found.index} is empty (asked for top_logprobs="
                       f"{top_k}); fix: use a server that returns top_logprobs, or scoring: verdict")
    candidates = [*position.top]
    if all(c.token != position.chosen.token for c in candidates):
        candidates.append(position.chosen)  # Gemini: the chosen token may be missing from its top list
    masses, problems = first_token_masses(candidates, found.overlap)
    if problems:
        return invalid("non-finite log-probability at the answer position: " + "; ".join(problems), masses)
    missing = [label for label in LABELS if masses[label] <= 0.0]
    if missing:
        listed = ", ".join(repr(c.token) for c in position.top[:5])
        return invalid(f"label {' and '.join(missing)} is not among the top-{top_k} tokens at the answer position "
                       f"(the top ones: {listed}); it has no score, which is not 0", masses)
    return LabelScores(logprobs={label: math.log(masses[label]) for label in LABELS},
                       n_tokens=dict.fromkeys(LABELS, 1), label_mass=min(1.0, sum(masses.values())), model=model,
                       model_version=model_version, prompt_tokens=prompt_tokens, latency_s=latency_s,
                       metadata=extra)
