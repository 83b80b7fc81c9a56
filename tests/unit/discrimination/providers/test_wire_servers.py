"""The loopback wire servers themselves: request log, faults, latency, concurrency (plain httpx clients)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from support import Fault, GeminiWireServer, OllamaWireServer, OpenAIWireServer, WireAnswer, WireChat

CHAT = {"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        "temperature": 0, "seed": 3, "max_tokens": 9,
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}}


def test_context_manager_binds_loopback_and_logs_requests():
    with OpenAIWireServer(models=["m"]) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        reply = httpx.post(f"{server.base_url}/chat/completions", json=CHAT).json()
        listing = httpx.get(f"{server.base_url}/models").json()
    assert reply["object"] == "chat.completion" and reply["usage"]["total_tokens"] > 0
    assert [m["id"] for m in listing["data"]] == ["m"]
    assert [r.path for r in server.requests] == ["/v1/chat/completions", "/v1/models"]
    assert len(server.generation_requests) == 1 and server.generation_requests[0].body["seed"] == 3
    with pytest.raises(RuntimeError, match="not started"):
        server.base_url


def test_responder_sees_the_protocol_neutral_request():
    seen: list[WireChat] = []

    def respond(chat: WireChat) -> WireAnswer:
        seen.append(chat)
        return WireAnswer("answer", prompt_tokens=11, completion_tokens=2, model_version="v9")

    with OpenAIWireServer(models=["m"], responder=respond) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json=CHAT).json()
    assert seen == [WireChat(model="m", system="S", user="U", json_schema={"type": "object"}, temperature=0, seed=3,
                             max_tokens=9)]
    assert reply["choices"][0]["message"]["content"] == "answer" and reply["model"] == "v9"
    assert reply["usage"] == {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}


def test_faults_are_consumed_in_order():
    with OpenAIWireServer(models=["m"], faults=(Fault.rate_limit(4), Fault.server_error(502))) as server:
        url = f"{server.base_url}/chat/completions"
        first, second, third = (httpx.post(url, json=CHAT) for _ in range(3))
    assert first.status_code == 429 and first.headers["retry-after"] == "4"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert second.status_code == 502 and third.status_code == 200


def test_drop_and_malformed():
    with OllamaWireServer(models=["m"], faults=(Fault.drop(), Fault.malformed())) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": False}
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{server.base_url}/api/chat", json=body)
        broken = httpx.post(f"{server.base_url}/api/chat", json=body)
    assert broken.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        broken.json()


def test_gemini_rate_limit_has_retry_info_and_bad_key_is_400():
    with GeminiWireServer(models=["g"], api_key="k", faults=(Fault.rate_limit(9),)) as server:
        url = f"{server.base_url}/v1beta/models/g:generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
        limited = httpx.post(url, json=body, headers={"x-goog-api-key": "k"})
        wrong_key = httpx.post(url, json=body, headers={"x-goog-api-key": "nope"})
    assert limited.status_code == 429 and limited.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert limited.json()["error"]["details"][0]["retryDelay"] == "9s"
    assert wrong_key.status_code == 400 and "API_KEY_INVALID" in wrong_key.text


def test_latency_applies_per_request_and_requests_run_concurrently():
    # A barrier of 8 only opens if all 8 requests are inside the server at once (serialised handling
    # would break it after its timeout), so concurrency is shown without a timed assertion.
    barrier = threading.Barrier(8, timeout=20)

    def respond(chat: WireChat) -> str:
        barrier.wait()
        return "ok"

    with OpenAIWireServer(models=["m"], latency_s=0.3, responder=respond) as server:
        url = f"{server.base_url}/chat/completions"
        start = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda _: httpx.post(url, json=CHAT, timeout=30), range(8)))
        elapsed = time.perf_counter() - start
    assert [r.status_code for r in replies] == [200] * 8
    assert elapsed >= 0.3  # the latency is a floor: every answer waited for it


def test_each_server_sends_log_probabilities_in_its_services_shape():
    from support import scripted_label_answer

    answer = scripted_label_answer({"REAL": -0.5, "SYNTHETIC": -1.5})
    with OpenAIWireServer(models=["m"], responder=lambda chat: answer) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions",
                           json={**CHAT, "logprobs": True, "top_logprobs": 2}).json()
        too_many = httpx.post(f"{server.base_url}/chat/completions", json={**CHAT, "logprobs": True,
                                                                            "top_logprobs": 21})
    content = reply["choices"][0]["logprobs"]["content"]
    assert set(content[4]) == {"token", "logprob", "bytes", "top_logprobs"} and content[4]["token"] == "RE"
    assert [t["token"] for t in content[4]["top_logprobs"]] == ["RE", "SY"]  # cut to the 2 asked for
    assert len(content) == 9 and reply["choices"][0]["finish_reason"] == "length"  # max_tokens 9
    assert too_many.status_code == 400 and "top_logprobs" in too_many.json()["error"]["message"]

    with OllamaWireServer(models=["m"], responder=lambda chat: answer) as server:
        body = {"model": "m", "messages": CHAT["messages"], "stream": False, "logprobs": True, "top_logprobs": 3}
        reply = httpx.post(f"{server.base_url}/api/chat", json=body).json()
    assert reply["logprobs"][4]["token"] == "RE" and len(reply["logprobs"][4]["top_logprobs"]) == 3

    with GeminiWireServer(models=["m"], responder=lambda chat: answer) as server:
        body = {"contents": [{"parts": [{"text": "U"}]}],
                "generationConfig": {"responseLogprobs": True, "logprobs": 2}}
        reply = httpx.post(f"{server.base_url}/v1beta/models/m:generateContent", json=body).json()
    result = reply["candidates"][0]["logprobsResult"]
    assert set(result) == {"topCandidates", "chosenCandidates", "logProbabilitySum"}
    assert set(result["chosenCandidates"][4]) == {"token", "tokenId", "logProbability"}
    assert [c["token"] for c in result["topCandidates"][4]["candidates"]] == ["RE", "SY"]
    assert "avgLogprobs" in reply["candidates"][0]


def test_refusals_of_log_probabilities_are_the_services_own():
    with OpenAIWireServer(models=["m"], reject_logprobs=True) as server:
        refused = httpx.post(f"{server.base_url}/chat/completions", json={**CHAT, "logprobs": True})
        plain = httpx.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert refused.status_code == 400 and plain.status_code == 200
    assert refused.json()["error"]["message"] == "`logprobs` is not supported with this model"
    with GeminiWireServer(models=["m"], logprobs_enabled=False) as server:
        refused = httpx.post(f"{server.base_url}/v1beta/models/m:generateContent",
                             json={"contents": [{"parts": [{"text": "U"}]}],
                                   "generationConfig": {"responseLogprobs": True, "logprobs": 5}})
    assert refused.status_code == 400
    assert refused.json()["error"] == {"code": 400, "message": "Logprobs is not enabled for models/m",
                                       "status": "INVALID_ARGUMENT"}
