"""Run configurations (``configs/*.yaml``): one validated pydantic model per section; an unknown or misspelt
key is an error that names it and lists the valid ones, so a typo never silently falls back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmdisc import CONDITIONS, SYNTHESIZERS
from llmdisc.errors import ConfigError
from llmdisc.parameters import as_items


def _items_validator(vocabulary: str | None, *, allow_empty: bool = False) -> Any:
    """A ``mode="before"`` validator: one string, comma-separated items or a list, each item checked (its
    error travels as a ``ValueError`` so that pydantic's report names the key)."""

    def validate(cls: type, value: Any, info: Any) -> list[str]:
        try:
            return list(as_items(value, info.field_name, vocabulary, allow_empty=allow_empty))
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    return classmethod(validate)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataConfig(_Section):
    """Stage 01: the real data and its holdout."""

    holdout_fraction: float = Field(0.2, gt=0, lt=1)
    """Share of the real rows kept out of synthesis (serves the baselines)."""


class SynthesisConfig(_Section):
    """Stage 02: which synthesizers, trained how long, on how many rows."""

    synthesizers: list[Literal["gaussian_copula", "ctgan", "tvae"]] = list(SYNTHESIZERS)
    epochs: int = Field(300, ge=1)
    """CTGAN/TVAE epochs (GaussianCopula has none). The paper's script default was 100, SDV's 300."""
    fit_rows: int = Field(0, ge=0)
    """Seeded subsample of the train split used for fitting; 0 = all rows (the paper)."""
    metadata_mode: Literal["declared", "detected"] = "declared"
    """``declared``: integer codes stay categorical; ``detected``: SDV's auto-detection, as the paper."""
    paper_releases: bool = False
    """Add the paper's own Census releases (``paper_ctgan`` …) as cells of ``census-codes`` beside ours, when
    the reference folder has them; distance tests are not valid on them (the paper fitted on every row)."""

    _synthesizers = field_validator("synthesizers", mode="before")(_items_validator("synthesizers"))


class EstimateConfig(_Section):
    """What ``llmdisc run --plan`` assumes of one model's calls (prices are the service's, dated)."""

    seconds_per_call: float = Field(0.0, ge=0)
    """Seconds one call takes, answer included; 0 = unknown."""
    answer_tokens: int = Field(300, ge=1)
    """Tokens of one generated verdict (the JSON answer)."""
    thinking_tokens: int = Field(0, ge=0)
    """Thinking tokens a call is expected to add (billed as output)."""
    max_thinking_tokens: int = Field(0, ge=0)
    """The most thinking tokens a call can add (the cost's upper bound); 0 = none beyond ``thinking_tokens``."""
    usd_per_million_input_tokens: float = Field(0.0, ge=0)
    usd_per_million_output_tokens: float = Field(0.0, ge=0)
    prices_as_of: str = Field("", pattern=r"^(\d{4}-\d{2}(-\d{2})?)?$")
    """When the prices were read, ``YYYY-MM`` or ``YYYY-MM-DD``; required with a price."""

    @model_validator(mode="after")
    def _prices_have_a_date(self) -> "EstimateConfig":
        if (self.usd_per_million_input_tokens or self.usd_per_million_output_tokens) and not self.prices_as_of:
            raise ValueError("a price needs the date it was read; fix: add prices_as_of: YYYY-MM-DD")
        return self

    def call_costs(self) -> Any:
        from llmdisc.discrimination.call_plan import CallCosts

        return CallCosts(**self.model_dump())


class ModelConfig(_Section):
    """One discriminator: a provider and a model (never pooled with another in any table or figure)."""

    provider: Literal["local", "ollama", "gemini", "openai", "replay"]
    model: str = ""
    """Model id; empty = the provider's default."""
    base_url: str = ""
    """Service URL (OpenAI-compatible endpoints, Ollama host); empty = the provider's default."""
    api_key_env: str = Field("", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")
    """``openai`` only: the environment variable holding the key (``GROQ_API_KEY`` for Groq); empty =
    ``OPENAI_API_KEY``. Keys are read from the environment only, never from a configuration."""
    concurrency: int = Field(1, ge=1, le=64)
    requests_per_minute: float | None = Field(None, gt=0)
    """The most calls a minute, retries included (the service's quota); None = no limit. Runs of this model
    never go side by side, so the budget is the model's, not each run's."""
    estimate: EstimateConfig = Field(default_factory=EstimateConfig)
    label_backend: Literal["", "transformers", "transformers-bfloat16", "transformers-auto", "llamacpp"] = ""
    """``local`` only: how label scores are computed (empty = ``transformers``, float32; ``-auto``: the faster
    of float32 and bfloat16 on this CPU, resolved on load; ``llamacpp``: forced tokens). bfloat16 and auto
    records are keyed apart from float32's. Notebook 09 reuses the same backend's stored log-probabilities."""

    _label_backend = field_validator("label_backend")(classmethod(lambda cls, value: _resolve_backend(value)))

    @model_validator(mode="after")
    def _label_backend_is_local(self) -> "ModelConfig":
        if self.label_backend and self.provider != "local":
            raise ValueError(f"label_backend {self.label_backend!r} is for the local provider, not "
                             f"{self.provider!r}; fix: remove label_backend from this model")
        if self.api_key_env and self.provider != "openai":
            raise ValueError(f"api_key_env {self.api_key_env!r} is for the openai provider, not {self.provider!r} "
                             "(gemini reads GEMINI_API_KEY or GOOGLE_API_KEY); fix: remove api_key_env from this "
                             "model")
        return self

    def describe(self) -> str:
        """``provider model [at base_url]``, as messages name a model."""
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.provider} {self.model or '(default model)'}{where}"


def _resolve_backend(backend: str) -> str:
    """``transformers-auto`` → the transformers backend this CPU runs faster; other names unchanged."""
    if backend != "transformers-auto":
        return backend
    from llmdisc.discrimination.likelihood.transformers_backend import resolve_backend  # imports torch: only here

    return resolve_backend(backend)


class ProtocolConfig(_Section):
    """How samples are drawn and prompted: the paper's protocol or ours (docs/protocol.md §8)."""

    variant: Literal["paper", "neutral"] = "neutral"
    """``paper``: the paper's prompt text, flaws included; ``neutral``: no synthesizer names, no row counts."""
    metadata_source: Literal["source", "real", "sample"] = "real"
    """Where the C2 statistics come from: the sample's whole source table (paper), the real table, the sample."""
    sampling: Literal["fresh", "fixed"] = "fresh"
    """``fresh``: a seeded new sample per trial; ``fixed``: the paper's same 20 rows every trial."""
    scoring: Literal["verdict", "probability", "both"] = "verdict"
    """``verdict``: a generated JSON answer (the paper's reading); ``probability``: each label's probability
    as the answer's first value (needs token log-probabilities); ``both``: the two on the same prompt."""


class TrialsConfig(_Section):
    """Stage 04: the trial design."""

    models: list[ModelConfig] = Field(default_factory=lambda: [ModelConfig(provider="local")])
    trials_per_label: int = Field(2, ge=1)
    """Trials per true label per cell (cell = dataset × synthesizer × condition)."""
    trials_per_label_c2: int = Field(0, ge=0)
    """Trials per true label in C2 cells; 0 = ``trials_per_label`` (a C2 prompt costs about twice a C1 one)."""
    verdict_trials_per_label: int = Field(0, ge=0)
    """Under ``scoring: probability``: the first N trials per cell and label also generate a verdict."""
    controls: bool = False
    """Add the positive (columns shuffled independently) and negative (real holdout as "synthetic") controls."""
    share_real_samples: bool = False
    """One REAL sample per dataset and trial index, shared by every synthesizer cell (cached repeats)."""
    conditions: list[Literal["C1", "C2"]] = list(CONDITIONS)
    protocols: list[ProtocolConfig] = Field(default_factory=lambda: [ProtocolConfig()])
    """Each protocol is run for every dataset × model (e.g. the paper's next to ours)."""
    cache_mode: Literal["fill", "offline", "refresh"] = "fill"

    _conditions = field_validator("conditions", mode="before")(_items_validator("conditions"))


class PromptingConfig(_Section):
    """Stage 03: which release the prompt gallery shows."""

    dataset_key: str = "adult"
    synthesizer: Literal["gaussian_copula", "ctgan", "tvae"] = "ctgan"
    variant: Literal["paper", "neutral"] = "neutral"
    metadata_source: Literal["source", "real", "sample"] = "real"


class BaselinesConfig(_Section):
    """Stage 05: classifier two-sample tests, distances, attacks."""

    c2st_rows: int = Field(5000, ge=100)
    dcr_rows: int = Field(0, ge=0)
    """Rows of each table in the distance computations; 0 = all."""
    anonymeter_attacks: int = Field(500, ge=10)


class LikelihoodConfig(_Section):
    """Notebook 09: how probable a language model finds the rows of each sample (real holdout vs synthetic)."""

    enabled: bool = False
    """Run notebook 09 (one forward pass of the packaged model per sample, ~10-30 s each on 2 cores)."""
    samples_per_class: int = Field(20, ge=2)
    """Real holdout samples, and samples of each synthesizer and of the controls."""
    reference_samples: int = Field(0, ge=0)
    """Holdout samples setting the decision band; 0 = ``samples_per_class``."""
    model: str = "smollm2-135m-instruct-q4_1"
    backend: Literal["transformers", "transformers-bfloat16", "transformers-auto", "llamacpp"] = "transformers"
    """As :attr:`ModelConfig.label_backend` (not empty); reads the trials' stored tokens of the same
    backend."""

    _backend = field_validator("backend")(classmethod(lambda cls, value: _resolve_backend(value)))
    serialisation: Literal["markdown", "great", "csv"] = "markdown"
    joint: bool = True
    """Also score the joint-structure contrast of the same samples (notebook 09, section 6)."""
    joint_serialisation: Literal["markdown", "great", "csv"] = "csv"
    """How the joint contrast writes the table: ``csv`` (half Markdown's tokens at the same power on Adult;
    ``results/tables/joint_design.csv``), ``markdown`` (as the LLM is shown the table) or ``great``."""
    joint_k: int = Field(2, ge=1)
    """Within-sample permutations per sample (each one more pass of the sample's rows)."""
    joint_reference_rows: int = Field(20, ge=0)
    """Real holdout rows shown before every sample (fixed per dataset; the model copies their combinations)."""
    joint_column_k: int = Field(0, ge=0)
    """Permutations per column of C_j (only column j permuted); 0 skips it (columns × k more passes a sample)."""


class HumanConfig(_Section):
    """Stage 06: which label files to analyse (empty = the paper's labels when ``../shared`` is present)."""

    labels_dir: list[str] = []

    _labels_dir = field_validator("labels_dir", mode="before")(_items_validator(None, allow_empty=True))


class RunConfig(_Section):
    """A whole run of the compendium (one YAML file under ``configs/``)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    seed: int = 0
    """Run seed: every random draw of every stage derives from it."""
    quick: bool = False
    """Passed to every notebook: smaller displays and samples where a notebook offers it."""
    datasets: list[str] = ["adult", "census-codes"]
    data: DataConfig = DataConfig()
    synthesis: SynthesisConfig = SynthesisConfig()
    prompting: PromptingConfig = PromptingConfig()
    trials: TrialsConfig = TrialsConfig()
    baselines: BaselinesConfig = BaselinesConfig()
    human: HumanConfig = HumanConfig()
    paper_reproduction: bool = True
    """Run notebook 08 (the paper's tables from its own counts and trials; needs ``../shared``)."""
    likelihood: LikelihoodConfig = Field(default_factory=LikelihoodConfig)
    cue_analysis: bool = True
    """Run notebook 10 (reasoning cues: themes, coder agreement, whether cited facts are true of the rows)."""
    workers: int = Field(1, ge=1)
    """Notebooks run side by side when their inputs are ready, each kernel on one CPU thread (1: in turn)."""
    readme: bool = False
    """Rewrite the README's results block after the run (only ``configs/default.yaml``, the run it
    reports)."""

    _datasets = field_validator("datasets", mode="before")(_items_validator("dataset_keys"))


def trial_providers(config: RunConfig) -> list[str]:
    return list(dict.fromkeys(model.provider for model in config.trials.models))


def select_provider(config: RunConfig, provider: str | None) -> RunConfig:
    """The configuration with only the trial models of ``provider`` (None: unchanged); ConfigError when it has
    none."""
    if provider is None:
        return config
    models = [model for model in config.trials.models if model.provider == provider]
    if not models:
        listed = "; ".join(model.describe() for model in config.trials.models)
        raise ConfigError(f"configuration {config.name} has no trial model of provider {provider!r} (its models: "
                          f"{listed}); fix: pass --provider {' or '.join(trial_providers(config))}")
    return config.model_copy(update={"trials": config.trials.model_copy(update={"models": models})})


def require_one_provider(config: RunConfig) -> None:
    """Raise ConfigError when the trial models name several providers (each has its own quota, cost, time)."""
    providers = trial_providers(config)
    if len(providers) > 1:
        listed = "; ".join(model.describe() for model in config.trials.models)
        flags = ", ".join(f"--provider {p}" for p in providers)
        raise ConfigError(f"configuration {config.name} lists trial models of {len(providers)} providers ({listed}); "
                          f"a run calls one provider, so that its quota, cost and time are its own; fix: add one of "
                          f"{flags} (--plan prints each one's calls, cost and time and calls nothing)")


def call_costs(config: RunConfig) -> dict[tuple[str, str, str], Any]:
    """``(provider, model, base_url) -> CallCosts`` of every trial model (its ``estimate``)."""
    return {(m.provider, m.model, m.base_url): m.estimate.call_costs() for m in config.trials.models}


def _format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"configuration {source} is not valid:"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            parent = _model_at(err["loc"][:-1])
            valid = sorted(parent.model_fields) if parent is not None else []
            lines.append(f"  - unknown key '{where}'; valid keys here: {valid}")
        else:
            message = err["msg"].removeprefix("Value error, ")  # our validators' messages, verbatim
            lines.append(f"  - {where}: {message} (got {err.get('input')!r})")
    lines.append("Fix the keys above (see configs/default.yaml for a complete, commented example).")
    return "\n".join(lines)


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] = RunConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        inner = getattr(field.annotation, "__args__", (field.annotation,))
        model = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if model is None:
            return None
    return model


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a YAML run configuration; ConfigError when the file is missing, is not YAML, or has
    an unknown key or a bad value (each one named)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist; pick one of configs/*.yaml "
                          "or pass --config PATH")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"configuration {path} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration {path} must be a YAML mapping of keys to values")
    try:
        return RunConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, str(path.name))) from exc
