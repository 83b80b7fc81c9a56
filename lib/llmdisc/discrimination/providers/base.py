"""The one small interface every LLM provider implements (modelled on Inspect AI's ``ModelAPI``).

A provider turns a :class:`PromptRequest` into a :class:`Completion` (or :class:`LabelScores`). Providers
*classify* failures by raising the errors of :mod:`llmdisc.discrimination.providers.errors`; retrying
(:mod:`llmdisc.discrimination.retries`) and parsing (:mod:`llmdisc.discrimination.answers`) are not their job.
"""

from __future__ import annotations

import abc
import hashlib
import ipaddress
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlsplit

from llmdisc.discrimination.providers.errors import ProviderAuthError, ProviderConfigError


@dataclass(frozen=True)
class PromptRequest:
    """What is sent: the two prompt texts and the JSON schema the answer must follow."""

    system: str
    user: str
    json_schema: dict[str, Any] | None = None
    """JSON Schema of the answer, passed to the provider's constrained-output mechanism (None: free text)."""


def request_hash(request: PromptRequest) -> str:
    """Return the sha256 (hex) of a request's canonical JSON: the trial record's ``prompt_hash``."""
    payload = json.dumps(asdict(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings that change the answer (all part of the cache key)."""

    temperature: float = 0.0
    seed: int = 0
    """Provider-side sampling seed, where the service accepts one."""
    max_tokens: int = 2048
    """Cap on generated tokens, above the longest answer the schema's caps allow in practice (~1,040 tokens),
    so that the caps, not this limit, end a looping answer."""


@dataclass
class Completion:
    """What came back from one call."""

    text: str
    """The raw answer text, always kept (parsing can be redone offline)."""
    model: str
    model_version: str | None = None
    """Digest or version the service reports for the model that answered (never substituted)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    """Wall-clock seconds of the call."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Provider-reported extras (finish reason, …); never a secret."""


ANSWER_PREFIX = '{"verdict": "'
"""The answer opened up to its first value: label scores are the probabilities of what follows it."""


@dataclass
class LabelScores:
    """How probable a model finds each label as the answer's first value, after :data:`ANSWER_PREFIX`.

    Log-probabilities (nats) of the model's own next-token distribution (before any grammar, penalty or
    temperature), summed over each label's full token sequence.
    """

    logprobs: dict[str, float]
    """``{"REAL": log P(REAL …), "SYNTHETIC": log P(SYNTHETIC …)}`` (<= 0); NaN where a label could not be scored
    (then :attr:`invalid_reason` says why)."""
    n_tokens: dict[str, int]
    label_mass: float
    """Probability mass (0-1) the two labels' first tokens hold at the first answer position: a format
    check. Near 1: the model answers with a label; near 0: it wants to say something else there."""
    model: str
    model_version: str | None = None
    prompt_tokens: int | None = None
    latency_s: float | None = None
    invalid_reason: str | None = None
    """Why the scores are unusable (a label missing from the top-k, NaN/inf, empty top-k), else None."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Provider-reported extras (the top-k lists of the first position, token strings); never a secret."""


class Provider(abc.ABC):
    """Base class: subclasses implement :meth:`complete`, and :meth:`label_scores` with
    :attr:`supports_label_scores` where the service returns token probabilities."""

    name: ClassVar[str] = "provider"
    is_remote: ClassVar[bool] = True
    """Whether prompts leave this machine (``llmdisc audit`` asks for ``--allow-remote`` then)."""
    supports_label_scores: ClassVar[bool] = False
    """Whether :meth:`label_scores` is implemented (the service returns token log-probabilities)."""

    def __init__(self, model: str, *, base_url: str | None = None, max_connections: int = 4) -> None:
        self.model = model
        self.base_url = base_url
        self.max_connections = max_connections

    @abc.abstractmethod
    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Send one request and return the completion, or raise a :mod:`.errors` error."""

    async def check(self) -> None:
        """Fail fast before any trial: key present, server reachable, model available (default: nothing)."""

    async def check_label_scores(self) -> None:
        """Fail before any trial (ProviderConfigError with the fix) when this provider or model cannot return label
        scores; providers whose support depends on the model or server probe it here."""
        if not self.supports_label_scores:
            raise ProviderConfigError(
                f"the {self.name} provider returns no token probabilities, so it cannot score labels; fix: "
                f"use scoring: verdict for {self.name}, or a provider that returns log-probabilities "
                "(local, ollama, gemini, openai)")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels as the answer's first value. A failed call raises a :mod:`.errors` error; an
        answer that cannot be scored gives ``invalid_reason``, never an exception or a 0."""
        await self.check_label_scores()
        raise NotImplementedError(f"{type(self).__name__} sets supports_label_scores but has no label_scores")

    def identity(self) -> dict[str, Any]:
        """What identifies the answering model for the cache key and the trial record; never a key."""
        return {"provider": self.name, "model": self.model, "model_digest": self.model_digest(),
                "base_url": self.base_url}

    def model_digest(self) -> str | None:
        """Digest or weights hash of the model, if known before calling (Ollama digest, GGUF sha256)."""
        return None

    async def aclose(self) -> None:
        """Release connections or the loaded model."""


def is_loopback_url(url: str | None) -> bool:
    """True when ``url`` points at this machine (``localhost``, 127.0.0.0/8 or ``::1``)."""
    host = urlsplit(url or "").hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key_from_env(names: tuple[str, ...], *, provider: str) -> str:
    """Return the first non-empty API key among the environment variables ``names``; ProviderAuthError naming
    every variable (never a value) when none is set."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    listed = " or ".join(f"${n}" for n in names)
    raise ProviderAuthError(f"the {provider} provider needs an API key and {listed} is not set; fix: "
                            f"export {names[0]}=<your key> (keys are read from the environment only)")
