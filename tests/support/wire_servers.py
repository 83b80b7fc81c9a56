"""Loopback servers speaking the real wire protocols of OpenAI-compatible services, Ollama and Gemini.

Each answers the requests the official client libraries send (paths, headers, JSON bodies as the
services document them), so tests exercise the real ``openai``, ``ollama`` and ``google-genai`` clients
over real HTTP on 127.0.0.1 — no client method is mocked. Faults and the request log come from
:class:`~support.wire_base.WireServer`.

Example::

    with OpenAIWireServer(latency_s=0.5, models=["llama-3.1-8b-instant"]) as server:
        provider = get_provider("openai", base_url=server.base_url)
        ...
        assert server.generation_requests[0].body["temperature"] == 0
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.wire_base import RecordedRequest, WireAnswer, WireChat, WireServer, answer_tokens

_ids = itertools.count(1)


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class OpenAIWireServer(WireServer):
    """OpenAI Chat Completions: ``POST /v1/chat/completions`` and ``GET /v1/models`` (Groq, vLLM, llama.cpp).

    Args:
        reported_model: Model id written into responses (default: the one asked for), as services that
            resolve aliases do.
        reject_json_schema: Answer ``response_format`` ``json_schema`` with HTTP 400, as models without
            structured outputs do on Groq (``json_object`` is still accepted).
        reject_logprobs: Answer ``logprobs: true`` with HTTP 400, as Groq does.
        ignore_logprobs: Accept ``logprobs`` but answer ``"logprobs": null`` (servers that ignore it).

    ``logprobs``/``top_logprobs`` give ``choices[0].logprobs.content`` in OpenAI's shape (``token``,
    ``logprob``, ``bytes``, ``top_logprobs``; ``top_logprobs`` above 20 is a 400 as OpenAI sends it). A final
    assistant message is continued (llama.cpp's server does so by itself; vLLM with
    ``continue_final_message: true``, which it refuses together with ``add_generation_prompt: true``).
        **kwargs: See :class:`~support.wire_base.WireServer`; ``api_key`` is checked as
            ``Authorization: Bearer <key>``.
    """

    generation_paths = ("/chat/completions",)

    def __init__(self, *, reported_model: str | None = None, reject_json_schema: bool = False,
                 reject_logprobs: bool = False, ignore_logprobs: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("models", ("llama-3.1-8b-instant",))
        super().__init__(**kwargs)
        self.reported_model = reported_model
        self.reject_json_schema = reject_json_schema
        self.reject_logprobs = reject_logprobs
        self.ignore_logprobs = ignore_logprobs

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` — what OpenAI-compatible clients take as base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def send_error_reply(self, handler: BaseHTTPRequestHandler, status: int, message: str,
                         retry_after: float | None = None) -> None:
        """OpenAI error body: ``{"error": {"message", "type", "code"}}`` (+ ``retry-after`` on 429)."""
        kind = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "code": kind}}
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        self.send_json(handler, status, body, headers)

    def _authorised(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> bool:
        if self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}":
            return True
        self.send_error_reply(handler, 401, "Invalid API Key")
        return False

    def _dispatch(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        path = request.path
        if request.method == "GET" and path.rstrip("/").endswith("/models"):
            if self._authorised(handler, request):
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "llmdisc-loopback"}
                        for m in self.models]
                self.send_json(handler, 200, {"object": "list", "data": data})
            return
        if request.method != "POST" or not self._is_generation(path):
            self.send_error_reply(handler, 404, f"Unknown request URL: {request.method} {path}")
            return
        if not self._authorised(handler, request):
            return
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model", ""))
        if model not in self.models:
            self.send_error_reply(handler, 404, f"The model `{model}` does not exist or you do not have access to it.")
            return
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema" and self.reject_json_schema:
            self.send_error_reply(handler, 400, f"response_format `json_schema` is not supported with model {model}")
            return
        want_logprobs = bool(body.get("logprobs"))
        top_k = int(body.get("top_logprobs") or 0)
        if want_logprobs and self.reject_logprobs:
            self.send_error_reply(handler, 400, "`logprobs` is not supported with this model")
            return
        if top_k > 20:
            self.send_error_reply(handler, 400, f"Invalid 'top_logprobs': integer above maximum value. Expected a "
                                                f"value <= 20, but got {top_k} instead.")
            return
        if body.get("continue_final_message") and body.get("add_generation_prompt", True):
            self.send_error_reply(handler, 400, "continue_final_message and add_generation_prompt cannot both be "
                                                "true.")
            return
        messages = body.get("messages") or []
        prefill = _text_of(messages[-1].get("content")) if messages and messages[-1].get("role") == "assistant" \
            else None
        system = "\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system") or None
        users = [_text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
        chat = WireChat(model=model, system=system, user=users[-1] if users else "", json_schema=schema,
                        temperature=body.get("temperature"), seed=body.get("seed"),
                        max_tokens=body.get("max_completion_tokens", body.get("max_tokens")))

        def reply(answer: WireAnswer) -> dict[str, Any]:
            prompt, completion = answer.prompt_tokens or 0, answer.completion_tokens or 0
            tokens, truncated = answer_tokens(answer, prefill=prefill, max_tokens=chat.max_tokens, top_k=top_k)
            text = "".join(t.token for t in tokens) if (prefill or truncated) else answer.text
            logprobs = None
            if want_logprobs and not self.ignore_logprobs:
                logprobs = {"content": [{"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
                                         "top_logprobs": [{"token": a, "logprob": v, "bytes": list(a.encode())}
                                                          for a, v in t.top]} for t in tokens], "refusal": None}
            return {"id": f"chatcmpl-loopback-{next(_ids)}", "object": "chat.completion", "created": int(time.time()),
                    "model": self.reported_model or answer.model_version or model,
                    "system_fingerprint": "fp_loopback",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "logprobs": logprobs, "finish_reason": "length" if truncated else "stop"}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}}

        self.run_generation(handler, chat, reply)


def ollama_digest(model: str) -> str:
    """The digest the Ollama wire server reports for ``model`` (sha256 hex of its name)."""
    return hashlib.sha256(model.encode("utf-8")).hexdigest()


class OllamaWireServer(WireServer):
    """Ollama's REST API: ``POST /api/chat`` (non-streaming), ``GET /api/tags``, ``POST /api/show``.

    Error bodies are ``{"error": "..."}`` as Ollama sends them; a missing model gives 404
    ``model "x" not found, try pulling it first``. ``logprobs: true`` adds Ollama's top-level ``logprobs``
    list (``token``, ``logprob``, ``bytes``, ``top_logprobs``), cut to ``top_logprobs`` (above 20 is a 400)
    and to ``options.num_predict``.

    Args:
        supports_logprobs: False answers without ``logprobs`` whatever is asked (an Ollama without them).
        **kwargs: See :class:`~support.wire_base.WireServer`.
    """

    generation_paths = ("/api/chat",)

    def __init__(self, *, supports_logprobs: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("models", ("llama3.1:8b",))
        super().__init__(**kwargs)
        self.supports_logprobs = supports_logprobs

    def _details(self) -> dict[str, Any]:
        return {"format": "gguf", "family": "llama", "families": ["llama"], "parameter_size": "8.0B",
                "quantization_level": "Q4_K_M", "parent_model": ""}

    def _dispatch(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        if request.method == "GET" and request.path == "/api/tags":
            models = [{"name": m, "model": m, "modified_at": "2026-01-01T00:00:00Z", "size": 4_920_753_328,
                       "digest": ollama_digest(m), "details": self._details()} for m in self.models]
            self.send_json(handler, 200, {"models": models})
            return
        if request.method == "POST" and request.path == "/api/show":
            model = str(body.get("model") or body.get("name") or "")
            if model not in self.models:
                self.send_error_reply(handler, 404, f"model '{model}' not found")
                return
            self.send_json(handler, 200, {"modelfile": f"FROM {model}\n", "parameters": "", "template": "{{ .Prompt }}",
                                          "details": self._details(), "model_info": {},
                                          "modified_at": "2026-01-01T00:00:00Z"})
            return
        if not (request.method == "POST" and request.path == "/api/chat"):
            self.send_error_reply(handler, 404, "404 page not found")
            return
        model = str(body.get("model", ""))
        if model not in self.models:
            self.send_error_reply(handler, 404, f'model "{model}" not found, try pulling it first')
            return
        if body.get("stream", True):
            self.send_error_reply(handler, 400, "this loopback server answers only stream=false requests")
            return
        messages = body.get("messages") or []
        options = body.get("options") or {}
        fmt = body.get("format")
        chat = WireChat(model=model,
                        system="\n".join(m.get("content", "") for m in messages if m.get("role") == "system") or None,
                        user=next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), ""),
                        json_schema=fmt if isinstance(fmt, dict) else None, temperature=options.get("temperature"),
                        seed=options.get("seed"), max_tokens=options.get("num_predict"))
        want_logprobs = bool(body.get("logprobs")) and self.supports_logprobs
        top_k = int(body.get("top_logprobs") or 0)
        if want_logprobs and not 0 <= top_k <= 20:
            self.send_error_reply(handler, 400, "top_logprobs must be between 0 and 20")
            return

        def reply(answer: WireAnswer) -> dict[str, Any]:
            limit = chat.max_tokens if chat.max_tokens is not None and chat.max_tokens > 0 else None
            tokens, truncated = answer_tokens(answer, prefill=None, max_tokens=limit, top_k=top_k)
            payload = {"model": model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "message": {"role": "assistant", "content": "".join(t.token for t in tokens) if truncated
                                   else answer.text}, "done": True, "done_reason": "length" if truncated else "stop",
                       "total_duration": 1_000_000, "load_duration": 0,
                       "prompt_eval_count": answer.prompt_tokens, "prompt_eval_duration": 500_000,
                       "eval_count": answer.completion_tokens, "eval_duration": 500_000}
            if want_logprobs:
                payload["logprobs"] = [{"token": t.token, "logprob": t.logprob, "bytes": list(t.token.encode()),
                                        "top_logprobs": [{"token": a, "logprob": v, "bytes": list(a.encode())}
                                                         for a, v in t.top]} for t in tokens]
            return payload

        self.run_generation(handler, chat, reply)


_GEMINI_GENERATE = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class GeminiWireServer(WireServer):
    """Gemini API v1beta: ``POST /v1beta/models/{model}:generateContent``, ``GET /v1beta/models[/{model}]``.

    The key travels in ``x-goog-api-key``; a wrong key gets HTTP 400 ``API_KEY_INVALID`` as Google sends
    it. A 429 carries a ``google.rpc.RetryInfo`` detail (``retryDelay``), as Google sends it (no header).

    ``responseLogprobs: true`` adds ``logprobsResult`` to the candidate (``topCandidates`` with ``logprobs``
    alternatives per step, ``chosenCandidates``, ``logProbabilitySum``) and ``avgLogprobs``, in the camelCase
    shape of the REST API; ``logprobs`` outside 0-20 is a 400.

    Args:
        model_version: ``modelVersion`` written into responses (default: the model asked for).
        logprobs_enabled: False answers ``responseLogprobs`` with HTTP 400 "Logprobs is not enabled for
            models/…", as Google does for models without them.
        **kwargs: See :class:`~support.wire_base.WireServer`.
    """

    generation_paths = (":generateContent",)

    def __init__(self, *, model_version: str | None = None, logprobs_enabled: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("models", ("gemini-2.5-flash",))
        super().__init__(**kwargs)
        self.model_version = model_version
        self.logprobs_enabled = logprobs_enabled

    def send_error_reply(self, handler: BaseHTTPRequestHandler, status: int, message: str,
                         retry_after: float | None = None) -> None:
        """Google RPC error body ``{"error": {"code", "message", "status", "details"}}``."""
        error: dict[str, Any] = {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}
        if status == 429 and retry_after is not None:
            # Google states the wait only in the body (RetryInfo), not in a Retry-After header.
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}]
        self.send_json(handler, status, {"error": error})

    def _authorised(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> bool:
        if self.api_key is None or request.headers.get("x-goog-api-key") == self.api_key:
            return True
        error = {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT",
                 "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                              "domain": "googleapis.com"}]}
        self.send_json(handler, 400, {"error": error})
        return False

    def _model_entry(self, model: str) -> dict[str, Any]:
        return {"name": f"models/{model}", "version": "001", "displayName": model,
                "supportedGenerationMethods": ["generateContent", "countTokens"]}

    def _dispatch(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        if not self._authorised(handler, request):
            return
        path = request.path
        if request.method == "GET" and path == "/v1beta/models":
            self.send_json(handler, 200, {"models": [self._model_entry(m) for m in self.models]})
            return
        if request.method == "GET" and path.startswith("/v1beta/models/"):
            model = path.removeprefix("/v1beta/models/")
            if model in self.models:
                self.send_json(handler, 200, self._model_entry(model))
            else:
                self.send_error_reply(handler, 404, f"models/{model} is not found for API version v1beta")
            return
        match = _GEMINI_GENERATE.match(path)
        if request.method != "POST" or match is None:
            self.send_error_reply(handler, 404, f"Unknown path {path}")
            return
        model = match["model"]
        if model not in self.models:
            self.send_error_reply(handler, 404, f"models/{model} is not found for API version v1beta, or is not "
                                                "supported for generateContent.")
            return
        body = request.body if isinstance(request.body, dict) else {}
        config = body.get("generationConfig") or {}
        system = "".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", [])) or None
        contents = body.get("contents") or [{}]
        user = "".join(p.get("text", "") for p in contents[-1].get("parts", []))
        chat = WireChat(model=model, system=system, user=user,
                        json_schema=config.get("responseJsonSchema") or config.get("responseSchema"),
                        temperature=config.get("temperature"), seed=config.get("seed"),
                        max_tokens=config.get("maxOutputTokens"))
        want_logprobs = bool(config.get("responseLogprobs"))
        top_k = int(config.get("logprobs") or 0)
        if want_logprobs and not self.logprobs_enabled:
            self.send_error_reply(handler, 400, f"Logprobs is not enabled for models/{model}")
            return
        if want_logprobs and not 0 <= top_k <= 20:
            self.send_error_reply(handler, 400, "logprobs must be in the range [0, 20]")
            return

        def reply(answer: WireAnswer) -> dict[str, Any]:
            prompt, completion = answer.prompt_tokens or 0, answer.completion_tokens or 0
            candidate: dict[str, Any] = {"content": {"parts": [{"text": answer.text}], "role": "model"},
                                         "finishReason": "STOP", "index": 0}
            if want_logprobs:
                tokens, _ = answer_tokens(answer, prefill=None, max_tokens=None, top_k=top_k)

                def entry(token: str, value: float) -> dict[str, Any]:
                    return {"token": token, "tokenId": int(hashlib.sha256(token.encode()).hexdigest()[:6], 16),
                            "logProbability": value}

                total = sum(t.logprob for t in tokens)
                candidate["logprobsResult"] = {"topCandidates": [{"candidates": [entry(a, v) for a, v in t.top]}
                                                                 for t in tokens],
                                               "chosenCandidates": [entry(t.token, t.logprob) for t in tokens],
                                               "logProbabilitySum": total}
                candidate["avgLogprobs"] = total / len(tokens) if tokens else 0.0
            return {"candidates": [candidate],
                    "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                                      "totalTokenCount": prompt + completion},
                    "modelVersion": self.model_version or answer.model_version or model,
                    "responseId": f"loopback-{next(_ids)}"}

        self.run_generation(handler, chat, reply)
