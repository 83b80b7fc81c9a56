"""The plan printed before any provider call (llmdisc.discrimination.call_plan): calls, tokens, cost and time."""

from __future__ import annotations

import pytest

from llmdisc.discrimination.call_plan import (
    CallCosts,
    count_calls,
    format_plan,
    plan_calls,
    prompt_tokens,
)
from llmdisc.discrimination.providers.openai_compat import LABEL_ANSWER_TOKENS
from llmdisc.discrimination.trial_runs import TrialRunConfig

CELLS = ("gaussian_copula", "ctgan", "tvae")


def settings(**changes: object) -> TrialRunConfig:
    base = dict(dataset_key="adult", synthesizers=CELLS, conditions=("C1", "C2"), trials_per_label=20,
                provider="gemini", model="gemini-2.5-flash")
    return TrialRunConfig(**{**base, **changes})


def test_fresh_samples_ask_once_a_trial_and_shared_real_samples_once_a_dataset() -> None:
    fresh = count_calls(settings())
    assert fresh.trials == fresh.verdict_calls == 3 * 2 * 2 * 20 and fresh.label_calls == 0
    shared = count_calls(settings(share_real_samples=True, controls=True))
    assert shared.trials == 5 * 2 * 2 * 20  # three releases and two controls
    assert shared.verdict_calls == 2 * 20 + 5 * 2 * 20  # REAL once per condition and index; SYNTHETIC per cell
    assert fresh.input_tokens == 3 * 2 * 20 * (prompt_tokens("adult", "C1") + prompt_tokens("adult", "C2"))


def test_the_papers_fixed_sample_is_one_call_per_cell_label_and_condition() -> None:
    # sample seed 42 in every trial: the response cache answers the repeats, and REAL rows are the same in every cell
    fixed = count_calls(settings(sampling="fixed", variant="paper", metadata_source="source", controls=True))
    assert fixed.trials == 5 * 2 * 2 * 20
    assert fixed.verdict_calls == 2 + 5 * 2


def test_label_scores_add_the_content_free_pass_and_offline_runs_call_nothing() -> None:
    scored = count_calls(settings(scoring="probability", conditions=("C1",), verdict_trials_per_label=2))
    assert scored.verdict_calls == 3 * 2 * 2  # the first 2 trials a cell and label also generate a verdict
    assert scored.label_calls == 3 * 2 * 20 + 1 + 1  # + the content-free prompt (C1) and the logprob check
    offline = count_calls(settings(cache_mode="offline"))
    assert offline.trials == 240 and offline.calls == 0 and offline.input_tokens == 0


def test_cost_and_time_follow_the_prices_the_budget_and_the_latency() -> None:
    costs = CallCosts(seconds_per_call=10, answer_tokens=300, thinking_tokens=1000, max_thinking_tokens=8192,
                      usd_per_million_input_tokens=0.30, usd_per_million_output_tokens=2.50,
                      prices_as_of="2025-06-17")
    runs = [settings(concurrency=2, requests_per_minute=10), settings(dataset_key="census-codes", concurrency=2,
                                                                     requests_per_minute=10)]
    (plan,) = plan_calls(runs, {("gemini", "gemini-2.5-flash", ""): costs})
    assert plan.runs == 2 and plan.count.calls == 480
    assert plan.output_tokens == 480 * 1300 and plan.output_tokens_max == 480 * (300 + 8192)
    assert plan.usd() == pytest.approx((plan.count.input_tokens * 0.30 + 480 * 1300 * 2.50) / 1e6)
    assert plan.seconds == pytest.approx(480 / (10 / 60))  # 10 a minute is slower than 2 in flight at 10 s
    text = format_plan([plan])
    assert "calls: 480 (480 verdicts)" in text and "prices of 2025-06-17" in text
    assert f"cost: ~US${plan.usd():,.2f}, at most ~US${plan.usd(plan.output_tokens_max):,.2f}" in text
    assert "time: ~48 min" in text and "at most 10 requests a minute" in text


def test_local_models_cost_nothing_and_unknowns_are_said() -> None:
    local, remote = plan_calls([settings(provider="ollama", model="llama3.1:8b"),
                                settings(provider="openai", model="x", scoring="probability", conditions="C1")])
    assert local.usd() == 0.0 and remote.usd() is None and remote.seconds is None
    assert remote.output_tokens == remote.count.label_calls * LABEL_ANSWER_TOKENS
    text = format_plan([local, remote])
    assert "cost: US$0 (runs on your machine" in text
    assert "cost: unknown (no prices in the configuration" in text and "time: unknown" in text
    budget_only = plan_calls([settings(provider="openai", model="x", requests_per_minute=2)])[0]
    assert budget_only.time_is_bound and "time: at least 2.0 h" in format_plan([budget_only])
