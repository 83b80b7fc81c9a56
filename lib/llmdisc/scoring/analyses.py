"""The paper's analyses (docs/protocol.md §5) and the paired C1/C2 test, on trial tables.

Entry points: :func:`fair_cells`, :func:`matched_n_sample` (the paper's matched-N draw), :func:`seed_stability`,
:func:`permutation_tests` (DRS(C2) - DRS(C1) against shuffled condition labels, one generator shared in the
paper's iteration order) and :func:`paired_condition_tests` (McNemar). Every random draw takes an explicit seed,
written into the returned table. DRS values are fractions in [0, 1].
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from llmdisc.errors import ConfigError, DataError
from llmdisc.scoring.metrics import cell_seed, drs_from_counts, prepare_trials

FAIR_CELL_COLUMNS = ("dataset", "synthetic_method", "condition")
FAIR_MIN_VALID = 8
MATCHED_SEED = 2026
STABILITY_SEEDS = tuple(range(1000, 1050))
PERMUTATION_SEED = 20260531
PERMUTATION_N = 3000
_TIE_TOLERANCE = 1e-9  # |Δ*| >= |Δ| must count exact ties computed along different float paths


def _valid(trials: pd.DataFrame) -> pd.DataFrame:
    """Prepared trials with a verdict, in their original order."""
    df = prepare_trials(trials)
    return df[df["status"] == "valid"]


def _check_columns(trials: pd.DataFrame, columns: Iterable[str]) -> None:
    if missing := [c for c in columns if c not in trials.columns]:
        raise DataError(f"trial table lacks column(s) {missing}; it has {list(trials.columns)}; fix: add them or "
                        "pass the column names this analysis should use")


def _models(valid: pd.DataFrame, model_col: str, models: Sequence[str] | None) -> list[str]:
    present = list(pd.unique(valid[model_col]))
    if models is None:
        return sorted(present)
    if unknown := [m for m in present if m not in models]:
        raise ConfigError(f"models {unknown} are in the trials but not in models={list(models)}; fix: list every "
                          "model to compare (its position sets its seed offset) or filter the trials first")
    return list(models)


def fair_cells(trials: pd.DataFrame, *, models: Sequence[str] | None = None, model_col: str = "model",
               cell_cols: Sequence[str] = FAIR_CELL_COLUMNS, min_valid: int = FAIR_MIN_VALID) -> pd.DataFrame:
    """Which cells let the models be compared: every model has at least ``min_valid`` (the paper's 8) valid
    trials; ``models`` default to all present, sorted (a missing model counts 0 trials).

    Returns one row per cell (sorted): ``n_valid_<model>`` per model, ``n_min``, ``fair`` (bool) and
    ``n_excluded`` (invalid/error records of the cell, all models).
    """
    _check_columns(trials, [*cell_cols, model_col])
    prepared = prepare_trials(trials)
    valid = prepared[prepared["status"] == "valid"]
    out = _fair(valid, _models(valid, model_col, models), model_col, cell_cols, min_valid)
    excluded = prepared[prepared["status"] != "valid"].groupby(list(cell_cols)).size().rename("n_excluded")
    out = out.merge(excluded.reset_index(), on=list(cell_cols), how="left")
    out["n_excluded"] = out["n_excluded"].fillna(0).astype(int)
    return out


def _fair(valid: pd.DataFrame, model_list: list[str], model_col: str, cell_cols: Sequence[str],
          min_valid: int) -> pd.DataFrame:
    counts = valid.groupby([*cell_cols, model_col]).size().unstack(model_col, fill_value=0)
    counts = counts.reindex(columns=model_list, fill_value=0)
    out = counts.rename(columns=lambda m: f"n_valid_{m}").reset_index()
    out["n_min"] = counts.min(axis=1).to_numpy()
    out["fair"] = out["n_min"] >= min_valid
    return out.sort_values(list(cell_cols)).reset_index(drop=True)


def matched_n_sample(trials: pd.DataFrame, *, seed: int = MATCHED_SEED, models: Sequence[str] | None = None,
                     model_col: str = "model", cell_cols: Sequence[str] = FAIR_CELL_COLUMNS,
                     min_valid: int = FAIR_MIN_VALID, per_model_seed: bool = False) -> pd.DataFrame:
    """Down-sample every model to the same N in each fair cell (the paper's matched-N comparison).

    Only valid trials are drawn, in their given order (the order fixes the draw). Per cell, s =
    :func:`~llmdisc.scoring.metrics.cell_seed` (seed, cell values) and model i of ``models`` (in draw order;
    the paper's is LLaMA, Gemini) draws ``sample(n, random_state=s + i)``; with ``per_model_seed`` model m
    draws with ``cell_seed(seed, cell values + (m,))``, as the paper's seed-stability sweep did. Returns the
    drawn rows, cell by cell (sorted) and model by model, with ``matched_seed`` (the ``random_state``) and
    ``matched_n``.
    """
    _check_columns(trials, [*cell_cols, model_col])
    valid = _valid(trials)
    model_list = _models(valid, model_col, models)
    draws = _draws(_plan(valid, model_list, model_col, cell_cols, min_valid), seed, model_list,
                   {} if per_model_seed else None)
    if not draws:
        return valid.iloc[:0].assign(matched_seed=pd.Series(dtype=int), matched_n=pd.Series(dtype=int))
    out = valid.iloc[np.concatenate([d.positions for d in draws])].reset_index(drop=True)
    out["matched_seed"] = np.repeat([d.state for d in draws], [d.n for d in draws])
    out["matched_n"] = np.repeat([d.n for d in draws], [d.n for d in draws])
    return out


class _Draw(NamedTuple):
    cell: tuple
    model: str
    state: int
    n: int
    positions: np.ndarray  # row positions in the valid-trial frame


def _plan(valid: pd.DataFrame, model_list: list[str], model_col: str, cell_cols: Sequence[str],
          min_valid: int) -> list[tuple[tuple, int, dict[str, np.ndarray]]]:
    """Per fair cell: its key, the matched N and each model's row positions (in the given order)."""
    fair = _fair(valid, model_list, model_col, cell_cols, min_valid)
    groups = {key if isinstance(key, tuple) else (key,): pos
              for key, pos in valid.groupby([*cell_cols, model_col], sort=False).indices.items()}
    plan = []
    for row in fair[fair["fair"]].itertuples(index=False):
        cell = tuple(getattr(row, c) for c in cell_cols)
        plan.append((cell, int(row.n_min), {m: groups[(*cell, m)] for m in model_list}))
    return plan


def _draws(plan: list[tuple[tuple, int, dict[str, np.ndarray]]], seed: int, model_list: list[str],
           labels: Mapping[str, str] | None) -> list[_Draw]:
    """Which rows the matched-N draw takes, cell by cell and model by model.

    ``frame.sample(n, random_state=state)`` draws ``RandomState(state).choice(len(frame), n, replace=False)``
    positions; drawing them directly gives the same rows without building DataFrames.
    """
    draws = []
    for cell, n_match, pools in plan:
        base = cell_seed(seed, cell)
        for i, model in enumerate(model_list):
            state = base + i if labels is None else cell_seed(seed, (*cell, labels.get(model, model)))
            pool = pools[model]
            chosen = np.random.RandomState(state).choice(len(pool), size=n_match, replace=False)
            draws.append(_Draw(cell, model, state, n_match, pool[chosen]))
    return draws


def _drs_at(is_real: np.ndarray, said_real: np.ndarray, positions: np.ndarray) -> float:
    real, said = is_real[positions], said_real[positions]
    return drs_from_counts(int(real.sum()), int((real & said).sum()), int((~real).sum()), int((~real & ~said).sum()))


class SeedStability(NamedTuple):
    """Result of :func:`seed_stability`: per-cell and per-model summaries, and every draw's DRS."""

    cells: pd.DataFrame
    models: pd.DataFrame
    draws: pd.DataFrame


def seed_stability(trials: pd.DataFrame, *, seeds: Iterable[int] = STABILITY_SEEDS,
                   models: Sequence[str] | None = None, model_labels: Mapping[str, str] | None = None,
                   model_col: str = "model", cell_cols: Sequence[str] = FAIR_CELL_COLUMNS,
                   min_valid: int = FAIR_MIN_VALID) -> SeedStability:
    """Repeat the matched-N draw for many seeds; summarise DRS by mean and 2.5-97.5 % quantiles.

    As in the paper's notebook, model m of cell c draws with ``cell_seed(seed, c + (label_m,))`` where label_m
    is ``model_labels[m]`` (the paper used its display labels, see ``reference.PAPER_MODEL_LABELS``). Returns
    per cell × model and per model (pooled over the fair cells, the paper's per-model definition)
    ``drs_mean``, ``drs_q025``, ``drs_q975``, ``n_seeds``, and in ``draws`` every (seed, cell, model) DRS.
    """
    labels = dict(model_labels or {})
    _check_columns(trials, [*cell_cols, model_col])
    valid = _valid(trials)
    model_list = _models(valid, model_col, models)
    is_real = (valid["true_label"] == "REAL").to_numpy()
    said_real = (valid["predicted_label"] == "REAL").to_numpy()
    plan = _plan(valid, model_list, model_col, cell_cols, min_valid)
    rows_cells, rows_models = [], []
    for s in seeds:
        drawn = _draws(plan, int(s), model_list, labels)
        for d in drawn:
            rows_cells.append({**dict(zip([*cell_cols, model_col], (*d.cell, d.model))), "seed": int(s),
                               "drs": _drs_at(is_real, said_real, d.positions)})
        for model in model_list:
            if pooled := [d.positions for d in drawn if d.model == model]:
                rows_models.append({model_col: model, "seed": int(s),
                                    "drs": _drs_at(is_real, said_real, np.concatenate(pooled))})
    draws = pd.DataFrame(rows_cells)

    def summary(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        if df.empty:
            return pd.DataFrame(columns=[*keys, "drs_mean", "drs_q025", "drs_q975", "n_seeds"])
        return (df.groupby(keys, sort=True)["drs"]
                .agg(drs_mean="mean", drs_q025=lambda x: float(np.quantile(x, 0.025)),
                     drs_q975=lambda x: float(np.quantile(x, 0.975)), n_seeds="count").reset_index())

    return SeedStability(summary(draws, [*cell_cols, model_col]),
                         summary(pd.DataFrame(rows_models), [model_col]), draws)


def _group_drs(is_real: np.ndarray, correct: np.ndarray, member: np.ndarray) -> np.ndarray:
    """DRS of the rows where ``member`` is True, for every row of a (n_perm × n) membership matrix."""
    m = member.astype(np.int64)
    n_real, n_syn = m @ is_real, m @ ~is_real
    c_real, c_syn = m @ (is_real & correct), m @ (~is_real & correct)
    with np.errstate(invalid="ignore", divide="ignore"):
        drs = np.minimum(c_real / n_real, c_syn / n_syn)
    drs[(n_real == 0) | (n_syn == 0)] = np.nan
    return drs


def permutation_test(trials: pd.DataFrame, *, seed: int | None = PERMUTATION_SEED,
                     rng: np.random.Generator | None = None, n_perm: int = PERMUTATION_N,
                     condition_col: str = "condition") -> dict[str, Any]:
    """Permutation test of DRS(C2) - DRS(C1) for one dataset × model × synthesizer.

    Condition labels are shuffled ``n_perm`` times with ``rng.shuffle``, as the paper did; ``rng`` (the paper
    shared one generator across its cells) overrides ``seed``. Row order of ``trials`` fixes which labels a
    shuffle moves.

    Returns a dict: n_c1, n_c2, drs_c1, drs_c2, delta (C2 - C1, fraction), perm_effective_n (shuffles where
    both DRS exist), perm_null_q025/q975, p_one_sided_ge = (#{Δ* >= Δ} + 1)/(n + 1), p_two_sided = (#{|Δ*| >=
    |Δ|} + 1)/(n + 1) (also as ``p_value``, the paper's p), n_perm and seed. p is NaN when the observed Δ is
    undefined.
    """
    if n_perm < 1:
        raise ConfigError(f"n_perm must be >= 1, got {n_perm}; fix: use e.g. n_perm=3000")
    valid = _valid(trials)
    cond = valid[condition_col].to_numpy()
    if unknown := sorted(set(cond) - {"C1", "C2"}):
        raise DataError(f"{condition_col} has values {unknown}; fix: keep only C1 and C2 trials")
    is_real = (valid["true_label"] == "REAL").to_numpy()
    correct = (valid["true_label"] == valid["predicted_label"]).to_numpy()
    is_c2 = cond == "C2"
    observed = _group_drs(is_real, correct, np.vstack([~is_c2, is_c2]))
    delta = observed[1] - observed[0]
    generator = rng if rng is not None else np.random.default_rng(seed)
    perms = np.tile(np.arange(len(cond), dtype=np.int64), (n_perm, 1))
    for order in perms:  # the paper's stream: one in-place shuffle per permutation
        generator.shuffle(order)
    shuffled_c2 = is_c2[perms]
    null = _group_drs(is_real, correct, shuffled_c2) - _group_drs(is_real, correct, ~shuffled_c2)
    finite = null[np.isfinite(null)]
    n_eff = len(finite)
    if n_eff and np.isfinite(delta):
        p_ge = (np.sum(finite >= delta - _TIE_TOLERANCE) + 1) / (n_eff + 1)
        p_two = (np.sum(np.abs(finite) >= abs(delta) - _TIE_TOLERANCE) + 1) / (n_eff + 1)
    else:
        p_ge = p_two = np.nan
    return {"n_c1": int((~is_c2).sum()), "n_c2": int(is_c2.sum()), "drs_c1": float(observed[0]),
            "drs_c2": float(observed[1]), "delta": float(delta), "perm_effective_n": n_eff,
            "perm_null_q025": float(np.quantile(finite, 0.025)) if n_eff else np.nan,
            "perm_null_q975": float(np.quantile(finite, 0.975)) if n_eff else np.nan,
            "p_one_sided_ge": float(p_ge), "p_two_sided": float(p_two), "p_value": float(p_two), "n_perm": n_perm,
            "seed": seed if rng is None else None}


def permutation_tests(trials: pd.DataFrame, *, seed: int = PERMUTATION_SEED, n_perm: int = PERMUTATION_N,
                      group_cols: Sequence[str] = ("dataset", "provider", "model", "synthetic_method"),
                      orders: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """:func:`permutation_test` for every group having both C1 and C2, one generator shared in group order.

    ``orders``: per group column, the order groups are visited in (default sorted). The order changes which
    part of the random stream a group gets; ``reference.PAPER_*_ORDER`` reproduce the paper's.

    Returns one row per tested group with the keys of :func:`permutation_test`, ``n_excluded`` (invalid/error
    records of the group, not tested), ``seed`` and ``stream_position``.
    """
    _check_columns(trials, [*group_cols, "condition"])
    prepared = prepare_trials(trials)
    valid = prepared[prepared["status"] == "valid"]
    excluded = prepared[prepared["status"] != "valid"].groupby(list(group_cols)).size().to_dict()
    orders = dict(orders or {})
    groups = dict(list(valid.groupby(list(group_cols), sort=False)))

    def rank(key: tuple) -> tuple:
        return tuple((orders[c].index(v) if c in orders and v in orders[c] else len(orders.get(c, ())), str(v))
                     for c, v in zip(group_cols, key))

    rng = np.random.default_rng(seed)
    rows = []
    for position, key in enumerate(sorted(groups, key=rank)):
        frame = groups[key]
        if not {"C1", "C2"} <= set(frame["condition"]):
            continue  # the paper skipped such groups without drawing
        result = permutation_test(frame[frame["condition"].isin(["C1", "C2"])], rng=rng, n_perm=n_perm)
        n_excluded = excluded.get(key if len(key) > 1 else key[0], 0)
        rows.append({**dict(zip(group_cols, key)), **result, "n_excluded": int(n_excluded), "seed": seed,
                     "stream_position": position})
    return pd.DataFrame(rows)


def mcnemar_exact(correct_first: Any, correct_second: Any) -> dict[str, Any]:
    """McNemar's exact test on paired verdicts (correctness per pair under each condition, same order).

    Returns a dict with n_pairs, b (right first, wrong second), c (wrong first, right second), and p_value
    (two-sided exact binomial test of b of b + c at 0.5; 1.0 without a discordant pair).
    """
    first = np.asarray(correct_first, dtype=bool)
    second = np.asarray(correct_second, dtype=bool)
    if first.shape != second.shape:
        raise DataError(f"paired arrays differ in length ({first.size} vs {second.size}); fix: pass one "
                        "correctness value per pair under each condition")
    b = int((first & ~second).sum())
    c = int((~first & second).sum())
    p = float(stats.binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0
    return {"n_pairs": int(first.size), "b": b, "c": c, "p_value": p}


def paired_condition_tests(trials: pd.DataFrame, *,
                           by: Sequence[str] = ("dataset", "synthetic_method", "provider", "model"),
                           pair_on: Sequence[str] = ("sample_seed",)) -> pd.DataFrame:
    """McNemar's exact test of C1 vs C2 correctness per group, pairing trials that showed the same sample.

    ``pair_on`` names a sample shown under both conditions (lists such as ``row_ids`` compare as tuples; the
    human pilot pairs on annotator, session and pair id). One row per group: the ``by`` values, n_pairs, b, c,
    p_value, and n_unpaired (valid trials without a partner, reported rather than dropped silently).
    """
    _check_columns(trials, [*by, *pair_on, "condition"])
    valid = _valid(trials).copy()
    for col in pair_on:
        valid[col] = valid[col].map(lambda v: tuple(v) if isinstance(v, (list, np.ndarray)) else v)
    valid["_correct"] = valid["true_label"] == valid["predicted_label"]
    rows = []
    for key, frame in valid.groupby(list(by), sort=True):
        wide = frame.pivot_table(index=list(pair_on), columns="condition", values="_correct", aggfunc="first")
        both = wide.dropna(subset=["C1", "C2"]) if {"C1", "C2"} <= set(wide.columns) else wide.iloc[:0]
        result = mcnemar_exact(both.get("C1", pd.Series(dtype=bool)).astype(bool),
                               both.get("C2", pd.Series(dtype=bool)).astype(bool))
        rows.append({**dict(zip(by, key)), **result, "n_unpaired": int(len(frame) - 2 * len(both))})
    return pd.DataFrame(rows)
