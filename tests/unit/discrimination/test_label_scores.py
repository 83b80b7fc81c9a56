"""Label scores in trial records: the runner's ``probability`` and ``both`` modes, the cache, bad scores.

The provider is a small subclass of the real ``Provider`` interface that scores labels from the prompt text
it is sent (so the number depends on the sample shown), the way a model would; the wire formats of the real
services are tested in ``tests/unit/discrimination/providers/``.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import llmdisc.discrimination.retries
from llmdisc.discrimination.cache import ResponseCache, request_cache_key
from llmdisc.discrimination.label_scores import p_synthetic_from_logprobs, score_fields, verdict_agrees
from llmdisc.discrimination.providers.base import (
    Completion,
    GenerateConfig,
    LabelScores,
    PromptRequest,
    Provider,
)
from llmdisc.discrimination.providers.errors import ProviderConfigError, TransientProviderError
from llmdisc.discrimination.records import TrialRecord, load_trials
from llmdisc.discrimination.runner import run_name, run_trials_sync
from llmdisc.discrimination.samples import build_trial_queue

ANSWER = json.dumps({"verdict": "SYNTHETIC", "confidence": 60, "reasoning": "r", "red_flags": [],
                     "supporting_evidence": []})


def _unit(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2**32


class ScoringProvider(Provider):
    """Scores labels from the user text; ``script`` items (a LabelScores or an exception) come first."""

    name = "scoring"
    is_remote = False
    supports_label_scores = True

    def __init__(self, script: list[Any] | None = None) -> None:
        super().__init__("scoring-model", max_connections=1)
        self.script = list(script or [])
        self.score_calls = self.complete_calls = 0

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        self.complete_calls += 1
        return Completion(text=ANSWER, model=self.model, model_version="v1")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        self.score_calls += 1
        if self.script:
            item = self.script.pop(0)
            if isinstance(item, BaseException):
                raise item
            return item
        u = _unit(request.user)
        return LabelScores(logprobs={"REAL": math.log(0.6 - 0.5 * u), "SYNTHETIC": math.log(0.3 + 0.5 * u)},
                           n_tokens={"REAL": 1, "SYNTHETIC": 3}, label_mass=0.9, model=self.model,
                           model_version="v1", prompt_tokens=100, latency_s=0.01)


class VerdictOnlyProvider(ScoringProvider):
    supports_label_scores = False


@pytest.fixture(autouse=True)
def no_retry_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries are counted, not slept."""
    async def skip(seconds: float) -> None:
        return None

    monkeypatch.setattr(llmdisc.discrimination.retries, "retry_sleep", skip)


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(0)

    def table(shift: int) -> pd.DataFrame:
        return pd.DataFrame({"age": rng.integers(18 + shift, 80, 60),
                             "workclass": rng.choice(["Private", "State-gov", "Self-emp"], 60)})

    return {"adult": {"real": table(0), "ctgan": table(5), "tvae": table(9)}}


def run(queue: list, provider: Provider, tables: dict, out: Path, **kwargs: Any):
    options = dict(variant="neutral", metadata_source="real", cache=None, n_rows=5, progress=False)
    options.update(kwargs)
    return run_trials_sync(queue, provider=provider, tables=tables, out_path=out, **options)


def test_p_synthetic_is_the_softmax_over_the_two_labels() -> None:
    assert p_synthetic_from_logprobs(math.log(0.2), math.log(0.6)) == pytest.approx(0.75)
    assert p_synthetic_from_logprobs(-1000.0, 0.0) == pytest.approx(1.0)
    assert p_synthetic_from_logprobs(0.0, -1000.0) == pytest.approx(0.0)
    assert p_synthetic_from_logprobs(-3.0, -3.0) == 0.5


@pytest.mark.parametrize("logprobs, mass, reason", [
    ({"REAL": float("nan"), "SYNTHETIC": -1.0}, 0.9, "not a finite number"),
    ({"REAL": -1.0, "SYNTHETIC": float("-inf")}, 0.9, "not a finite number"),
    ({"REAL": -1.0}, 0.9, "label SYNTHETIC has no score"),
    ({"REAL": -1.0, "SYNTHETIC": 0.5}, 0.9, "positive"),
    ({"REAL": -1.0, "SYNTHETIC": -2.0}, 1.7, "label mass"),
])
def test_unusable_scores_are_invalid_with_the_reason_never_zero(logprobs: dict, mass: float, reason: str) -> None:
    fields = score_fields(LabelScores(logprobs=logprobs, n_tokens={}, label_mass=mass, model="m"))
    assert fields["score_status"] == "invalid"
    assert reason in fields["score_invalid_reason"]
    assert fields["p_synthetic"] is None and fields["logprob_real"] is None and fields["logprob_synthetic"] is None


def test_valid_scores_fill_every_field() -> None:
    fields = score_fields(LabelScores(logprobs={"REAL": -0.5, "SYNTHETIC": -1.8}, n_tokens={"REAL": 1,
                                      "SYNTHETIC": 3}, label_mass=0.95, model="m", latency_s=0.2))
    assert fields["score_status"] == "valid" and fields["score_invalid_reason"] is None
    assert fields["logprob_real_per_char"] == pytest.approx(-0.5 / 4)
    assert fields["logprob_synthetic_per_char"] == pytest.approx(-1.8 / 9)
    assert fields["p_synthetic"] == pytest.approx(1 / (1 + math.exp(1.3)))
    assert verdict_agrees("REAL", fields["p_synthetic"]) is True
    assert verdict_agrees("SYNTHETIC", fields["p_synthetic"]) is False
    assert verdict_agrees(None, fields["p_synthetic"]) is None and verdict_agrees("REAL", None) is None


def test_probability_mode_records_scores_and_no_verdict(tables: dict, tmp_path: Path) -> None:
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=0, scoring="probability")
    provider = ScoringProvider()
    summary = run(queue, provider, tables, tmp_path / "p.jsonl")
    df = load_trials(summary.out_path)
    assert provider.complete_calls == 0 and provider.score_calls == 6
    assert (df["status"] == "valid").all() and (df["score_status"] == "valid").all()
    assert df["predicted_label"].isna().all() and (df["scoring"] == "probability").all()
    expected = df["logprob_synthetic"].map(math.exp) / (df["logprob_real"].map(math.exp)
                                                        + df["logprob_synthetic"].map(math.exp))
    assert np.allclose(df["p_synthetic"].astype(float), expected.astype(float))
    assert df["p_synthetic"].astype(float).nunique() == 6  # the score follows the sample shown


def test_both_mode_records_agreement_and_verdict_subset(tables: dict, tmp_path: Path) -> None:
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=0, scoring="probability",
                              verdict_trials_per_label=1)
    provider = ScoringProvider()
    df = load_trials(run(queue, provider, tables, tmp_path / "b.jsonl").out_path)
    both = df[df["scoring"] == "both"]
    assert len(both) == 2 and provider.complete_calls == 2
    assert (both["predicted_label"] == "SYNTHETIC").all()
    assert both["verdict_agrees"].tolist() == [p > 0.5 for p in both["p_synthetic"]]
    assert df[df["scoring"] == "probability"]["verdict_agrees"].isna().all()


def test_invalid_and_failed_scores_and_resume(tables: dict, tmp_path: Path) -> None:
    bad = LabelScores(logprobs={"REAL": -0.1, "SYNTHETIC": float("nan")}, n_tokens={}, label_mass=0.5,
                      model="scoring-model")
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 2, run_seed=0, scoring="probability")
    out = tmp_path / "r.jsonl"
    provider = ScoringProvider(script=[bad, ProviderConfigError("refused: no logprobs")])
    df = load_trials(run(queue, provider, tables, out, max_attempts=1).out_path).set_index("trial_id")
    first, second = df.loc[queue[0].trial_id], df.loc[queue[1].trial_id]
    assert first["status"] == "invalid" and "not a finite number" in first["invalid_reason"]
    assert second["status"] == "error" and second["score_status"] == "error"
    assert "refused" in second["score_invalid_reason"]
    # resume: the invalid answer is final, the error is retried and now scores
    again = ScoringProvider()
    summary = run(queue, again, tables, out)
    assert summary.n_skipped == 3 and summary.n_run == 1 and again.score_calls == 1
    df = load_trials(out).set_index("trial_id")
    assert df.loc[queue[1].trial_id, "status"] == "valid"


def test_label_scores_are_cached_under_their_own_key(tables: dict, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    queue = build_trial_queue(["adult"], ["ctgan", "tvae"], ["C1"], 2, run_seed=0, scoring="both",
                              share_real_samples=True)
    provider = ScoringProvider()
    first = load_trials(run(queue, provider, tables, tmp_path / "c1.jsonl", cache=cache).out_path)
    # REAL samples are shared by the two synthesizer cells: their second scoring is a cache hit
    assert provider.score_calls == 6 and provider.complete_calls == 6
    offline = ResponseCache(tmp_path / "cache", mode="offline")
    again = ScoringProvider()
    second = load_trials(run(queue, again, tables, tmp_path / "c2.jsonl", cache=offline).out_path)
    assert again.score_calls == 0 and again.complete_calls == 0 and second["cache_hit"].all()
    cols = ["trial_id", "logprob_real", "logprob_synthetic", "p_synthetic", "predicted_label"]
    pd.testing.assert_frame_equal(first[cols], second[cols])
    request = PromptRequest(system="s", user="u")
    identity = provider.identity()
    assert (request_cache_key(identity, request, GenerateConfig(), replicate=0)
            != request_cache_key(identity, request, GenerateConfig(), replicate=0, kind="label_scores"))


def test_a_provider_without_token_probabilities_fails_before_any_trial(tables: dict, tmp_path: Path) -> None:
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 1, run_seed=0, scoring="probability")
    provider = VerdictOnlyProvider()
    with pytest.raises(ProviderConfigError, match="scoring: verdict"):
        run(queue, provider, tables, tmp_path / "x.jsonl")
    assert provider.score_calls == 0 and provider.complete_calls == 0
    assert not (tmp_path / "x.jsonl").exists() or (tmp_path / "x.jsonl").read_text() == ""


def test_the_scoring_mode_changes_the_run_name_but_verdict_names_are_stable() -> None:
    base = dict(dataset_keys=["adult"], provider="local", model="m", variant="neutral", metadata_source="real",
                sampling="fresh", seed=0)
    assert run_name(**base) == run_name(**base, scoring="verdict")
    assert run_name(**base) != run_name(**base, scoring="probability")


def test_old_records_without_score_fields_still_load(tmp_path: Path) -> None:
    record = {f: None for f in TrialRecord.__dataclass_fields__ if f not in {
        "scoring", "logprob_real", "logprob_synthetic", "logprob_real_per_char", "logprob_synthetic_per_char",
        "p_synthetic", "label_mass", "label_n_tokens", "score_status", "score_invalid_reason",
        "score_latency_s", "verdict_agrees"}}
    record.update(trial_id="t", red_flags=[], supporting_evidence=[], row_ids=[], status="valid")
    assert TrialRecord.from_dict(record).scoring == "verdict"
    (tmp_path / "old.jsonl").write_text(json.dumps(record) + "\n")
    assert load_trials(tmp_path / "old.jsonl")["scoring"].tolist() == ["verdict"]


def test_retryable_score_failures_are_retried(tables: dict, tmp_path: Path) -> None:
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 1, run_seed=0, scoring="probability")
    provider = ScoringProvider(script=[TransientProviderError("503")])
    df = load_trials(run(queue, provider, tables, tmp_path / "t.jsonl", max_attempts=3).out_path)
    assert (df["status"] == "valid").all() and provider.score_calls == 3


class TwoMethodProvider(ScoringProvider):
    """A provider with two ways of computing label scores (as the local provider's float32 and bfloat16 passes):
    its identity names the method, so the cache keys and the records tell them apart."""

    def __init__(self, method: str) -> None:
        super().__init__()
        self.method = method

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "label_method": self.method}


def test_records_name_the_label_method_and_cells_keep_methods_apart(tables: dict, tmp_path: Path) -> None:
    from llmdisc.scoring import score_probability_cells

    queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=0, scoring="probability")
    for method in ("transformers-float32", "transformers-bfloat16"):  # one config, two methods, one folder
        run(queue, TwoMethodProvider(method), tables, tmp_path / f"{method}.jsonl", config_name="default")
    run(queue, ScoringProvider(), tables, tmp_path / "only-way.jsonl", config_name="default")
    verdicts = build_trial_queue(["adult"], ["ctgan"], ["C1"], 1, run_seed=0)
    run(verdicts, TwoMethodProvider("transformers-bfloat16"), tables, tmp_path / "verdicts.jsonl")
    trials = load_trials(tmp_path)
    by_run = trials.groupby("run_id")["label_method"].agg(set).to_dict()
    assert by_run == {"transformers-float32": {"transformers-float32"},
                      "transformers-bfloat16": {"transformers-bfloat16"}, "only-way": {""}, "verdicts": {""}}
    cells = score_probability_cells(trials, permutations=10)
    assert sorted(cells["label_method"]) == ["", "transformers-bfloat16", "transformers-float32"]  # never pooled
    assert set(cells["n_real"]) == {3}
