"""The LLM part of an audit: balanced trials on one ``release`` cell, their scores, and what the LLM cited.

Trials run through the compendium's runner (:func:`llmdisc.discrimination.runner.run_trials`): one record per line in
``DIR/trials/<run>.jsonl``, answers cached in a :class:`~llmdisc.discrimination.cache.ResponseCache`, and a re-run of
the same audit resumes (answered trials are skipped, error trials retried, cached calls re-used).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from llmdisc import LABELS
from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.providers.base import GenerateConfig, Provider
from llmdisc.discrimination.runner import RunSummary, run_name, run_sync, run_trials
from llmdisc.discrimination.samples import TrialSpec, derive_seed

AUDIT_DATASET_KEY = "audit"
"""The ``dataset_key`` (and ``dataset``) of audit trial records."""
"""The ``encoding`` of audit trial records: the user's values, unchanged."""
RELEASE = "release"
"""The one cell's ``synthetic_method``: the release under audit."""
PROMPT_VARIANT = "neutral"


def audit_trial_queue(trials_per_label: int, conditions: Sequence[str], *, run_seed: int) -> list[TrialSpec]:
    """Balanced queue of one ``release`` cell: ``trials_per_label`` per true label per condition.

    Mirrors :func:`llmdisc.discrimination.samples.build_trial_queue` (paired: trial ``i`` shows the same rows under C1 and
    C2; every trial its own sample, seed ``derive_seed(run_seed, "audit", "release", label, i)``), whose
    synthesizer check admits only the compendium's synthesizers.

    Returns:
        ``2 × trials_per_label × len(conditions)`` specs.
    """
    from llmdisc.errors import ConfigError

    if trials_per_label < 1:
        raise ConfigError(f"--trials {trials_per_label}; fix: give at least 1 trial per label")
    queue = []
    for index in range(trials_per_label):
        for label in LABELS:
            seed = derive_seed(run_seed, AUDIT_DATASET_KEY, RELEASE, label, index)
            for condition in conditions:
                queue.append(
                    TrialSpec(
                        trial_id=f"{AUDIT_DATASET_KEY}|{RELEASE}|{condition}|{label}|{index}|r0",
                        dataset_key=AUDIT_DATASET_KEY,
                        synthesizer=RELEASE,
                        condition=condition,
                        true_label=label,
                        index=index,
                        replicate=0,
                        run_seed=run_seed,
                        sampling="fresh",
                        sample_seed=seed,
                    )
                )
    return queue


def trial_file(
    trials_dir: Path,
    provider: Provider,
    provider_name: str,
    metadata_source: str,
    seed: int,
    data_digest: str,
) -> Path:
    """``trials_dir/<run_name>__d<data digest>.jsonl``: one file per configuration *and* per input data.

    The data digest (of the rows read and their kinds) keeps a re-run on changed files from resuming
    answers given about other rows.
    """
    name = run_name(
        [AUDIT_DATASET_KEY],
        provider_name,
        provider.model,
        PROMPT_VARIANT,
        metadata_source,
        "fresh",
        seed,
        base_url=provider.base_url,
    )
    return trials_dir / f"{name}__d{data_digest[:10]}.jsonl"


def run_audit_trials(
    specs: Sequence[TrialSpec],
    *,
    provider: Provider,
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    metadata_source: str,
    out_path: Path,
    cache: ResponseCache,
    concurrency: int,
    progress: bool,
    parameters: dict[str, Any],
) -> RunSummary:
    """Run (or resume) the audit's trials; blocking. The provider is closed afterwards.

    Raises:
        RunAborted, ProviderError, CacheMissError: as :func:`llmdisc.discrimination.runner.run_trials` (finished
        trials kept).
    """
    tables = {AUDIT_DATASET_KEY: {"real": real, RELEASE: synthetic}}

    async def main() -> RunSummary:
        try:
            return await run_trials(
                specs,
                provider=provider,
                tables=tables,
                variant=PROMPT_VARIANT,
                metadata_source=metadata_source,
                out_path=out_path,
                cache=cache,
                concurrency=concurrency,
                generate_config=GenerateConfig(),
                progress=progress,
                parameters=parameters,
            )
        finally:
            await provider.aclose()

    return run_sync(main)


def condition_scores(trials: pd.DataFrame, *, seed: int) -> list[dict[str, Any]]:
    """Score each condition of the audit's trials with :func:`llmdisc.scoring.metrics.score_cells`.

    Returns:
        One dict per condition: ``condition``, n_total/n_valid/n_invalid/n_error, n_valid_real/syn, p_real,
        p_syn (Wilson 95 % bounds), drs (bootstrap 95 % bounds, ``bootstrap_seed``), balanced_accuracy,
        mean_confidence. DRS 0 = the LLM told nothing apart (or always gave one label), 0.5 = chance-level
        balanced guessing, 1 = every sample told apart.
    """
    from llmdisc.scoring.metrics import CELL_COLUMNS, score_cells

    keep = [
        "condition",
        "n_total",
        "n_valid",
        "n_invalid",
        "n_error",
        "n_valid_real",
        "n_valid_syn",
        "n_correct_real",
        "n_correct_syn",
        "p_real",
        "p_real_ci_low",
        "p_real_ci_high",
        "p_syn",
        "p_syn_ci_low",
        "p_syn_ci_high",
        "drs",
        "drs_ci_low",
        "drs_ci_high",
        "bootstrap_seed",
        "balanced_accuracy",
        "mean_confidence",
    ]
    if trials.empty:
        return []
    scored = score_cells(trials, by=CELL_COLUMNS, seed=seed)
    return [{k: _plain(row[k]) for k in keep} for _, row in scored.iterrows()]


def _plain(value: Any) -> Any:
    """Return a NumPy scalar as a Python value, NaN as None (JSON has no NaN)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _column_pattern(column: str) -> re.Pattern[str]:
    # "hours_per_week" is also cited as "hours per week" or "hours-per-week"
    parts = [re.escape(p) for p in re.split(r"[_\-\s.]+", column) if p]
    return re.compile(r"(?<![A-Za-z0-9])" + r"[_\-\s.]?".join(parts) + r"(?![A-Za-z0-9])", re.IGNORECASE)


def cited_columns(trials: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """How many answered trials name each column in their red flags or reasoning.

    A column counts once per trial and place (matching is case-insensitive and treats ``_``, ``-``, ``.`` and
    a space alike). Only trials with an answer (valid or invalid) are read.

    Returns:
        One dict per column named at least once, most cited first: ``column``, ``trials`` (trials naming it
        anywhere), ``in_red_flags``, ``in_reasoning``, ``share`` (trials / answered trials).
    """
    answered = trials[trials["status"] != "error"] if not trials.empty else trials
    patterns = {c: _column_pattern(c) for c in columns}
    rows = []
    for column, pattern in patterns.items():
        in_flags = in_reason = anywhere = 0
        for _, trial in answered.iterrows():
            flags = " | ".join(str(f) for f in (trial["red_flags"] or []))
            hit_flags, hit_reason = (
                bool(pattern.search(flags)),
                bool(pattern.search(str(trial["reasoning"] or ""))),
            )
            in_flags, in_reason, anywhere = (
                in_flags + hit_flags,
                in_reason + hit_reason,
                anywhere + (hit_flags or hit_reason),
            )
        if anywhere:
            rows.append(
                {
                    "column": column,
                    "trials": anywhere,
                    "in_red_flags": in_flags,
                    "in_reasoning": in_reason,
                    "share": anywhere / len(answered),
                }
            )
    return sorted(rows, key=lambda r: (-r["trials"], r["column"]))


_NOT_A_CUE = re.compile(r"^(real|synthetic|synthe[a-z]*|fake|genuine|true|false|yes|no|none|null|nan|n/?a|"
                        r"unknown|label|verdict|[-_.*?!]*)$")
"""A red flag that folds (lower case, outer punctuation and spaces stripped) to one of these says nothing about
the table: a verdict word (``REAL``, ``SYNTHETIC`` and variants a small model invents, ``Synthetism``), a truth
value, or an empty value (``nan``, ``None``, ``-``). A flag in angle brackets is the prompt's placeholder
(``<list of specific suspicious patterns you noticed, if any>``) repeated back, not a cue either."""


def is_cue(flag: Any) -> bool:
    """Whether a red flag is cue text (something about the rows) rather than a verdict word or empty value.

    Args:
        flag: one entry of a trial's ``red_flags`` (any type; None and NaN are not cues).

    Returns:
        True for text such as ``"ages end in 0"``; False for ``"REAL"``, ``"Synthetic."``, ``"Synthetism"``,
        ``"nan"``, ``""``, None, NaN, ``"<list of specific suspicious patterns ...>"``.
    """
    if flag is None or (isinstance(flag, float) and flag != flag):
        return False
    folded = " ".join(str(flag).split()).strip(" .,:;'\"()[]{}").lower()
    verdict_only = re.sub(r"^(verdict|label|answer)\s*[:=]\s*", "", folded)
    echoed = folded.startswith("<") and folded.endswith(">")  # the prompt's placeholder, repeated back
    return bool(folded) and not echoed and not _NOT_A_CUE.match(folded) and not _NOT_A_CUE.match(verdict_only)


def frequent_red_flags(trials: pd.DataFrame, top: int = 10) -> list[dict[str, Any]]:
    """The red-flag strings the LLM gave most often (case and spacing folded), with the labels they came with.

    Only cue text is counted (:func:`is_cue`): verdict words, truth values and empty values are not red flags.

    Returns:
        Up to ``top`` dicts, most frequent first: ``red_flag`` (its first spelling), ``count`` (trials giving
        it), ``on_real`` / ``on_synthetic`` (of those, samples that were real / synthetic).
    """
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    by_label: dict[str, Counter[str]] = {}
    if trials.empty:
        return []
    for _, trial in trials[trials["status"] != "error"].iterrows():
        seen = set()
        flags = trial["red_flags"]
        for flag in flags if isinstance(flags, (list, tuple)) or hasattr(flags, "tolist") else []:
            if not is_cue(flag):
                continue
            text = " ".join(str(flag).split())
            key = text.lower().rstrip(".")
            if not key or key in seen:
                continue
            seen.add(key)
            counts[key] += 1
            spelling.setdefault(key, text)
            by_label.setdefault(key, Counter())[trial["true_label"]] += 1
    return [
        {
            "red_flag": spelling[key],
            "count": n,
            "on_real": by_label[key]["REAL"],
            "on_synthetic": by_label[key]["SYNTHETIC"],
        }
        for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    ]
