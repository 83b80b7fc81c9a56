"""Tests of the trial runner (llmdisc.discrimination.runner, llmdisc.discrimination.retries, llmdisc.discrimination.records).

The provider here is a small subclass of the real ``Provider`` interface that answers from a script
(texts or exceptions of ``llmdisc.discrimination.providers.errors``) after an optional short sleep; prompts are built
by the real ``trial_inputs.prepare_prompt`` from tiny tables. Waits between retries are swapped for a
recorder by an autouse fixture (as Inspect swaps its wait), so no test sleeps through a back-off.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import llmdisc.discrimination.retries
from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.providers.base import Completion, GenerateConfig, PromptRequest, Provider
from llmdisc.discrimination.providers.errors import (
    ProviderAuthError,
    ProviderRequestError,
    RateLimited,
    TransientProviderError,
)
from llmdisc.discrimination.records import TRIAL_COLUMNS, load_trials, read_by_id
from llmdisc.discrimination.retries import RequestBudget
from llmdisc.discrimination.runner import RunAborted, run_name, run_trials_sync
from llmdisc.discrimination.samples import build_trial_queue
from llmdisc.errors import CacheMissError, ConfigError
from llmdisc.manifest import read_manifest

ANSWER = json.dumps({"verdict": "REAL", "confidence": 70, "reasoning": "plausible ages",
                     "red_flags": [], "supporting_evidence": ["ages are integers"]})
N_ROWS = 5


class ScriptedProvider(Provider):
    """Answers each call with the next scripted item (a text, or an exception to raise), then ``answer``."""

    name = "scripted"
    is_remote = False

    def __init__(self, script: list[Any] | None = None, *, answer: str = ANSWER, delay_s: float = 0.0,
                 max_connections: int = 8, check_error: Exception | None = None) -> None:
        super().__init__("scripted-model", base_url=None, max_connections=max_connections)
        self.script, self.answer = list(script or []), answer
        self.delay_s, self.check_error = delay_s, check_error
        self.calls = self.checks = self.in_flight = self.max_in_flight = 0

    async def check(self) -> None:
        self.checks += 1
        if self.check_error is not None:
            raise self.check_error

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
            item = self.script.pop(0) if self.script else self.answer
            if isinstance(item, BaseException):
                raise item
            return Completion(text=item, model=self.model, model_version="scripted-v1", prompt_tokens=100,
                              completion_tokens=20)
        finally:
            self.in_flight -= 1


@pytest.fixture(autouse=True)
def recorded_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Swap the sleep between retries for a recorder: waits are measured, never slept."""
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(llmdisc.discrimination.retries, "retry_sleep", record)
    return waits


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(0)

    def table(shift: int) -> pd.DataFrame:
        return pd.DataFrame({"age": rng.integers(18 + shift, 80, 40),
                             "workclass": rng.choice(["Private", "State-gov", "Self-emp"], 40),
                             "income": rng.choice(["<=50K", ">50K"], 40)})

    return {"adult": {"real": table(0), "ctgan": table(5), "tvae": table(10)}}


def specs(n: int = 2, conditions: tuple[str, ...] = ("C1",),
          synthesizers: tuple[str, ...] = ("ctgan",)) -> list:
    return build_trial_queue(["adult"], list(synthesizers), list(conditions), n, run_seed=0)


def run(queue: list, provider: Provider, tables: dict, out: Path, **kwargs: Any):
    options = dict(variant="neutral", metadata_source="real", cache=None, n_rows=N_ROWS, progress=False)
    options.update(kwargs)
    return run_trials_sync(queue, provider=provider, tables=tables, out_path=out, **options)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_records_hold_exactly_the_architecture_fields(tables: dict, tmp_path: Path) -> None:
    # Setup
    queue = specs(2, conditions=("C1", "C2"))
    provider = ScriptedProvider()
    out = tmp_path / "run.jsonl"
    # Run
    summary = run(queue, provider, tables, out)
    # Assert
    records = lines(out)
    assert len(records) == len(queue) == 8 and summary.n_valid == 8 and summary.n_run == 8
    assert all(list(r) == list(TRIAL_COLUMNS) for r in records)
    by_id = {r["trial_id"]: r for r in records}
    for spec in queue:
        r = by_id[spec.trial_id]
        assert (r["status"], r["predicted_label"], r["confidence"]) == ("valid", "REAL", 70)
        assert r["invalid_reason"] is None
        assert r["correct"] == (spec.true_label == "REAL")
        assert (r["dataset"], r["encoding"], r["dataset_key"], r["synthetic_method"]) == ("adult", "labels",
                                                                                          "adult", "ctgan")
        assert (r["provider"], r["model"], r["model_digest"]) == ("scripted", "scripted-model", "scripted-v1")
        assert (r["attempts"], r["cache_hit"], r["n_rows"], len(r["row_ids"])) == (1, False, N_ROWS, N_ROWS)
        assert (r["sample_seed"], r["run_seed"], r["replicate"]) == (spec.sample_seed, 0, 0)
        assert r["raw_text"] == ANSWER and len(r["prompt_hash"]) == 64 and r["run_id"] == "run"
    # Paired queue: the same rows under C1 and C2, different prompts.
    c1, c2 = by_id["adult|ctgan|C1|REAL|0|r0"], by_id["adult|ctgan|C2|REAL|0|r0"]
    assert c1["row_ids"] == c2["row_ids"] and c1["prompt_hash"] != c2["prompt_hash"]
    manifest = read_manifest(summary.manifest_path)
    assert manifest["state"] == "finished" and manifest["metrics"]["valid"] == 8
    assert manifest["parameters"]["variant"] == "neutral" and manifest["seed"] == 0
    assert provider.checks == 1
    frame = load_trials(out)
    assert list(frame.columns) == list(TRIAL_COLUMNS) and len(frame) == 8


def test_every_record_names_the_configuration_whose_run_wrote_it(tables: dict, tmp_path: Path) -> None:
    queue, out = specs(2), tmp_path / "r.jsonl"
    run(queue[:2], ScriptedProvider(), tables, out, config_name="small")
    run(queue, ScriptedProvider(), tables, out, config_name="default")  # resumes: the first two stay "small"
    assert [r["config_name"] for r in lines(out)] == ["small", "small", "default", "default"]
    run(specs(1), ScriptedProvider(), tables, tmp_path / "bare.jsonl")
    assert {r["config_name"] for r in lines(tmp_path / "bare.jsonl")} == {"unrecorded"}


def test_invalid_answer_is_recorded_with_its_reason(tables: dict, tmp_path: Path) -> None:
    run(specs(1), ScriptedProvider(answer="I think it is real."), tables, tmp_path / "r.jsonl")
    record = lines(tmp_path / "r.jsonl")[0]
    assert (record["status"], record["predicted_label"], record["correct"]) == ("invalid", None, None)
    assert record["invalid_reason"] == "no_json" and record["raw_text"] == "I think it is real."


def test_resume_skips_trials_already_recorded(tables: dict, tmp_path: Path) -> None:
    queue, out = specs(3), tmp_path / "r.jsonl"
    run(queue[:2], ScriptedProvider(), tables, out)
    provider = ScriptedProvider()
    summary = run(queue, provider, tables, out)
    assert (summary.n_skipped, summary.n_run, provider.calls) == (2, 4, 4)
    ids = [r["trial_id"] for r in lines(out)]
    assert sorted(ids) == sorted(s.trial_id for s in queue)


def test_torn_last_line_is_dropped_then_rerun(tables: dict, tmp_path: Path) -> None:
    queue, out = specs(2), tmp_path / "r.jsonl"
    run(queue, ScriptedProvider(), tables, out)
    data = out.read_bytes()
    out.write_bytes(data[: len(data) - 40])  # a kill in the middle of writing the last record
    provider = ScriptedProvider()
    summary = run(queue, provider, tables, out)
    assert (summary.n_repaired_lines, provider.calls) == (1, 1)
    ids = [r["trial_id"] for r in lines(out)]
    assert len(ids) == len(set(ids)) == len(queue)


def test_error_records_are_retried_on_resume_and_kept_once(tables: dict, tmp_path: Path) -> None:
    # Setup: the first call is refused (not retryable) -> one error record.
    queue, out = specs(2), tmp_path / "r.jsonl"
    first = run(queue, ScriptedProvider([ProviderRequestError("400 bad request")]), tables, out)
    errors = [r for r in lines(out) if r["status"] == "error"]
    assert first.n_error == 1 and len(errors) == 1
    assert errors[0]["invalid_reason"] == "ProviderRequestError: 400 bad request"
    assert errors[0]["attempts"] == 1
    assert errors[0]["raw_text"] is None and errors[0]["predicted_label"] is None
    # Run: resume retries only the error trial.
    provider = ScriptedProvider()
    second = run(queue, provider, tables, out)
    # Assert
    assert (second.n_retried_errors, second.n_run, provider.calls) == (1, 1, 1)
    records = lines(out)
    assert len(records) == len(queue) and {r["status"] for r in records} == {"valid"}
    assert second.file_counts == {"valid": 4, "invalid": 0, "error": 0}


def test_retry_after_is_honoured(tables: dict, tmp_path: Path, recorded_waits: list[float]) -> None:
    provider = ScriptedProvider([RateLimited("429 quota", retry_after=7.5),
                                 RateLimited("429", retry_after=2)])
    run(specs(1)[:1], provider, tables, tmp_path / "r.jsonl", concurrency=1)
    record = lines(tmp_path / "r.jsonl")[0]
    assert recorded_waits == [7.5, 2.0]
    assert (record["status"], record["attempts"], provider.calls) == ("valid", 3, 3)


def test_backoff_without_retry_after_grows_with_seeded_jitter(tables: dict, tmp_path: Path,
                                                             recorded_waits: list[float]) -> None:
    failures = [TransientProviderError("500"), TransientProviderError("timeout")]
    run(specs(1)[:1], ScriptedProvider(list(failures)), tables, tmp_path / "a.jsonl")
    first = list(recorded_waits)
    assert 1.0 <= first[0] <= 2.0 and 2.0 <= first[1] <= 3.0
    recorded_waits.clear()
    run(specs(1)[:1], ScriptedProvider(list(failures)), tables, tmp_path / "b.jsonl")
    assert recorded_waits == first  # jitter comes from the trial's seed


def test_attempts_are_bounded(tables: dict, tmp_path: Path) -> None:
    provider = ScriptedProvider([TransientProviderError("503")] * 5)
    run(specs(1)[:1], provider, tables, tmp_path / "r.jsonl", max_attempts=3)
    record = lines(tmp_path / "r.jsonl")[0]
    assert (record["status"], record["attempts"], provider.calls) == ("error", 3, 3)
    assert record["invalid_reason"] == "TransientProviderError: 503"


def test_persistent_failure_ends_the_run_keeping_finished_trials(tables: dict, tmp_path: Path) -> None:
    # Setup: three answers, then the provider fails for good.
    queue, out = specs(4), tmp_path / "r.jsonl"
    provider = ScriptedProvider([ANSWER] * 3 + [TransientProviderError("HTTP 503 from server")] * 50)
    # Run
    expected = (r"provider 'scripted' \(model 'scripted-model'\) failed 2 trials in a row after retries; "
                r"last failure: TransientProviderError: HTTP 503 from server\. The run stopped; "
                r"5 finished trial\(s\) are kept")
    with pytest.raises(RunAborted, match=expected) as caught:
        run(queue, provider, tables, out, concurrency=1, max_attempts=2, max_consecutive_failures=2)
    # Assert
    statuses = [r["status"] for r in lines(out)]
    assert statuses == ["valid"] * 3 + ["error"] * 2
    assert caught.value.summary.n_valid == 3
    assert read_manifest(out.with_name("r.manifest.json"))["state"] == "stopped"
    # A later run with a healthy provider resumes: the errors are retried, the file holds each trial once.
    run(queue, ScriptedProvider(), tables, out)
    assert sorted(r["trial_id"] for r in lines(out)) == sorted(s.trial_id for s in queue)


def test_check_runs_once_before_any_trial(tables: dict, tmp_path: Path) -> None:
    missing_key = ProviderAuthError("GEMINI_API_KEY (or GOOGLE_API_KEY) is not set")
    provider = ScriptedProvider(check_error=missing_key)
    with pytest.raises(ProviderAuthError, match="GEMINI_API_KEY"):
        run(specs(2), provider, tables, tmp_path / "r.jsonl")
    assert provider.calls == 0 and provider.checks == 1
    assert not (tmp_path / "r.jsonl").exists() or not (tmp_path / "r.jsonl").read_text()


def test_cache_hits_and_errors_never_cached(tables: dict, tmp_path: Path) -> None:
    # Setup: a filling run where one trial fails.
    queue = specs(2)
    cache_dir = tmp_path / "cache"
    provider = ScriptedProvider([ProviderRequestError("400")])
    run(queue, provider, tables, tmp_path / "a.jsonl", cache=ResponseCache(cache_dir), concurrency=1)
    assert len(ResponseCache(cache_dir)) == len(queue) - 1
    failed = next(r["trial_id"] for r in lines(tmp_path / "a.jsonl") if r["status"] == "error")
    # Run: the answered trials come back from the cache offline, without any provider call or check.
    offline_provider = ScriptedProvider(check_error=ProviderAuthError("no key"))
    answered = [s for s in queue if s.trial_id != failed]
    summary = run(answered, offline_provider, tables, tmp_path / "b.jsonl",
                  cache=ResponseCache(cache_dir, mode="offline"))
    # Assert
    assert summary.n_cache_hits == len(answered) and offline_provider.calls == offline_provider.checks == 0
    replayed = lines(tmp_path / "b.jsonl")
    assert all(r["cache_hit"] and r["attempts"] == 0 and r["raw_text"] == ANSWER for r in replayed)
    with pytest.raises(CacheMissError, match="offline cache mode: no stored response"):
        run(queue, offline_provider, tables, tmp_path / "b.jsonl",
            cache=ResponseCache(cache_dir, mode="offline"))


def test_in_flight_calls_are_capped(tables: dict, tmp_path: Path) -> None:
    queue = specs(4, conditions=("C1",), synthesizers=("ctgan", "tvae"))
    for concurrency, max_connections, expected in ((8, 3, 3), (2, 8, 2), (1, 8, 1)):
        provider = ScriptedProvider(delay_s=0.02, max_connections=max_connections)
        run(queue, provider, tables, tmp_path / f"c{concurrency}.jsonl", concurrency=concurrency)
        assert provider.max_in_flight == expected


async def test_request_budget_spaces_calls() -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    budget = RequestBudget(60, clock=lambda: now[0], sleep=sleep)  # one request per second
    assert [await budget.acquire() for _ in range(4)] == [0.0, 1.0, 2.0, 3.0]
    now[0] = 10.0  # idle for a while: the bucket refills to one token only
    assert [await budget.acquire() for _ in range(2)] == [0.0, 1.0]
    bursty = RequestBudget(60, burst=3, clock=lambda: 0.0, sleep=sleep)
    assert [await bursty.acquire() for _ in range(4)] == [0.0, 0.0, 0.0, 1.0]
    with pytest.raises(ConfigError, match="requests_per_minute=0; fix: give a positive number or None"):
        RequestBudget(0)


async def test_sync_wrapper_works_inside_a_running_loop(tables: dict, tmp_path: Path) -> None:
    # As in Jupyter: an event loop is already running in this thread.
    summary = run(specs(1), ScriptedProvider(), tables, tmp_path / "r.jsonl")
    assert summary.n_valid == 2


def test_another_configuration_cannot_resume_into_the_file(tables: dict, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    run(specs(1), ScriptedProvider(), tables, out)
    with pytest.raises(ConfigError, match="holds trials of a different configuration .* fix: write to"):
        run(specs(1), ScriptedProvider(), tables, out, variant="paper")


def test_bad_arguments_are_named(tables: dict, tmp_path: Path) -> None:
    queue = specs(1)
    with pytest.raises(ConfigError, match="duplicate trial_ids"):
        run(queue + queue[:1], ScriptedProvider(), tables, tmp_path / "r.jsonl")
    with pytest.raises(ConfigError, match="variant='plain' is not known; fix: use one of paper, neutral"):
        run(queue, ScriptedProvider(), tables, tmp_path / "r.jsonl", variant="plain")
    with pytest.raises(ConfigError, match="concurrency=0; fix: give an integer of at least 1"):
        run(queue, ScriptedProvider(), tables, tmp_path / "r.jsonl", concurrency=0)
    with pytest.raises(ConfigError, match="tables has no 'tvae' for trial .* fix: pass tables="):
        only_real = {"adult": {"real": tables["adult"]["real"]}}
        run(specs(1, synthesizers=("tvae",)), ScriptedProvider(), only_real, tmp_path / "t.jsonl")


def test_run_name_is_deterministic_and_distinguishes_configurations() -> None:
    base = dict(dataset_keys=["adult"], provider="local", model="smollm2-135m-instruct-q4_1",
                variant="neutral", metadata_source="real", sampling="fresh", seed=0)
    name = run_name(**base)
    assert name == run_name(**base)
    assert name.startswith("adult__local-smollm2-135m-instruct-q4_1__neutral-real-fresh__s0__")
    others = {run_name(**{**base, "seed": 1}), run_name(**{**base, "model": "other"}),
              run_name(**{**base, "variant": "paper"}), run_name(**base, n_rows=10),
              run_name(**base, generate_config=GenerateConfig(temperature=0.5)),
              run_name(**base, label_backend="transformers-bfloat16")}
    assert name not in others and len(others) == 6
    # the default label backend, named or not, keeps the names runs always had
    assert run_name(**base, label_backend="transformers") == run_name(**base, label_backend="") == name
    assert "/" not in run_name(**{**base, "model": "org/model:tag"})


def test_load_trials_dedupes_and_reads_folders(tmp_path: Path, tables: dict) -> None:
    out = tmp_path / "trials" / "r.jsonl"
    run(specs(1), ScriptedProvider(), tables, out)
    with open(out, "a", encoding="utf-8") as fh:
        fh.write(out.read_text(encoding="utf-8").splitlines()[0] + "\n")  # a duplicate line
    assert read_by_id(out).duplicate_lines == 1
    with pytest.warns(Warning, match="1 superseded duplicate"):
        frame = load_trials(tmp_path / "trials")
    assert len(frame) == 2 and frame["trial_id"].is_unique


def test_cell_table_and_run_metrics(tables: dict, tmp_path: Path) -> None:
    from llmdisc.discrimination.trial_runs import TrialRunConfig, record_run_metrics
    from llmdisc.scoring.tables import cell_table

    # Setup: an always-REAL answerer over two cells.
    queue = specs(2, synthesizers=("ctgan", "tvae"))
    summary = run(queue, ScriptedProvider(), tables, tmp_path / "r.jsonl")
    # Run
    cells = cell_table(load_trials(summary.out_path))
    # Assert: p_REAL 1, p_SYN 0, so DRS = min(p_REAL, p_SYN) = 0 in every cell.
    assert list(cells["synthetic_method"]) == ["ctgan", "tvae"]
    assert list(cells["n_valid_real"]) == [2, 2] and list(cells["n_valid_syn"]) == [2, 2]
    assert list(cells["p_real"]) == [1.0, 1.0] and list(cells["p_syn"]) == [0.0, 0.0]
    assert list(cells["drs"]) == [0.0, 0.0] and list(cells["n_error"]) == [0, 0]
    record_run_metrics(summary.manifest_path, {"drs": [0.0, 0.0]})
    manifest = read_manifest(summary.manifest_path)
    assert manifest["metrics"]["drs"] == [0.0, 0.0] and manifest["metrics"]["valid"] == 8
    quick = TrialRunConfig(synthesizers=("tvae", "ctgan"), conditions=("C2", "C1"), quick=True).effective()
    assert (quick.synthesizers, quick.conditions, quick.trials_per_label) == (("tvae",), ("C2",), 1)
