"""Stages 03–04, the LLM discriminator: samples, prompts, providers, cached and resumable trials.

Reads the real train tables (:mod:`llmdisc.data`) and the releases (:mod:`llmdisc.synthesis`); draws a seeded
sample per trial, renders the C1/C2 prompt, asks a provider through the response cache and the one retry loop,
parses the JSON verdict and writes one :class:`TrialRecord` per line to ``results/trials/<run>.jsonl`` (a re-run
resumes). :func:`run_configured` is one configured run as notebook 04 and ``llmdisc trials`` describe it.
"""

from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA, ParsedAnswer, VerdictAnswer, parse_answer
from llmdisc.discrimination.cache import ResponseCache, cache_key, request_cache_key
from llmdisc.discrimination.content_free import content_free_request, load_content_free, score_content_free
from llmdisc.discrimination.label_scores import SCORING_MODES, p_synthetic_from_logprobs, score_fields
from llmdisc.discrimination.metadata import METADATA_SOURCES, metadata_block, metadata_statistics
from llmdisc.discrimination.prompts import (PROMPT_VARIANTS, build_prompt, estimate_tokens, prompt_hash,
                                            render_table, system_prompt)
from llmdisc.discrimination.providers.base import (ANSWER_PREFIX, Completion, GenerateConfig, LabelScores,
                                                   PromptRequest, Provider)
from llmdisc.discrimination.providers.registry import PROVIDERS, get_provider
from llmdisc.discrimination.records import (CELL_KEY, PROTOCOL_COLUMNS, TRIAL_COLUMNS, TrialRecord,
                                            load_trials, protocol_label)
from llmdisc.discrimination.retries import RequestBudget, call_with_retries
from llmdisc.discrimination.runner import RunAborted, RunSummary, run_name, run_trials, run_trials_sync
from llmdisc.discrimination.samples import (SAMPLING_MODES, TrialSpec, build_trial_queue, derive_seed,
                                            sample_rows)
from llmdisc.discrimination.trial_inputs import (MetadataCache, PreparedPrompt, prepare_prompt,
                                                 token_overview, trial_metadata_text)
from llmdisc.discrimination.trial_runs import (TrialRunConfig, load_trial_tables, open_provider,
                                               record_run_metrics, run_configured)
from llmdisc.discrimination.likelihood import (LikelihoodRunConfig, load_joint, load_likelihood,
                                               run_configured_joint, run_configured_likelihood)

__all__ = [
    "LikelihoodRunConfig", "load_joint", "load_likelihood", "run_configured_joint",
    "run_configured_likelihood", "ANSWER_PREFIX", "LabelScores", "SCORING_MODES", "content_free_request",
    "load_content_free", "p_synthetic_from_logprobs", "score_content_free", "score_fields",
    "ANSWER_JSON_SCHEMA", "CELL_KEY", "PROTOCOL_COLUMNS", "protocol_label", "METADATA_SOURCES",
    "PROMPT_VARIANTS", "PROVIDERS", "SAMPLING_MODES", "TRIAL_COLUMNS", "Completion", "GenerateConfig",
    "MetadataCache", "ParsedAnswer", "PreparedPrompt", "PromptRequest", "Provider", "RequestBudget",
    "ResponseCache", "RunAborted", "RunSummary", "TrialRecord", "TrialRunConfig", "TrialSpec",
    "VerdictAnswer", "build_prompt", "build_trial_queue", "cache_key", "call_with_retries", "derive_seed",
    "estimate_tokens", "get_provider", "load_trial_tables", "load_trials", "metadata_block",
    "metadata_statistics", "open_provider", "parse_answer", "prepare_prompt", "prompt_hash",
    "record_run_metrics", "render_table", "request_cache_key", "run_configured", "run_name", "run_trials",
    "run_trials_sync", "sample_rows", "system_prompt", "token_overview", "trial_metadata_text",
]
