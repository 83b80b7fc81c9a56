"""One configured trial run, as notebook 04 and ``llmdisc trials run`` describe it.

:class:`TrialRunConfig` holds the notebook's parameters; :func:`run_configured` loads the real and
synthetic tables of one dataset key, builds the balanced queue, opens the provider and the response
cache, and runs (or resumes) ``results/trials/<run_name>.jsonl``. The first per-cell look at the
answers is :func:`llmdisc.scoring.tables.cell_table` (scoring reads trials; trials never import scoring).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from llmdisc import CONDITIONS, SYNTHESIZERS
from llmdisc.discrimination.cache import ResponseCache, public_base_url
from llmdisc.discrimination.providers.base import GenerateConfig, Provider
from llmdisc.discrimination.runner import RunSummary, default_out_path, run_name, run_sync, run_trials
from llmdisc.discrimination.samples import TrialSpec
from llmdisc.errors import ConfigError
from llmdisc.parameters import as_choice, as_items


@dataclass(frozen=True)
class TrialRunConfig:
    """The parameters of one run (the notebook's ``parameters`` cell, the CLI's flags)."""

    dataset_key: str = "adult"
    """``adult``, ``census-codes`` or ``census-labels``."""
    synthesizers: tuple[str, ...] = SYNTHESIZERS
    """Any of ``gaussian_copula``, ``ctgan``, ``tvae``: a tuple, a list, one name or comma-separated names."""
    provider: str = "local"
    """``local``, ``ollama``, ``gemini``, ``openai`` or ``replay``."""
    model: str = ""
    """Model id; empty = the provider's default (``llmdisc.discrimination.providers.registry.DEFAULT_MODELS``)."""
    trials_per_label: int = 2
    conditions: tuple[str, ...] = CONDITIONS
    """``C1`` and/or ``C2``: a tuple, a list, one name or comma-separated names."""
    variant: str = "neutral"
    metadata_source: str = "real"
    sampling: str = "fresh"
    seed: int = 0
    """Run seed: every sample seed derives from it."""
    concurrency: int = 1
    cache_mode: str = "fill"
    """``fill``, ``offline`` (no provider call; a miss is an error) or ``refresh``."""
    base_url: str = ""
    """Service URL for ``openai``/``gemini`` (empty = the provider's default); ``ollama`` uses it as host."""
    api_key_env: str = ""
    """For ``openai``: the environment variable holding the key (``GROQ_API_KEY`` for Groq); empty =
    ``OPENAI_API_KEY``."""
    replay_path: str = ""
    """For ``replay``: the recorded trials file or folder to answer from."""
    label_backend: str = ""
    """For ``local``: how label scores are computed (``transformers``, ``transformers-bfloat16`` or ``llamacpp``,
    :class:`~llmdisc.discrimination.providers.embedded.EmbeddedProvider`); empty = the provider's default."""
    quick: bool = False
    """Smoke-test size: first synthesizer, first condition, one trial per label."""
    requests_per_minute: float = 0.0
    """Provider call budget (a service's quota, e.g. a free tier's); 0 = unlimited. Every run of this process that
    calls the same provider, model and base URL shares it
    (:func:`~llmdisc.discrimination.runner.endpoint_budget`)."""
    max_attempts: int = 5
    n_rows: int = 20
    scoring: str = "verdict"
    """``verdict`` (generated answers), ``probability`` (label scores only) or ``both``
    (:data:`llmdisc.discrimination.label_scores.SCORING_MODES`)."""
    verdict_trials_per_label: int = 0
    """Under ``probability``: the first N trials per cell and label also generate a verdict (``both``)."""
    trials_per_label_c2: int = 0
    """Trials per label in C2 cells (a C2 prompt costs about twice a C1 one); 0 = ``trials_per_label``."""
    controls: bool = False
    """Add the positive control (each real column shuffled independently) and the negative control (real
    holdout rows as the "synthetic" class) as cells of their own (:mod:`llmdisc.synthesis.controls`)."""
    share_real_samples: bool = False
    """Draw each REAL sample once per dataset and index, shared by every synthesizer cell (the response
    cache then answers the repeats: a real sample's prompt does not depend on the cell)."""
    config_name: str = ""
    """The run configuration (``configs/<name>.yaml``) the run belongs to, written into every record; empty =
    none (``unrecorded``). Not part of the run name: two configurations with the same protocol share a file."""

    def __post_init__(self) -> None:
        """Coerce the list parameters (a list, one string or comma-separated items) and check every value.

        Raises:
            ConfigError: a value outside its vocabulary; the message names it and lists the valid ones.
        """
        set_ = object.__setattr__  # frozen dataclass
        set_(self, "synthesizers", as_items(self.synthesizers, "synthesizers", "releases"))
        set_(self, "conditions", as_items(self.conditions, "conditions", "conditions"))
        set_(self, "dataset_key", as_choice(self.dataset_key, "dataset_key", "dataset_keys"))
        set_(self, "provider", as_choice(self.provider, "provider", "providers"))
        set_(self, "variant", as_choice(self.variant, "variant", "prompt_variants"))
        set_(self, "metadata_source", as_choice(self.metadata_source, "metadata_source", "metadata_sources"))
        set_(self, "sampling", as_choice(self.sampling, "sampling", "sampling_modes"))
        set_(self, "cache_mode", as_choice(self.cache_mode, "cache_mode", "cache_modes"))

    def effective(self) -> "TrialRunConfig":
        """The configuration actually run (``quick`` shrinks it; lists are tuples already)."""
        config = replace(self, synthesizers=tuple(self.synthesizers), conditions=tuple(self.conditions))
        if self.quick:
            config = replace(config, synthesizers=config.synthesizers[:1], conditions=config.conditions[:1],
                             trials_per_label=1, trials_per_label_c2=0, verdict_trials_per_label=min(
                                 1, self.verdict_trials_per_label))
        return config


Tables = dict[str, dict[str, pd.DataFrame]]
"""``dataset_key -> {"real": DataFrame, "<synthesizer>": DataFrame, ...}``."""


def load_trial_tables(dataset_key: str, synthesizers: Sequence[str], *, controls: bool = False,
                      seed: int = 0) -> tuple[Tables, list[Path]]:
    """Read ``data/processed/<key>/train.parquet`` and ``data/synthetic/<key>/<synth>.parquet``.

    Args:
        dataset_key: the dataset key.
        synthesizers: the releases to read.
        controls: also build the two control tables: ``shuffled_columns`` (the train table with every
            column permuted independently, seed ``derive_seed(seed, dataset_key, "shuffled_columns")``) and
            ``real_holdout`` (the holdout split standing in for a release).
        seed: the run seed the positive control's permutations derive from.

    Returns:
        ``({dataset_key: {"real": train, synth: table, ...}}, [the files read])``.

    Raises:
        DataError: a file is missing (the message names the command that writes it).
    """
    from llmdisc.data.datasets import load_processed, processed_dir
    from llmdisc.discrimination.samples import derive_seed
    from llmdisc.synthesis.controls import NEGATIVE_CONTROL, POSITIVE_CONTROL, shuffled_columns_table
    from llmdisc.synthesis.releases import load_synthetic, synthetic_path

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

    Raises:
        ConfigError: unknown provider, or an option it does not take (e.g. a base URL or a label backend for
            anything but ``local``, a key variable for anything but ``openai``).
    """
    from llmdisc.discrimination.providers.registry import get_provider

    options: dict[str, Any] = {}
    if base_url:
        options["host" if name == "ollama" else "base_url"] = base_url
    if api_key_env:
        options["api_key_env"] = api_key_env
    if replay_path:
        options["path"] = replay_path
    if label_backend:
        options["label_backend"] = label_backend
    return get_provider(name, model or None, **options)


def trial_queue(config: TrialRunConfig) -> list[TrialSpec]:
    """The trials one configured run asks for (``quick`` applied), in the runner's order; reads no data.

    Cells are the synthesizers, then the two controls when ``controls`` is on; C2 cells get
    ``trials_per_label_c2`` trials per label when it is set.

    Returns:
        The :class:`~llmdisc.discrimination.samples.TrialSpec` list
        (:func:`~llmdisc.discrimination.samples.build_trial_queue`).

    Raises:
        ConfigError: an unknown scoring mode or a negative ``requests_per_minute``.
    """
    from llmdisc.discrimination.label_scores import SCORING_MODES
    from llmdisc.discrimination.samples import build_trial_queue
    from llmdisc.synthesis.controls import CONTROLS

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

    Args:
        config: the parameters (``quick`` applied here).
        out_path: run file; default ``results/trials/<run_name(...)>.jsonl``.
        progress: show the progress bar.
        cache: response cache; default ``ResponseCache(mode=config.cache_mode)`` at the default location.

    Returns:
        The :class:`~llmdisc.discrimination.runner.RunSummary` (``out_path`` and ``manifest_path`` say where things went).
    """
    from llmdisc.discrimination.content_free import score_content_free, write_content_free
    from llmdisc.discrimination.runner import endpoint_budget, public_identity

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
                metadata_source=config.metadata_source, out_path=target,
                cache=cache,
                concurrency=config.concurrency, requests_per_minute=config.requests_per_minute or None,
                max_attempts=config.max_attempts, generate_config=generate, n_rows=config.n_rows,
                progress=progress, input_files=files, config_name=config.config_name,
                parameters={**asdict(config), "base_url": public_base_url(config.base_url) or ""})
            if config.scoring != "verdict":  # the label bias of the model, for contextual calibration
                real = tables[config.dataset_key]["real"]
                write_content_free(target, await score_content_free(
                    provider, real, dataset_key=config.dataset_key, conditions=config.conditions,
                    variant=config.variant, metadata_source=config.metadata_source, n_rows=config.n_rows,
                    cache=cache, config=generate, max_attempts=config.max_attempts,
                    budget=endpoint_budget(public_identity(provider), config.requests_per_minute)))
            return summary
        finally:
            await provider.aclose()

    return run_sync(main)



def record_run_metrics(manifest_path: Path | str, metrics: dict[str, Any]) -> Path:
    """Merge key numbers (e.g. per-cell DRS) into a run manifest's ``metrics``, atomically.

    Args:
        manifest_path: ``results/trials/<run>.manifest.json`` (``RunSummary.manifest_path``).
        metrics: JSON-serialisable numbers; existing keys of the same name are replaced.

    Returns:
        The manifest path.

    Raises:
        DataError: the manifest is missing or unreadable.
    """
    import json

    from llmdisc.errors import DataError
    from llmdisc.manifest import read_manifest
    from llmdisc.paths import relative_to_root

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
