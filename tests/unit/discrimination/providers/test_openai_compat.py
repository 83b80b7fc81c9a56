"""The ``openai`` provider against the loopback OpenAI wire server (real ``openai`` client, real HTTP)."""

from __future__ import annotations

import json

import pytest

from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA
from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.errors import (
    ModelNotFoundError,
    ProviderAuthError,
    ProviderRequestError,
    ProviderUnreachableError,
    RateLimited,
    TransientProviderError,
)
from llmdisc.discrimination.providers.openai_compat import OpenAICompatibleProvider
from support import VALID_VERDICT, Fault, OpenAIWireServer

MODEL = "llama-3.1-8b-instant"
REQUEST = PromptRequest(system="You judge tables.", user="| a |\n|---|\n| 1 |", json_schema=ANSWER_JSON_SCHEMA)
CONFIG = GenerateConfig(temperature=0.0, seed=1234, max_tokens=300)


@pytest.fixture()
def server():
    with OpenAIWireServer(models=[MODEL, "other-model"], api_key="sk-test-secret-0001") as wire:
        yield wire


@pytest.fixture()
def provider(server, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "sk-test-secret-0001")
    return OpenAICompatibleProvider(MODEL, base_url=server.base_url, api_key_env="GROQ_API_KEY", timeout_s=1.0)


async def test_valid_answer_and_the_request_the_sdk_sent(server, provider):
    completion = await provider.complete(REQUEST, CONFIG)

    assert json.loads(completion.text) == json.loads(VALID_VERDICT)
    assert completion.model == MODEL and completion.model_version == MODEL
    assert completion.prompt_tokens and completion.completion_tokens
    assert completion.metadata["response_format"] == "json_schema"
    (sent,) = server.generation_requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-secret-0001"
    assert sent.body["temperature"] == 0 and sent.body["seed"] == 1234 and sent.body["max_tokens"] == 300
    assert sent.body["response_format"]["json_schema"]["schema"] == ANSWER_JSON_SCHEMA
    assert sent.body["response_format"]["json_schema"]["strict"] is False
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]


async def test_reported_model_is_recorded(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with OpenAIWireServer(models=[MODEL], reported_model="llama-3.1-8b-instant-2026-01") as wire:
        completion = await OpenAICompatibleProvider(MODEL, base_url=wire.base_url).complete(REQUEST, CONFIG)
    assert completion.model == MODEL and completion.model_version == "llama-3.1-8b-instant-2026-01"


async def test_rate_limit_carries_retry_after(server, provider):
    server.add_faults(Fault.rate_limit(retry_after=7))
    with pytest.raises(RateLimited, match=r"HTTP 429.*wait 7 s") as caught:
        await provider.complete(REQUEST, CONFIG)
    assert caught.value.retry_after == 7.0
    assert len(server.generation_requests) == 1  # no retry inside the provider


async def test_server_error_is_transient(server, provider):
    server.add_faults(Fault.server_error(503))
    with pytest.raises(TransientProviderError, match="HTTP 503"):
        await provider.complete(REQUEST, CONFIG)
    assert len(server.generation_requests) == 1


async def test_slow_response_times_out_as_transient(server, provider):
    server.add_faults(Fault.slow(3.0))
    with pytest.raises(TransientProviderError, match="timed out after 1 s"):
        await provider.complete(REQUEST, CONFIG)


async def test_dropped_connection_is_transient(server, provider):
    server.add_faults(Fault.drop())
    with pytest.raises(TransientProviderError, match="dropped the connection"):
        await provider.complete(REQUEST, CONFIG)


async def test_malformed_body_is_transient(server, provider):
    server.add_faults(Fault.malformed())
    with pytest.raises(TransientProviderError, match="malformed response body"):
        await provider.complete(REQUEST, CONFIG)


async def test_fault_then_recovery(server, provider):
    server.add_faults(Fault.server_error())
    with pytest.raises(TransientProviderError):
        await provider.complete(REQUEST, CONFIG)
    assert (await provider.complete(REQUEST, CONFIG)).text == VALID_VERDICT


async def test_missing_key_is_named_before_any_request(server, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    remote = OpenAICompatibleProvider(MODEL, base_url="https://api.groq.com/openai/v1", api_key_env="GROQ_API_KEY")
    with pytest.raises(ProviderAuthError, match=r"\$GROQ_API_KEY is not set; fix: export GROQ_API_KEY="):
        await remote.check()
    assert server.requests == []


async def test_rejected_key_is_auth_error_and_never_echoed(server, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "sk-wrong-secret-9999")
    provider = OpenAICompatibleProvider(MODEL, base_url=server.base_url, api_key_env="GROQ_API_KEY")
    with pytest.raises(ProviderAuthError, match=r"HTTP 401.*\$GROQ_API_KEY") as caught:
        await provider.complete(REQUEST, CONFIG)
    assert "sk-wrong-secret-9999" not in str(caught.value)


async def test_key_echoed_by_the_server_is_redacted(server, provider):
    server.add_faults(Fault.http_error(401, "Incorrect API key provided: sk-test-secret-0001"))
    with pytest.raises(ProviderAuthError) as caught:
        await provider.complete(REQUEST, CONFIG)
    assert "sk-test-secret-0001" not in str(caught.value) and "***" in str(caught.value)


async def test_bad_request_is_not_retryable(server, provider):
    server.add_faults(Fault.http_error(400, "max_tokens too large"))
    with pytest.raises(ProviderRequestError, match="HTTP 400: max_tokens too large"):
        await provider.complete(REQUEST, CONFIG)


async def test_unreachable_server(server, provider):
    url = server.base_url
    server.stop()
    stranded = OpenAICompatibleProvider(MODEL, base_url=url, api_key_env="GROQ_API_KEY", timeout_s=1.0)
    with pytest.raises(ProviderUnreachableError, match="no openai server answers at http://127.0.0.1"):
        await stranded.check()


async def test_check_lists_models_when_missing(server, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "sk-test-secret-0001")
    provider = OpenAICompatibleProvider("llama-9b", base_url=server.base_url, api_key_env="GROQ_API_KEY")
    with pytest.raises(ModelNotFoundError, match="no model 'llama-9b'; it lists: llama-3.1-8b-instant, other-model"):
        await provider.check()


async def test_check_passes_for_a_listed_model(server, provider):
    await provider.check()
    assert server.requests[-1].path == "/v1/models"


async def test_json_schema_rejected_falls_back_to_json_object_once(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # loopback: no key needed
    with OpenAIWireServer(models=[MODEL], reject_json_schema=True) as wire:
        provider = OpenAICompatibleProvider(MODEL, base_url=wire.base_url)
        first = await provider.complete(REQUEST, CONFIG)
        second = await provider.complete(REQUEST, CONFIG)
    sent = [r.body["response_format"]["type"] for r in wire.generation_requests]
    assert sent == ["json_schema", "json_object", "json_object"]
    assert first.metadata["response_format"] == second.metadata["response_format"] == "json_object"


async def test_forced_json_schema_does_not_fall_back(monkeypatch):
    with OpenAIWireServer(models=[MODEL], reject_json_schema=True) as wire:
        provider = OpenAICompatibleProvider(MODEL, base_url=wire.base_url, response_format="json_schema")
        with pytest.raises(ProviderRequestError, match="json_schema"):
            await provider.complete(REQUEST, CONFIG)


def test_loopback_is_local_and_remote_needs_allow(monkeypatch):
    assert OpenAICompatibleProvider(MODEL, base_url="http://127.0.0.1:8080/v1").is_remote is False
    assert OpenAICompatibleProvider(MODEL, base_url="https://api.groq.com/openai/v1").is_remote is True
