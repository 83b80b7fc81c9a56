"""Likelihood discriminator: how probable a causal LM finds a sample's rows, real holdout vs synthetic.

Scorers (:mod:`~.base`, two backends), the sample as text (:mod:`~.serialise`), its scores (:mod:`~.sample_scores`:
mean token log-likelihood, Min-K %, per column and row), runs and records (:mod:`~.runs`, :mod:`~.records`,
:mod:`~.configured` for notebook 09), and the joint-structure contrast (:mod:`~.joint`, :mod:`~.joint_runs`).
The default backend, transformers, was chosen by speed (docs/measurements.md, "The likelihood scorer:
transformers or llama.cpp"); opt-in models: docs/install.md, "Opt-in likelihood models".
"""

from llmdisc.discrimination.likelihood.base import (DEFAULT_LIKELIHOOD_MODEL, LIKELIHOOD_MODELS,
                                                    ContextOverflowError, LikelihoodScorer, TokenLogprobs)
from llmdisc.discrimination.likelihood.configured import (BACKENDS, LikelihoodRunConfig, open_scorer,
                                                          run_configured_joint, run_configured_likelihood)
from llmdisc.discrimination.likelihood.joint import (JointScores, column_contrasts, joint_contrast,
                                                     permute_column, permute_within)
from llmdisc.discrimination.likelihood.joint_runs import run_joint
from llmdisc.discrimination.likelihood.records import (JOINT_RECORD_COLUMNS, RECORD_COLUMNS, JointRecord,
                                                       LikelihoodRecord, load_joint, load_likelihood)
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables, run_likelihood
from llmdisc.discrimination.likelihood.serialise import CONTEXTS, SERIALISATIONS, place, serialise

__all__ = ["BACKENDS", "CONTEXTS", "DEFAULT_LIKELIHOOD_MODEL", "JOINT_RECORD_COLUMNS", "LIKELIHOOD_MODELS",
           "RECORD_COLUMNS", "SERIALISATIONS", "ContextOverflowError", "JointRecord", "JointScores",
           "LikelihoodRecord", "LikelihoodRunConfig", "LikelihoodScorer", "TokenLogprobs", "build_likelihood_queue",
           "column_contrasts", "joint_contrast", "load_joint", "load_likelihood", "load_likelihood_tables",
           "open_scorer", "permute_column", "permute_within", "place", "run_configured_joint", "run_configured_likelihood", "run_joint",
           "run_likelihood", "serialise"]
