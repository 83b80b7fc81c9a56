"""Content-free prompts for contextual calibration (Zhao et al. 2021): the label bias of a model, measured.

A content-free prompt is a trial's prompt with every table cell ``N/A``, so whatever the model prefers there is its
prior for the labels. Its log-odds ``log P(SYNTHETIC) - log P(REAL)`` is the threshold of the calibrated decision in
:mod:`llmdisc.scoring.probability`. One prompt per dataset × condition × model (:func:`score_content_free`),
written beside the run file as ``<run>.content-free.json``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from llmdisc.discrimination.cache import ResponseCache, request_cache_key
from llmdisc.discrimination.label_scores import score_fields
from llmdisc.discrimination.metadata import metadata_block
from llmdisc.discrimination.prompts import build_prompt
from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest, Provider
from llmdisc.discrimination.retries import RequestBudget, call_with_retries
from llmdisc.discrimination.runner import public_identity

CONTENT_FREE_VALUE = "N/A"


def content_free_request(real: pd.DataFrame, *, condition: str, variant: str, metadata_source: str,
                         n_rows: int = 20) -> PromptRequest:
    """The content-free prompt of a condition: the trial prompt with every cell of ``real`` (columns, row
    count and C2 block as a trial shows them) ``N/A``. For C2, ``metadata_source`` ``real``/``source`` shows
    the real table's block (the block a REAL trial sees), ``sample`` that of the content-free rows themselves.
    """
    table = pd.DataFrame([[CONTENT_FREE_VALUE] * real.shape[1]] * n_rows, columns=list(real.columns))
    metadata = None
    if condition == "C2":
        described = table if metadata_source == "sample" else real
        metadata = metadata_block(described, include_row_count=variant == "paper")
    return build_prompt(table, condition=condition, variant=variant, metadata_text=metadata, n_total=len(real))


@dataclass
class ContentFreeScore:
    """One content-free prompt's label scores."""

    dataset_key: str
    condition: str
    provider: str
    model: str
    model_digest: str | None
    log_odds: float | None
    """``logprob_synthetic - logprob_real`` of the content-free prompt; None when the scores were invalid."""
    p_synthetic: float | None
    label_mass: float | None
    score_status: str
    score_invalid_reason: str | None
    cache_hit: bool


async def score_content_free(provider: Provider, real: pd.DataFrame, *, dataset_key: str,
                             conditions: Sequence[str], variant: str, metadata_source: str, n_rows: int,
                             cache: ResponseCache | None, config: GenerateConfig = GenerateConfig(),
                             identity: dict[str, Any] | None = None,
                             max_attempts: int = 5, budget: RequestBudget | None = None) -> list[ContentFreeScore]:
    """Score the content-free prompt of each condition (cached like trials; a failure raises).

    ``budget``: the run's request budget, so its limit holds across the trials and this pass (None: unlimited).
    Returns one :class:`ContentFreeScore` per condition, in the order given.
    """
    if identity is None:  # keyed exactly as the runner keys trials: the base URL without credentials
        identity = public_identity(provider)
    out = []
    for condition in conditions:
        request = content_free_request(real, condition=condition, variant=variant,
                                       metadata_source=metadata_source, n_rows=n_rows)
        key = request_cache_key(identity, request, config, replicate=0, kind="label_scores")
        scores = cache.get_label_scores(key) if cache is not None else None
        hit = scores is not None
        if not hit:
            scores, _ = await call_with_retries(provider, request, config, max_attempts=max_attempts,
                                                budget=budget or RequestBudget(None), seed=0,
                                                method="label_scores")
            if cache is not None:
                cache.put_label_scores(key, scores)
        fields = score_fields(scores)
        valid = fields["score_status"] == "valid"
        out.append(ContentFreeScore(
            dataset_key=dataset_key, condition=condition, provider=str(identity["provider"]),
            model=str(identity["model"]), model_digest=scores.model_version or identity.get("model_digest"),
            log_odds=(fields["logprob_synthetic"] - fields["logprob_real"]) if valid else None,
            p_synthetic=fields["p_synthetic"], label_mass=fields["label_mass"],
            score_status=fields["score_status"], score_invalid_reason=fields["score_invalid_reason"],
            cache_hit=hit))
    return out


def write_content_free(run_file: Path | str, scores: Sequence[ContentFreeScore]) -> Path:
    """Write the scores to ``<run>.content-free.json`` beside the run file (atomically); return that path."""
    path = Path(run_file).with_name(f"{Path(run_file).stem}.content-free.json")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps([asdict(s) for s in scores], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load_content_free(path_or_dir: Path | str) -> pd.DataFrame:
    """All content-free scores of a run file's folder (or of one ``*.content-free.json``) as a DataFrame.

    Columns of :class:`ContentFreeScore` and ``run_id`` (the score's run file); empty when there are none.
    """
    path = Path(path_or_dir)
    files = sorted(path.rglob("*.content-free.json")) if path.is_dir() else [path] if path.exists() else []
    rows = [{**row, "run_id": f.name.removesuffix(".content-free.json")}
            for f in files for row in json.loads(f.read_text(encoding="utf-8"))]
    columns = [*ContentFreeScore.__dataclass_fields__, "run_id"]
    return pd.DataFrame(rows, columns=columns)
