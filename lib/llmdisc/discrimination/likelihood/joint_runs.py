"""The resumable run of the joint-structure contrast (:mod:`~.joint`) over a plan of samples.

The plan and tables are the likelihood run's (:mod:`~.runs`). With m > 0 reference rows (:func:`draw_reference`,
once per dataset, shown before every sample), holdout samples are drawn from the holdout *without* those rows
(``row_ids`` still positions in the whole holdout), so no real sample repeats a reference row the model could copy.
:func:`run_joint` appends one :class:`~.records.JointRecord` per sample, resuming (:func:`~.runs.resume`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.discrimination.cache import ScoreCache, default_cache_dir
from llmdisc.discrimination.likelihood.base import LikelihoodScorer
from llmdisc.discrimination.likelihood.joint import ColumnContrasts, column_contrasts, joint_contrast, joint_text
from llmdisc.discrimination.likelihood.records import JointRecord
from llmdisc.discrimination.likelihood.runs import LikelihoodSpec, PlannedSample, record_head, resume, text_sha256
from llmdisc.discrimination.samples import derive_seed, sample_rows
from llmdisc.errors import ConfigError, DataError
from llmdisc.manifest import sha256_json
from llmdisc.paths import results_dir

DEFAULT_K = 2
DEFAULT_REFERENCE_ROWS = 20
"""Real reference rows before each sample: 20 separated as well as 40 for fewer tokens (docs/results.md)."""


def joint_cache() -> ScoreCache:
    """The project's store of joint-structure results (``<cache>/likelihood-joint``)."""
    return ScoreCache(default_cache_dir() / "likelihood-joint")


def draw_reference(holdout: pd.DataFrame, m: int, *, run_seed: int, dataset_key: str) -> tuple[pd.DataFrame,
                                                                                                  list[int], int]:
    """The run's m reference rows of a dataset: ``(rows, positional ids in the holdout, seed)``; DataError if
    the holdout has fewer than m rows."""
    seed = derive_seed(run_seed, dataset_key, "joint_reference", m)
    if m > len(holdout):
        raise DataError(f"{m} reference rows asked of a holdout of {len(holdout)} rows; fix: use fewer reference rows")
    rows, ids = sample_rows(holdout, m, seed=seed)
    return rows, ids, seed


@dataclass
class JointRunSummary:
    """What one call of :func:`run_joint` did."""

    scored: int = 0
    cached: int = 0
    skipped: int = 0
    seconds: float = 0.0


def _draw(spec: LikelihoodSpec, table: pd.DataFrame, n_rows: int, exclude: list[int]) -> tuple[pd.DataFrame,
                                                                                               list[int]]:
    if spec.source == "holdout" and exclude:
        sample, local = sample_rows(table.drop(index=table.index[exclude]), n_rows, seed=spec.sample_seed)
        excluded = set(exclude)
        positions = [i for i in range(len(table)) if i not in excluded]
        return sample, [positions[i] for i in local]
    return sample_rows(table, n_rows, seed=spec.sample_seed)


def run_joint(specs: Sequence[LikelihoodSpec], tables: dict[str, dict[str, pd.DataFrame]], scorer: LikelihoodScorer,
              out_path: Path | str, *, k: int = DEFAULT_K, reference_rows: int = DEFAULT_REFERENCE_ROWS,
              serialisation: str = "markdown", context: str = "none", variant: str = "neutral", n_rows: int = 20,
              column_k: int = 0, cache: ScoreCache | None = None,
              progress: Callable[[int, int, LikelihoodSpec], None] | None = None) -> JointRunSummary:
    """Score each planned sample's joint-structure contrast and append its record (resuming).

    Args:
        tables: ``{dataset_key: load_likelihood_tables(...)}`` (a ``holdout`` table is needed for reference rows).
        k: Within-sample permutations per sample.
        reference_rows: m real holdout rows shown before each sample (0 = none).
        serialisation, context, variant: How the table is shown (:func:`~.joint.joint_contrast`).
        column_k: Permutations per column of :func:`~.joint.column_contrasts` (0 = skip; they cost
            columns × column_k passes per sample).
        cache: Result cache (default :func:`joint_cache`; ``ScoreCache(enabled=False)`` turns it off).
        progress: Called as ``progress(done, total, spec)`` after each sample.

    Raises:
        ConfigError: k < 1 or reference_rows < 0. DataError / ContextOverflowError: as
            :func:`~.joint.joint_contrast`.
    """
    if k < 1 or reference_rows < 0 or column_k < 0:
        raise ConfigError(f"k={k}, reference_rows={reference_rows}, column_k={column_k}; fix: k >= 1, "
                          "reference_rows >= 0, column_k >= 0")
    summary = JointRunSummary()
    references: dict[str, tuple[pd.DataFrame | None, list[int], int | None]] = {}
    own = {f.name for f in fields(JointRecord)}

    def plan(spec: LikelihoodSpec) -> PlannedSample:
        key = spec.dataset_key
        if key not in references:
            references[key] = ((None, [], None) if not reference_rows else
                               draw_reference(tables[key]["holdout"], reference_rows, run_seed=spec.run_seed,
                                              dataset_key=key))
        reference, reference_ids, reference_seed = references[key]
        source_table = tables[key][spec.source]
        sample, row_ids = _draw(spec, source_table, n_rows, reference_ids)
        seed = derive_seed(spec.run_seed, spec.sample_id, "joint")
        options = {"serialisation": serialisation, "context": context, "reference": reference, "variant": variant,
                   "n_total": len(source_table)}
        text = joint_text(scorer, sample, **options).text
        text_hash = text_sha256(text)

        def compute() -> dict[str, Any]:
            scores = joint_contrast(scorer, sample, k=k, seed=seed, **options)
            columns = (asdict(column_contrasts(scorer, sample, k=column_k, seed=seed, logprob=scores.logprob,
                                               **options)) if column_k else None)
            return {"scores": asdict(scores), "columns": columns}

        def record(value: dict[str, Any]) -> JointRecord:
            columns = value["columns"] or {}
            return JointRecord(
                **record_head(spec, scorer, row_ids=row_ids, n_rows=n_rows, serialisation=serialisation,
                              context=context, prompt_variant=variant, text_hash=text_hash),
                reference_seed=reference_seed, reference_row_ids=reference_ids,
                **{name: v for name, v in value["scores"].items() if name in own}, column_k=column_k,
                column_contrasts=columns.get("contrasts"), column_seeds=columns.get("seeds"),
                column_permuted_logprobs=columns.get("permuted_logprobs"),
                column_seconds=columns.get("seconds", 0.0))

        identity = {"text_hash": text_hash, "model_digest": scorer.model_digest, "backend": scorer.backend, "k": k,
                    "seed": seed, "column_k": column_k}
        cache_key = sha256_json({"kind": "joint", "text": text, "serialisation": serialisation, "context": context,
                                 "variant": variant, "backend": scorer.backend, "model_digest": scorer.model_digest,
                                 "k": k, "seed": seed, "column_k": column_k})
        return PlannedSample(identity, cache_key, compute, record)

    return resume(specs, out_path, plan, cache if cache is not None else joint_cache(), summary, progress)


def default_joint_path(name: str) -> Path:
    """``results/likelihood/joint/<name>.jsonl``."""
    return results_dir() / "likelihood" / "joint" / f"{name}.jsonl"


__all__ = ["DEFAULT_K", "DEFAULT_REFERENCE_ROWS", "ColumnContrasts", "JointRunSummary", "default_joint_path",
           "draw_reference", "joint_cache", "run_joint"]
