"""The resumable, concurrent trial runner (stage 04): specs in, one :class:`TrialRecord` per line out.

Entry points: :func:`run_trials` (async), :func:`run_trials_sync`, :func:`run_name`. Each spec's prompt is looked up
in the response cache, else sent to the provider (retries in ONE place: providers only classify failures), and its
record is appended to ``results/trials/<run>.jsonl``, fsynced at once.

Resume rule: a re-run skips every ``trial_id`` recorded ``valid`` or ``invalid`` (an answer is final) and re-runs
``error`` ones (transient: quota, outage). The file is first rewritten atomically without those error records and
any torn line, so it holds each ``trial_id`` exactly once, also after a kill at any point.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as _dt
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Coroutine, Mapping, Sequence, TypeVar

import pandas as pd

from llmdisc.data.datasets import parse_dataset_key
from llmdisc.discrimination.answers import parse_answer
from llmdisc.discrimination.cache import ResponseCache, public_base_url, request_cache_key
from llmdisc.discrimination.label_scores import empty_score_fields, score_fields, verdict_agrees
from llmdisc.discrimination.metadata import METADATA_SOURCES
from llmdisc.discrimination.prompts import PROMPT_VARIANTS
from llmdisc.discrimination.providers.base import GenerateConfig, Provider
from llmdisc.discrimination.records import (UNRECORDED_CONFIG, TrialRecord, append_record, load_trials, read_by_id,
                                           write_atomically)
from llmdisc.discrimination.retries import RequestBudget, call_with_retries, shared_budget
from llmdisc.discrimination.samples import TrialSpec
from llmdisc.discrimination.trial_inputs import MetadataCache, PreparedPrompt, prepare_prompt
from llmdisc.errors import CacheMissError, ConfigError, LlmdiscError, ProviderError
from llmdisc.manifest import read_manifest, sha256_json, write_manifest
from llmdisc.paths import relative_to_root, results_dir

T = TypeVar("T")

__all__ = ["RunAborted", "RunSummary", "TrialRecord", "default_out_path", "endpoint_budget", "load_trials",
           "run_name", "run_trials", "run_trials_sync"]


class RunAborted(ProviderError):
    """The run stopped early because the provider kept failing; every finished trial is kept (``.summary``)."""

    def __init__(self, message: str, summary: "RunSummary") -> None:
        super().__init__(message)
        self.summary = summary


@dataclass
class RunSummary:
    """Counts of one call of :func:`run_trials` (``n_*`` of this call; ``file_*`` of the whole file)."""

    run_id: str
    out_path: Path
    manifest_path: Path
    n_planned: int
    n_skipped: int
    """Specs already answered in the file (resumed)."""
    n_run: int = 0
    n_valid: int = 0
    n_invalid: int = 0
    n_error: int = 0
    n_cache_hits: int = 0
    n_retried_errors: int = 0
    """Error records of earlier calls removed and run again."""
    n_repaired_lines: int = 0
    """Torn or duplicate lines dropped from the file before resuming."""
    file_counts: dict[str, int] = field(default_factory=dict)
    """status -> count over the planned trials in the file after this call."""
    wall_s: float = 0.0
    stopped: str | None = None
    """Why the run ended early (None: it finished)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view (paths root-relative)."""
        return {**asdict(self), "out_path": relative_to_root(self.out_path),
                "manifest_path": relative_to_root(self.manifest_path)}


# --------------------------------------------------------------------------- naming
def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "default"


def run_name(dataset_keys: Sequence[str], provider: str, model: str, variant: str, metadata_source: str,
             sampling: str, seed: int, *, n_rows: int = 20,
             generate_config: GenerateConfig = GenerateConfig(), base_url: str | None = None,
             scoring: str = "verdict", label_backend: str = "") -> str:
    """Deterministic run name from the configuration that changes answers, e.g.
    ``adult__local-smollm2-135m-instruct-q4_1__neutral-real-fresh__s0__1a2b3c4d``.

    Readable parts plus 8 hex digits of sha256 over them and the rest of the answer-changing settings.
    Synthesizers, conditions and trials per label are left out on purpose: running with more of them extends
    (resumes into) the same file.
    """
    config = {"dataset_keys": list(dataset_keys), "provider": provider, "model": model, "variant": variant,
              "metadata_source": metadata_source, "sampling": sampling, "seed": int(seed),
              "n_rows": int(n_rows), "generate_config": asdict(generate_config),
              "base_url": public_base_url(base_url)}
    if scoring != "verdict":  # verdict runs keep the names they always had
        config["scoring"] = scoring
    if label_backend not in ("", "transformers"):  # float32 transformers runs keep their names
        config["label_backend"] = label_backend
    digest = sha256_json(config)[:8]
    return (f"{'+'.join(map(_slug, dataset_keys))}__{_slug(provider)}-{_slug(model)}__"
            f"{_slug(variant)}-{_slug(metadata_source)}-{_slug(sampling)}__s{int(seed)}__{digest}")


def default_out_path(name: str) -> Path:
    """``results/trials/<name>.jsonl``."""
    return results_dir() / "trials" / f"{name}.jsonl"


def _split_key(dataset_key: str) -> tuple[str, str]:
    """(dataset, encoding) of a compendium key; a key of a user's own table (``llmdisc audit``) is kept
    whole, with encoding ``"as-given"``."""
    try:
        return parse_dataset_key(dataset_key)
    except ConfigError:
        return dataset_key, "as-given"


# --------------------------------------------------------------------------- the runner
@dataclass
class _Context:
    provider: Provider
    identity: dict[str, Any]
    tables: Mapping[str, Mapping[str, pd.DataFrame]]
    variant: str
    metadata_source: str
    cache: ResponseCache | None
    config: GenerateConfig
    n_rows: int
    max_attempts: int
    budget: RequestBudget
    run_id: str
    metadata_cache: MetadataCache
    config_name: str = UNRECORDED_CONFIG


async def _call_cached(ctx: _Context, prepared: PreparedPrompt, spec: TrialSpec,
                       kind: str) -> tuple[Any, bool, int, Any]:
    """One cached, retried call of ``kind``: ``(answer or None, cache_hit, attempts, failure or None)``."""
    key = request_cache_key(ctx.identity, prepared.request, ctx.config, replicate=spec.replicate,
                            sample_seed=prepared.sample_seed, kind=kind)
    if ctx.cache is not None:  # an offline miss raises CacheMissError: fatal, finished trials are kept
        answer = ctx.cache.get(key) if kind == "completion" else ctx.cache.get_label_scores(key)
        if answer is not None:
            return answer, True, 0, None
    try:
        answer, attempts = await call_with_retries(
            ctx.provider, prepared.request, ctx.config, max_attempts=ctx.max_attempts, budget=ctx.budget,
            seed=prepared.sample_seed, method="complete" if kind == "completion" else "label_scores")
    except CacheMissError:
        raise
    except Exception as exc:  # noqa: BLE001 - every provider failure becomes an error record
        return None, False, getattr(exc, "attempts", 1), exc
    if ctx.cache is not None:
        (ctx.cache.put if kind == "completion" else ctx.cache.put_label_scores)(key, answer)
    return answer, False, attempts, None


async def _run_one(ctx: _Context, spec: TrialSpec) -> TrialRecord:
    try:
        cell = ctx.tables[spec.dataset_key]
        real, synthetic = cell["real"], cell[spec.synthesizer]
    except KeyError as exc:
        wanted = f"{{{spec.dataset_key!r}: {{'real': ..., {spec.synthesizer!r}: ...}}}}"
        raise ConfigError(f"tables has no {exc.args[0]!r} for trial {spec.trial_id}; fix: pass "
                          f"tables={wanted}") from None
    prepared = prepare_prompt(spec, real=real, synthetic=synthetic, variant=ctx.variant,
                              metadata_source=ctx.metadata_source, n_rows=ctx.n_rows,
                              metadata_cache=ctx.metadata_cache)
    wants_verdict, wants_scores = spec.scoring in ("verdict", "both"), spec.scoring in ("probability", "both")
    completion, cache_hit, attempts, failure = None, True, 0, None
    if wants_verdict:
        completion, cache_hit, attempts, failure = await _call_cached(ctx, prepared, spec, "completion")
    scores = None
    if wants_scores and failure is None:
        scores, hit, n, failure = await _call_cached(ctx, prepared, spec, "label_scores")
        cache_hit, attempts = cache_hit and hit, attempts + n
    dataset, encoding = _split_key(spec.dataset_key)
    base = dict(
        trial_id=spec.trial_id,
        timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
        provider=ctx.identity["provider"], model=ctx.identity["model"], condition=spec.condition,
        true_label=spec.true_label, synthetic_method=spec.synthesizer, run_id=ctx.run_id, dataset=dataset,
        encoding=encoding, dataset_key=spec.dataset_key, sampling=spec.sampling,
        sample_seed=prepared.sample_seed, row_ids=list(prepared.row_ids), n_rows=len(prepared.row_ids),
        prompt_variant=ctx.variant, metadata_source=ctx.metadata_source, prompt_hash=prepared.prompt_hash,
        attempts=attempts, cache_hit=cache_hit, replicate=spec.replicate, run_seed=spec.run_seed,
        scoring=spec.scoring, label_method=str(ctx.identity.get("label_method") or "") if wants_scores else "",
        config_name=ctx.config_name, predicted_label=None, correct=None, confidence=None, reasoning=None,
        red_flags=[], supporting_evidence=[], completion_tokens=None, raw_text=None, **empty_score_fields())
    if failure is not None:  # no answer (verdict or scores): an error record, retried on resume
        reason = f"{type(failure).__name__}: {failure}"
        if wants_scores:
            base.update(score_status="error", score_invalid_reason=reason)
        return TrialRecord(**base, model_digest=ctx.identity.get("model_digest"), latency_s=None,
                           prompt_tokens=None, status="error", invalid_reason=reason)
    if scores is not None:
        base.update(score_fields(scores))
    answer = completion if completion is not None else scores
    base.update(model_digest=answer.model_version or ctx.identity.get("model_digest"),
                latency_s=answer.latency_s, prompt_tokens=answer.prompt_tokens)
    if completion is None:  # scoring "probability": the record's status is the scores' status
        return TrialRecord(**base, status=base["score_status"], invalid_reason=base["score_invalid_reason"])
    parsed = parse_answer(completion.text)  # an invalid answer has verdict and confidence None
    base.update(predicted_label=parsed.verdict, confidence=parsed.confidence, reasoning=parsed.reasoning,
                correct=(parsed.verdict == spec.true_label) if parsed.valid else None,
                red_flags=list(parsed.red_flags), supporting_evidence=list(parsed.supporting_evidence),
                completion_tokens=completion.completion_tokens, raw_text=completion.text,
                verdict_agrees=verdict_agrees(parsed.verdict, base["p_synthetic"]))
    return TrialRecord(**base, status="valid" if parsed.valid else "invalid",
                       invalid_reason=parsed.invalid_reason)


def endpoint_budget(identity: Mapping[str, Any], requests_per_minute: float | None) -> RequestBudget:
    """The request budget of a provider's endpoint and model (its public ``identity()``), shared in this process
    (:func:`~llmdisc.discrimination.retries.shared_budget`); None or 0: unlimited."""
    endpoint = (identity.get("provider"), identity.get("model"), identity.get("base_url"))
    return shared_budget(endpoint, requests_per_minute or None)


def public_identity(provider: Provider) -> dict[str, Any]:
    """A provider's ``identity()``, its base URL stripped of credentials (as records and keys hold it)."""
    identity = provider.identity()
    return {**identity, "base_url": public_base_url(identity.get("base_url"))}


def _prepare_file(out_path: Path, manifest_path: Path, specs: Sequence[TrialSpec],
                  config_sha256: str) -> tuple[list[dict[str, Any]], int, int]:
    """Repair and trim the run file before (re)starting; returns (kept planned records, retried, repaired)."""
    found = read_by_id(out_path)
    recorded = (read_manifest(manifest_path) or {}).get("config_sha256")
    if found.records and recorded is not None and recorded != config_sha256:
        raise ConfigError(
            f"{relative_to_root(out_path)} holds trials of a different configuration (provider, model, "
            "prompt variant, metadata source, rows or generation settings differ from its manifest); fix: "
            "write to another file (run_name(...) names one per configuration) or delete this file to start "
            "over")
    planned = {spec.trial_id for spec in specs}
    retried = [r for r in found.records if r["trial_id"] in planned and r.get("status") == "error"]
    keep = [r for r in found.records if not (r["trial_id"] in planned and r.get("status") == "error")]
    if retried or not found.clean:
        write_atomically(out_path, keep)  # the file never holds a trial twice
    return ([r for r in keep if r["trial_id"] in planned], len(retried),
            found.corrupt_lines + found.duplicate_lines)


async def run_trials(specs: Sequence[TrialSpec], *, provider: Provider,
                     tables: Mapping[str, Mapping[str, pd.DataFrame]], variant: str, metadata_source: str,
                     out_path: Path | str, cache: ResponseCache | None, concurrency: int = 4,
                     requests_per_minute: float | None = None, max_attempts: int = 5,
                     generate_config: GenerateConfig = GenerateConfig(), n_rows: int = 20,
                     progress: bool = True, max_consecutive_failures: int = 5,
                     parameters: Mapping[str, Any] | None = None,
                     input_files: Sequence[Path | str] = (), config_name: str = "") -> RunSummary:
    """Run (or resume) trials, append one record per finished trial to ``out_path``; return a :class:`RunSummary`.

    Args:
        provider: the answering model (its ``check()`` runs once first, except in ``offline`` cache mode).
        tables: ``dataset_key -> {"real": DataFrame, "<synthesizer>": DataFrame, ...}``.
        out_path: the run file (usually ``results/trials/<run_name(...)>.jsonl``); its manifest goes beside it.
        concurrency: most calls in flight (also capped by ``provider.max_connections``).
        requests_per_minute: call budget, retries included, shared with every run of this process on the same
            endpoint (:func:`endpoint_budget`); None: unlimited.
        max_attempts: attempts per trial for retryable failures (1 = no retry).
        max_consecutive_failures: provider errors in a row (after retries) that end the run.
        parameters: extra parameters to record in the manifest.
        input_files: data files the tables came from (hashed into the manifest).
        config_name: the ``configs/<name>.yaml`` this run belongs to, written into every record.

    Raises:
        RunAborted: the provider failed ``max_consecutive_failures`` trials in a row (finished trials kept).
        CacheMissError: ``offline`` cache mode and a call is not in the cache (finished trials kept).
        ConfigError: bad arguments, duplicate trial ids, missing tables, or ``out_path`` of another configuration.
        ProviderError: ``provider.check()`` failed (missing key, unreachable server) — before any trial.
    """
    from tqdm import tqdm  # plain text bar: works in terminals and in papermill-run notebooks alike

    for name, value in (("concurrency", concurrency), ("max_attempts", max_attempts),
                        ("max_consecutive_failures", max_consecutive_failures), ("n_rows", n_rows)):
        if int(value) < 1:
            raise ConfigError(f"{name}={value}; fix: give an integer of at least 1")
    for name, value, allowed in (("variant", variant, PROMPT_VARIANTS),
                                 ("metadata_source", metadata_source, METADATA_SOURCES)):
        if value not in allowed:
            raise ConfigError(f"{name}={value!r} is not known; fix: use one of {', '.join(allowed)}")
    ids = [spec.trial_id for spec in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError("specs hold duplicate trial_ids; fix: build them once with build_trial_queue(...)")
    started = time.perf_counter()
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    run_id = out_path.stem
    manifest_path = out_path.with_name(f"{run_id}.manifest.json")
    identity = public_identity(provider)
    scoring_modes = sorted({spec.scoring for spec in specs})
    answer_config = {"provider_identity": identity, "variant": variant, "metadata_source": metadata_source,
                     "n_rows": int(n_rows), "generate_config": asdict(generate_config)}
    if scoring_modes != ["verdict"]:  # verdict-only runs keep the configuration hash they always had
        answer_config["scoring"] = scoring_modes
    config_sha256 = sha256_json(answer_config)
    if cache is None or cache.mode != "offline":
        await provider.check()  # a missing key or server is named before anything starts
        if any(mode != "verdict" for mode in scoring_modes):
            await provider.check_label_scores()  # no token probabilities: named now, never a silent fallback
    kept, n_retried, n_repaired = _prepare_file(out_path, manifest_path, specs, config_sha256)
    done = {record["trial_id"] for record in kept}
    todo = [spec for spec in specs if spec.trial_id not in done]
    summary = RunSummary(run_id=run_id, out_path=out_path, manifest_path=manifest_path, n_planned=len(specs),
                         n_skipped=len(done), n_retried_errors=n_retried, n_repaired_lines=n_repaired)
    statuses = [str(record.get("status")) for record in kept]
    run_seeds = sorted({spec.run_seed for spec in specs})
    recorded_parameters = {
        **dict(parameters or {}), **answer_config, "concurrency": concurrency,
        "requests_per_minute": requests_per_minute, "max_attempts": max_attempts,
        "max_consecutive_failures": max_consecutive_failures, "n_trials": len(specs), "run_seeds": run_seeds,
        "sampling_modes": sorted({spec.sampling for spec in specs}),
        "trial_ids_sha256": sha256_json(sorted(ids))}

    def write_run_manifest(state: str) -> None:
        summary.file_counts = {s: statuses.count(s) for s in ("valid", "invalid", "error")}
        summary.wall_s = time.perf_counter() - started
        write_manifest(out_path.parent, "04_llm_trials", inputs=input_files, outputs=[out_path],
                       parameters=recorded_parameters, seed=run_seeds[0] if len(run_seeds) == 1 else None,
                       metrics={**summary.file_counts, "n_planned": len(specs)},
                       extra={"run_id": run_id, "state": state, "config_sha256": config_sha256,
                              "provider": identity, "cache": cache.describe() if cache else None,
                              "summary": summary.as_dict()},
                       name=manifest_path.name)

    out_path.touch(exist_ok=True)
    write_run_manifest("running")  # before any trial: a resumed file always has its configuration beside it
    ctx = _Context(provider=provider, identity=identity, tables=tables, variant=variant,
                   metadata_source=metadata_source, cache=cache, config=generate_config, n_rows=int(n_rows),
                   max_attempts=int(max_attempts), budget=endpoint_budget(identity, requests_per_minute),
                   run_id=run_id, metadata_cache=MetadataCache(),
                   config_name=config_name or UNRECORDED_CONFIG)
    bar = tqdm(total=len(todo), desc=run_id[:40], unit="trial", disable=not progress, mininterval=1.0)
    failures_in_a_row, last_failure = 0, ""
    pending = iter(todo)  # shared by the workers: each next() hands one spec to one worker

    async def worker() -> None:
        nonlocal failures_in_a_row, last_failure
        for spec in pending:
            record = await _run_one(ctx, spec)
            append_record(out_path, record)  # no await inside: never torn by a cancel
            statuses.append(record.status)
            summary.n_run += 1
            summary.n_cache_hits += int(record.cache_hit)
            setattr(summary, f"n_{record.status}", getattr(summary, f"n_{record.status}") + 1)
            bar.update(1)
            bar.set_postfix(valid=summary.n_valid, invalid=summary.n_invalid, error=summary.n_error,
                            cached=summary.n_cache_hits, refresh=False)
            if record.status == "error":
                failures_in_a_row, last_failure = failures_in_a_row + 1, str(record.invalid_reason)
                if failures_in_a_row >= max_consecutive_failures:
                    raise _GaveUp(failures_in_a_row, last_failure)
            elif not record.cache_hit:
                failures_in_a_row = 0

    n_workers = max(1, min(int(concurrency), int(provider.max_connections), len(todo)))
    tasks = [asyncio.create_task(worker()) for _ in range(n_workers)] if todo else []
    try:
        if tasks:
            finished, unfinished = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in unfinished:
                task.cancel()
            await asyncio.gather(*unfinished, return_exceptions=True)
            for task in finished:
                if task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
    except _GaveUp as gave_up:
        summary.stopped = (
            f"provider {identity['provider']!r} (model {identity['model']!r}) failed {gave_up.count} "
            f"trials in a row after retries; last failure: {gave_up.last}. The run stopped; "
            f"{len(statuses)} finished trial(s) are kept in {relative_to_root(out_path)}; fix: check the "
            "provider (key, quota, server, model), then run the same configuration again to resume "
            "(error trials are retried)")
        write_run_manifest("stopped")
        raise RunAborted(summary.stopped, summary) from None
    except BaseException as exc:
        summary.stopped = f"{type(exc).__name__}: {exc}"
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        write_run_manifest("stopped")
        raise
    finally:
        bar.close()
    write_run_manifest("finished")
    return summary


class _GaveUp(LlmdiscError):
    def __init__(self, count: int, last: str) -> None:
        super().__init__(f"{count} failures in a row; last: {last}")
        self.count, self.last = count, last


def run_sync(make_coroutine: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``make_coroutine()`` to completion from synchronous code, also inside a running event loop (Jupyter:
    a fresh loop in a worker thread). Provider clients are bound to the loop they first ran in: create the
    provider inside the coroutine, or close it after.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llmdisc-trials") as pool:
        return pool.submit(lambda: asyncio.run(make_coroutine())).result()


def run_trials_sync(specs: Sequence[TrialSpec], **kwargs: Any) -> RunSummary:
    """Blocking :func:`run_trials` for notebooks and scripts (same arguments, same result; see :func:`run_sync`)."""
    return run_sync(lambda: run_trials(specs, **kwargs))
