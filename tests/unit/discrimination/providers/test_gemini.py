"""The ``gemini`` provider against the loopback Gemini wire server (real ``google-genai`` client, real HTTP)."""

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
from llmdisc.discrimination.providers.gemini import THINKING_HEADROOM_TOKENS, GeminiProvider
from support import VALID_VERDICT, Fault, GeminiWireServer

MODEL = "gemini-2.5-flash"
KEY = "AIza-test-secret-0042"
REQUEST = PromptRequest(system="You judge tables.", user="| a |\n|---|\n| 1 |", json_schema=ANSWER_JSON_SCHEMA)
CONFIG = GenerateConfig(temperature=0.0, seed=5, max_tokens=400)


@pytest.fixture()
def server():
    with GeminiWireServer(models=[MODEL, "gemini-2.5-pro"], api_key=KEY, model_version="gemini-2.5-flash-001") as wire:
        yield wire


@pytest.fixture()
def provider(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    return GeminiProvider(MODEL, base_url=server.base_url, timeout_s=1.0)


async def test_valid_answer_version_and_the_request_the_sdk_sent(server, provider):
    completion = await provider.complete(REQUEST, CONFIG)

    assert json.loads(completion.text) == json.loads(VALID_VERDICT)
    assert completion.model == MODEL and completion.model_version == "gemini-2.5-flash-001"
    assert completion.metadata["finish_reason"] == "STOP"
    (sent,) = server.generation_requests
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    generation = sent.body["generationConfig"]
    # The answer's 400 tokens plus the thinking headroom: 2.5 models count thinking against this cap.
    assert generation["temperature"] == 0 and generation["seed"] == 5
    assert generation["maxOutputTokens"] == 400 + THINKING_HEADROOM_TOKENS
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseJsonSchema"] == ANSWER_JSON_SCHEMA
    assert sent.body["systemInstruction"]["parts"][0]["text"] == "You judge tables."
    assert sent.body["contents"][-1]["parts"][0]["text"] == REQUEST.user


async def test_google_api_key_is_accepted_too(server, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    await GeminiProvider(MODEL, base_url=server.base_url).check()


async def test_missing_key_names_both_variables(server, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ProviderAuthError, match=r"\$GEMINI_API_KEY or \$GOOGLE_API_KEY is not set; fix: export "
                                                r"GEMINI_API_KEY="):
        await GeminiProvider(MODEL, base_url=server.base_url).check()
    assert server.requests == []


async def test_invalid_key_is_auth_error_without_the_key(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-wrong-secret-7777")
    with pytest.raises(ProviderAuthError, match="API_KEY_INVALID") as caught:
        await GeminiProvider(MODEL, base_url=server.base_url).complete(REQUEST, CONFIG)
    assert "AIza-wrong-secret-7777" not in str(caught.value)


async def test_rate_limit_reads_retry_info(server, provider):
    server.add_faults(Fault.rate_limit(retry_after=21))
    with pytest.raises(RateLimited, match="HTTP 429") as caught:
        await provider.complete(REQUEST, CONFIG)
    assert caught.value.retry_after == 21.0
    assert len(server.generation_requests) == 1  # no retry, and no other model tried


async def test_server_error_is_transient_and_no_other_model_is_called(server, provider):
    server.add_faults(Fault.server_error(503, "The model is overloaded."))
    with pytest.raises(TransientProviderError, match="HTTP 503"):
        await provider.complete(REQUEST, CONFIG)
    assert {r.path for r in server.generation_requests} == {f"/v1beta/models/{MODEL}:generateContent"}


async def test_slow_response_times_out_as_transient(server, provider):
    server.add_faults(Fault.slow(3.0))
    with pytest.raises(TransientProviderError, match="timed out"):
        await provider.complete(REQUEST, CONFIG)


async def test_dropped_connection_is_transient(server, provider):
    server.add_faults(Fault.drop())
    with pytest.raises(TransientProviderError, match="dropped the connection"):
        await provider.complete(REQUEST, CONFIG)


async def test_malformed_body_is_transient(server, provider):
    server.add_faults(Fault.malformed())
    with pytest.raises(TransientProviderError, match="malformed response body"):
        await provider.complete(REQUEST, CONFIG)


async def test_bad_request_is_not_retryable(server, provider):
    server.add_faults(Fault.http_error(400, "Invalid JSON payload"))
    with pytest.raises(ProviderRequestError, match="HTTP 400: Invalid JSON payload"):
        await provider.complete(REQUEST, CONFIG)


async def test_permission_denied_is_auth_error(server, provider):
    server.add_faults(Fault.http_error(403, "Permission denied"))
    with pytest.raises(ProviderAuthError, match="HTTP 403"):
        await provider.complete(REQUEST, CONFIG)


async def test_missing_model_lists_available_models(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    provider = GeminiProvider("gemini-1.0-ultra", base_url=server.base_url)
    with pytest.raises(ModelNotFoundError, match="no model 'gemini-1.0-ultra' .*available: gemini-2.5-flash, "
                                                 "gemini-2.5-pro; fix: .*no other model is ever substituted"):
        await provider.check()
    with pytest.raises(ModelNotFoundError, match="404"):
        await provider.complete(REQUEST, CONFIG)


async def test_unreachable_server(server, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    url = server.base_url
    server.stop()
    with pytest.raises(ProviderUnreachableError, match="no gemini server answers at http://127.0.0.1"):
        await GeminiProvider(MODEL, base_url=url, timeout_s=1.0).check()
