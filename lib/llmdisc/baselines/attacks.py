"""Attack-based privacy risk with Anonymeter 1.1 (Giomi et al. 2023): singling out, linkability, inference.

Each evaluator attacks the real train records through the synthetic release, and the real holdout (the
*control*, never seen by the synthesizer) alike. Risk = the attack's success on train in excess of its success
on the control, normalised: 0 = no advantage over fresh real data, 1 = every attack that could succeed did.

Seeding: Anonymeter's draws are partly unseeded upstream, so polars' seed is set, numpy's global state seeded
around each evaluator, and two helpers (``_random_queries``, ``_random_links``) replaced during the call by
the same code made deterministic (anonymeter 1.1.0, pinned; a helper that is gone is left alone, unseeded).
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from llmdisc.baselines.encoding import TableSchema, resolve_schema
from llmdisc.errors import ConfigError
from llmdisc.scoring.metrics import Estimate

ATTACKS = ("singling_out", "linkability", "inference")
LINKABILITY_LEFT_OUT = ("linkability not run: it links two halves of the columns other than the secret (the last "
                        "column), and this table has fewer than two such columns")
"""Why :func:`anonymeter_attacks` returns no linkability result (said where its results are reported)."""


@dataclass(frozen=True)
class AttackResult:
    """One Anonymeter evaluator's outcome: its ``risk`` (value, 95 % CI, n = attacks), the success rates of
    the attack on train records, of the random-guess baseline and on holdout records, and in ``detail`` the
    set-up (columns, secret) and Anonymeter's warnings."""

    attack: str
    risk: Estimate
    attack_rate: float
    baseline_rate: float
    control_rate: float
    n_attacks: int
    seed: int
    detail: str


@contextlib.contextmanager
def _seeded_numpy(seed: int) -> Iterator[None]:
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


@contextlib.contextmanager
def _seeded_linkability_baseline(seed: int) -> Iterator[None]:
    from anonymeter.evaluators import linkability_evaluator as module

    original = getattr(module, "_random_links", None)
    rng = np.random.default_rng(seed)

    def seeded_random_links(n_synthetic: int, n_attacks: int, n_neighbors: int) -> np.ndarray:
        return np.array([rng.choice(n_synthetic, size=n_neighbors, replace=False) for _ in range(n_attacks)])

    if original is not None:
        module._random_links = seeded_random_links
    try:
        yield
    finally:
        if original is not None:
            module._random_links = original


@contextlib.contextmanager
def _seeded_singling_out(seed: int) -> Iterator[None]:
    import polars as pl
    from anonymeter.evaluators import singling_out_evaluator as module

    original = getattr(module, "_random_queries", None)

    def ordered_random_queries(df: pl.DataFrame, n_queries: int, n_cols: int,
                               rng: np.random.Generator) -> list:
        # anonymeter 1.1.0's helper, with unique values in a stable order so that ``rng`` decides the queries
        unique_values = {col: df[col].unique(maintain_order=True).to_list() for col in df.columns}
        column_types = {col: module._convert_polars_dtype(df[col].dtype) for col in df.columns}
        return [module._random_query(unique_values=unique_values,
                                     cols=rng.choice(df.columns, size=n_cols, replace=False).tolist(),
                                     column_types=column_types, rng=rng) for _ in range(n_queries)]

    pl.set_random_seed(seed)
    if original is not None:
        module._random_queries = ordered_random_queries
    try:
        yield
    finally:
        if original is not None:
            module._random_queries = original


def _prepared(tables: Sequence[pd.DataFrame], schema: TableSchema) -> list[pd.DataFrame]:
    # Anonymeter needs the same dtypes in every table: numerics as float, categoricals as object strings.
    out = []
    for table in tables:
        frame = table[list(schema.columns)].copy()
        for col in schema.numerical:
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
        for col in schema.categorical:
            frame[col] = frame[col].map(lambda v: v if pd.isna(v) else str(v)).astype("object")
        out.append(frame.reset_index(drop=True))
    return out


def anonymeter_notes(caught: list[warnings.WarningMessage]) -> str:
    """Anonymeter's own sanity warnings among `caught` (its `UserWarning`s only: a `ResourceWarning` from
    elsewhere says nothing about the attack), as one line of text, each message once."""
    ours = (w for w in caught if issubclass(w.category, UserWarning))
    return "; ".join(dict.fromkeys(str(w.message).splitlines()[0] for w in ours))


def _result(attack: str, evaluator: object, n_attacks: int, seed: int, detail: str,
            caught: list[warnings.WarningMessage]) -> AttackResult:
    risk = evaluator.risk(confidence_level=0.95)  # type: ignore[attr-defined]
    results = evaluator.results(confidence_level=0.95)  # type: ignore[attr-defined]
    control = results.control_rate.value if results.control_rate is not None else float("nan")
    notes = anonymeter_notes(caught)
    return AttackResult(
        attack=attack, risk=Estimate(float(risk.value), float(risk.ci[0]), float(risk.ci[1]), n_attacks),
        attack_rate=float(results.attack_rate.value), baseline_rate=float(results.baseline_rate.value),
        control_rate=float(control), n_attacks=n_attacks, seed=seed,
        detail=detail + (f"; anonymeter: {notes}" if notes else ""))


def anonymeter_attacks(
    train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, *, seed: int, n_attacks: int = 500,
    secret: str | None = None, kinds: dict[str, str] | None = None, attacks: Sequence[str] = ATTACKS,
    singling_out_columns: int = 3, n_jobs: int = 1, singling_out_max_attempts: int | None = None,
) -> list[AttackResult]:
    """Run Anonymeter's evaluators with the holdout as control.

    Args:
        n_attacks: attacks per evaluator, capped at the smallest table size.
        secret: the column the inference attack guesses (default: the last column, the target in our tables).
        singling_out_columns: columns per multivariate singling-out query (Anonymeter's ``n_cols``).
        n_jobs: threads of Anonymeter's neighbour search.
        singling_out_max_attempts: cap on query-generation attempts (default 100 per attack). Anonymeter's
            own default, 10 million, can run for hours when few synthetic records single anyone out; at the
            cap it scores the queries found against the requested number (a conservative, lower estimate).

    Returns:
        One :class:`AttackResult` per attack, in order; linkability splits the columns (less the secret) into
        two halves, alternating in table order, and is left out with fewer than two of them.

    Raises:
        ConfigError: an unknown attack, or ``secret`` not among the usable columns.
        DataError: the tables' columns or kinds differ.
    """
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown:
        raise ConfigError(f"unknown Anonymeter attack(s) {unknown}; fix: choose from {ATTACKS}")
    schema = resolve_schema(train, synthetic, kinds, names=("real train", "synthetic"), others=[holdout])
    ori, syn, control = _prepared([train, synthetic, holdout], schema)
    n_attacks = int(min(n_attacks, len(ori), len(syn), len(control)))
    columns = list(schema.columns)
    if secret is None:
        secret = str(train.columns[-1]) if str(train.columns[-1]) in columns else columns[-1]
    if secret not in columns:
        raise ConfigError(f"secret column {secret!r} is not among the usable columns {columns}; "
                          f"fix: pick one of them")
    aux = [c for c in columns if c != secret]
    out = []
    for attack in attacks:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if attack == "singling_out":
                n_cols = min(singling_out_columns, len(columns))
                with _seeded_singling_out(seed):
                    evaluator = SinglingOutEvaluator(ori=ori, syn=syn, control=control, n_attacks=n_attacks,
                                                     n_cols=n_cols, seed=seed,
                                                     max_attempts=singling_out_max_attempts or 100 * n_attacks,
                                                     ).evaluate(mode="multivariate")
                detail = f"multivariate queries on {n_cols} columns"
            elif attack == "linkability":
                halves = (aux[0::2], aux[1::2])
                if not halves[1]:  # LINKABILITY_LEFT_OUT
                    continue
                with _seeded_numpy(seed), _seeded_linkability_baseline(seed):
                    evaluator = LinkabilityEvaluator(ori=ori, syn=syn, control=control, n_attacks=n_attacks,
                                                     aux_cols=halves, n_neighbors=1).evaluate(n_jobs=n_jobs)
                detail = f"aux columns {halves[0]} | {halves[1]}"
            else:
                with _seeded_numpy(seed):
                    evaluator = InferenceEvaluator(ori=ori, syn=syn, control=control, aux_cols=aux,
                                                   secret=secret, n_attacks=n_attacks,
                                                   regression=secret in schema.numerical)
                    evaluator.evaluate(n_jobs=n_jobs)
                detail = f"secret {secret!r} from {len(aux)} aux columns"
            # results() emits Anonymeter's sanity warnings, so it runs inside the recording block
            out.append(_result(attack, evaluator, n_attacks, seed, detail, caught))
    return out
