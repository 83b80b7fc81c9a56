"""The one small interface every LLM provider implements (modelled on Inspect AI's ``ModelAPI``).

A provider turns a :class:`PromptRequest` (system text, user text, JSON schema of the answer) into a
:class:`Completion` (raw text plus what the service reported). Providers *classify* failures by
raising the errors of :mod:`llmdisc.discrimination.providers.errors`; the retry loop lives once, in
:mod:`llmdisc.discrimination.runner`. Parsing the answer is not a provider's job (see :mod:`llmdisc.discrimination.answers`).
"""

from __future__ import annotations

import abc
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class PromptRequest:
    """What is sent: the two prompt texts and the JSON schema the answer must follow."""

    system: str
    """System prompt (identical across trials of a prompt variant)."""
    user: str
    """User prompt: instructions, the Markdown table, and for C2 the metadata block."""
    json_schema: dict[str, Any] | None = None
    """JSON Schema of the answer, passed to the provider's constrained-output mechanism (None: free text)."""


def request_hash(request: PromptRequest) -> str:
    """Return the sha256 (hex) of a request's system text, user text and schema, canonically serialised.

    This is the trial record's ``prompt_hash``: equal hashes mean byte-identical prompts.
    """
    payload = json.dumps(asdict(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class GenerateConfig:
    """Generation settings that change the answer (all part of the cache key)."""

    temperature: float = 0.0
    """Sampling temperature; 0 as in the paper."""
    seed: int = 0
    """Provider-side sampling seed, where the service accepts one."""
    max_tokens: int = 2048
    """Cap on generated tokens. Set above the longest answer the schema's caps allow in practice, so that
    the caps, not this limit, end a looping answer: the embedded model's looping answers ended at 1,036
    tokens, complete and valid, where a 512-token cap cut a quarter of the default run's answers."""


@dataclass
class Completion:
    """What came back from one call."""

    text: str
    """The raw answer text, always kept (parsing can be redone offline)."""
    model: str
    """The model id that was asked for."""
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

    Log-probabilities are natural logs of the model's own next-token distribution (a softmax of its
    logits, before any grammar, penalty or temperature), summed over each label's full token sequence.
    """

    logprobs: dict[str, float]
    """``{"REAL": log P(REAL …), "SYNTHETIC": log P(SYNTHETIC …)}``: sum over the label's tokens (<= 0).
    NaN where a label could not be scored (then :attr:`invalid_reason` says why)."""
    n_tokens: dict[str, int]
    """Tokens in each label's sequence as the model tokenises it after the prefix."""
    label_mass: float
    """Probability mass (0-1) the two labels' first tokens hold at the first answer position: a format
    check. Near 1: the model answers with a label; near 0: it wants to say something else there."""
    model: str
    """The model id that was asked for."""
    model_version: str | None = None
    """Digest or version the service reports (never substituted)."""
    prompt_tokens: int | None = None
    latency_s: float | None = None
    invalid_reason: str | None = None
    """Why the scores are unusable (a label missing from the top-k, NaN/inf, empty top-k), else None."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Provider-reported extras (the top-k lists of the first position, token strings); never a secret."""


class Provider(abc.ABC):
    """Base class: subclasses implement :meth:`complete`; everything else has a sensible default.

    Providers whose service returns token probabilities also implement :meth:`label_scores` and set
    :attr:`supports_label_scores`; the others refuse it with a :class:`ProviderConfigError` that names
    the fix, before any trial (:meth:`check` with ``scoring`` other than ``verdict``).
    """

    name: ClassVar[str] = "provider"
    """Registry name (``local``, ``ollama``, ``gemini``, ``openai``, ``replay``)."""
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
        """Send one request and return the completion, or raise a :mod:`~llmdisc.discrimination.providers.errors` error."""

    async def check(self) -> None:
        """Fail fast before any trial: key present, server reachable, model available (default: nothing)."""

    async def check_label_scores(self) -> None:
        """Fail before any trial when this provider or model cannot return label scores.

        The default refuses unless :attr:`supports_label_scores`; providers whose support depends on the
        model or the server (Gemini models without logprobs, Groq) probe it here and raise with the fix.
        """
        if not self.supports_label_scores:
            from llmdisc.discrimination.providers.errors import ProviderConfigError

            raise ProviderConfigError(
                f"the {self.name} provider returns no token probabilities, so it cannot score labels; fix: "
                f"use scoring: verdict for {self.name}, or a provider that returns log-probabilities "
                "(local, ollama, gemini, openai)")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Score both labels as the answer's first value; see :class:`LabelScores`.

        The prompt is ``request`` with the answer opened as :data:`ANSWER_PREFIX` (an assistant prefill
        where the service allows one). Raise :mod:`~llmdisc.discrimination.providers.errors` errors for
        failures of the call; an answer that cannot be scored is a :class:`LabelScores` with
        ``invalid_reason`` set, never an exception and never a 0.
        """
        await self.check_label_scores()
        raise NotImplementedError(f"{type(self).__name__} sets supports_label_scores but has no label_scores")

    def identity(self) -> dict[str, Any]:
        """What identifies the answering model for the cache key and the trial record.

        Includes the model id and, where known, its digest/version and the base URL; never a key.
        """
        return {"provider": self.name, "model": self.model, "model_digest": self.model_digest(),
                "base_url": self.base_url}

    def model_digest(self) -> str | None:
        """Digest or weights hash of the model, if known before calling (Ollama digest, GGUF sha256)."""
        return None

    async def aclose(self) -> None:
        """Release connections or the loaded model."""


def is_loopback_url(url: str | None) -> bool:
    """True when ``url`` points at this machine (``localhost``, 127.0.0.0/8 or ``::1``)."""
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_key_from_env(names: tuple[str, ...], *, provider: str) -> str:
    """Return the first non-empty API key among the environment variables ``names``.

    Raises:
        ProviderAuthError: none is set; the message names every variable (never a value).
    """
    import os

    from llmdisc.discrimination.providers.errors import ProviderAuthError

    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    listed = " or ".join(f"${n}" for n in names)
    raise ProviderAuthError(f"the {provider} provider needs an API key and {listed} is not set; fix: "
                            f"export {names[0]}=<your key> (keys are read from the environment only)")
