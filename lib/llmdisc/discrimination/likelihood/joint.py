"""Joint structure: does the model find a sample's combinations of values more probable than the same values
recombined within the same rows?

    C(S) = log P(S) − mean_j log P(π_j(S))    (nats over S's row lines; π_j: :func:`permute_within`, marginals kept)

C > 0: the rows' real combinations are more probable; C ≈ 0: the columns look independent to the model; the rank
of log P(S) among its permutations gives an exact p-value. Header, ``reference`` rows (real rows shown before the
sample) and prompt condition the sample but are not summed. Entry points: :func:`joint_contrast`,
:func:`column_contrasts` (one column permuted at a time).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from llmdisc.discrimination.likelihood.base import ContextOverflowError, LikelihoodScorer, TokenLogprobs
from llmdisc.discrimination.likelihood.sample_scores import tally
from llmdisc.discrimination.likelihood.serialise import (CONTEXTS, HEADER_LINES, SERIALISATIONS, PlacedText,
                                                         place, serialise)
from llmdisc.discrimination.samples import derive_seed
from llmdisc.errors import ConfigError, DataError


def permutation_seeds(seed: int, k: int) -> list[int]:
    """Seeds of the k within-sample permutations of a sample whose joint seed is ``seed``: permutation j has
    ``derive_seed(seed, "permutation", j)``, so the first k' of k permutations are those of a run with k'."""
    return [derive_seed(seed, "permutation", j) for j in range(k)]


def permute_within(sample: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every column permuted independently within the same rows: column j by ``default_rng([seed, j])``; a new
    DataFrame (index ``0..n-1``, same columns and dtypes, each column's multiset unchanged)."""
    n = len(sample)
    return pd.DataFrame({column: sample[column].to_numpy()[np.random.default_rng([seed, j]).permutation(n)]
                         for j, column in enumerate(sample.columns)},
                        columns=sample.columns).astype(sample.dtypes.to_dict())


def permute_column(sample: pd.DataFrame, column: str, seed: int) -> pd.DataFrame:
    """Only ``column`` permuted within the rows (``default_rng([seed, j])``, j its position); the others kept.
    Raises DataError if ``column`` is not a column of ``sample``."""
    if column not in sample.columns:
        raise DataError(f"column {column!r} is not in the sample ({', '.join(map(str, sample.columns))}); fix: "
                        "pass one of its columns")
    out = sample.reset_index(drop=True).copy()
    j = list(sample.columns).index(column)
    out[column] = sample[column].to_numpy()[np.random.default_rng([seed, j]).permutation(len(sample))]
    return out.astype(sample.dtypes.to_dict())


def constant_columns(sample: pd.DataFrame) -> list[str]:
    """Columns holding one value in every row of ``sample`` (missing values count as a value)."""
    return [str(c) for c in sample.columns if sample[c].nunique(dropna=False) <= 1]


def check_permutable(sample: pd.DataFrame) -> None:
    """Raise :class:`DataError` for fewer than 2 rows or fewer than 2 columns that vary (nothing to recombine)."""
    varying = sample.shape[1] - len(constant_columns(sample))
    if len(sample) < 2 or varying < 2:
        raise DataError(f"the sample has {len(sample)} row(s) and {varying} column(s) that vary within it; "
                        "permuting columns within it cannot recombine values (at most whole rows move), so it has "
                        "no joint-structure contrast; fix: draw samples of 2 or more rows (20 in the study) from a "
                        "table with at least 2 columns that vary")


@dataclass(frozen=True)
class JointText:
    """A table (reference rows, then the sample) placed in its context; ``start``/``end`` delimit the characters
    of the sample's rows (the scored span), ``reference_start`` the first reference row (== ``start`` without)."""

    placed: PlacedText
    start: int
    end: int
    reference_start: int
    reference_rows: int

    @property
    def text(self) -> str:
        return self.placed.text


def joint_text(scorer: LikelihoodScorer, sample: pd.DataFrame, *, serialisation: str = "markdown",
               context: str = "none", reference: pd.DataFrame | None = None, variant: str = "neutral",
               n_total: int | None = None) -> JointText:
    """The text scored for a sample: one table (header, ``reference`` rows, the sample's rows) in its context.
    ConfigError: unknown serialisation or context; DataError: the reference's columns differ."""
    if serialisation not in SERIALISATIONS or context not in CONTEXTS:
        raise ConfigError(f"serialisation={serialisation!r}, context={context!r}; fix: use one of "
                          f"{SERIALISATIONS} and one of {CONTEXTS}")
    m = 0 if reference is None else len(reference)
    if m and list(reference.columns) != list(sample.columns):
        raise DataError(f"the reference rows have columns {list(reference.columns)}, the sample "
                        f"{list(sample.columns)}; fix: draw the reference from the same table's columns")
    table = sample.reset_index(drop=True) if not m else pd.concat([reference, sample], ignore_index=True)
    sample_text = serialise(table, serialisation)
    placed = place(table, sample_text, context=context, chat_text=scorer.chat_text, variant=variant,
                   n_total=n_total)
    lines = sample_text.text.split("\n")
    header_lines = HEADER_LINES[serialisation]
    reference_start = sum(len(line) + 1 for line in lines[:header_lines])
    start = sum(len(line) + 1 for line in lines[:header_lines + m])
    return JointText(placed, placed.start + start, placed.end, placed.start + reference_start, m)


@dataclass
class TableScore:
    """log P of one table's sample rows and its split by column (nats)."""

    logprob: float
    n_tokens: int
    column_logprob: dict[str, float]
    header_logprob: float
    layout_logprob: float


def table_score(tokens: TokenLogprobs, jt: JointText) -> TableScore:
    """Sum the log-probabilities of the tokens beginning in the sample's rows, by owner (column, header, layout).
    ConfigError if ``tokens`` is of another text or no token of the sample's rows has a log-probability."""
    if tokens.text != jt.text:
        raise ConfigError("the token log-probabilities are of another text; fix: score joint_text(...).text")
    values, by_column, _, _, header, layout, _ = tally(tokens, jt.placed, jt.start, jt.end)
    if not values:
        raise ConfigError("no token of the sample's rows has a log-probability; fix: score from the sample's start")
    return TableScore(math.fsum(values), len(values), by_column, header, layout)


def score_tables(scorer: LikelihoodScorer, tables: Sequence[pd.DataFrame], *, serialisation: str = "markdown",
                 context: str = "none", reference: pd.DataFrame | None = None, variant: str = "neutral",
                 n_total: int | None = None) -> tuple[list[TableScore], dict[str, int | float]]:
    """Score the sample rows of several tables (a sample and its permutations) in one call of the scorer.

    Returns:
        ``(scores, cost)``: one :class:`TableScore` per table; ``cost``: ``prompt_tokens``, ``prefix_tokens``
        (shared beginning), ``prefix_run`` (of those, run now), ``tokens_run`` (through the model), ``seconds``.

    Raises:
        ContextOverflowError: the text is longer than the context; with reference rows it says how many fit.
    """
    begin = time.perf_counter()
    texts = [joint_text(scorer, t, serialisation=serialisation, context=context, reference=reference,
                        variant=variant, n_total=n_total) for t in tables]
    try:
        tokens = scorer.score_variants([t.text for t in texts], start_chars=[t.start for t in texts],
                                       end_chars=[t.end for t in texts])
    except ContextOverflowError as exc:
        if not texts[0].reference_rows:
            raise
        raise _overflow(scorer, texts[0]) from exc
    extras = tokens[0].extras
    cost = {"prompt_tokens": sum(1 for s, _ in tokens[0].offsets if s < texts[0].end),
            "prefix_tokens": int(extras.get("prefix_tokens", 0)),
            "prefix_run": int(extras.get("prefix_tokens", 0)) - int(extras.get("prefix_reused", 0)),
            "tokens_run": int(extras.get("tokens_run", sum(sum(1 for s, _ in t.offsets if s < x.end)
                                                           for t, x in zip(tokens, texts)))),
            "seconds": time.perf_counter() - begin}
    return [table_score(t, x) for t, x in zip(tokens, texts)], cost


def _overflow(scorer: LikelihoodScorer, jt: JointText) -> ContextOverflowError:
    _, offsets = scorer.tokenize(jt.text)
    total = sum(1 for s, _ in offsets if s < jt.end)
    ref_tokens = sum(1 for s, _ in offsets if jt.reference_start <= s < jt.start)
    per_row = ref_tokens / jt.reference_rows
    fit = max(0, math.floor((scorer.context_length - (total - ref_tokens)) / per_row))
    return ContextOverflowError(
        f"the table with {jt.reference_rows} reference rows has {total} tokens, more than the "
        f"{scorer.context_length}-token context of {scorer.model}; at {per_row:.0f} tokens per reference row "
        f"{fit} reference rows fit; fix: pass at most {fit} reference rows (or fewer sample rows)")


def contrast_statistics(observed: float, permuted: Sequence[float], *, uniform: float) -> dict[str, float]:
    """C, its standardised form and the two permutation p-values from log P of a sample and of its permutations.

    Args:
        observed: log P(sample) (nats).
        permuted: log P of each of the k permutations (nats, k >= 1).
        uniform: A seeded Uniform(0, 1) draw that breaks ties and the discreteness.

    Returns:
        ``contrast`` = observed − mean(permuted) (nats); ``contrast_std`` = contrast / sd(permuted, ddof 1), NaN
        when k = 1 or no spread; ``p_value`` = (1 + #{permuted >= observed}) / (k + 1), exact under
        exchangeability; ``p_randomised`` = (#{>} + uniform · (1 + #{==})) / (k + 1), exactly Uniform(0, 1) then.

    Raises:
        ConfigError: no permutation, a non-finite score, or ``uniform`` outside [0, 1).
    """
    values = np.asarray(permuted, float)
    if len(values) < 1 or not (np.isfinite(values).all() and math.isfinite(observed)):
        raise ConfigError(f"{len(values)} permutation score(s), observed {observed}: the contrast needs k >= 1 "
                          "finite scores; fix: use k >= 1 and re-score texts without scored tokens")
    if not 0.0 <= uniform < 1.0:
        raise ConfigError(f"uniform={uniform} is not in [0, 1); fix: draw it with numpy's random()")
    k = len(values)
    contrast = observed - float(values.mean())
    spread = float(values.std(ddof=1)) if k > 1 else math.nan
    greater, equal = int((values > observed).sum()), int((values == observed).sum())
    return {"contrast": contrast,
            "contrast_std": contrast / spread if spread and math.isfinite(spread) else math.nan,
            "p_value": (1 + greater + equal) / (k + 1),
            "p_randomised": (greater + uniform * (1 + equal)) / (k + 1)}


@dataclass
class JointScores:
    """One sample's joint-structure contrast (nats; see the module docstring)."""

    k: int
    seed: int
    """The sample's joint seed (:func:`permutation_seeds`; the uniform: ``derive_seed(seed, "uniform")``)."""
    permutation_seeds: list[int]
    uniform: float
    logprob: float
    permuted_logprobs: list[float]
    contrast: float
    contrast_std: float
    p_value: float
    p_randomised: float
    n_tokens: int
    column_logprob: dict[str, float]
    permuted_column_logprob: list[dict[str, float]]
    header_logprob: float
    layout_logprob: float
    permuted_header_logprob: list[float]
    permuted_layout_logprob: list[float]
    column_contrast: dict[str, float]
    """Per column: sample minus permutations' mean; with ``header_contrast`` and ``layout_contrast`` sums to C."""
    header_contrast: float
    layout_contrast: float
    constant_columns: list[str]
    reference_rows: int
    prompt_tokens: int
    prefix_tokens: int
    prefix_run: int
    tokens_run: int
    seconds: float
    extras: dict = field(default_factory=dict)

    def restrict(self, k: int) -> "JointScores":
        """The scores of a run with only the first ``k`` permutations (exact); ``tokens_run`` and ``seconds``
        are estimated as the prefix plus (k + 1)/(self.k + 1) of the rest."""
        if not 1 <= k <= self.k:
            raise ConfigError(f"k={k} must lie in 1..{self.k}; fix: restrict to fewer permutations than were run")
        stats = contrast_statistics(self.logprob, self.permuted_logprobs[:k], uniform=self.uniform)
        share = (k + 1) / (self.k + 1)
        rest = self.tokens_run - self.prefix_run
        cost = (self.prefix_run + share * rest) / self.tokens_run if self.tokens_run else share
        parts = _decompose(self.column_logprob, self.permuted_column_logprob[:k], self.header_logprob,
                           self.permuted_header_logprob[:k], self.layout_logprob, self.permuted_layout_logprob[:k])
        return replace(self, k=k, permutation_seeds=self.permutation_seeds[:k],
                       permuted_logprobs=self.permuted_logprobs[:k],
                       permuted_column_logprob=self.permuted_column_logprob[:k],
                       permuted_header_logprob=self.permuted_header_logprob[:k],
                       permuted_layout_logprob=self.permuted_layout_logprob[:k], **stats, **parts,
                       tokens_run=round(self.prefix_run + share * rest), seconds=self.seconds * cost)


def _decompose(columns: dict[str, float], permuted: list[dict[str, float]], header: float,
               permuted_header: list[float], layout: float, permuted_layout: list[float]) -> dict:
    return {"column_contrast": {c: v - math.fsum(p[c] for p in permuted) / len(permuted) for c, v in columns.items()},
            "header_contrast": header - math.fsum(permuted_header) / len(permuted_header),
            "layout_contrast": layout - math.fsum(permuted_layout) / len(permuted_layout)}


def joint_contrast(scorer: LikelihoodScorer, sample: pd.DataFrame, *, k: int, seed: int,
                   serialisation: str = "markdown", context: str = "none", reference: pd.DataFrame | None = None,
                   variant: str = "neutral", n_total: int | None = None) -> JointScores:
    """The joint-structure contrast of one sample against k seeded within-sample permutations.

    Args:
        sample: The rows (>= 2 rows, >= 2 columns that vary within it).
        k: Permutations (>= 1; the p-value's resolution is 1/(k + 1)).
        seed: The sample's joint seed (permutation seeds and the uniform derive from it).
        reference: Real rows shown before the sample, same columns, fixed across the permutations.

    Raises:
        DataError: the sample cannot be recombined (:func:`check_permutable`), or the reference's columns differ.
        ConfigError: k < 1, unknown serialisation or context. ContextOverflowError: the text is too long (with
            reference rows: how many fit).
    """
    if k < 1:
        raise ConfigError(f"k={k} permutations; fix: use k >= 1 (2 or more for a standardised contrast)")
    check_permutable(sample)
    seeds = permutation_seeds(seed, k)
    tables = [sample.reset_index(drop=True)] + [permute_within(sample, s) for s in seeds]
    scores, cost = score_tables(scorer, tables, serialisation=serialisation, context=context, reference=reference,
                                variant=variant, n_total=n_total)
    uniform = float(np.random.default_rng(derive_seed(seed, "uniform")).random())
    own, permuted = scores[0], scores[1:]
    stats = contrast_statistics(own.logprob, [s.logprob for s in permuted], uniform=uniform)
    parts = _decompose(own.column_logprob, [s.column_logprob for s in permuted], own.header_logprob,
                       [s.header_logprob for s in permuted], own.layout_logprob, [s.layout_logprob for s in permuted])
    return JointScores(k=k, seed=seed, permutation_seeds=seeds, uniform=uniform, logprob=own.logprob,
                       permuted_logprobs=[s.logprob for s in permuted], **stats, n_tokens=own.n_tokens,
                       column_logprob=own.column_logprob, permuted_column_logprob=[s.column_logprob for s in permuted],
                       header_logprob=own.header_logprob, layout_logprob=own.layout_logprob,
                       permuted_header_logprob=[s.header_logprob for s in permuted],
                       permuted_layout_logprob=[s.layout_logprob for s in permuted], **parts,
                       constant_columns=constant_columns(sample),
                       reference_rows=0 if reference is None else len(reference), **cost)


@dataclass
class ColumnContrasts:
    """C_j per column: log P(sample) − mean log P(sample with only column j permuted) (nats); C_j = 0 without a
    pass for the ``constant`` columns."""

    k: int
    logprob: float
    contrasts: dict[str, float]
    seeds: dict[str, list[int]]
    """Seeds of column j's permutations: ``derive_seed(seed, "column", j_name, i)``."""
    permuted_logprobs: dict[str, list[float]]
    constant: list[str]
    tokens_run: int
    seconds: float


def column_contrasts(scorer: LikelihoodScorer, sample: pd.DataFrame, *, k: int, seed: int,
                     serialisation: str = "markdown", context: str = "none", reference: pd.DataFrame | None = None,
                     variant: str = "neutral", n_total: int | None = None,
                     logprob: float | None = None) -> ColumnContrasts:
    """C_j for every column (n_varying_columns × k passes, each column's k permutations in one batch).

    Args:
        logprob: log P(sample) if already scored with the same settings; None scores it. Others and errors: as
            :func:`joint_contrast`.
    """
    if k < 1:
        raise ConfigError(f"k={k} permutations per column; fix: use k >= 1")
    check_permutable(sample)
    begin = time.perf_counter()
    sample = sample.reset_index(drop=True)
    options = {"serialisation": serialisation, "context": context, "reference": reference, "variant": variant,
               "n_total": n_total}
    run = 0
    if logprob is None:
        scores, cost = score_tables(scorer, [sample], **options)
        logprob, run = scores[0].logprob, cost["tokens_run"]
    constant = constant_columns(sample)
    contrasts, seeds, permuted = {}, {}, {}
    for column in map(str, sample.columns):
        seeds[column] = [derive_seed(seed, "column", column, i) for i in range(k)]
        if column in constant:
            contrasts[column], permuted[column] = 0.0, [logprob] * k
            continue
        scores, cost = score_tables(scorer, [permute_column(sample, column, s) for s in seeds[column]], **options)
        permuted[column] = [s.logprob for s in scores]
        contrasts[column] = logprob - math.fsum(permuted[column]) / k
        run += cost["tokens_run"]
    return ColumnContrasts(k, logprob, contrasts, seeds, permuted, constant, run, time.perf_counter() - begin)
