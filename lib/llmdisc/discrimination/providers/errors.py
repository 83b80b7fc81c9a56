"""How providers report failures; :mod:`llmdisc.discrimination.retries` decides what to retry from these types.

A malformed *answer* is not an error: the parser marks its text invalid with a reason.
"""

from __future__ import annotations

import datetime as _dt
from email.utils import parsedate_to_datetime

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


# --- helpers shared by the network providers (classification only; no retrying here) -----------------

_CONNECT_FAILURES = {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror"}
_TIMEOUTS = {"TimeoutException", "ReadTimeout", "WriteTimeout", "PoolTimeout", "APITimeoutError", "TimeoutError"}


def redact(text: str, secret: str | None) -> str:
    """Return ``text`` with every occurrence of ``secret`` replaced by ``***`` (no-op when secret is empty)."""
    return text.replace(secret, "***") if secret else text


def parse_retry_after(value: str | None) -> float | None:
    """Read an HTTP ``Retry-After`` header (delta seconds or an HTTP date) as seconds to wait (>= 0), or None when
    absent or unreadable."""
    text = str(value or "").strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (when - _dt.datetime.now(_dt.timezone.utc)).total_seconds())


def parse_duration(value: str | None) -> float | None:
    """Read a protobuf JSON duration such as Gemini's RetryInfo ``retryDelay`` (``"7s"``, ``"0.5s"``) in seconds."""
    if not value or not str(value).endswith("s"):
        return None
    try:
        return max(0.0, float(str(value)[:-1]))
    except ValueError:
        return None


def error_for_status(status: int, detail: str, *, provider: str, model: str, retry_after: float | None = None,
                     key_env: str | None = None) -> ProviderError:
    """Map an HTTP error status to the provider error the trial runner acts on.

    429 ⇒ :class:`RateLimited`; 401/403 ⇒ :class:`ProviderAuthError`; 404 ⇒ :class:`ModelNotFoundError`;
    408 and 5xx ⇒ :class:`TransientProviderError`; any other 4xx ⇒ :class:`ProviderRequestError`.
    ``detail`` is the service's message, already free of secrets; ``key_env`` is named in auth errors.
    """
    where = f"{provider} (model {model!r})"
    if status == 429:
        wait = f"; it asked to wait {retry_after:g} s" if retry_after is not None else ""
        return RateLimited(f"{where} is rate-limiting requests (HTTP 429: {detail}){wait}; fix: lower "
                           "--max-concurrency / the requests-per-minute budget or wait for the quota to reset",
                           retry_after=retry_after)
    if status in (401, 403):
        var = f" in ${key_env}" if key_env else ""
        return ProviderAuthError(f"{where} rejected the credentials (HTTP {status}: {detail}); fix: check the "
                                 f"API key{var} and that it may use this model")
    if status == 404:
        return ModelNotFoundError(f"{where} answered 404 ({detail}); fix: check the model id and the base URL "
                                  "(the provider's check() lists the models the server has)")
    if status == 408 or status >= 500:
        return TransientProviderError(f"{where} failed with HTTP {status} ({detail}); it is retried",
                                      retry_after=retry_after)
    return ProviderRequestError(f"{where} rejected the request (HTTP {status}: {detail}); fix: check the "
                                "model's options (schema, max tokens) against the service's documentation")


def _exception_names(exc: BaseException) -> set[str]:
    names: set[str] = set()
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        names.update(cls.__name__ for cls in type(current).__mro__)
        current = current.__cause__ or current.__context__
    return names


def transport_error(exc: BaseException, *, provider: str, base_url: str | None,
                    timeout_s: float | None = None) -> ProviderError | None:
    """Classify a failure below HTTP (no status code) from any client library (httpx, httpx2, SDK wrappers):
    :class:`ProviderUnreachableError` when nothing accepts the connection, :class:`TransientProviderError` for
    a timeout or a connection dropped mid-call, or None when ``exc`` is not a transport failure."""
    names = _exception_names(exc)
    if names & _CONNECT_FAILURES or (isinstance(exc, ConnectionError) and "Failed to connect" in str(exc)):
        return ProviderUnreachableError(f"no {provider} server answers at {base_url} ({type(exc).__name__}); "
                                        "fix: start the server, or point the provider at the right base URL")
    if names & _TIMEOUTS:
        after = f" after {timeout_s:g} s" if timeout_s is not None else ""
        return TransientProviderError(f"{provider} at {base_url} timed out{after}; it is retried (raise the "
                                      "provider's timeout_s if the model is slow)")
    if names & {"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError", "BrokenPipeError",
                "APIConnectionError", "NetworkError", "TransportError", "IncompleteRead"}:
        return TransientProviderError(f"{provider} at {base_url} dropped the connection ({type(exc).__name__}); "
                                      "it is retried")
    return None


def malformed_body(provider: str, base_url: str | None, problem: str) -> TransientProviderError:
    """Error for a response body that is not the service's documented JSON (truncated, wrong shape)."""
    return TransientProviderError(f"{provider} at {base_url} returned a malformed response body ({problem}); "
                                  "it is retried")
