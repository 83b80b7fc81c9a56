"""``requests_per_minute`` holds on the wire: a configured run against the loopback OpenAI server (real ``openai``
client, real HTTP), the arrival time of every generation request measured by the server.

400 requests a minute = one every 0.15 s; four calls may be in flight, so without the budget they would arrive
together. The assertions read the spacing of arrivals, never a wall-clock threshold of the whole run. A call
reaches the server a little after its slot, and on busy cores now and then a good deal after (a stalled call
arrives late and the next one on time: one long gap, one short), so the test reads the span of the arrivals
(only the first one's lateness shortens it) and the median gap (one stall moves it little), each against the
budget less ``SLACK``. The client's first call also pays the SDK's one-time set-up after its slot, so the
arrivals are read from the second call on.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import llmdisc.discrimination.trial_runs as trial_runs
from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.trial_runs import TrialRunConfig, run_configured
from support import OpenAIWireServer

RPM = 400.0
INTERVAL = 60.0 / RPM
SLACK = 0.05  # seconds the span or the median gap may fall short of the budget (a call arrives after its slot)
MODEL = "llama-3.1-8b-instant"


@pytest.fixture()
def tiny_tables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)

    def table(shift: int) -> pd.DataFrame:
        return pd.DataFrame({"age": rng.integers(18 + shift, 90, 40), "hours_per_week": rng.integers(1, 99, 40)})

    def load(dataset_key: str, synthesizers, *, controls: bool = False, seed: int = 0):  # noqa: ANN001, ANN202
        return {dataset_key: {"real": table(0), **{name: table(5) for name in synthesizers}}}, []

    monkeypatch.setattr(trial_runs, "load_trial_tables", load)


def gaps(server: OpenAIWireServer) -> list[float]:
    arrivals = sorted(request.received_s for request in server.generation_requests)[1:]  # see the docstring
    return [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]


def test_requests_per_minute_spaces_the_calls_of_a_run_and_of_the_next(
        tiny_tables: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-0001")  # the key variable travels from the config to the provider
    with OpenAIWireServer(models=[MODEL], api_key="gsk-test-0001") as server:
        settings = TrialRunConfig(
            dataset_key="adult", synthesizers="ctgan", conditions="C1", trials_per_label=2, provider="openai",
            model=MODEL, base_url=server.base_url, api_key_env="GROQ_API_KEY", concurrency=4,
            requests_per_minute=RPM, n_rows=5)
        cache = ResponseCache(tmp_path / "cache")
        first = run_configured(settings, out_path=tmp_path / "a.jsonl", progress=False, cache=cache)
        assert first.n_valid == 4 and len(server.generation_requests) == 4
        # a second run of the same model in this process (another protocol) draws from the same budget
        second = run_configured(replace(settings, variant="paper"), out_path=tmp_path / "b.jsonl", progress=False,
                                cache=cache)
        assert second.n_valid == 4 and len(server.generation_requests) == 8
        spacing = gaps(server)
    assert len(spacing) == 6
    assert sum(spacing) >= 6 * INTERVAL - SLACK, spacing  # 7 arrivals, across both runs
    assert statistics.median(spacing) >= INTERVAL - SLACK, spacing


def test_without_a_budget_the_calls_go_out_together(tiny_tables: None, tmp_path: Path) -> None:
    # the control: the same run with no budget sends its four calls at once (the spacing above is the budget's)
    with OpenAIWireServer(models=[MODEL], latency_s=0.2) as server:
        settings = TrialRunConfig(
            dataset_key="adult", synthesizers="ctgan", conditions="C1", trials_per_label=2, provider="openai",
            model=MODEL, base_url=server.base_url, concurrency=4, n_rows=5)
        run_configured(settings, out_path=tmp_path / "c.jsonl", progress=False, cache=ResponseCache(tmp_path / "c"))
        spacing = gaps(server)
    assert len(spacing) == 2 and sum(spacing) < INTERVAL, spacing  # the budget would have spaced them 0.3 s


def test_one_budget_per_endpoint_and_model_in_a_process() -> None:
    from llmdisc.discrimination.runner import endpoint_budget

    gemini = {"provider": "gemini", "model": "gemini-2.5-flash", "base_url": None}
    assert endpoint_budget(gemini, 10) is endpoint_budget(dict(gemini), 10.0)  # the next run waits its turn
    assert endpoint_budget(gemini, 10) is not endpoint_budget({**gemini, "model": "gemini-2.5-pro"}, 10)
    assert endpoint_budget(gemini, 10) is not endpoint_budget(gemini, 20)
    unlimited = endpoint_budget(gemini, None)
    assert unlimited is not endpoint_budget(gemini, 0) and unlimited.interval == 0.0
