"""The ``ollama`` provider against the loopback Ollama wire server (real ``ollama`` client, real HTTP)."""

from __future__ import annotations

import json

import pytest

from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA
from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.errors import (
    ModelNotFoundError,
    ProviderRequestError,
    ProviderUnreachableError,
    RateLimited,
    TransientProviderError,
)
from llmdisc.discrimination.providers.ollama import OllamaProvider
from support import VALID_VERDICT, Fault, OllamaWireServer, ollama_digest

MODEL = "llama3.1:8b"
REQUEST = PromptRequest(system="You judge tables.", user="| a |\n|---|\n| 1 |", json_schema=ANSWER_JSON_SCHEMA)
CONFIG = GenerateConfig(temperature=0.0, seed=77, max_tokens=256)


@pytest.fixture()
def server():
    with OllamaWireServer(models=[MODEL, "qwen2.5:7b"]) as wire:
        yield wire


@pytest.fixture()
def provider(server):
    return OllamaProvider(MODEL, host=server.base_url, num_ctx=8192, timeout_s=1.0)


async def test_valid_answer_digest_and_the_request_the_client_sent(server, provider):
    await provider.check()
    completion = await provider.complete(REQUEST, CONFIG)

    assert json.loads(completion.text) == json.loads(VALID_VERDICT)
    assert completion.model_version == ollama_digest(MODEL) == provider.model_digest()
    assert completion.prompt_tokens and completion.completion_tokens
    (sent,) = server.generation_requests
    assert sent.path == "/api/chat" and sent.body["model"] == MODEL and sent.body["stream"] is False
    assert sent.body["format"] == ANSWER_JSON_SCHEMA
    assert sent.body["options"] == {"temperature": 0.0, "seed": 77, "num_predict": 256, "num_ctx": 8192}
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert "authorization" not in sent.headers


async def test_first_call_reads_the_digest_without_check(server, provider):
    completion = await provider.complete(REQUEST, CONFIG)
    assert completion.model_version == ollama_digest(MODEL)
    assert [r.path for r in server.requests] == ["/api/tags", "/api/chat"]


async def test_host_from_environment(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.base_url.removeprefix("http://"))
    provider = OllamaProvider(MODEL)
    assert provider.base_url == server.base_url and provider.is_remote is False
    await provider.check()


async def test_missing_model_lists_the_servers_models(server):
    provider = OllamaProvider("llama3.2:1b", host=server.base_url)
    with pytest.raises(ModelNotFoundError, match=r"has no model 'llama3.2:1b'; it has: llama3.1:8b, qwen2.5:7b; "
                                                 r"fix: `ollama pull llama3.2:1b`"):
        await provider.check()
    with pytest.raises(ModelNotFoundError, match="it has: llama3.1:8b, qwen2.5:7b"):
        await provider.complete(REQUEST, CONFIG)
    assert server.generation_requests == []


async def test_rate_limit_carries_retry_after(server, provider):
    await provider.check()
    server.add_faults(Fault.rate_limit(retry_after=12))
    with pytest.raises(RateLimited, match="HTTP 429") as caught:
        await provider.complete(REQUEST, CONFIG)
    assert caught.value.retry_after == 12.0


async def test_server_error_is_transient(server, provider):
    server.add_faults(Fault.server_error(500, "llama runner process has terminated"))
    with pytest.raises(TransientProviderError, match="HTTP 500 \\(llama runner process has terminated\\)"):
        await provider.complete(REQUEST, CONFIG)


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


async def test_bad_request_is_not_retryable(server, provider):
    server.add_faults(Fault.http_error(400, "invalid format"))
    with pytest.raises(ProviderRequestError, match="HTTP 400: invalid format"):
        await provider.complete(REQUEST, CONFIG)


async def test_unreachable_server_names_the_fix(server):
    url = server.base_url
    server.stop()
    with pytest.raises(ProviderUnreachableError, match=r"no ollama server answers at .*is `ollama serve` running"):
        await OllamaProvider(MODEL, host=url, timeout_s=1.0).check()
