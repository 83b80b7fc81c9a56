"""One configured trial run (:class:`TrialRunConfig`, :func:`run_configured`), as notebook 04 and
``llmdisc trials run`` describe it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from llmdisc import CONDITIONS, SYNTHESIZERS
from llmdisc.data.datasets import load_processed, processed_dir
from llmdisc.discrimination.cache import ResponseCache, public_base_url
from llmdisc.discrimination.content_free import score_content_free, write_content_free
from llmdisc.discrimination.label_scores import SCORING_MODES
from llmdisc.discrimination.providers.base import GenerateConfig, Provider
from llmdisc.discrimination.runner import (RunSummary, default_out_path, endpoint_budget, public_identity,
                                          run_name, run_sync, run_trials)
from llmdisc.discrimination.samples import TrialSpec, build_trial_queue, derive_seed
from llmdisc.errors import ConfigError, DataError
from llmdisc.manifest import read_manifest
from llmdisc.parameters import as_choice, as_items
from llmdisc.paths import relative_to_root
from llmdisc.synthesis.controls import CONTROLS, NEGATIVE_CONTROL, POSITIVE_CONTROL, shuffled_columns_table
from llmdisc.synthesis.releases import load_synthetic, synthetic_path


@dataclass(frozen=True)
class TrialRunConfig:
    """The parameters of one run (the notebook's ``parameters`` cell, the CLI's flags)."""

    dataset_key: str = "adult"
    synthesizers: tuple[str, ...] = SYNTHESIZERS
    """A tuple, a list, one name or comma-separated names (so are ``conditions``)."""
    provider: str = "local"
    model: str = ""
    """Model id; empty = the provider's default (``llmdisc.discrimination.providers.registry.DEFAULT_MODELS``)."""
    trials_per_label: int = 2
    conditions: tuple[str, ...] = CONDITIONS
    variant: str = "neutral"
    metadata_source: str = "real"
    sampling: str = "fresh"
    seed: int = 0
    concurrency: int = 1
    cache_mode: str = "fill"
    base_url: str = ""
    """Service URL for ``openai``/``gemini`` (empty = the provider's default); ``ollama`` uses it as host."""
    api_key_env: str = ""
    """For ``openai``: the variable holding the key (``GROQ_API_KEY`` for Groq); empty = ``OPENAI_API_KEY``."""
    replay_path: str = ""
    """For ``replay``: the recorded trials file or folder to answer from."""
    label_backend: str = ""
    """For ``local``: ``transformers``, ``transformers-bfloat16`` or ``llamacpp``; empty = the provider's default."""
    quick: bool = False
    """Smoke-test size: first synthesizer, first condition, one trial per label."""
    requests_per_minute: float = 0.0
    """Provider call budget (a service's quota); 0 = unlimited. Shared per endpoint within the process."""
    max_attempts: int = 5
    n_rows: int = 20
    scoring: str = "verdict"
    """``verdict`` (generated answers), ``probability`` (label scores only) or ``both``."""
    verdict_trials_per_label: int = 0
    """Under ``probability``: the first N trials per cell and label also generate a verdict (``both``)."""
    trials_per_label_c2: int = 0
    """Trials per label in C2 cells (a C2 prompt costs about twice a C1 one); 0 = ``trials_per_label``."""
    controls: bool = False
    """Add the positive and negative controls (:mod:`llmdisc.synthesis.controls`) as cells of their own."""
    share_real_samples: bool = False
    """Draw each REAL sample once per dataset and index, shared by every cell (the cache answers the repeats)."""
    config_name: str = ""
    """The run configuration (``configs/<name>.yaml``) the run belongs to, written into every record; empty =
    none (``unrecorded``). Not part of the run name: two configurations with the same protocol share a file."""

    def __post_init__(self) -> None:
        """Coerce the list parameters and check every value; ConfigError names a value outside its vocabulary."""
        set_ = object.__setattr__  # frozen dataclass
        set_(self, "synthesizers", as_items(self.synthesizers, "synthesizers", "releases"))
        set_(self, "conditions", as_items(self.conditions, "conditions", "conditions"))
        for name, vocabulary in (("dataset_key", "dataset_keys"), ("provider", "providers"),
                                 ("variant", "prompt_variants"), ("metadata_source", "metadata_sources"),
                                 ("sampling", "sampling_modes"), ("cache_mode", "cache_modes")):
            set_(self, name, as_choice(getattr(self, name), name, vocabulary))

    def effective(self) -> "TrialRunConfig":
        """The configuration actually run (``quick`` shrinks it; lists are tuples already)."""
        if not self.quick:
            return self
        return replace(self, synthesizers=self.synthesizers[:1], conditions=self.conditions[:1],
                       trials_per_label=1, trials_per_label_c2=0,
                       verdict_trials_per_label=min(1, self.verdict_trials_per_label))


Tables = dict[str, dict[str, pd.DataFrame]]
"""``dataset_key -> {"real": DataFrame, "<synthesizer>": DataFrame, ...}``."""


def load_trial_tables(dataset_key: str, synthesizers: Sequence[str], *, controls: bool = False,
                      seed: int = 0) -> tuple[Tables, list[Path]]:
    """Read ``data/processed/<key>/train.parquet`` and ``data/synthetic/<key>/<synth>.parquet``; ``controls``
    also builds ``shuffled_columns`` (every train column permuted independently, seeded from ``seed``) and
    ``real_holdout`` (the holdout split standing in for a release).

    Returns ``({dataset_key: {"real": train, synth: table, ...}}, [the files read])``; DataError names the command
    that writes a missing file.
    """
    cell: dict[str, pd.DataFrame] = {"real": load_processed(dataset_key, "train")}
    files = [processed_dir(dataset_key) / "train.parquet"]
    for synthesizer in synthesizers:
        cell[synthesizer] = load_synthetic(dataset_key, synthesizer)
        files.append(synthetic_path(dataset_key, synthesizer))
    if controls:
        cell[POSITIVE_CONTROL] = shuffled_columns_table(
            cell["real"], seed=derive_seed(seed, dataset_key, POSITIVE_CONTROL))
        cell[NEGATIVE_CONTROL] = load_processed(dataset_key, "holdout")
        files.append(processed_dir(dataset_key) / "holdout.parquet")
    return {dataset_key: cell}, files


def open_provider(name: str, model: str = "", base_url: str = "", replay_path: str = "",
                  label_backend: str = "", api_key_env: str = "") -> Provider:
    """``get_provider(name, model or default, base_url=...)``; ``base_url`` is ``host`` for ollama.
    ConfigError for an unknown provider or an option it does not take (e.g. a key variable for anything but
    ``openai``)."""
    from llmdisc.discrimination.providers.registry import get_provider  # looked up at call time

    options = {"host" if name == "ollama" else "base_url": base_url, "api_key_env": api_key_env,
               "path": replay_path, "label_backend": label_backend}
    return get_provider(name, model or None, **{key: value for key, value in options.items() if value})


def trial_queue(config: TrialRunConfig) -> list[TrialSpec]:
    """The :class:`~llmdisc.discrimination.samples.TrialSpec` list of one configured run (``quick`` applied),
    in the runner's order; reads no data. ConfigError for an unknown scoring mode or a negative
    ``requests_per_minute``."""
    config = config.effective()
    if config.requests_per_minute < 0:
        raise ConfigError(f"requests_per_minute={config.requests_per_minute}; fix: give 0 (no limit) or more")
    if config.scoring not in SCORING_MODES:
        raise ConfigError(f"scoring={config.scoring!r} is not known; fix: use one of {', '.join(SCORING_MODES)}")
    cells = list(config.synthesizers) + (list(CONTROLS) if config.controls else [])
    counts: Any = config.trials_per_label
    if config.trials_per_label_c2 and "C2" in config.conditions:
        counts = {c: (config.trials_per_label_c2 if c == "C2" else config.trials_per_label)
                  for c in config.conditions}
    return build_trial_queue([config.dataset_key], cells, list(config.conditions), counts,
                             run_seed=config.seed, sampling=config.sampling, scoring=config.scoring,
                             verdict_trials_per_label=config.verdict_trials_per_label,
                             share_real_samples=config.share_real_samples)


def run_configured(config: TrialRunConfig, *, out_path: Path | str | None = None, progress: bool = True,
                   cache: ResponseCache | None = None) -> RunSummary:
    """Run (or resume) the trials of one configuration; blocking, also inside Jupyter.

    ``out_path`` defaults to ``results/trials/<run_name(...)>.jsonl``, ``cache`` to
    ``ResponseCache(mode=config.cache_mode)``. Returns the :class:`~llmdisc.discrimination.runner.RunSummary`.
    """
    config = config.effective()
    specs = trial_queue(config)
    tables, files = load_trial_tables(config.dataset_key, config.synthesizers, controls=config.controls,
                                      seed=config.seed)
    cache = cache if cache is not None else ResponseCache(mode=config.cache_mode)
    generate = GenerateConfig()

    async def main() -> RunSummary:
        provider = open_provider(config.provider, config.model, config.base_url, config.replay_path,
                                 config.label_backend, config.api_key_env)
        try:
            name = run_name([config.dataset_key], config.provider, provider.model, config.variant,
                            config.metadata_source, config.sampling, config.seed, n_rows=config.n_rows,
                            generate_config=generate, base_url=provider.base_url, scoring=config.scoring,
                            label_backend=config.label_backend)
            target = Path(out_path or default_out_path(name))
            summary = await run_trials(
                specs, provider=provider, tables=tables, variant=config.variant,
                metadata_source=config.metadata_source, out_path=target, cache=cache,
                concurrency=config.concurrency, requests_per_minute=config.requests_per_minute or None,
                max_attempts=config.max_attempts, generate_config=generate, n_rows=config.n_rows,
                progress=progress, input_files=files, config_name=config.config_name,
                parameters={**asdict(config), "base_url": public_base_url(config.base_url) or ""})
            if config.scoring != "verdict":  # the label bias of the model, for contextual calibration
                write_content_free(target, await score_content_free(
                    provider, tables[config.dataset_key]["real"], dataset_key=config.dataset_key,
                    conditions=config.conditions, variant=config.variant,
                    metadata_source=config.metadata_source, n_rows=config.n_rows, cache=cache,
                    config=generate, max_attempts=config.max_attempts,
                    budget=endpoint_budget(public_identity(provider), config.requests_per_minute)))
            return summary
        finally:
            await provider.aclose()

    return run_sync(main)


def record_run_metrics(manifest_path: Path | str, metrics: dict[str, Any]) -> Path:
    """Merge key numbers (e.g. per-cell DRS) into a run manifest's ``metrics``, atomically.

    ``manifest_path`` is ``RunSummary.manifest_path``; existing keys of the same name are replaced. Returns
    the path; DataError when the manifest is missing or unreadable.
    """
    path = Path(manifest_path)
    manifest = read_manifest(path)
    if manifest is None:
        raise DataError(f"no run manifest at {relative_to_root(path)}; fix: run the trials first "
                        "(llmdisc trials run ... or notebook 04), which writes it")
    manifest["metrics"] = {**manifest.get("metrics", {}), **metrics}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
