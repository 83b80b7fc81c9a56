"""Retries and the request budget of the trial runner: the one retry loop of llmdisc.

Providers only *classify* failures (:mod:`llmdisc.discrimination.providers.errors`); this module decides what to
retry, how long to wait (:class:`RetryAfterWait`) and how often to call (:func:`shared_budget`). Entry point:
:func:`call_with_retries`.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Awaitable, Callable

import tenacity

from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest, Provider
from llmdisc.discrimination.providers.errors import ProviderUnreachableError, TransientProviderError
from llmdisc.errors import ConfigError

retry_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
"""The sleep between retries, looked up at call time: tests swap it for a recorder, as Inspect does."""

MAX_RETRY_WAIT_S = 600.0
"""Cap on one wait between attempts, Retry-After included (seconds)."""


class RetryAfterWait(tenacity.wait.wait_base):
    """Wait before the next attempt: the service's Retry-After when it gave one, else exponential back-off.

    Back-off is ``min(cap, initial * 2**(attempt-1)) + U(0, jitter)`` seconds, the jitter seeded (so even waits
    are reproducible). A Retry-After (seconds) is honoured exactly, capped at :data:`MAX_RETRY_WAIT_S`.
    """

    def __init__(self, *, seed: int, initial: float = 1.0, cap: float = 60.0, jitter: float = 1.0) -> None:
        self.rng = random.Random(seed)
        self.initial, self.cap, self.jitter = initial, cap, jitter

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(max(float(retry_after), 0.0), MAX_RETRY_WAIT_S)
        backoff = min(self.cap, self.initial * 2 ** (retry_state.attempt_number - 1))
        return backoff + self.rng.uniform(0.0, self.jitter)


class RequestBudget:
    """Token bucket of ``requests_per_minute`` holding at most ``burst`` tokens (GCRA form; None = unlimited).

    Each caller reserves its slot before sleeping, so concurrent callers are spaced ``60 / requests_per_minute``
    seconds apart in arrival order. ``clock`` and ``sleep`` are injectable for tests. ConfigError for
    ``requests_per_minute`` <= 0 or ``burst`` < 1.
    """

    def __init__(self, requests_per_minute: float | None, burst: int = 1, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ConfigError(f"requests_per_minute={requests_per_minute}; "
                              "fix: give a positive number or None")
        if burst < 1:
            raise ConfigError(f"burst={burst}; fix: give an integer of at least 1")
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self.tolerance = (burst - 1) * self.interval
        self._clock, self._sleep = clock, sleep
        self._tat: float | None = None  # theoretical arrival time of the next request

    async def acquire(self) -> float:
        """Take one token, waiting if the budget is spent; returns the seconds waited."""
        if not self.interval:
            return 0.0
        now = self._clock()
        tat = max(self._tat if self._tat is not None else now, now)
        wait = tat - now - self.tolerance
        self._tat = tat + self.interval  # reserved before awaiting: concurrent callers queue in order
        if wait > 0:
            await self._sleep(wait)
            return wait
        return 0.0


_SHARED_BUDGETS: dict[tuple[Any, ...], RequestBudget] = {}


def shared_budget(endpoint: tuple[Any, ...], requests_per_minute: float | None) -> RequestBudget:
    """The request budget of one endpoint and model in this process, shared by every run that calls it (a
    service's quota is per model and key, not per run). ``endpoint`` identifies the quota, e.g. ``(provider,
    model, base_url)``; ``requests_per_minute`` None gives a fresh unlimited budget, 0 or less ConfigError."""
    if requests_per_minute is None:
        return RequestBudget(None)
    key = (*endpoint, float(requests_per_minute))
    return _SHARED_BUDGETS.setdefault(key, RequestBudget(requests_per_minute))


async def call_with_retries(provider: Provider, request: PromptRequest, config: GenerateConfig, *,
                            max_attempts: int, budget: RequestBudget, seed: int,
                            method: str = "complete") -> tuple[Any, int]:
    """Call ``provider.<method>`` (``complete`` or ``label_scores``) until it answers, a failure is not
    retryable, or ``max_attempts`` (1 = no retry) run out. Every attempt draws one token from ``budget``;
    ``seed`` seeds the back-off jitter. Returns ``(completion, attempts)`` (``completion.latency_s`` measured
    here when the provider left it None); raises the last failure, with an ``attempts`` attribute.
    """
    if method not in ("complete", "label_scores"):
        raise ValueError(f"method {method!r}: use 'complete' or 'label_scores'")
    attempts = 0
    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(max_attempts), wait=RetryAfterWait(seed=seed),
        # worth another attempt: transient failures (5xx, timeouts, 429) and no server yet
        retry=tenacity.retry_if_exception_type((TransientProviderError, ProviderUnreachableError)),
        sleep=lambda s: retry_sleep(s), reraise=True)
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                await budget.acquire()
                started = time.perf_counter()
                completion = await getattr(provider, method)(request, config)
                if completion.latency_s is None:
                    completion.latency_s = time.perf_counter() - started
    except Exception as exc:  # the caller records it; the attempt count travels with it
        exc.attempts = attempts  # type: ignore[attr-defined]
        raise
    return completion, attempts
