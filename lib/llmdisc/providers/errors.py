"""How providers report failures; :mod:`llmdisc.trials` decides what to retry from these types.

A malformed *answer* is not an error: it is a :class:`~llmdisc.providers.base.Completion` whose text
the parser marks invalid with a reason.
"""

from __future__ import annotations

from llmdisc.errors import ProviderError


class ProviderConfigError(ProviderError):
    """Unknown provider or model, missing package, bad option. Not retried."""


class ProviderAuthError(ProviderError):
    """Missing or rejected API key (the message names the environment variable). Not retried."""


class ModelNotFoundError(ProviderError):
    """The service does not have the model; the message lists the ones it has. Not retried."""


class ProviderUnreachableError(ProviderError):
    """No server answers at the base URL (connection refused, DNS). Retried a few times, then fatal."""


class ProviderRequestError(ProviderError):
    """The service rejected the request (HTTP 4xx other than 401/403/404/429). Not retried."""


class TransientProviderError(ProviderError):
    """A failure worth retrying: 5xx, timeout, dropped connection, truncated body."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(TransientProviderError):
    """HTTP 429 / quota exhausted; ``retry_after`` (seconds) from the Retry-After header when given."""
