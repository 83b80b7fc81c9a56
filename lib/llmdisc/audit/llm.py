"""The LLM part of an audit: balanced trials on the ``release`` cell and its two controls, and what the LLM cited.

Trials run through the compendium's runner (:func:`llmdisc.discrimination.runner.run_trials`) into
``DIR/trials/<run>.jsonl`` and resume on a re-run; with label scores the content-free prompt of each condition is
scored too (``<run>.content-free.json``, contextual calibration). The cells are scored in :mod:`~llmdisc.audit.scores`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from llmdisc.audit.instruments.base import RELEASE
from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.providers.base import GenerateConfig, Provider
from llmdisc.discrimination.runner import RunSummary, run_name, run_sync, run_trials
from llmdisc.discrimination.samples import TrialSpec, build_trial_queue
from llmdisc.synthesis.controls import NEGATIVE_CONTROL, POSITIVE_CONTROL

AUDIT_DATASET_KEY = "audit"
"""The ``dataset_key`` (and ``dataset``) of audit trial records."""
PROMPT_VARIANT = "neutral"
CELLS = (RELEASE, POSITIVE_CONTROL, NEGATIVE_CONTROL)
"""The audit's cells: the release, the positive control (columns shuffled) and the negative control (real holdout
rows in the "synthetic" class), from :mod:`llmdisc.synthesis.controls`."""


def audit_trial_queue(trials_per_label: int, conditions: Sequence[str], *, run_seed: int,
                      cells: Sequence[str] = CELLS, scoring: str = "both") -> list[TrialSpec]:
    """The ``2 × trials_per_label × len(conditions) × len(cells)`` trial specs of the audit's cells, ordered by trial
    index then cell; REAL sample ``i`` is the same in every cell, so the response cache answers it once."""
    queue = build_trial_queue([AUDIT_DATASET_KEY], cells, conditions, trials_per_label, run_seed=run_seed,
                              scoring=scoring, share_real_samples=True, extra_cells=(RELEASE,))
    return sorted(queue, key=lambda spec: (spec.index, list(cells).index(spec.synthesizer)))


def trial_file(trials_dir: Path, provider: Provider, provider_name: str, metadata_source: str, seed: int,
               data_digest: str, *, scoring: str = "both", cells: Sequence[str] = CELLS) -> Path:
    """``trials_dir/<run_name>__d<digest>.jsonl``: one file per configuration *and* per input data. The digest
    (of the rows read and their kinds, and of the cells) keeps a re-run on changed files, or an audit folder
    written before the controls existed, from resuming answers given about other rows."""
    name = run_name([AUDIT_DATASET_KEY], provider_name, provider.model, PROMPT_VARIANT, metadata_source,
                    "fresh", seed, base_url=provider.base_url, scoring=scoring)
    digest = data_digest if tuple(cells) == (RELEASE,) else hashlib.sha256(
        f"{data_digest}|{'|'.join(cells)}|shared-real".encode()).hexdigest()
    return trials_dir / f"{name}__d{digest[:10]}.jsonl"


async def check_label_scoring(provider: Provider) -> None:
    """Fail before any trial when the provider cannot score labels: its ``ProviderConfigError`` or
    ``CacheMissError`` re-raised with "pass --scoring verdict" added (other provider errors unchanged)."""
    from llmdisc.discrimination.providers.errors import ProviderConfigError
    from llmdisc.errors import CacheMissError

    await provider.check()
    try:
        await provider.check_label_scores()
    except (ProviderConfigError, CacheMissError) as exc:
        raise type(exc)(f"{exc}. In llmdisc audit: pass --scoring verdict (verdicts only: no AUC and no "
                        "calibrated DRS)") from None


def run_audit_trials(specs: Sequence[TrialSpec], *, provider: Provider, tables: dict[str, pd.DataFrame],
                     metadata_source: str, out_path: Path, cache: ResponseCache, concurrency: int,
                     progress: bool, parameters: dict[str, Any], scoring: str = "both",
                     conditions: Sequence[str] = (), n_rows: int = 20) -> tuple[RunSummary, dict[str, Any]]:
    """Run (or resume) the audit's trials and, with label scores, the content-free prompts of ``conditions``
    (contextual calibration); blocking; the provider is closed afterwards. ``tables``: ``{"real", "release",
    "shuffled_columns", "real_holdout"}`` (the REAL class is drawn from ``real``). Returns ``(summary,
    content_free)``: the runner's summary and ``{"status": "scored"|"unavailable"|"not asked", "file",
    "reason"}`` (unscorable: calibration left out, never the audit). Raises as
    :func:`llmdisc.discrimination.runner.run_trials` (finished trials kept), or before any trial as
    :func:`check_label_scoring`."""
    from llmdisc.discrimination.content_free import score_content_free, write_content_free
    from llmdisc.errors import LlmdiscError

    cells = {AUDIT_DATASET_KEY: dict(tables)}

    async def main() -> tuple[RunSummary, dict[str, Any]]:
        try:
            if scoring != "verdict" and cache.mode != "offline":
                await check_label_scoring(provider)
            summary = await run_trials(specs, provider=provider, tables=cells, variant=PROMPT_VARIANT,
                                       metadata_source=metadata_source, out_path=out_path, cache=cache,
                                       concurrency=concurrency, generate_config=GenerateConfig(),
                                       progress=progress, parameters=parameters, n_rows=n_rows)
            content_free: dict[str, Any] = {"status": "not asked", "file": None, "reason": "--scoring verdict"}
            if scoring != "verdict":
                try:
                    scores = await score_content_free(
                        provider, tables["real"], dataset_key=AUDIT_DATASET_KEY, conditions=list(conditions),
                        variant=PROMPT_VARIANT, metadata_source=metadata_source, n_rows=n_rows, cache=cache)
                    path = write_content_free(out_path, scores)
                    content_free = {"status": "scored", "file": path, "reason": None}
                except LlmdiscError as exc:  # contextual calibration is left out, with the reason
                    content_free = {"status": "unavailable", "file": None,
                                    "reason": f"{type(exc).__name__}: {exc}"}
            return summary, content_free
        finally:
            await provider.aclose()

    return run_sync(main)


_NOT_A_CUE = re.compile(r"^(real|synthetic|synthe[a-z]*|fake|genuine|true|false|yes|no|none|null|nan|n/?a|"
                        r"unknown|label|verdict|[-_.*?!]*)$")
"""A red flag that folds (lower case, outer punctuation and spaces stripped) to one of these says nothing about
the table: a verdict word (``REAL``, ``SYNTHETIC`` and variants a small model invents, ``Synthetism``), a truth
value, or an empty value (``nan``, ``None``, ``-``)."""


def is_cue(flag: Any) -> bool:
    """Whether one entry of a trial's ``red_flags`` is cue text (``"ages end in 0"``) rather than a verdict word or
    empty value (:data:`_NOT_A_CUE`; None, NaN and the prompt's placeholder repeated back are not cues either)."""
    if flag is None or (isinstance(flag, float) and flag != flag):
        return False
    folded = " ".join(str(flag).split()).strip(" .,:;'\"()[]{}").lower()
    verdict_only = re.sub(r"^(verdict|label|answer)\s*[:=]\s*", "", folded)
    echoed = folded.startswith("<") and folded.endswith(">")
    return bool(folded) and not echoed and not _NOT_A_CUE.match(folded) and not _NOT_A_CUE.match(verdict_only)


def frequent_red_flags(trials: pd.DataFrame, top: int = 10) -> list[dict[str, Any]]:
    """Up to ``top`` red-flag strings the LLM gave most often (case and spacing folded; cue text only,
    :func:`is_cue`), most frequent first: ``red_flag`` (its first spelling), ``count`` (trials giving it),
    ``on_real`` / ``on_synthetic`` (of those, samples that were real / synthetic)."""
    if trials.empty:
        return []
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    by_label: dict[str, Counter[str]] = {}
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
    return [{"red_flag": spelling[key], "count": n, "on_real": by_label[key]["REAL"],
             "on_synthetic": by_label[key]["SYNTHETIC"]}
            for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
