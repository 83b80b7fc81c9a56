"""Likelihood discriminator (issue 15): how probable a causal LM finds a sample's rows, real holdout vs synthetic.

* :mod:`~.base` — the interface :class:`LikelihoodScorer` (token ids, character offsets, per-token log-probs of a
  text) and the packaged models; :mod:`~.transformers_backend` and :mod:`~.llamacpp_backend` — its two
  implementations.
* :mod:`~.serialise` — the sample as text (the Markdown table exactly as the prompt shows it, or GReaT-style
  ``column is value`` lines) with the character span of every cell, placed inside the C1 prompt or alone.
* :mod:`~.sample_scores` — a sample's scores from its tokens: mean token log-likelihood, Min-K %, and the split by
  column and by row (parts that add up to the total).
* :mod:`~.records`, :mod:`~.score_cache` and :mod:`~.runs` — per-sample records written as JSONL, resumable; the
  content-addressed score cache; the plan of samples. :mod:`~.configured` — one configured run (notebook 09).

Default implementation: transformers, chosen by speed. Measured here on 1 December 2026 (``llmdisc bench likelihood
--samples 1 --llamacpp-rows 1``, 2 threads on a machine busy with other jobs, load ~10): transformers scored a
20-row Adult C1 sample (~1,900 prompt tokens) at 56 prompt tok/s = 1.8 samples/min, faster than llama.cpp's own
prompt processing of the same prompt (29 tok/s), while forced tokens in llama.cpp ran at 3 tok/s (one decoding step
each: ~0.1 samples/min). Memory goes the other way: peak RSS 1,888 MiB (float32 dequantised weights, the logits of
every position) against 567 MiB for llama.cpp, which matters only for larger models. The two agree per token
within 0.39 nats (mean 0.16, r = 0.999, totals within 2 %; ``tests/unit/discrimination/test_likelihood.py``).

Opt-in models: the Qwen2.5-Coder 0.5B/1.5B chunk packages of FEASIBILITY are not registered yet
(:data:`~.base.OPT_IN_MODELS` is empty): their chunks must be joined, pinned and sha256-checked first.
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
    run_configured_likelihood,
)
from llmdisc.discrimination.likelihood.records import RECORD_COLUMNS, LikelihoodRecord, load_likelihood
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables, run_likelihood
from llmdisc.discrimination.likelihood.serialise import CONTEXTS, SERIALISATIONS, place, serialise

__all__ = ["BACKENDS", "CONTEXTS", "DEFAULT_LIKELIHOOD_MODEL", "LIKELIHOOD_MODELS", "RECORD_COLUMNS",
           "SERIALISATIONS", "ContextOverflowError", "LikelihoodRecord", "LikelihoodRunConfig", "LikelihoodScorer",
           "TokenLogprobs", "build_likelihood_queue", "load_likelihood", "load_likelihood_tables", "open_scorer",
           "place", "run_configured_likelihood", "run_likelihood", "serialise"]
