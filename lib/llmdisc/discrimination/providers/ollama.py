"""``ollama``: a local or remote Ollama server through the official ``ollama`` async client.

``POST /api/chat`` with ``format`` = the answer's JSON schema; the model digest from ``GET /api/tags`` names the
exact weights that answered. The ``ollama`` client has no retries. Label scores: a short schema-constrained
answer with ``logprobs``, scored by each label's *first-token mass*
(:mod:`~llmdisc.discrimination.providers.label_positions`). No prefill: ``generate`` with ``raw: true`` would
need the model's chat template written out by the caller (Ollama's Go templates cannot be rendered client-side).
"""

from __future__ import annotations

import contextvars
import os
import time
from typing import Any

from llmdisc.discrimination.providers.base import (Completion, LabelScores, GenerateConfig, PromptRequest,
                                                   Provider, is_loopback_url)
from llmdisc.discrimination.providers.errors import (ModelNotFoundError, ProviderConfigError, ProviderError,
                                                     error_for_status, malformed_body, parse_retry_after,
                                                     transport_error)
from llmdisc.discrimination.providers.label_positions import (LABEL_ANSWER_TOKENS, LABEL_TOP_LOGPROBS,
                                                              positions_from_entries, scores_from_positions)
from llmdisc.discrimination.providers.packaged import PROVIDERS_INSTALL

DEFAULT_HOST = "http://127.0.0.1:11434"

# The ollama client raises ResponseError without the response headers; a response hook keeps the last
# Retry-After of the *current task* here (context variables are per task, so concurrent calls do not mix).
_last_retry_after: contextvars.ContextVar[str | None] = contextvars.ContextVar("ollama_retry_after", default=None)


async def _remember_retry_after(response: Any) -> None:
    _last_retry_after.set(response.headers.get("retry-after"))


class OllamaProvider(Provider):
    """Chat through Ollama's REST API.

    Args:
        host: Server URL; default ``$OLLAMA_HOST`` or ``http://127.0.0.1:11434``.
        num_ctx: Context window in tokens (None: the server's default, whose 2048–4096 can truncate a C2 prompt,
            so configs set 8192).
        timeout_s: Seconds before one call is abandoned (then a retryable error).
    """

    name = "ollama"
    supports_label_scores = True

    def __init__(self, model: str, *, host: str | None = None, num_ctx: int | None = None,
                 timeout_s: float = 600.0, max_connections: int = 1) -> None:
        host = (host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST).rstrip("/")
        if "://" not in host:
            host = f"http://{host}"
        super().__init__(model, base_url=host, max_connections=max_connections)
        # Prompts leave the machine only when the host is elsewhere (``llmdisc audit`` asks before that).
        self.is_remote = not is_loopback_url(host)  # type: ignore[misc]
        self.num_ctx = num_ctx
        self.timeout_s = timeout_s
        self._client: Any = None
        self._digest: str | None = None

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import ollama
            except ImportError as exc:  # the optional `providers` extra
                raise ProviderConfigError("the ollama provider needs the `ollama` package (the optional "
                                          f"`providers` extra); fix: {PROVIDERS_INSTALL}") from exc
            self._client = ollama.AsyncClient(host=self.base_url, timeout=self.timeout_s,
                                              event_hooks={"response": [_remember_retry_after]})
        return self._client

    def _classify(self, exc: BaseException) -> ProviderError:
        import ollama

        if isinstance(exc, ollama.ResponseError):
            return error_for_status(exc.status_code, str(exc.error), provider=self.name, model=self.model,
                                    retry_after=parse_retry_after(_last_retry_after.get()))
        found = transport_error(exc, provider=self.name, base_url=self.base_url, timeout_s=self.timeout_s)
        if found is not None:
            if "no ollama server" in str(found):
                found.args = (f"{found} (set $OLLAMA_HOST or `host=`; is `ollama serve` running?)",)
            return found
        return malformed_body(self.name, self.base_url, f"{type(exc).__name__}: {str(exc)[:200]}")

    async def _tags(self) -> dict[str, str]:
        """Model name → digest, from ``GET /api/tags``."""
        client = self._get_client()
        try:
            listing = await client.list()
        except Exception as exc:  # noqa: BLE001 - every failure is classified, none swallowed
            raise self._classify(exc) from None
        return {str(m.model): str(m.digest) for m in listing.models if m.model}

    async def check(self) -> None:
        """Server reachable (else ProviderUnreachableError) and the model pulled (else ModelNotFoundError
        listing the server's models); records its digest."""
        tags = await self._tags()
        wanted = {self.model, f"{self.model}:latest"}
        found = next((name for name in tags if name in wanted), None)
        if found is None:
            listed = ", ".join(sorted(tags)) or "none"
            raise ModelNotFoundError(f"the Ollama server at {self.base_url} has no model {self.model!r}; it has: "
                                     f"{listed}; fix: `ollama pull {self.model}` or pass one of those")
        self._digest = tags[found]

    def model_digest(self) -> str | None:
        """The digest ``/api/tags`` reported (after :meth:`check` or the first call), else None."""
        return self._digest

    async def _chat(self, request: PromptRequest, *, temperature: float, seed: int, num_predict: int,
                    **extra: Any) -> tuple[Any, float]:
        """One ``/api/chat`` call (the model's digest looked up first); ``extra`` adds ``logprobs`` and the like.
        Returns the response and the call's seconds; every failure is classified."""
        client = self._get_client()
        if self._digest is None:
            try:
                await self.check()
            except ProviderError as exc:  # any other failure: the chat call below reports it in its own words
                if isinstance(exc, ModelNotFoundError):
                    raise
        options: dict[str, Any] = {"temperature": temperature, "seed": seed, "num_predict": num_predict}
        if self.num_ctx is not None:
            options["num_ctx"] = self.num_ctx
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        start = time.perf_counter()
        try:
            response = await client.chat(model=self.model, messages=messages, stream=False,
                                         format=request.json_schema, options=options, **extra)
        except Exception as exc:  # noqa: BLE001 - ResponseError, httpx errors, JSON/pydantic errors
            raise self._classify(exc) from None
        return response, time.perf_counter() - start

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Send one ``/api/chat`` request; see :class:`~llmdisc.discrimination.providers.base.Provider`."""
        response, latency = await self._chat(request, temperature=config.temperature, seed=config.seed,
                                             num_predict=config.max_tokens)
        message = getattr(response, "message", None)
        if message is None:
            raise malformed_body(self.name, self.base_url, "no `message` in the /api/chat response")
        return Completion(text=message.content or "", model=self.model, model_version=self._digest,
                          prompt_tokens=response.prompt_eval_count, completion_tokens=response.eval_count,
                          latency_s=latency,
                          metadata={"finish_reason": response.done_reason, "reported_model": response.model,
                                    "total_duration_ns": response.total_duration})

    async def _label_chat(self, request: PromptRequest, config: GenerateConfig, *,
                          num_predict: int) -> tuple[Any, float]:
        return await self._chat(request, temperature=0.0, seed=config.seed, num_predict=num_predict, logprobs=True,
                                top_logprobs=LABEL_TOP_LOGPROBS)

    async def check_label_scores(self) -> None:
        """The server returns token log-probabilities for this model (one 1-token request); else
        ProviderConfigError (an older Ollama ignores the option) naming the fix."""
        response, _ = await self._label_chat(PromptRequest(system="", user="Say OK."), GenerateConfig(),
                                             num_predict=1)
        if not getattr(response, "logprobs", None):
            raise ProviderConfigError(f"the Ollama server at {self.base_url} returned no token log-probabilities for "
                                      f"{self.model!r} (no `logprobs` in the /api/chat answer), so it cannot score "
                                      "labels; fix: upgrade Ollama to a release that returns logprobs, "
                                      "or use scoring: verdict")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels from a short answer's top-20 lists (first-token masses)."""
        response, latency = await self._label_chat(request, config, num_predict=LABEL_ANSWER_TOKENS)
        positions = positions_from_entries(getattr(response, "logprobs", None) or ())
        return scores_from_positions(positions, prefilled=False, top_k=LABEL_TOP_LOGPROBS, model=self.model,
                                     model_version=self._digest, prompt_tokens=response.prompt_eval_count,
                                     latency_s=latency,
                                     metadata={"answer_text": (response.message.content or "")[:200]
                                               if getattr(response, "message", None) else None})

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client._client.aclose()
            self._client = None
