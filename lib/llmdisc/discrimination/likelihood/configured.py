"""One configured likelihood run, as notebook 09 describes it: plan, tables, scorer, records, manifest.

Why the scores are not taken from the C1 trials' own forward pass: the trials' runtime is llama.cpp, whose server
returns log-probabilities of generated tokens only (``echo`` is refused), so the prompt's tokens need a pass of
their own; the transformers pass used here scores every token of the same prompt text at once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from llmdisc import SYNTHESIZERS
from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL, LikelihoodScorer, llm_threads
from llmdisc.discrimination.likelihood.joint_runs import JointRunSummary, default_joint_path, run_joint
from llmdisc.discrimination.likelihood.runs import (LikelihoodRunSummary, LikelihoodSpec,
                                                    build_likelihood_queue, default_out_path,
                                                    load_likelihood_tables, run_likelihood)
from llmdisc.discrimination.likelihood.serialise import CONTEXTS, SERIALISATIONS
from llmdisc.discrimination.likelihood.transformers_backend import BACKEND_DTYPES, resolve_backend
from llmdisc.errors import ConfigError
from llmdisc.manifest import write_manifest

BACKENDS = (*BACKEND_DTYPES, "llamacpp")


@dataclass
class LikelihoodRunConfig:
    """Parameters of one run (one dataset key); see :func:`~.runs.build_likelihood_queue` for the samples."""

    dataset_key: str = "adult"
    synthesizers: tuple[str, ...] = SYNTHESIZERS
    samples_per_class: int = 20
    reference_samples: int = 0
    """Holdout samples of the decision rule's band; 0 = ``samples_per_class``."""
    model: str = DEFAULT_LIKELIHOOD_MODEL
    backend: str = "transformers"
    serialisation: str = "markdown"
    context: str = "c1_prompt"
    variant: str = "neutral"
    n_rows: int = 20
    seed: int = 0
    train_control: bool = True
    positive_control: bool = True
    threads: int = field(default_factory=llm_threads)
    """torch CPU threads: ``$LLMDISC_LLM_THREADS`` or 2."""
    quick: bool = False
    """Smoke test: first synthesizer, 2 samples per class, no positive control."""
    extra: dict = field(default_factory=dict)

    def effective(self) -> "LikelihoodRunConfig":
        """The configuration actually run (``quick`` shrinks it); checks every choice."""
        for name, value, allowed in (("backend", self.backend, BACKENDS),
                                     ("serialisation", self.serialisation, SERIALISATIONS),
                                     ("context", self.context, CONTEXTS)):
            if value not in allowed:
                raise ConfigError(f"{name}={value!r} is not known; fix: use one of {', '.join(allowed)}")
        config = replace(self, synthesizers=tuple(self.synthesizers), backend=resolve_backend(self.backend))
        if self.quick:
            config = replace(config, synthesizers=config.synthesizers[:1], samples_per_class=2, reference_samples=2,
                             positive_control=False)
        return config

    def run_name(self) -> str:
        """File stem of the run: dataset, model, backend, serialisation, context, seed (and ``quick``)."""
        return (f"likelihood-{self.dataset_key}-{self.model}-{self.backend}-{self.serialisation}-{self.context}"
                f"-s{self.seed}" + ("-quick" if self.quick else ""))


def open_scorer(model: str, backend: str, threads: int = 2) -> LikelihoodScorer:
    """The scorer of a backend (one of :data:`BACKENDS`)."""
    if backend in BACKEND_DTYPES:
        from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

        return TransformersScorer(model, threads=threads, dtype=BACKEND_DTYPES[resolve_backend(backend)])
    if backend == "llamacpp":
        from llmdisc.discrimination.likelihood.llamacpp_backend import LlamaCppScorer

        return LlamaCppScorer(model, threads=threads)
    raise ConfigError(f"backend {backend!r} is not known; fix: use one of {', '.join(BACKENDS)}")


@dataclass
class ConfiguredRun:
    """What :func:`run_configured_likelihood` or :func:`run_configured_joint` did and wrote."""

    summary: LikelihoodRunSummary | JointRunSummary
    out_path: Path
    manifest_path: Path
    model_digest: str
    load_seconds: float


def _plan(config: LikelihoodRunConfig) -> tuple[list[LikelihoodSpec], dict]:
    specs = build_likelihood_queue([config.dataset_key], config.synthesizers, config.samples_per_class,
                                   run_seed=config.seed, reference_samples=config.reference_samples or None,
                                   train_control=config.train_control, positive_control=config.positive_control)
    return specs, load_likelihood_tables(config.dataset_key, sorted({spec.source for spec in specs}),
                                         run_seed=config.seed)


def _finish(config: LikelihoodRunConfig, tables: dict, scorer: LikelihoodScorer, out: Path, summary,  # noqa: ANN001
            parameters: dict, metrics: dict) -> ConfiguredRun:
    """Write the run's manifest beside its records; returns what the run did."""
    from llmdisc.data.datasets import processed_dir
    from llmdisc.synthesis.releases import synthetic_path

    inputs = [processed_dir(config.dataset_key) / f"{split}.parquet" for split in ("holdout", "train")
              if split in tables]
    inputs += [synthetic_path(config.dataset_key, s) for s in config.synthesizers]
    manifest = write_manifest(out.parent, "09_likelihood", inputs=inputs, outputs=[out],
                              parameters={**{k: v for k, v in asdict(config).items() if k != "extra"}, **parameters},
                              seed=config.seed, name=f"{out.stem}.manifest.json", metrics=metrics,
                              extra={"model_digest": scorer.model_digest, "backend": scorer.backend})
    return ConfiguredRun(summary, out, manifest, scorer.model_digest, float(getattr(scorer, "load_seconds", 0.0)))


def run_configured_likelihood(config: LikelihoodRunConfig, *, out_path: Path | str | None = None,
                              scorer: LikelihoodScorer | None = None, progress=None) -> ConfiguredRun:  # noqa: ANN001
    """Score the run's samples into ``results/likelihood/<run>.jsonl`` (resuming) and write its manifest beside it
    (``<run>.manifest.json``)."""
    config = config.effective()
    specs, tables = _plan(config)
    scorer = scorer or open_scorer(config.model, config.backend, config.threads)
    out = Path(out_path) if out_path is not None else default_out_path(config.run_name())
    summary = run_likelihood(specs, {config.dataset_key: tables}, scorer, out, serialisation=config.serialisation,
                             context=config.context, variant=config.variant, n_rows=config.n_rows,
                             progress=progress)
    return _finish(config, tables, scorer, out, summary, {},
                   {"n_samples": len(specs), "scored": summary.scored, "from_trials": summary.from_trials,
                    "cached": summary.cached, "skipped": summary.skipped, "seconds": round(summary.seconds, 1)})


def joint_scorer(config: LikelihoodRunConfig, dtype: str | None = None) -> LikelihoodScorer:
    """The scorer of the joint contrast: the run's backend, or a transformers scorer at ``dtype`` if given."""
    if dtype is not None and config.backend in BACKEND_DTYPES:
        from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

        return TransformersScorer(config.model, threads=config.threads, dtype=dtype)
    return open_scorer(config.model, config.backend, config.threads)


def run_configured_joint(config: LikelihoodRunConfig, *, k: int = 2, reference_rows: int = 40, column_k: int = 0,
                         serialisation: str | None = None, dtype: str | None = None,
                         scorer: LikelihoodScorer | None = None, out_path: Path | str | None = None,
                         progress=None) -> ConfiguredRun:  # noqa: ANN001
    """The joint-structure contrast of the likelihood run's samples (:func:`~.joint_runs.run_joint`), the table
    alone with ``reference_rows`` real holdout rows before it, into ``results/likelihood/joint/<run>.jsonl``
    (resuming), and its manifest beside it.

    Args:
        k: Within-sample permutations per sample.
        reference_rows: Real holdout rows shown before every sample (0 = none).
        column_k: Permutations per column of C_j (0 = not measured).
        serialisation: None = ``config.serialisation``.
        dtype: Precision of the transformers scorer; None = the run's backend's (``transformers``: float32, so
            the default contrast is alike on every CPU); ignored with llama.cpp or a given ``scorer``.
    """
    config = replace(config, serialisation=serialisation or config.serialisation).effective()
    specs, tables = _plan(config)
    scorer = scorer or joint_scorer(config, dtype)
    backend = getattr(scorer, "backend", config.backend)  # the precision that ran (``auto`` resolves per CPU)
    name = (f"joint-{config.dataset_key}-{config.model}-{backend}-{config.serialisation}-k{k}-m{reference_rows}"
            f"-s{config.seed}" + ("-quick" if config.quick else ""))
    out = Path(out_path) if out_path is not None else default_joint_path(name)
    summary = run_joint(specs, {config.dataset_key: tables}, scorer, out, k=k, reference_rows=reference_rows,
                        serialisation=config.serialisation, context="none", variant=config.variant,
                        n_rows=config.n_rows, column_k=column_k, progress=progress)
    return _finish(config, tables, scorer, out, summary,
                   {"k": k, "reference_rows": reference_rows, "column_k": column_k,
                    "dtype": getattr(scorer, "dtype", "float32")},
                   {"n_samples": len(specs), **asdict(summary)})
