"""A :class:`~llmdisc.discrimination.samples.TrialSpec` and the tables made into the exact request sent to a
model, all in :func:`prepare_prompt`: the same spec and tables always give the same bytes and ``prompt_hash``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from llmdisc.discrimination.metadata import METADATA_SOURCES, metadata_block
from llmdisc.discrimination.prompts import build_prompt, estimate_tokens, prompt_hash
from llmdisc.discrimination.providers.base import PromptRequest
from llmdisc.discrimination.samples import TrialSpec, sample_rows
from llmdisc.errors import ConfigError, DataError


@dataclass(frozen=True)
class PreparedPrompt:
    """The request of one trial and what the trial record stores about it."""

    request: PromptRequest
    prompt_hash: str
    row_ids: list[int]
    """Positional ids of the shown rows in the source table, in the order shown."""
    sample_seed: int
    n_total: int


@dataclass
class MetadataCache:
    """Memoises :func:`~llmdisc.discrimination.metadata.metadata_block` of whole tables (~1 s on 30k rows) by
    table identity. It holds a reference to each table, so an ``id`` is never reused while its entry lives; do
    not mutate a table after it has been used with a cache."""

    _entries: dict[tuple[int, bool], tuple[pd.DataFrame, str]] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def block(self, table: pd.DataFrame, *, include_row_count: bool = True) -> str:
        """Return ``metadata_block(table, include_row_count=...)``, computing it at most once per table."""
        key = (id(table), include_row_count)
        entry = self._entries.get(key)
        if entry is not None and entry[0] is table:
            self.hits += 1
            return entry[1]
        self.misses += 1
        text = metadata_block(table, include_row_count=include_row_count)
        self._entries[key] = (table, text)
        return text


def prepare_prompt(spec: TrialSpec, *, real: pd.DataFrame, synthetic: pd.DataFrame, variant: str,
                   metadata_source: str, n_rows: int = 20,
                   metadata_cache: MetadataCache | None = None) -> PreparedPrompt:
    """Build the :class:`PreparedPrompt` of one trial.

    Args:
        real: The real train table of ``spec.dataset_key``; synthetic: that of ``spec.synthesizer``.
        metadata_source: For C2, which table the metadata describes
            (:data:`~llmdisc.discrimination.metadata.METADATA_SOURCES`). Checked for C1 too.

    ConfigError for an unknown metadata source, prompt variant or label; DataError when the source table has
    fewer than ``n_rows`` rows or the real and synthetic tables have different columns.
    """
    source, sample, row_ids = _draw(spec, real=real, synthetic=synthetic, n_rows=n_rows,
                                    metadata_source=metadata_source)
    metadata_text = (_metadata_text(metadata_source, variant=variant, source=source, real=real, sample=sample,
                                    metadata_cache=metadata_cache) if spec.condition == "C2" else None)
    request = build_prompt(sample, condition=spec.condition, variant=variant, metadata_text=metadata_text,
                           n_total=len(source))
    return PreparedPrompt(request=request, prompt_hash=prompt_hash(request), row_ids=row_ids,
                          sample_seed=spec.sample_seed, n_total=len(source))


def _draw(spec: TrialSpec, *, real: pd.DataFrame, synthetic: pd.DataFrame, n_rows: int,
          metadata_source: str) -> tuple[pd.DataFrame, pd.DataFrame, list[int]]:
    """Check the inputs and return (source table, shown rows, their positional ids)."""
    if metadata_source not in METADATA_SOURCES:
        raise ConfigError(f"metadata_source={metadata_source!r} is not known; fix: use one of "
                          f"{', '.join(map(repr, METADATA_SOURCES))}")
    if spec.true_label not in ("REAL", "SYNTHETIC"):
        raise ConfigError(f"trial {spec.trial_id} has true_label={spec.true_label!r}; fix: use 'REAL' or "
                          "'SYNTHETIC'")
    if list(real.columns) != list(synthetic.columns):
        raise DataError(f"the real and {spec.synthesizer} tables of {spec.dataset_key} have different "
                        f"columns ({list(real.columns)} vs {list(synthetic.columns)}); fix: regenerate the "
                        "synthetic table from this real table (llmdisc synth) so both share one schema")
    source = real if spec.true_label == "REAL" else synthetic
    sample, row_ids = sample_rows(source, n_rows, seed=spec.sample_seed, sampling=spec.sampling)
    return source, sample, row_ids


def _metadata_text(metadata_source: str, *, variant: str, source: pd.DataFrame, real: pd.DataFrame,
                   sample: pd.DataFrame, metadata_cache: MetadataCache | None) -> str:
    include_rows = variant == "paper"  # the neutral prompt never shows the dataset size
    table = {"source": source, "real": real}.get(metadata_source, sample)
    if metadata_source == "sample" or metadata_cache is None:  # only whole tables are worth caching
        return metadata_block(table, include_row_count=include_rows)
    return metadata_cache.block(table, include_row_count=include_rows)


def trial_metadata_text(spec: TrialSpec, *, real: pd.DataFrame, synthetic: pd.DataFrame, variant: str,
                        metadata_source: str, n_rows: int = 20,
                        metadata_cache: MetadataCache | None = None) -> str:
    """The metadata block the trial would show under C2 (whatever ``spec.condition`` is); arguments as
    :func:`prepare_prompt`."""
    source, sample, _ = _draw(spec, real=real, synthetic=synthetic, n_rows=n_rows,
                              metadata_source=metadata_source)
    return _metadata_text(metadata_source, variant=variant, source=source, real=real, sample=sample,
                          metadata_cache=metadata_cache)


def token_overview(specs: Sequence[TrialSpec], *, real: pd.DataFrame, synthetic: pd.DataFrame,
                   variants: Sequence[str], metadata_sources: Sequence[str], n_rows: int = 20,
                   metadata_cache: MetadataCache | None = None) -> pd.DataFrame:
    """Prepare every spec under every variant (and, for C2, every metadata source) and measure the prompts.

    Arguments as for :func:`prepare_prompt`. One row per rendered prompt: trial_id, true_label, condition,
    variant, metadata_source (``-`` for C1), system_tokens, user_tokens, total_tokens (estimates), user_chars,
    prompt_hash.
    """
    cache = metadata_cache if metadata_cache is not None else MetadataCache()
    rows: list[dict[str, Any]] = []
    for spec in specs:
        for variant in variants:
            for source in (metadata_sources if spec.condition == "C2" else ["-"]):
                prepared = prepare_prompt(spec, real=real, synthetic=synthetic, variant=variant,
                                          metadata_source=source if source != "-" else "real", n_rows=n_rows,
                                          metadata_cache=cache)
                system_tokens = estimate_tokens(prepared.request.system)
                user_tokens = estimate_tokens(prepared.request.user)
                rows.append({"trial_id": spec.trial_id, "true_label": spec.true_label,
                             "condition": spec.condition, "variant": variant, "metadata_source": source,
                             "system_tokens": system_tokens, "user_tokens": user_tokens,
                             "total_tokens": system_tokens + user_tokens,
                             "user_chars": len(prepared.request.user), "prompt_hash": prepared.prompt_hash})
    return pd.DataFrame(rows)
