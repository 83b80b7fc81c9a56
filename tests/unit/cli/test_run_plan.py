"""``llmdisc run --plan`` and ``llmdisc trials run --plan``: calls, cost and time printed with no key, no network,
and no provider built; a configuration of several providers runs one at a time (``--provider``)."""

from __future__ import annotations

import re
import socket

import pytest

import llmdisc.discrimination.providers.registry as registry
import llmdisc.pipeline.runs as runs
from llmdisc.cli.main import main

KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY")


@pytest.fixture()
def nothing_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key in the environment; building a provider, opening a connection or running a notebook fails the test."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"called with {args} {kwargs}: the plan must call nothing")

    monkeypatch.setattr(registry, "provider_class", refuse)
    monkeypatch.setattr(registry, "get_provider", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(runs, "run_plan", refuse)


def blocks(text: str) -> dict[str, list[str]]:
    """The plan's lines per model (the line starting with '- provider model')."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("- "):
            current = line[2:].rsplit(": ", 1)[0]
            found[current] = []
        elif current is not None and line.startswith("  "):
            found[current].append(line.strip())
    return found


def test_run_plan_of_the_paper_config_prints_calls_cost_and_time_without_a_key(
        nothing_called: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", "configs/paper.yaml", "--plan"]) == 0
    out = capsys.readouterr().out
    models = blocks(out)
    assert set(models) == {"ollama llama3.1:8b", "gemini gemini-2.5-flash",
                           "openai llama-3.1-8b-instant at https://api.groq.com/openai/v1"}
    for name, lines in models.items():
        calls = next(line for line in lines if line.startswith("calls: "))
        assert int(re.match(r"calls: ([\d,]+)", calls).group(1).replace(",", "")) > 0, name
        assert any(re.match(r"cost: ~?US\$[\d.,]+", line) for line in lines), name
        assert any(re.match(r"time: ~[\d.]+ (s|min|h|days)", line) for line in lines), name
    assert any("prices of 2025-06-17" in line for line in models["gemini gemini-2.5-flash"])
    assert "cost: US$0 (runs on your machine; no price per token)" in models["ollama llama3.1:8b"]
    assert "04_llm_trials__census-codes__gemini" in out  # the notebook runs are listed above the calls


def test_one_provider_is_planned_and_run_at_a_time(nothing_called: None,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", "configs/paper.yaml", "--provider", "gemini", "--plan"]) == 0
    assert list(blocks(capsys.readouterr().out)) == ["gemini gemini-2.5-flash"]
    # a real run of several providers is refused before any notebook runs or anything is called
    assert main(["run", "--config", "configs/paper.yaml"]) == 2
    assert "--provider ollama, --provider gemini, --provider openai" in capsys.readouterr().err
    assert main(["run", "--config", "configs/paper.yaml", "--provider", "local", "--plan"]) == 2
    assert "has no trial model of provider 'local'" in capsys.readouterr().err


def test_trials_run_plan_prints_the_same_calls(nothing_called: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", "configs/paper.yaml", "--provider", "openai", "--plan"]) == 0
    whole = blocks(capsys.readouterr().out)
    assert main(["trials", "run", "--config", "configs/paper.yaml", "--provider", "openai", "--plan"]) == 0
    assert blocks(capsys.readouterr().out) == whole
    # without --provider the plan covers every model, and a run is refused after printing it
    assert main(["trials", "run", "--config", "configs/paper.yaml", "--plan"]) == 0
    assert len(blocks(capsys.readouterr().out)) == 3
    assert main(["trials", "run", "--config", "configs/paper.yaml"]) == 2
    assert "a run calls one provider" in capsys.readouterr().err


def test_a_real_run_prints_the_plan_before_it_starts(nothing_called: None, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    started: list[str] = []

    def run_pipeline(config, **kwargs):  # noqa: ANN001, ANN003, ANN202 - stands in for the notebooks
        started.append(capsys.readouterr().out)  # what was printed before the first notebook
        return []

    monkeypatch.setattr(runs, "run_pipeline", run_pipeline)
    assert main(["run", "--config", "configs/paper.yaml", "--provider", "gemini", "--no-html"]) == 0
    (before,) = started
    assert list(blocks(before)) == ["gemini gemini-2.5-flash"] and "cost: ~US$" in before
