"""Which samples a likelihood run scores, and the resumable run that scores them.

Groups per dataset key (source / role): ``holdout``/``test`` (the real class), ``holdout``/``reference`` (the
decision rule's band), ``train``/``control`` (real-vs-real), ``<synthesizer>``/``test`` and
``shuffled_columns``/``test`` (the positive control). Every group but the reference band reuses the seed of the C1
trial that shows the same rows (:func:`~llmdisc.discrimination.samples.trial_sample_seed`), so the tokens of a
trial's forward pass (the token cache) answer them without running the model again.

:func:`run_likelihood` appends one :class:`~.records.LikelihoodRecord` per sample to a JSONL file; a re-run skips
samples already scored with the same text, backend and weights (:func:`resume`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from llmdisc import RELEASES
from llmdisc.data.datasets import load_processed, parse_dataset_key
from llmdisc.discrimination.cache import ScoreCache, score_key
from llmdisc.discrimination.likelihood.base import LikelihoodScorer
from llmdisc.discrimination.likelihood.records import LikelihoodRecord
from llmdisc.discrimination.likelihood.sample_scores import MIN_K_FRACTION, score_sample
from llmdisc.discrimination.likelihood.serialise import CONTEXTS, SERIALISATIONS, place, serialise
from llmdisc.discrimination.records import append_record, read_by_id, write_atomically
from llmdisc.discrimination.samples import derive_seed, sample_rows, trial_sample_seed
from llmdisc.errors import ConfigError, DataError
from llmdisc.paths import results_dir
from llmdisc.synthesis.controls import NEGATIVE_CONTROL, POSITIVE_CONTROL, shuffled_columns_table
from llmdisc.synthesis.releases import load_synthetic

REAL_SOURCES = ("holdout", "train")


@dataclass(frozen=True)
class LikelihoodSpec:
    """One sample to score (everything but the model)."""

    sample_id: str
    dataset_key: str
    source: str
    role: str
    true_label: str
    index: int
    run_seed: int
    sample_seed: int


def _spec(key: str, source: str, role: str, index: int, run_seed: int) -> LikelihoodSpec:
    label = "REAL" if source in REAL_SOURCES else "SYNTHETIC"
    if (source, role) == ("holdout", "test"):  # the trials' negative control shows these holdout rows
        seed = trial_sample_seed(run_seed, key, NEGATIVE_CONTROL, "SYNTHETIC", index)
    elif (source, role) == ("train", "control"):  # the trials' shared real sample
        seed = trial_sample_seed(run_seed, key, "real", "REAL", index)
    elif source in REAL_SOURCES:
        seed = derive_seed(run_seed, key, source, role, index)
    else:
        seed = trial_sample_seed(run_seed, key, source, "SYNTHETIC", index)
    return LikelihoodSpec(f"{key}|{source}|{role}|{index}", key, source, role, label, index, run_seed, seed)


def build_likelihood_queue(dataset_keys: Sequence[str], synthesizers: Sequence[str], samples_per_class: int, *,
                           run_seed: int, reference_samples: int | None = None, train_control: bool = True,
                           positive_control: bool = True) -> list[LikelihoodSpec]:
    """The samples of a run, in a deterministic order (see the module docstring for the seeds).

    Args:
        synthesizers: Releases to score (each in :data:`llmdisc.RELEASES`).
        samples_per_class: Real holdout test samples, and samples per synthesizer (>= 2).
        reference_samples: Holdout samples of the decision rule's band (default ``samples_per_class``).
        train_control, positive_control: Add ``samples_per_class`` real train / shuffled-columns samples.

    Raises:
        ConfigError: an unknown synthesizer, duplicates, or fewer than 2 samples per class.
    """
    for synthesizer in synthesizers:
        if synthesizer not in RELEASES:
            raise ConfigError(f"synthesizer {synthesizer!r} is not known; fix: use one of {', '.join(RELEASES)}")
    if len(set(synthesizers)) != len(synthesizers) or len(set(dataset_keys)) != len(dataset_keys):
        raise ConfigError("dataset_keys or synthesizers hold duplicates; fix: list each once")
    reference = samples_per_class if reference_samples is None else reference_samples
    if samples_per_class < 2 or reference < 2:
        raise ConfigError(f"samples_per_class={samples_per_class}, reference_samples={reference}: an AUC and a "
                          "95 % band need at least 2 samples per class; fix: use 20 or more")
    groups = [("holdout", "test", samples_per_class), ("holdout", "reference", reference)]
    if train_control:
        groups.append(("train", "control", samples_per_class))
    groups += [(synthesizer, "test", samples_per_class) for synthesizer in synthesizers]
    if positive_control:
        groups.append((POSITIVE_CONTROL, "test", samples_per_class))
    return [_spec(key, source, role, i, run_seed) for key in dataset_keys for source, role, count in groups
            for i in range(count)]


def load_likelihood_tables(dataset_key: str, sources: Sequence[str], *, run_seed: int) -> dict[str, pd.DataFrame]:
    """The tables the samples are drawn from, by source name (``holdout``, ``train``, releases, the control).
    Raises DataError if a table is missing or the holdout is empty."""
    tables: dict[str, pd.DataFrame] = {"holdout": load_processed(dataset_key, "holdout")}
    if tables["holdout"].empty:
        raise DataError(f"the holdout of {dataset_key} is empty: real samples come from the holdout only; fix: "
                        "re-run notebooks/01_data_prep.ipynb with a holdout share above 0")
    if "train" in sources or POSITIVE_CONTROL in sources:
        tables["train"] = load_processed(dataset_key, "train")
    for source in sources:
        if source in RELEASES:
            tables[source] = load_synthetic(dataset_key, source)
    if POSITIVE_CONTROL in sources:
        tables[POSITIVE_CONTROL] = shuffled_columns_table(tables["train"],
                                                          seed=derive_seed(run_seed, dataset_key, POSITIVE_CONTROL))
    return tables


@dataclass
class LikelihoodRunSummary:
    """What one call of :func:`run_likelihood` did."""

    scored: int = 0
    """Samples scored now (model run, or tokens from the token cache: ``from_trials``)."""
    cached: int = 0
    """Samples whose scores came from the score cache."""
    skipped: int = 0
    """Samples already in the run file (resumed)."""
    from_trials: int = 0
    seconds: float = 0.0


def record_head(spec: LikelihoodSpec, scorer: LikelihoodScorer, **shown: Any) -> dict[str, Any]:
    """The fields a likelihood and a joint record share: the sample's identity, the time, the model, and ``shown``
    (``row_ids``, ``n_rows``, ``serialisation``, ``context``, ``prompt_variant``, ``text_hash``)."""
    dataset, encoding = parse_dataset_key(spec.dataset_key)
    return dict(sample_id=spec.sample_id, timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                dataset=dataset, encoding=encoding, dataset_key=spec.dataset_key, source=spec.source, role=spec.role,
                true_label=spec.true_label, index=spec.index, run_seed=spec.run_seed, sample_seed=spec.sample_seed,
                backend=scorer.backend, model=scorer.model, model_digest=scorer.model_digest, **shown)


def text_sha256(text: str) -> str:
    """sha256 (hex) of a scored text's UTF-8 bytes: a record's ``text_hash``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PlannedSample(NamedTuple):
    """A sample drawn and shown, not yet scored: the fields its recorded line must hold to be kept, its cache key,
    ``compute()`` (runs the model; returns the value to cache) and ``record(value)`` (builds its record)."""

    identity: dict[str, Any]
    key: str
    compute: Callable[[], dict[str, Any]]
    record: Callable[[dict[str, Any]], Any]


def resume(specs: Sequence[LikelihoodSpec], out_path: Path | str, plan: Callable[[LikelihoodSpec], PlannedSample],
           cache: ScoreCache, summary: Any,
           progress: Callable[[int, int, LikelihoodSpec], None] | None = None) -> Any:
    """The resumable loop of :func:`run_likelihood` and :func:`~.joint_runs.run_joint`; returns ``summary``.

    A torn line is dropped first. Per spec, a recorded line matching ``plan(spec).identity`` is kept
    (``summary.skipped``); else the value comes from ``cache`` (``cached``) or is computed (``scored``) and its
    record appended. At the end the file is rewritten to one line per sample if re-scoring left old lines.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    found = read_by_id(out_path, "sample_id")
    existing = {record["sample_id"]: record for record in found.records}
    if found.corrupt_lines or found.ends_mid_line:
        write_atomically(out_path, found.records)  # repair a torn file before appending
    begin = time.perf_counter()
    for done, spec in enumerate(specs, start=1):
        planned = plan(spec)
        old = existing.get(spec.sample_id)
        if old is not None and tuple(map(old.get, planned.identity)) == tuple(planned.identity.values()):
            summary.skipped += 1
        else:
            value = cache.get(planned.key)
            if value is not None:
                summary.cached += 1
            else:
                value = planned.compute()
                cache.put(planned.key, value)
                summary.scored += 1
            record = planned.record(value)
            append_record(out_path, record)
            existing[spec.sample_id] = asdict(record)
        if progress is not None:
            progress(done, len(specs), spec)
    if out_path.exists() and len(existing) != sum(1 for line in out_path.read_bytes().split(b"\n") if line.strip()):
        write_atomically(out_path, list(existing.values()))  # one line per sample
    summary.seconds = time.perf_counter() - begin
    return summary


def run_likelihood(specs: Sequence[LikelihoodSpec], tables: dict[str, dict[str, pd.DataFrame]],
                   scorer: LikelihoodScorer, out_path: Path | str, *, serialisation: str = "markdown",
                   context: str = "c1_prompt", variant: str = "neutral", n_rows: int = 20,
                   fraction: float = MIN_K_FRACTION, cache: ScoreCache | None = None,
                   progress: Callable[[int, int, LikelihoodSpec], None] | None = None) -> LikelihoodRunSummary:
    """Score every spec and write its record to ``out_path`` (JSONL), resuming what is there (:func:`resume`).

    Args:
        tables: ``{dataset_key: load_likelihood_tables(...)}``.
        out_path: ``results/likelihood/<run>.jsonl``.
        serialisation, context: as :func:`~.serialise.serialise` and :func:`~.serialise.place`.
        n_rows: Rows per sample (20 in the study); ``fraction``: Min-K %'s k.
        cache: Score cache (default: the project's; ``ScoreCache(enabled=False)`` to turn it off).
        progress: Called as ``progress(done, total, spec)`` after each sample.

    Raises:
        ConfigError: an unknown serialisation or context; ContextOverflowError: a text longer than the context.
    """
    if serialisation not in SERIALISATIONS or context not in CONTEXTS:
        raise ConfigError(f"serialisation={serialisation!r}, context={context!r}; fix: use one of "
                          f"{SERIALISATIONS} and one of {CONTEXTS}")
    summary = LikelihoodRunSummary()

    def plan(spec: LikelihoodSpec) -> PlannedSample:
        source_table = tables[spec.dataset_key][spec.source]
        sample, row_ids = sample_rows(source_table, n_rows, seed=spec.sample_seed)
        placed = place(sample, serialise(sample, serialisation), context=context, chat_text=scorer.chat_text,
                       variant=variant, n_total=len(source_table))
        text_hash = text_sha256(placed.text)

        def compute() -> dict[str, Any]:
            tokens = scorer.token_logprobs(placed.text, start_char=placed.start, end_char=placed.end)
            scores = score_sample(tokens, placed, fraction=fraction)
            summary.from_trials += tokens.extras.get("token_cache") == "hit"
            return {"scores": asdict(scores), "prompt_tokens": sum(1 for s, _ in tokens.offsets if s < placed.end),
                    "seconds": tokens.seconds}

        def record(value: dict[str, Any]) -> LikelihoodRecord:
            return LikelihoodRecord(
                **record_head(spec, scorer, row_ids=row_ids, n_rows=n_rows, serialisation=placed.sample.serialisation,
                              context=placed.context, prompt_variant=variant, text_hash=text_hash),
                prompt_tokens=value["prompt_tokens"], seconds=value["seconds"], **value["scores"])

        identity = {"text_hash": text_hash, "backend": scorer.backend, "model_digest": scorer.model_digest,
                    "min_k_fraction": fraction}
        key = score_key(text=placed.text, start=placed.start, end=placed.end, backend=scorer.backend,
                        model_digest=scorer.model_digest, fraction=fraction)
        return PlannedSample(identity, key, compute, record)

    return resume(specs, out_path, plan, cache if cache is not None else ScoreCache(), summary, progress)


def default_out_path(name: str) -> Path:
    """``results/likelihood/<name>.jsonl``."""
    return results_dir() / "likelihood" / f"{name}.jsonl"
