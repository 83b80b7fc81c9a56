"""Classifier two-sample tests (C2ST, Lopez-Paz & Oquab 2017): ours, block-level, SDMetrics', and the paper's.

Ours (:func:`c2st`, docs/protocol.md §8 row 7): an equal-size seeded sample of real and synthetic rows, all
columns, seeded stratified k-fold; the encoder is fitted inside each fold with the classifier, so nothing of a
held-out row reaches its model. The AUC's interval is the Nadeau–Bengio corrected t-interval over the per-fold
AUCs, not DeLong on the pooled out-of-fold predictions: the folds' models share training rows, so DeLong comes
out too narrow (docs/protocol.md §8). Cross-validated AUCs on shuffled labels sit slightly below 0.5.

The paper's version (:func:`paper_c2st`) is kept as it was, apart from a seed for its one shuffle.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from llmdisc.baselines.encoding import (TableSchema, c2st_encoder, check_compatible, classifier_frame,
                                        resolve_schema, seeded_rows)
from llmdisc.errors import ConfigError
from llmdisc.scoring.auc import auc_with_interval
from llmdisc.scoring.metrics import Estimate, wilson_interval

CLASSIFIERS = ("logistic", "hist_gb")
BLOCK_SIZE = 20


@dataclass(frozen=True)
class C2STResult:
    """Our C2ST of one classifier on one real/synthetic pair (label 1 = SYNTHETIC).

    Attributes:
        auc: ROC-AUC of the out-of-fold probabilities (0.5 = chance), corrected 95 % CI over folds.
        accuracy: out-of-fold accuracy at threshold 0.5, corrected 95 % CI.
        heldout_accuracy: the Lopez-Paz & Oquab test: accuracy on the first held-out fold only (its rows never
            influenced its model), exact Clopper–Pearson 95 % CI, n = its rows.
        accuracy_p_value: exact two-sided binomial p-value of ``heldout_accuracy`` against 0.5.
        shuffled_auc: AUC of the same pipeline trained on shuffled labels (≈ 0.5); None if not run.
        block_auc: AUC of disjoint 20-row blocks of one class within a held-out fold (as one LLM call sees one
            20-row table), scored by the mean row probability; n = blocks.
        block_drs: min(share of real blocks called REAL, share of synthetic blocks called SYNTHETIC) at 0.5.
        n_real: real rows used (= synthetic rows used).
    """

    classifier: str
    auc: Estimate
    fold_aucs: tuple[float, ...]
    accuracy: Estimate
    heldout_accuracy: Estimate
    accuracy_p_value: float
    balanced_accuracy: float
    shuffled_auc: Estimate | None
    block_auc: Estimate
    block_accuracy: Estimate
    block_drs: float
    n_real: int
    seed: int
    notes: tuple[str, ...]


@dataclass(frozen=True)
class PaperC2STResult:
    """The paper's C2ST (label 1 = REAL, as in its code): numerics, head rows, one 70/30 split.

    Attributes:
        auc: ROC-AUC on the 30 % test part (DeLong 95 % CI added by us; the paper gave the point only).
        balanced_accuracy: mean of the two per-class accuracies (the paper's "MIA discrimination").
        seed: seed of the one shuffle (the paper's was unseeded).
    """

    auc: Estimate
    accuracy: float
    accuracy_real: float
    accuracy_synthetic: float
    balanced_accuracy: float
    n_train: int
    n_test: int
    columns: tuple[str, ...]
    seed: int


def make_classifier(name: str, schema: TableSchema, seed: int, *,
                    native_categorical: bool = False) -> Pipeline:
    """The unfitted C2ST ``Pipeline`` of one fold: the encoder, then classifier ``name`` (``seed``: the trees'
    ``random_state``). Raises ConfigError for an unknown ``name``."""
    if name == "logistic":
        return Pipeline([("encode", c2st_encoder(schema, scale=True)),
                         ("clf", LogisticRegression(max_iter=1000))])
    if name == "hist_gb":
        native = native_categorical and bool(schema.categorical)
        mask = (np.array([False] * len(schema.numerical) + [True] * len(schema.categorical))
                if native else None)
        return Pipeline([("encode", c2st_encoder(schema, native_categorical=native)),
                         ("clf", HistGradientBoostingClassifier(random_state=seed, categorical_features=mask))])
    raise ConfigError(f"unknown C2ST classifier {name!r}; fix: use one of {CLASSIFIERS}")


def out_of_fold_proba(
    model: Pipeline, features: pd.DataFrame, labels: np.ndarray, *, n_folds: int, seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probability of class 1 for every row (seeded stratified k-fold) and each row's fold index;
    ``model`` is cloned and fitted on the training folds alone."""
    proba = np.empty(len(labels))
    fold_of = np.empty(len(labels), dtype=int)
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed)
    for fold, (train_idx, test_idx) in enumerate(folds.split(np.zeros(len(labels)), labels)):
        fitted = clone(model).fit(features.iloc[train_idx], labels[train_idx])
        proba[test_idx] = fitted.predict_proba(features.iloc[test_idx])[:, 1]
        fold_of[test_idx] = fold
    return proba, fold_of


def fold_corrected_interval(
    point: float, fold_values: np.ndarray, n: int, confidence: float = 0.95,
) -> Estimate:
    """Nadeau–Bengio corrected t-interval of a k-fold cross-validated score ``point``, clipped to [0, 1].

    Variance = var(``fold_values``) × (1/k + 1/(k − 1)) for k equal folds; ``n`` is stored as the n.
    """
    values = np.asarray(fold_values, dtype=np.float64)
    values = values[np.isfinite(values)]
    k = len(values)
    if k < 2 or not np.isfinite(point):
        return Estimate(float(point), float("nan"), float("nan"), n)
    se = float(np.sqrt(np.var(values, ddof=1) * (1.0 / k + 1.0 / (k - 1))))
    half = float(stats.t.ppf(0.5 + confidence / 2, k - 1)) * se
    return Estimate(float(point), max(0.0, point - half), min(1.0, point + half), n)


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    return float(roc_auc_score(labels, scores)) if len(np.unique(labels)) == 2 else float("nan")


def cv_auc(labels: np.ndarray, proba: np.ndarray, fold_of: np.ndarray) -> tuple[Estimate, tuple[float, ...]]:
    """Pooled out-of-fold AUC with its fold-corrected interval, and the per-fold AUCs."""
    per_fold = tuple(_auc(labels[fold_of == f], proba[fold_of == f]) for f in np.unique(fold_of))
    return fold_corrected_interval(_auc(labels, proba), np.array(per_fold), len(labels)), per_fold


def block_scores(
    proba: np.ndarray, labels: np.ndarray, fold_of: np.ndarray, rng: np.random.Generator,
    block_size: int = BLOCK_SIZE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scores, labels, folds) of disjoint random blocks of ``block_size`` rows of one class within one fold,
    a block's score being its mean row probability; len(class rows) // block_size blocks a class and fold."""
    scores, block_labels, block_folds = [], [], []
    for fold in np.unique(fold_of):
        for label in (0, 1):
            rows = np.flatnonzero((fold_of == fold) & (labels == label))
            n_blocks = len(rows) // block_size
            if n_blocks == 0:
                continue
            chosen = rng.permutation(rows)[: n_blocks * block_size].reshape(n_blocks, block_size)
            scores.append(proba[chosen].mean(axis=1))
            block_labels.append(np.full(n_blocks, label))
            block_folds.append(np.full(n_blocks, fold))
    return np.concatenate(scores), np.concatenate(block_labels), np.concatenate(block_folds)


def c2st(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, seed: int, classifier: str = "logistic",
    n_folds: int = 5, max_rows: int | None = 5000, kinds: dict[str, str] | None = None,
    shuffled_baseline: bool = True, block_size: int = BLOCK_SIZE, native_categorical: bool = False,
) -> C2STResult:
    """Our C2ST of ``real`` against ``synthetic`` (label 1 = SYNTHETIC; outputs on :class:`C2STResult`).

    Args:
        seed: seed of everything random here (row sample, folds, shuffle, blocks, classifier).
        max_rows: rows drawn from each table (equal sizes: min of both lengths and this); None or 0 = all.
        kinds: declared column kinds, or None to infer them from ``real``.
        shuffled_baseline: also run the label-shuffled baseline (doubles the time).
        native_categorical: with ``hist_gb``, ordinal codes the trees split natively instead of one-hot
            columns (faster on many levels). Each fold keeps its training folds' most frequent levels; cap
            them first (:func:`~llmdisc.baselines.encoding.cap_levels`) to choose them by the real table.

    Raises:
        DataError: the tables differ in columns or types (message names them).
        ConfigError: unknown classifier, or too few rows for the folds and blocks.
    """
    if classifier not in CLASSIFIERS:
        raise ConfigError(f"unknown C2ST classifier {classifier!r}; fix: use one of {CLASSIFIERS}")
    if n_folds < 2:
        raise ConfigError(f"n_folds={n_folds} must be at least 2; fix: use 5 (the default)")
    schema = resolve_schema(real, synthetic, kinds)
    rng = np.random.default_rng(seed)
    n = min(len(real), len(synthetic), max_rows or len(real) + len(synthetic))
    if n < n_folds * block_size:
        raise ConfigError(f"C2ST needs at least n_folds × block_size = {n_folds * block_size} rows per "
                          f"table, got {n}; fix: pass larger tables or lower n_folds/block_size")
    real_rows, syn_rows = seeded_rows(real, n, rng), seeded_rows(synthetic, n, rng)
    features = classifier_frame([real_rows, syn_rows], schema)  # cast only: encoding is learned per fold
    model = make_classifier(classifier, schema, seed, native_categorical=native_categorical)
    labels = np.concatenate([np.zeros(n, dtype=int), np.ones(n, dtype=int)])
    proba, fold_of = out_of_fold_proba(model, features, labels, n_folds=n_folds, seed=seed)
    auc, fold_aucs = cv_auc(labels, proba, fold_of)

    right = (proba >= 0.5).astype(int) == labels
    fold_acc = np.array([right[fold_of == f].mean() for f in range(n_folds)])
    first = fold_of == 0
    test = stats.binomtest(int(right[first].sum()), int(first.sum()), 0.5)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")

    shuffled = None
    if shuffled_baseline:
        permuted = rng.permutation(labels)
        proba_perm, fold_perm = out_of_fold_proba(model, features, permuted, n_folds=n_folds, seed=seed)
        shuffled, _ = cv_auc(permuted, proba_perm, fold_perm)

    scores, block_labels, block_folds = block_scores(proba, labels, fold_of, rng, block_size)
    block_auc, _ = cv_auc(block_labels, scores, block_folds)
    called_syn = scores >= 0.5
    p_real = float((~called_syn[block_labels == 0]).mean())
    p_syn = float(called_syn[block_labels == 1].mean())
    return C2STResult(
        classifier=classifier, auc=auc, fold_aucs=fold_aucs,
        accuracy=fold_corrected_interval(float(right.mean()), fold_acc, len(labels)),
        heldout_accuracy=Estimate(float(right[first].mean()), float(ci.low), float(ci.high),
                                  int(first.sum())),
        accuracy_p_value=float(test.pvalue),
        balanced_accuracy=float(balanced_accuracy_score(labels, (proba >= 0.5).astype(int))),
        shuffled_auc=shuffled, block_auc=block_auc,
        block_accuracy=wilson_interval(int((called_syn == (block_labels == 1)).sum()), len(block_labels)),
        block_drs=min(p_real, p_syn), n_real=n, seed=seed, notes=schema.notes)


def sdmetrics_logistic_detection(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, seed: int, max_rows: int | None = 5000,
    kinds: dict[str, str] | None = None,
) -> tuple[float, str]:
    """SDMetrics' ``LogisticDetection`` score (sdmetrics 0.32), for comparability with SDV users.

    Its unseeded 3-fold split gets numpy's global state seeded with ``seed`` (restored after); its lbfgs stops
    unconverged on most releases, where the result depends on the BLAS thread count, so the call runs on one
    thread. Categorical columns are passed as strings so SDMetrics one-hot encodes them.

    Returns (score, note): score = 1 − mean over folds of (max(AUC, 0.5) × 2 − 1), 1 = indistinguishable;
    NaN when SDMetrics cannot compute it, with the reason in ``note``. Rows drawn as :func:`c2st` draws them.
    """
    from sdmetrics.errors import IncomputableMetricError
    from sdmetrics.single_table import LogisticDetection
    from threadpoolctl import threadpool_limits

    schema = resolve_schema(real, synthetic, kinds)
    rng = np.random.default_rng(seed)
    n = min(len(real), len(synthetic), max_rows or len(real) + len(synthetic))
    tables = [seeded_rows(t, n, rng)[list(schema.columns)] for t in (real, synthetic)]
    for table in tables:
        for col in schema.categorical:
            table[col] = table[col].map(lambda v: v if pd.isna(v) else str(v)).astype("object")
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings(record=True) as caught, threadpool_limits(limits=1):
            warnings.simplefilter("always", ConvergenceWarning)
            score = float(LogisticDetection.compute(tables[0], tables[1]))
        unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        return score, (f"lbfgs stopped at SDMetrics' 100 iterations in {unconverged} of 3 folds"
                       if unconverged else "")
    except (ValueError, IncomputableMetricError) as err:
        return float("nan"), f"SDMetrics LogisticDetection not computable: {str(err)[:200]}"
    finally:
        np.random.set_state(state)


def paper_c2st(
    real: pd.DataFrame, synthetic: pd.DataFrame, *, seed: int, max_rows: int = 5000,
) -> PaperC2STResult:
    """The paper's "C2ST", reproduced: numeric columns only, the first rows, one seeded 70/30 split.

    As in its code: numeric columns of ``real`` with missing values filled by the real means, the first
    min(len(real), len(synthetic), ``max_rows``) rows of each table (label 1 = real), one shuffle (here
    ``RandomState(seed)``), scaler and ``LogisticRegression`` fitted on the first 70 %. All NaN when ``real``
    has no numeric column.

    Raises:
        DataError: the tables' columns or types differ.
    """
    check_compatible(real, synthetic)
    columns = tuple(str(c) for c in real.select_dtypes(include=[np.number]).columns)
    if not columns:
        nan = float("nan")
        return PaperC2STResult(Estimate(nan, nan, nan, 0), nan, nan, nan, nan, 0, 0, (), seed)
    real_num = real[list(columns)].astype("float64")  # float first: nullable Int64 cannot hold a mean
    means = real_num.mean()
    x_real = real_num.fillna(means).to_numpy()
    x_syn = synthetic[list(columns)].apply(pd.to_numeric, errors="coerce").astype("float64").fillna(means)
    x_syn = x_syn.to_numpy()
    n = min(len(x_real), len(x_syn), max_rows)
    features = np.vstack([x_real[:n], x_syn[:n]])
    labels = np.hstack([np.ones(n), np.zeros(n)])
    order = np.random.RandomState(seed).permutation(len(features))
    features, labels = features[order], labels[order]
    split = int(0.7 * len(features))
    scaler = StandardScaler().fit(features[:split])
    model = LogisticRegression(max_iter=1000, C=1.0, random_state=42, solver="lbfgs")
    model.fit(scaler.transform(features[:split]), labels[:split])
    x_test, y_test = scaler.transform(features[split:]), labels[split:]
    predicted, proba = model.predict(x_test), model.predict_proba(x_test)[:, 1]
    acc_real = float((predicted[y_test == 1] == 1).mean()) if (y_test == 1).any() else 0.0
    acc_syn = float((predicted[y_test == 0] == 0).mean()) if (y_test == 0).any() else 0.0
    return PaperC2STResult(
        auc=auc_with_interval(y_test, proba), accuracy=float((predicted == y_test).mean()), accuracy_real=acc_real,
        accuracy_synthetic=acc_syn, balanced_accuracy=(acc_real + acc_syn) / 2, n_train=split,
        n_test=len(y_test), columns=columns, seed=seed)


PAPER_PRINTED_C2ST = {"gaussian_copula": 0.538, "ctgan": 0.605, "tvae": 0.687}
"""The C2ST AUCs the paper printed for its three Census releases."""
PAPER_FIT_NOTE = (
    "the paper fitted its synthesizers on all 32,561 real rows (no holdout): every real row may have been in "
    "training, so distance tests (DCR, exact copies, linkage) against our holdout are not valid on these "
    "releases")


def paper_c2st_seeds(real: pd.DataFrame, synthetic: pd.DataFrame, *, seeds: Iterable[int],
                     max_rows: int = 5000) -> pd.DataFrame:
    """:func:`paper_c2st` over split seeds (only the 70/30 shuffle changes): one row per seed (seed, auc,
    balanced_accuracy, n_test)."""
    results = {int(seed): paper_c2st(real, synthetic, seed=int(seed), max_rows=max_rows) for seed in seeds}
    return pd.DataFrame([{"seed": seed, "auc": r.auc.value, "balanced_accuracy": r.balanced_accuracy,
                          "n_test": r.n_test} for seed, r in results.items()])


def paper_c2st_releases(*, seeds: Iterable[int] = range(20), max_rows: int = 5000) -> pd.DataFrame:
    """The paper's C2ST on its own Census extract vs each of its three Census releases, over split seeds, with
    the paper's printed figure beside the mean and the split-to-split range.

    Returns:
        One row per release (``paper_<synthesizer>``): seeds, rows_each, auc_mean/sd/min/max,
        balanced_accuracy_mean, paper_printed_auc, paper_within_range (the printed figure lies in
        [auc_min, auc_max]), fitted_on, distance_tests (why they are not valid here), input (relative path).

    Raises:
        ReferenceMissingError: a file is not on this machine. DataError: a file's header differs from the
            paper's. ConfigError: ``seeds`` is empty.
    """
    from llmdisc.data.reference import (PAPER_SYNTHESIZERS, load_paper_census, load_paper_release,
                                        paper_release_path)
    from llmdisc.paths import relative_to_root

    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ConfigError("seeds is empty; fix: pass at least one split seed, e.g. range(20)")
    real = load_paper_census()
    rows = []
    for synthesizer in PAPER_SYNTHESIZERS:
        release = load_paper_release(synthesizer)
        runs = paper_c2st_seeds(real, release, seeds=seeds, max_rows=max_rows)
        printed = PAPER_PRINTED_C2ST[synthesizer]
        rows.append({
            "dataset": "census", "release": f"paper_{synthesizer}", "synthesizer": synthesizer,
            "n_seeds": len(seeds), "seeds": f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0]),
            "rows_each": min(len(real), len(release), max_rows),
            "auc_mean": float(runs["auc"].mean()), "auc_sd": float(runs["auc"].std(ddof=1)) if len(runs) > 1
            else float("nan"), "auc_min": float(runs["auc"].min()), "auc_max": float(runs["auc"].max()),
            "balanced_accuracy_mean": float(runs["balanced_accuracy"].mean()),
            "paper_printed_auc": printed,
            "paper_within_range": bool(runs["auc"].min() <= printed <= runs["auc"].max()),
            "fitted_on": "all 32,561 real rows (no holdout)",
            "distance_tests": "not valid: " + PAPER_FIT_NOTE,
            "input": relative_to_root(paper_release_path(synthesizer)),
        })
    return pd.DataFrame(rows)
