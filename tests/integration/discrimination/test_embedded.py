"""The embedded model for real: schema-valid verdicts, determinism, and the real Ollama client in front of it.

Each generation costs seconds to a minute (SmolLM2-135M on a shared CPU), so the file makes four short ones.
"""

from __future__ import annotations

import os

import httpx
import pytest

from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA, parse_answer
from llmdisc.discrimination.prompts import system_prompt
from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.embedded import EmbeddedProvider
from llmdisc.discrimination.providers.errors import ProviderRequestError
from llmdisc.discrimination.providers.ollama import OllamaProvider
from support import OllamaWireServer, answer_from_provider

pytestmark = pytest.mark.slow

TABLE = """| age | workclass | education | hours-per-week | income |
|---:|:---|:---|---:|:---|
| 39 | State-gov | Bachelors | 40 | <=50K |
| 50 | Self-emp-not-inc | Bachelors | 13 | <=50K |
| 38 | Private | HS-grad | 40 | <=50K |
| 53 | Private | 11th | 40 | <=50K |"""
REQUEST = PromptRequest(system=system_prompt("neutral"), user=f"Is this table REAL or SYNTHETIC?\n\n{TABLE}", json_schema=ANSWER_JSON_SCHEMA)
CONFIG = GenerateConfig(temperature=0.0, seed=2026, max_tokens=400)


@pytest.fixture(scope="module")
def provider() -> EmbeddedProvider:
    # One thread unless told otherwise: with the two cores shared, llama.cpp's spinning threads made two
    # threads ~10x slower at generation than one (measured; `llmdisc bench embedded --threads 1 2`).
    return EmbeddedProvider(threads=int(os.environ.get("LLMDISC_LLM_THREADS", "1")), n_ctx=4096)


async def test_real_answer_is_schema_valid(provider):
    await provider.check()
    completion = await provider.complete(REQUEST, CONFIG)

    parsed = parse_answer(completion.text)
    assert parsed.valid, (parsed.invalid_reason, completion.text)
    assert parsed.verdict in ("REAL", "SYNTHETIC") and 0 <= parsed.confidence <= 100
    assert completion.model_version == provider.model_digest()
    assert completion.prompt_tokens > 200 and completion.completion_tokens > 10


def test_the_listener_xllamacpp_opens_is_loopback_and_locked(provider):
    # xllamacpp always starts llama.cpp's HTTP server beside the in-process API; nobody else may use it.
    address = provider.loaded().server.listening_address
    assert address.startswith("http://127.0.0.1:")
    reply = httpx.post(f"{address}/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 401


async def test_rerun_is_byte_identical(provider):
    first = await provider.complete(REQUEST, CONFIG)
    second = await provider.complete(REQUEST, CONFIG)
    assert second.text == first.text
    assert first.metadata["cached_prompt_tokens"] == 0  # prompt cache off by default: nothing reused


async def test_real_ollama_client_through_the_wire_server_fronting_the_model(provider):
    with OllamaWireServer(models=["smollm2:135m"], responder=answer_from_provider(provider)) as server:
        ollama = OllamaProvider("smollm2:135m", host=server.base_url, timeout_s=600)
        await ollama.check()
        completion = await ollama.complete(REQUEST, CONFIG)
        await ollama.aclose()
    assert parse_answer(completion.text).valid, completion.text
    sent = server.generation_requests[0].body
    assert sent["format"] == ANSWER_JSON_SCHEMA and sent["options"]["seed"] == 2026


async def test_prompt_longer_than_the_context_is_a_named_error():
    small = EmbeddedProvider(threads=1, n_ctx=256)
    with pytest.raises(ProviderRequestError, match=r"does not fit the local model's context: request \(\d+ tokens\) "
                                                   r"exceeds the available context size \(256 tokens\).*fix: pass "
                                                   r"n_ctx larger than 256"):
        await small.complete(REQUEST, CONFIG)
