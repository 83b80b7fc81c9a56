"""Which rows each trial shows, and the balanced queue of trials (docs/protocol.md §1, §8 rows 1 and 5).

Every trial gets its own seed (:func:`derive_seed`, sha256: stable across processes, unlike ``hash()``) and its
drawn row ids are stored with the record; ``sampling="fixed"`` keeps the paper's single draw to show the artefact.
Entry points: :func:`sample_rows`, :func:`build_trial_queue`.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmdisc import CONDITIONS, LABELS, RELEASES
from llmdisc.discrimination.label_scores import SCORING_MODES
from llmdisc.errors import ConfigError, DataError
from llmdisc.synthesis.controls import CONTROLS

SAMPLING_MODES = ("fresh", "fixed")
"""``fresh``: a new seeded sample per trial (ours); ``fixed``: the paper's one sample per table."""

PAPER_FIXED_SEED = 42
"""The ``random_state`` of the paper's ``df.sample(n, random_state=42)``; the seed stored for fixed trials."""


def derive_seed(run_seed: int, *parts: object) -> int:
    """Derive a seed in [0, 2**32) from a run seed and the parts that identify a draw (each turned into text with
    ``str``): the first 8 hex digits of sha256 of ``"||".join(...)``, identical on every machine."""
    text = "||".join(map(str, (run_seed, *parts)))
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not known; fix: use one of {', '.join(map(repr, allowed))}")


def sample_rows(table: pd.DataFrame, n: int, *, seed: int,
                sampling: str = "fresh") -> tuple[pd.DataFrame, list[int]]:
    """Draw ``n`` distinct rows of ``table``: ``(sample, row_ids)``, the drawn rows (fresh 0..n-1 index) and
    their 0-based positions in ``table``.

    Args:
        seed: Seed of the draw; ignored in ``fixed`` mode, which uses :data:`PAPER_FIXED_SEED` as the paper did.
        sampling: ``fresh`` (seeded numpy draw, rows in draw order) or ``fixed`` (the paper's
            ``table.sample(n, random_state=42).sort_index()``, applied to the table's positions).

    DataError when ``table`` has fewer than ``n`` rows; ConfigError for an unknown ``sampling`` or ``n`` < 1.
    """
    _check_choice("sampling", sampling, SAMPLING_MODES)
    if n < 1:
        raise ConfigError(f"n={n} rows per sample is not allowed; fix: ask for at least 1 row "
                          "(the study uses 20)")
    if len(table) < n:
        raise DataError(f"the table has {len(table)} rows, fewer than the {n} rows a sample needs; "
                        f"fix: use a table of at least {n} rows or lower n_rows to at most {len(table)}")
    if sampling == "fresh":
        row_ids = [int(i) for i in np.random.default_rng(seed).choice(len(table), size=n, replace=False)]
    else:
        # The paper's draw on a RangeIndex, sorted back into file order as its prompt_builder did.
        positions = pd.Series(np.arange(len(table)))
        row_ids = sorted(int(i) for i in positions.sample(n=n, random_state=PAPER_FIXED_SEED))
    return table.iloc[row_ids].reset_index(drop=True), row_ids


@dataclass(frozen=True)
class TrialSpec:
    """One trial to run: which cell, which label, which sample (everything but the model)."""

    trial_id: str
    """Deterministic, unique id:
    ``"{dataset_key}|{synthesizer}|{condition}|{true_label}|{index}|r{replicate}"``."""
    dataset_key: str
    synthesizer: str
    """The cell's synthesizer, for real samples too (the record's ``synthetic_method``)."""
    condition: str
    """``C1`` (table only) or ``C2`` (table + metadata)."""
    true_label: str
    index: int
    """0-based trial number within the cell and label."""
    replicate: int
    """Replicate of the same prompt (0-based): repeats the call, not the draw."""
    run_seed: int
    sampling: str
    sample_seed: int
    """Seed of the row draw (``derive_seed`` output; 42 in ``fixed`` mode)."""
    scoring: str = "verdict"


def trial_sample_seed(run_seed: int, dataset_key: str, cell: str, true_label: str, index: int, *,
                      share_real_samples: bool = True) -> int:
    """Seed of the rows trial ``index`` of a cell shows under paired fresh sampling (both conditions).

    With ``share_real_samples`` a REAL sample's seed names ``"real"`` instead of the cell, so every cell of a
    dataset shows the same real rows. The likelihood runs draw with these seeds to score exactly what C1 showed.
    """
    source = "real" if share_real_samples and true_label == "REAL" else cell
    return derive_seed(run_seed, dataset_key, source, true_label, index)


def build_trial_queue(dataset_keys: Sequence[str], synthesizers: Sequence[str], conditions: Sequence[str],
                      trials_per_label: int | Mapping[str, int], *, run_seed: int, sampling: str = "fresh",
                      paired: bool = True, replicates: int = 1, scoring: str = "verdict",
                      verdict_trials_per_label: int | None = None,
                      share_real_samples: bool = False, extra_cells: Sequence[str] = ()) -> list[TrialSpec]:
    """Build the balanced list of trials: exactly ``trials_per_label`` per true label per cell
    (``dataset_key × synthesizer × condition``), in a deterministic order; ``len(dataset_keys) *
    len(synthesizers) * 2 * replicates * sum(counts)`` :class:`TrialSpec` long.

    Args:
        synthesizers: cells: names from ``llmdisc.RELEASES``, :mod:`llmdisc.synthesis.controls` or ``extra_cells``.
        trials_per_label: Trials per true label per cell (>= 1), or a mapping ``condition -> count`` (e.g.
            ``{"C1": 20, "C2": 10}``: a C2 prompt costs twice a C1 prompt).
        paired: If True the sample seed ignores the condition, so trial ``index`` shows the SAME rows
            under C1 and C2 (needed by the paired McNemar analysis).
        replicates: Calls per prompt (>= 1); replicates share the sample.
        verdict_trials_per_label: under ``probability`` scoring, how many trials per cell and label become ``both``
            (so both readings show on the same prompts); None or 0 = none.
        share_real_samples: a REAL sample's seed ignores the synthesizer (see :func:`trial_sample_seed`).
        extra_cells: further synthesizer names to admit (the audit's ``release``).

    Raises:
        ConfigError: an unknown synthesizer, condition or sampling mode, a count below 1, or duplicates.
    """
    _check_choice("sampling", sampling, SAMPLING_MODES)
    _check_choice("scoring", scoring, SCORING_MODES)
    for synthesizer in synthesizers:
        _check_choice("synthesizer", synthesizer, (*RELEASES, *CONTROLS, *extra_cells))
    for condition in conditions:
        _check_choice("condition", condition, CONDITIONS)
    for name, values in (("dataset_keys", dataset_keys), ("synthesizers", synthesizers),
                         ("conditions", conditions)):
        if not values:
            raise ConfigError(f"{name} is empty; fix: give at least one value")
        if len(set(values)) != len(values):
            raise ConfigError(f"{name}={list(values)!r} holds duplicates; fix: list each value once")
    per_condition = (dict(trials_per_label) if isinstance(trials_per_label, Mapping)
                     else dict.fromkeys(conditions, trials_per_label))
    missing = [c for c in conditions if c not in per_condition]
    if missing:
        raise ConfigError(f"trials_per_label={per_condition} has no count for {missing}; fix: give one per "
                          "condition, e.g. {'C1': 20, 'C2': 10}")
    counts = {c: int(per_condition[c]) for c in conditions}
    if min(counts.values()) < 1 or replicates < 1:
        shown = counts if isinstance(trials_per_label, Mapping) else trials_per_label
        raise ConfigError(f"trials_per_label={shown}, replicates={replicates}; "
                          "fix: both must be at least 1")
    n_verdicts = int(verdict_trials_per_label or 0)
    if n_verdicts < 0:
        raise ConfigError(f"verdict_trials_per_label={n_verdicts}; fix: give 0 or more")
    queue: list[TrialSpec] = []
    for dataset_key, synthesizer, index, true_label, condition in itertools.product(
            dataset_keys, synthesizers, range(max(counts.values())), LABELS, conditions):
        if index >= counts[condition]:
            continue
        if sampling == "fixed":
            seed = PAPER_FIXED_SEED
        else:  # as trial_sample_seed; unpaired, the condition is part of the draw's seed
            source = "real" if share_real_samples and true_label == "REAL" else synthesizer
            seed = derive_seed(run_seed, dataset_key, source, true_label, index,
                               *([] if paired else [condition]))
        trial_scoring = "both" if scoring == "probability" and index < n_verdicts else scoring
        queue.extend(TrialSpec(
            trial_id=f"{dataset_key}|{synthesizer}|{condition}|{true_label}|{index}|r{replicate}",
            dataset_key=dataset_key, synthesizer=synthesizer, condition=condition, true_label=true_label,
            index=index, replicate=replicate, run_seed=run_seed, sampling=sampling, sample_seed=seed,
            scoring=trial_scoring) for replicate in range(replicates))
    return queue
