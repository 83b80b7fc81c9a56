"""Label scores of the ``openai``, ``ollama`` and ``gemini`` providers over real HTTP against the loopback servers.

Each service's log-probability shape is sent as the service sends it (OpenAI's ``choices[0].logprobs``,
Ollama's top-level ``logprobs``, Gemini's ``logprobsResult``); the real client libraries parse it. What is
scored by these providers is the first-token mass of each label (see ``label_positions``).
"""

from __future__ import annotations

import math

import pytest

from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA
from llmdisc.discrimination.providers.base import ANSWER_PREFIX, GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.errors import ProviderConfigError, RateLimited
from llmdisc.discrimination.providers.gemini import GeminiProvider
from llmdisc.discrimination.providers.label_positions import SCORED_FIRST_TOKEN_MASS
from llmdisc.discrimination.providers.ollama import OllamaProvider
from llmdisc.discrimination.providers.openai_compat import OpenAICompatibleProvider
from support import Fault, GeminiWireServer, OllamaWireServer, OpenAIWireServer, scripted_label_answer

REQUEST = PromptRequest(system="You judge tables.", user="| a |\n|---|\n| 1 |", json_schema=ANSWER_JSON_SCHEMA)
CONFIG = GenerateConfig(temperature=0.0, seed=3, max_tokens=300)
GEMINI_KEY = "AIza-test-secret-0042"


def _openai(server, **options):
    return OpenAICompatibleProvider("llama-3.1-8b-instant", base_url=server.base_url, timeout_s=2.0, **options)


def _ollama(server):
    return OllamaProvider("llama3.1:8b", host=server.base_url, timeout_s=2.0)


def _gemini(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    return GeminiProvider("gemini-2.5-flash", base_url=server.base_url, timeout_s=2.0)


SERVERS = {
    "openai": (lambda responder, **kw: OpenAIWireServer(responder=responder, **kw), _openai),
    "ollama": (lambda responder, **kw: OllamaWireServer(responder=responder, **kw), _ollama),
    "gemini": (lambda responder, **kw: GeminiWireServer(responder=responder, api_key=GEMINI_KEY, **kw), None),
}


def _provider(name, server, monkeypatch):
    if name == "gemini":
        return _gemini(server, monkeypatch)
    return SERVERS[name][1](server)


@pytest.mark.parametrize("name", ["openai", "ollama", "gemini"])
async def test_first_token_mass_of_each_label_from_the_services_shape(name, monkeypatch):
    answer = scripted_label_answer({"REAL": -0.9, "SYNTHETIC": -1.6}, extra=(("S", -2.5), ("The", -4.0)))
    with SERVERS[name][0](lambda chat: answer) as server:
        provider = _provider(name, server, monkeypatch)
        await provider.check_label_scores()
        scores = await provider.label_scores(REQUEST, CONFIG)
        sent = server.generation_requests[-1].body
        await provider.aclose()

    assert scores.invalid_reason is None
    assert scores.logprobs["REAL"] == pytest.approx(-0.9)
    # "SY" and "S" both begin SYNTHETIC: their probabilities add up.
    assert scores.logprobs["SYNTHETIC"] == pytest.approx(math.log(math.exp(-1.6) + math.exp(-2.5)))
    assert scores.label_mass == pytest.approx(math.exp(-0.9) + math.exp(-1.6) + math.exp(-2.5))
    assert scores.n_tokens == {"REAL": 1, "SYNTHETIC": 1}
    assert scores.metadata["scored"] == SCORED_FIRST_TOKEN_MASS and scores.metadata["label_position"] == 4
    if name == "openai":
        assert sent["logprobs"] is True and sent["top_logprobs"] == 20 and sent["max_tokens"] == 12
        assert sent["response_format"]["type"] == "json_schema"
    elif name == "ollama":
        assert sent["logprobs"] is True and sent["top_logprobs"] == 20 and sent["options"]["num_predict"] == 12
        assert sent["format"] == ANSWER_JSON_SCHEMA
    else:
        config = sent["generationConfig"]
        assert config["responseLogprobs"] is True and config["logprobs"] == 20


@pytest.mark.parametrize("name", ["openai", "ollama", "gemini"])
async def test_a_label_missing_from_the_top_k_is_invalid_with_the_reason_never_zero(name, monkeypatch):
    answer = scripted_label_answer({"REAL": -0.1, "SYNTHETIC": -6.0}, omit="SYNTHETIC")
    with SERVERS[name][0](lambda chat: answer) as server:
        provider = _provider(name, server, monkeypatch)
        scores = await provider.label_scores(REQUEST, CONFIG)
        await provider.aclose()

    assert "label SYNTHETIC is not among the top-20 tokens at the answer position" in scores.invalid_reason
    assert math.isnan(scores.logprobs["SYNTHETIC"]) and math.isnan(scores.logprobs["REAL"])
    assert scores.label_mass == pytest.approx(math.exp(-0.1))  # what was seen stays visible


@pytest.mark.parametrize("name", ["openai", "ollama", "gemini"])
async def test_empty_top_k_lists_are_invalid(name, monkeypatch):
    answer = scripted_label_answer(empty_top=True)
    with SERVERS[name][0](lambda chat: answer) as server:
        provider = _provider(name, server, monkeypatch)
        scores = await provider.label_scores(REQUEST, CONFIG)
        await provider.aclose()

    assert "top-k list at the answer position 4 is empty" in scores.invalid_reason
    assert all(math.isnan(v) for v in scores.logprobs.values())


@pytest.mark.parametrize("name", ["openai", "ollama", "gemini"])
async def test_a_quote_merged_with_the_label_is_read_through(name, monkeypatch):
    answer = scripted_label_answer({"REAL": -2.0, "SYNTHETIC": -0.3}, merge_quote=True)
    with SERVERS[name][0](lambda chat: answer) as server:
        provider = _provider(name, server, monkeypatch)
        scores = await provider.label_scores(REQUEST, CONFIG)
        await provider.aclose()

    assert scores.invalid_reason is None and scores.metadata["overlap"] == ' "'
    assert scores.logprobs == pytest.approx({"REAL": -2.0, "SYNTHETIC": -0.3})


@pytest.mark.parametrize("name", ["openai", "ollama"])
async def test_a_nan_log_probability_is_invalid(name, monkeypatch):
    answer = scripted_label_answer({"REAL": -0.2, "SYNTHETIC": -1.0}, nan=True)
    with SERVERS[name][0](lambda chat: answer) as server:
        scores = await _provider(name, server, monkeypatch).label_scores(REQUEST, CONFIG)

    assert scores.invalid_reason.startswith("non-finite log-probability at the answer position")
    assert all(math.isnan(v) for v in scores.logprobs.values())


async def test_an_answer_that_does_not_open_with_the_verdict_is_invalid():
    with OpenAIWireServer(responder=lambda chat: '{"confidence": 70, "verdict": "REAL"}') as server:
        scores = await _openai(server).label_scores(REQUEST, CONFIG)
    assert "the answer does not open with '{\"verdict\": \"'" in scores.invalid_reason


async def test_openai_prefill_continues_the_answer_prefix_as_vllm_does():
    answer = scripted_label_answer({"REAL": -1.5, "SYNTHETIC": -0.25})
    with OpenAIWireServer(responder=lambda chat: answer) as server:
        provider = _openai(server, label_prefill=True)
        scores = await provider.label_scores(REQUEST, CONFIG)
        sent = server.generation_requests[-1].body

    assert sent["messages"][-1] == {"role": "assistant", "content": ANSWER_PREFIX}
    assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
    assert "response_format" not in sent and sent["max_tokens"] == 2
    assert scores.metadata["prefilled"] is True and scores.metadata["label_position"] == 0
    assert scores.logprobs == pytest.approx({"REAL": -1.5, "SYNTHETIC": -0.25})


async def test_groq_refuses_logprobs_at_check_time_with_the_fix():
    with OpenAIWireServer(reject_logprobs=True) as server:
        provider = _openai(server)
        with pytest.raises(ProviderConfigError, match=r"rejects logprobs \(HTTP 400: `logprobs` is not supported "
                                                       r"with this model\).*fix: use scoring: verdict"):
            await provider.check_label_scores()
        assert server.generation_requests[-1].body["logprobs"] is True


async def test_a_server_that_ignores_logprobs_fails_at_check_time():
    with OpenAIWireServer(ignore_logprobs=True) as server:
        with pytest.raises(ProviderConfigError, match=r"returned no token log-probabilities \(logprobs: null\).*"
                                                      "fix: use scoring: verdict"):
            await _openai(server).check_label_scores()


async def test_ollama_without_logprobs_fails_at_check_time():
    with OllamaWireServer(supports_logprobs=False) as server:
        with pytest.raises(ProviderConfigError, match="returned no token log-probabilities for 'llama3.1:8b'.*"
                                                      "fix: upgrade Ollama.*scoring: verdict"):
            await _ollama(server).check_label_scores()


async def test_gemini_model_without_logprobs_fails_at_check_time(monkeypatch):
    with GeminiWireServer(api_key=GEMINI_KEY, logprobs_enabled=False) as server:
        with pytest.raises(ProviderConfigError, match="gemini model 'gemini-2.5-flash' returns no token "
                                                      "log-probabilities .*Logprobs is not enabled for "
                                                      "models/gemini-2.5-flash.*fix: use scoring: verdict"):
            await _gemini(server, monkeypatch).check_label_scores()


async def test_failures_of_the_call_raise_the_provider_errors_for_the_retry_loop():
    with OpenAIWireServer(faults=(Fault.rate_limit(retry_after=3),)) as server:
        with pytest.raises(RateLimited) as caught:
            await _openai(server).label_scores(REQUEST, CONFIG)
    assert caught.value.retry_after == 3
