"""``openai``: any OpenAI-compatible Chat Completions endpoint (Groq, vLLM, llama.cpp's server, LM Studio).

The ``openai`` async client is used with ``max_retries=0`` (the trial runner owns retries). The paper's LLaMA ran
on Groq (the example of :mod:`~llmdisc.discrimination.providers.registry`).

Constrained output: ``response_format="auto"`` sends a non-strict ``json_schema`` (strict mode rejects
``maxLength``) until an HTTP 400 names it, then ``json_object`` for good; the metadata records which.

Label scores: each label's *first-token mass* among the top-20 (:mod:`.label_positions`), located in a short
answer, or with ``label_prefill`` (vLLM, llama.cpp's server) after an assistant prefill of ``ANSWER_PREFIX``.
"""

from __future__ import annotations

import time
from typing import Any, Literal, get_args

from llmdisc.discrimination.providers.base import (ANSWER_PREFIX, Completion, LabelScores, GenerateConfig,
                                                   PromptRequest, Provider, api_key_from_env, is_loopback_url)
from llmdisc.discrimination.providers.errors import (ModelNotFoundError, ProviderConfigError, ProviderError,
                                                     error_for_status, malformed_body, parse_retry_after,
                                                     redact, transport_error)
from llmdisc.discrimination.providers.label_positions import (LABEL_ANSWER_TOKENS, LABEL_TOP_LOGPROBS,
                                                              positions_from_entries, scores_from_positions)
from llmdisc.discrimination.providers.packaged import PROVIDERS_INSTALL

ResponseFormat = Literal["auto", "json_schema", "json_object"]
_FORMATS = get_args(ResponseFormat)


class OpenAICompatibleProvider(Provider):
    """Chat Completions over the ``openai`` SDK.

    Args:
        base_url: Root of the API, ending in ``/v1`` (default ``https://api.openai.com/v1``).
        api_key_env: Environment variable holding the key (``GROQ_API_KEY`` for Groq); a loopback ``base_url``
            may run without one.
        timeout_s: Seconds before one call is abandoned (then a retryable error).
        response_format: ``auto``, ``json_schema`` or ``json_object`` (the latter two force one format).
        label_prefill: Score labels after an assistant prefill instead of locating them in a short answer.

    Raises:
        ProviderConfigError: unknown ``response_format``.
    """

    name = "openai"
    supports_label_scores = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 timeout_s: float = 120.0, max_connections: int = 4,
                 response_format: ResponseFormat = "auto", label_prefill: bool = False) -> None:
        if response_format not in _FORMATS:
            raise ProviderConfigError(f"response_format={response_format!r} is not one of {_FORMATS}; fix: "
                                      "pick one (auto tries json_schema, then json_object)")
        base_url = (base_url or "https://api.openai.com/v1").rstrip("/")
        super().__init__(model, base_url=base_url, max_connections=max_connections)
        # A loopback server (llama.cpp, vLLM on this machine) keeps prompts here (``llmdisc audit`` reads this).
        self.is_remote = not is_loopback_url(base_url)  # type: ignore[misc]
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.response_format: ResponseFormat = response_format
        self.label_prefill = bool(label_prefill)
        self._client: Any = None
        self._key: str | None = None

    def _api_key(self) -> str:
        if self._key is None:
            try:
                self._key = api_key_from_env((self.api_key_env,), provider=f"openai-compatible ({self.base_url})")
            except ProviderError:
                if self.is_remote:
                    raise
                self._key = "no-key-needed-for-loopback"  # local servers ignore it; the SDK insists on one
        return self._key

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:  # the optional `providers` extra
                raise ProviderConfigError("the openai provider needs the `openai` package (the optional "
                                          f"`providers` extra); fix: {PROVIDERS_INSTALL}") from exc
            self._client = openai.AsyncOpenAI(api_key=self._api_key(), base_url=self.base_url, max_retries=0,
                                              timeout=self.timeout_s)
        return self._client

    def _classify(self, exc: Exception) -> ProviderError:
        import openai

        if isinstance(exc, openai.APIStatusError):
            retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            detail = redact(_error_message(exc), self._key)
            return error_for_status(exc.status_code, detail, provider=self.name, model=self.model,
                                    retry_after=retry_after, key_env=self.api_key_env)
        problem = f"{type(exc).__name__}: {redact(str(exc), self._key)[:200]}"
        return (transport_error(exc, provider=self.name, base_url=self.base_url, timeout_s=self.timeout_s)
                or malformed_body(self.name, self.base_url, problem))

    def _chat_kwargs(self, request: PromptRequest, *, temperature: float, seed: int, max_tokens: int,
                     with_format: bool = True) -> dict[str, Any]:
        """The arguments of one chat completion: the system and user messages, sampling, the response format."""
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature,
                                  "seed": seed, "max_tokens": max_tokens}
        if with_format and request.json_schema is not None:
            schema = {"name": "verdict", "schema": request.json_schema, "strict": False}
            kwargs["response_format"] = ({"type": "json_object"} if self.response_format == "json_object"
                                         else {"type": "json_schema", "json_schema": schema})
        return kwargs

    def _first_choice(self, response: Any) -> Any:
        if isinstance(response, str) or not getattr(response, "choices", None):
            raise malformed_body(self.name, self.base_url, "no `choices` in the response")
        return response.choices[0]

    async def _create(self, kwargs: dict[str, Any], *, logprobs_400: str | None = None,
                      schema_fallback: bool = False) -> tuple[Any, float]:
        """One chat completion and its seconds, every failure classified.

        ``logprobs_400``: an HTTP 400 whose lower-cased message holds it ("" for any) means the server refuses
        logprobs (ProviderConfigError). ``schema_fallback``: a 400 naming the ``json_schema`` of an ``auto``
        provider switches it to ``json_object`` for good and returns ``(None, 0.0)`` (the caller resends).
        """
        import openai

        client = self._get_client()
        start = time.perf_counter()
        try:
            response = await client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            message = _error_message(exc)
            if logprobs_400 is not None and logprobs_400 in message.lower():
                detail = redact(message, self._key)
                raise self._no_logprobs(f"rejects logprobs (HTTP 400: {detail})") from None
            named = "response_format" in message.lower() or "json_schema" in message.lower()
            sent_schema = (kwargs.get("response_format") or {}).get("type") == "json_schema"
            if schema_fallback and named and sent_schema and self.response_format == "auto":
                self.response_format = "json_object"
                return None, 0.0
            raise self._classify(exc) from None
        except (openai.OpenAIError, ValueError) as exc:  # ValueError: a body that is not JSON
            raise self._classify(exc) from None
        return response, time.perf_counter() - start

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Send one chat completion; see :class:`~llmdisc.discrimination.providers.base.Provider`."""
        kwargs = self._chat_kwargs(request, temperature=config.temperature, seed=config.seed,
                                   max_tokens=config.max_tokens)
        fmt = kwargs.get("response_format")
        response, latency = await self._create(kwargs, schema_fallback=True)
        if response is None:  # the schema was refused: later calls go straight to json_object
            return await self.complete(request, config)
        choice = self._first_choice(response)
        usage = getattr(response, "usage", None)
        return Completion(text=(choice.message.content if choice.message is not None else None) or "",
                          model=self.model, model_version=getattr(response, "model", None),
                          prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None), latency_s=latency,
                          metadata={"finish_reason": choice.finish_reason,
                                    "response_format": fmt["type"] if fmt else None,
                                    "system_fingerprint": getattr(response, "system_fingerprint", None)})

    async def check(self) -> None:
        """Key present (unless loopback), server reachable, model listed by ``GET /models``; else
        ProviderAuthError, ProviderUnreachableError or ModelNotFoundError (listing the server's models)."""
        import openai

        client = self._get_client()
        try:
            page = await client.models.list()
        except (openai.OpenAIError, ValueError) as exc:
            raise self._classify(exc) from None
        available = sorted(m.id for m in getattr(page, "data", []) or [])
        if available and self.model not in available:
            raise ModelNotFoundError(f"the openai-compatible server at {self.base_url} has no model {self.model!r}; "
                                     f"it lists: {', '.join(available)}; fix: pass one of these as the model")

    def _label_kwargs(self, request: PromptRequest, config: GenerateConfig, *, max_tokens: int) -> dict[str, Any]:
        kwargs = self._chat_kwargs(request, temperature=0.0, seed=config.seed, max_tokens=max_tokens,
                                   with_format=not self.label_prefill)
        kwargs.update(logprobs=True, top_logprobs=LABEL_TOP_LOGPROBS)
        if self.label_prefill:
            kwargs["messages"].append({"role": "assistant", "content": ANSWER_PREFIX})
            kwargs.update(max_tokens=min(max_tokens, 2),
                          extra_body={"continue_final_message": True, "add_generation_prompt": False})
        return kwargs

    def _no_logprobs(self, why: str) -> ProviderConfigError:
        return ProviderConfigError(f"the openai-compatible server at {self.base_url} {why} for model {self.model!r}, "
                                   "so it cannot score labels (Groq, for one, refuses logprobs); fix: use scoring: "
                                   "verdict for this provider, or a server that returns logprobs (vLLM, llama.cpp's "
                                   "server, OpenAI)")

    async def check_label_scores(self) -> None:
        """The server accepts ``logprobs``/``top_logprobs`` and returns them (one 1-token request); else
        ProviderConfigError (HTTP 400 from Groq, or no ``logprobs``) naming the fix, ``scoring: verdict``."""
        kwargs = self._label_kwargs(PromptRequest(system="", user="Say OK."), GenerateConfig(), max_tokens=1)
        kwargs.pop("response_format", None)
        response, _ = await self._create(kwargs, logprobs_400="")
        choices = getattr(response, "choices", None) or []
        if not choices or choices[0].logprobs is None or not choices[0].logprobs.content:
            raise self._no_logprobs("returned no token log-probabilities (logprobs: null)")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels from the top-20 lists (first-token masses)."""
        kwargs = self._label_kwargs(request, config, max_tokens=LABEL_ANSWER_TOKENS)
        response, latency = await self._create(kwargs, logprobs_400="logprob")
        choice = self._first_choice(response)
        content = (choice.logprobs.content if choice.logprobs is not None else None) or []
        positions = positions_from_entries(content)
        usage = getattr(response, "usage", None)
        return scores_from_positions(
            positions, prefilled=self.label_prefill, top_k=LABEL_TOP_LOGPROBS, model=self.model,
            model_version=getattr(response, "model", None), prompt_tokens=getattr(usage, "prompt_tokens", None),
            latency_s=latency, metadata={"answer_text": ((choice.message.content if choice.message else None)
                                                          or "")[:200], "finish_reason": choice.finish_reason})

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.close()
            self._client = None


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return str(getattr(exc, "message", exc))
