"""A sample's likelihood scores from the log-probabilities of its tokens.

A token beginning inside the sample text is the sample's and goes to its owner (:func:`token_owner`), so the
per-column and per-row sums plus header and layout add up to the total. All values are nats (<= 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmdisc.discrimination.likelihood.base import TokenLogprobs
from llmdisc.discrimination.likelihood.serialise import HEADER, LAYOUT, PlacedText
from llmdisc.errors import ConfigError

MIN_K_FRACTION = 0.2
"""Min-K %'s k (Shi et al. 2024): the mean over the 20 % least probable tokens."""


@dataclass
class SampleScores:
    """Scores of one sample (nats; higher = the model finds the sample more probable)."""

    n_tokens: int
    """Tokens scored (those beginning in the sample text and having a log-probability)."""
    total_logprob: float
    mean_logprob: float
    """Mean token log-likelihood: ``total_logprob / n_tokens`` (the headline score)."""
    min_k_logprob: float
    """Mean of the ``ceil(k * n_tokens)`` lowest token log-probabilities (Min-K %, k = :attr:`min_k_fraction`)."""
    min_k_fraction: float
    column_logprob: dict[str, float]
    """Sum over the tokens of each column's values (all rows); ``row_logprob`` likewise per row, as shown."""
    column_tokens: dict[str, int]
    row_logprob: list[float]
    header_logprob: float
    layout_logprob: float
    straddling_tokens: int
    """Tokens covering characters of more than one owner (e.g. ``" 39"``: padding and a value)."""


def min_k(values: list[float], fraction: float = MIN_K_FRACTION) -> float:
    """Mean of the ``ceil(fraction * len(values))`` smallest values (NaN for no values)."""
    if not 0.0 < fraction <= 1.0:
        raise ConfigError(f"min-k fraction {fraction} must be in (0, 1]; fix: use 0.2 (Min-K 20 %)")
    if not values:
        return math.nan
    k = max(1, math.ceil(fraction * len(values)))
    return math.fsum(sorted(values)[:k]) / k


def token_owner(owners: list[tuple[int, int]], start: int, end: int) -> tuple[tuple[int, int], bool]:
    """Owner of the token covering characters ``[start, end)`` of a sample text (indices into ``owners``, the
    text's :meth:`~.serialise.SampleText.character_owners`): the first cell it covers, else a column name
    (``(HEADER, j)``), else layout (``(LAYOUT, -1)``); and whether it covers characters of more than one owner."""
    covered = owners[start:max(end, start + 1)]
    owner = next((o for o in covered if o[0] >= 0), None) or next((o for o in covered if o[0] == HEADER),
                                                                  (LAYOUT, -1))
    return owner, len(set(covered)) > 1


def tally(tokens: TokenLogprobs, placed: PlacedText, start: int,
          end: int) -> tuple[list[float], dict[str, float], dict[str, int], list[float], float, float, int]:
    """The scored tokens beginning in characters ``[start, end)`` of ``placed.text``, by owner: ``(values,
    column sums, column token counts, row sums, header sum, layout sum, straddling tokens)``."""
    owners = placed.sample.character_owners()
    columns = placed.sample.columns
    column_sum = {c: 0.0 for c in columns}
    column_n = {c: 0 for c in columns}
    rows = [0.0] * placed.sample.n_rows
    header = layout = 0.0
    values: list[float] = []
    straddling = 0
    for index in tokens.in_span(start, end):
        value = tokens.logprobs[index]
        if math.isnan(value):
            continue
        token_start, token_end = tokens.offsets[index]
        owner, straddles = token_owner(owners, token_start - placed.start, token_end - placed.start)
        straddling += straddles
        values.append(value)
        if owner[0] >= 0:
            column_sum[columns[owner[1]]] += value
            column_n[columns[owner[1]]] += 1
            rows[owner[0]] += value
        elif owner[0] == HEADER:
            header += value
        else:
            layout += value
    return values, column_sum, column_n, rows, header, layout, straddling


def score_sample(tokens: TokenLogprobs, placed: PlacedText, *, fraction: float = MIN_K_FRACTION) -> SampleScores:
    """Aggregate token log-probabilities (the scorer's output for ``placed.text``) over its sample text.

    Raises:
        ConfigError: ``tokens`` is not of ``placed.text``, or no token of the sample was scored.
    """
    if tokens.text != placed.text:
        raise ConfigError("the token log-probabilities are of another text; fix: score placed.text")
    values, column_sum, column_n, rows, header, layout, straddling = tally(tokens, placed, placed.start,
                                                                           placed.end)
    if not values:
        raise ConfigError("no token of the sample text has a log-probability; fix: score the text from its start")
    total = math.fsum(values)
    return SampleScores(n_tokens=len(values), total_logprob=total, mean_logprob=total / len(values),
                        min_k_logprob=min_k(values, fraction), min_k_fraction=fraction, column_logprob=column_sum,
                        column_tokens=column_n, row_logprob=rows, header_logprob=header, layout_logprob=layout,
                        straddling_tokens=straddling)
