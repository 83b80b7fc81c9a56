"""``gemini``: Google's Gemini API through ``google-genai`` (async client, API version ``v1beta``).

``generateContent`` with ``responseJsonSchema`` = the answer's JSON Schema; the reported ``modelVersion`` is
recorded, and the model asked for is the only one ever called (the paper's code silently fell back to another
model, docs/protocol.md §8 row 6). Gemini 2.5 counts thinking against ``maxOutputTokens``, hence
:data:`THINKING_HEADROOM_TOKENS`. The SDK makes one attempt (no retry options); the client is kept on the
provider (a temporary one is closed by garbage collection mid-call).

Label scores: no prefill, so the label position is found in the answer's chosen candidates and each label
scored by its *first-token mass* among the top-20 (:mod:`~llmdisc.discrimination.providers.label_positions`).
"""

from __future__ import annotations

import time
from typing import Any

from llmdisc.discrimination.providers.base import (Completion, LabelScores, GenerateConfig, PromptRequest,
                                                   Provider, api_key_from_env)
from llmdisc.discrimination.providers.errors import (ModelNotFoundError, ProviderAuthError,
                                                     ProviderConfigError, ProviderError, ProviderRequestError,
                                                     error_for_status, malformed_body, parse_duration,
                                                     parse_retry_after, redact, transport_error)
from llmdisc.discrimination.providers.label_positions import (LABEL_ANSWER_TOKENS, LABEL_TOP_LOGPROBS,
                                                              TokenChoice, TokenPosition,
                                                              scores_from_positions)
from llmdisc.discrimination.providers.packaged import PROVIDERS_INSTALL

KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
THINKING_HEADROOM_TOKENS = 8192
"""Tokens added to ``max_tokens`` for thinking: the cap of Gemini 2.5 Flash's default dynamic thinking."""


class GeminiProvider(Provider):
    """Gemini ``generateContent``.

    Args:
        base_url: API root (default Google's; tests point it at a loopback server).
        timeout_s: Seconds before one call is abandoned (then a retryable error).
    """

    name = "gemini"
    supports_label_scores = True

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 120.0,
                 max_connections: int = 4) -> None:
        super().__init__(model, base_url=(base_url or DEFAULT_BASE_URL).rstrip("/"), max_connections=max_connections)
        self.timeout_s = timeout_s
        self._client: Any = None
        self._key: str | None = None

    def _get_client(self) -> Any:
        if self._client is None:
            self._key = api_key_from_env(KEY_VARIABLES, provider="gemini")
            try:
                from google import genai
                from google.genai import types
            except ImportError as exc:  # the optional `providers` extra
                raise ProviderConfigError("the gemini provider needs `google-genai` (the optional "
                                          f"`providers` extra); fix: {PROVIDERS_INSTALL}") from exc
            # api_version is pinned: google-genai 3.x defaults to v1, where responseJsonSchema is missing.
            options = types.HttpOptions(base_url=self.base_url, api_version="v1beta",
                                        timeout=int(self.timeout_s * 1000))
            self._client = genai.Client(api_key=self._key, http_options=options)
        return self._client

    def _classify(self, exc: BaseException) -> ProviderError:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            detail = redact(str(exc.message or exc.status or exc), self._key)
            body = exc.details if isinstance(exc.details, dict) else {}
            error = body.get("error", body) if isinstance(body, dict) else {}
            if exc.code == 400 and "API_KEY_INVALID" in str(error):  # Google sends a bad key as 400
                return ProviderAuthError(f"gemini rejected the API key (HTTP 400 API_KEY_INVALID); fix: check "
                                         f"${KEY_VARIABLES[0]} (or ${KEY_VARIABLES[1]})")
            retry_after = _retry_delay(error)
            if retry_after is None and exc.response is not None:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            return error_for_status(int(exc.code or 0), detail, provider=self.name, model=self.model,
                                    retry_after=retry_after, key_env=KEY_VARIABLES[0])
        problem = f"{type(exc).__name__}: {redact(str(exc), self._key)[:200]}"
        return (transport_error(exc, provider=self.name, base_url=self.base_url, timeout_s=self.timeout_s)
                or malformed_body(self.name, self.base_url, problem))

    async def _generate(self, request: PromptRequest, *, temperature: float, seed: int, max_tokens: int,
                        labels: bool = False) -> tuple[Any, float]:
        """One ``generateContent`` (``labels``: with the top-20 log-probabilities; a 400 naming them is a
        :class:`ProviderConfigError`). Returns the response and the call's seconds; every failure is classified."""
        from google.genai import types

        client = self._get_client()
        settings: dict[str, Any] = {"system_instruction": (request.system or None) if labels else request.system,
                                    "temperature": temperature, "seed": seed,
                                    "max_output_tokens": max_tokens + THINKING_HEADROOM_TOKENS}
        if labels:
            settings.update(response_logprobs=True, logprobs=LABEL_TOP_LOGPROBS)
        if request.json_schema is not None:
            settings.update(response_mime_type="application/json", response_json_schema=request.json_schema)
        start = time.perf_counter()
        try:
            response = await client.aio.models.generate_content(
                model=self.model, contents=request.user, config=types.GenerateContentConfig(**settings))
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none swallowed
            error = self._classify(exc)
            if labels and isinstance(error, ProviderRequestError) and "logprob" in str(error).lower():
                raise self._no_logprobs(str(getattr(exc, "message", "") or exc)) from None
            raise error from None
        return response, time.perf_counter() - start

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Send one ``generateContent``; see :class:`~llmdisc.discrimination.providers.base.Provider`."""
        response, latency = await self._generate(request, temperature=config.temperature, seed=config.seed,
                                                 max_tokens=config.max_tokens)
        candidates = response.candidates or []
        finish = str(candidates[0].finish_reason.value) if candidates and candidates[0].finish_reason else None
        parts = (candidates[0].content.parts or []) if candidates and candidates[0].content else []
        usage = response.usage_metadata
        blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
        metadata = {"finish_reason": finish, "response_id": response.response_id,
                    "thoughts_tokens": usage.thoughts_token_count if usage else None,
                    "block_reason": str(blocked.value) if blocked else None}
        # A blocked or truncated answer comes back as an empty/partial text: the parser judges it.
        return Completion(text="".join(p.text for p in parts if p.text and not p.thought), model=self.model,
                          model_version=response.model_version,
                          prompt_tokens=usage.prompt_token_count if usage else None,
                          completion_tokens=usage.candidates_token_count if usage else None,
                          latency_s=latency, metadata=metadata)

    async def check(self) -> None:
        """Key present and accepted (else ProviderAuthError), server reachable, model known by
        ``GET /v1beta/models/{model}`` (else ModelNotFoundError listing the models the key can use)."""
        client = self._get_client()
        try:
            await client.aio.models.get(model=self.model)
            return
        except Exception as exc:  # noqa: BLE001 - classified below
            error = self._classify(exc)
        if not isinstance(error, ModelNotFoundError):
            raise error
        names: list[str] = []
        try:
            async for entry in await client.aio.models.list():
                names.append(str(entry.name).removeprefix("models/"))
        except Exception:  # noqa: BLE001 - the listing only decorates the message
            pass
        listed = ", ".join(sorted(names)) or "(could not list models)"
        raise ModelNotFoundError(f"gemini has no model {self.model!r} at {self.base_url}; available: {listed}; "
                                 "fix: pass one of those (no other model is ever substituted)")

    def _no_logprobs(self, detail: str) -> ProviderConfigError:
        return ProviderConfigError(f"gemini model {self.model!r} returns no token log-probabilities ({detail}), so it "
                                   "cannot score labels; fix: use scoring: verdict for this model, or a Gemini model "
                                   "with logprobs enabled")

    async def check_label_scores(self) -> None:
        """The model returns log-probabilities (one small ``generateContent``); else ProviderConfigError
        (HTTP 400 "Logprobs is not enabled for models/…", or no ``logprobsResult``) naming the fix."""
        response, _ = await self._generate(PromptRequest(system="", user="Say OK."), temperature=0.0,
                                           seed=GenerateConfig().seed, max_tokens=1, labels=True)
        candidates = response.candidates or []
        if not candidates or candidates[0].logprobs_result is None:
            raise self._no_logprobs("the answer holds no logprobsResult")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels from the answer's top-20 candidates (first-token masses)."""
        response, latency = await self._generate(request, temperature=0.0, seed=config.seed,
                                                 max_tokens=LABEL_ANSWER_TOKENS, labels=True)
        candidates = response.candidates or []
        result = candidates[0].logprobs_result if candidates else None
        chosen = (result.chosen_candidates or []) if result is not None else []
        tops = (result.top_candidates or []) if result is not None else []

        def choice(candidate: Any) -> TokenChoice:
            value = candidate.log_probability
            return TokenChoice(str(candidate.token or ""), float("nan") if value is None else float(value))

        positions = [TokenPosition(choice(c), tuple(choice(t) for t in ((tops[i].candidates or []) if i < len(tops)
                                                                        else [])))
                     for i, c in enumerate(chosen)]
        usage = response.usage_metadata
        return scores_from_positions(positions, prefilled=False, top_k=LABEL_TOP_LOGPROBS, model=self.model,
                                     model_version=response.model_version,
                                     prompt_tokens=usage.prompt_token_count if usage else None, latency_s=latency,
                                     metadata={"response_id": response.response_id})

    async def aclose(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            await self._client.aio.aclose()
            self._client = None


def _retry_delay(error: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail of a Google error body, if present."""
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            return parse_duration(detail.get("retryDelay"))
    return None
