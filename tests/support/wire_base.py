"""The machinery shared by the loopback wire servers: a threaded HTTP server, a request log, scripted faults.

A :class:`WireServer` listens on ``127.0.0.1`` at a free port (port 0), records every request it receives with
the time it arrived (:attr:`WireServer.requests`) and answers the generation endpoint of its protocol from a
*responder* (a callable from :class:`WireChat` to answer text). Faults queued with :meth:`WireServer.add_faults`
are consumed one per generation request, in order, before answering normally again:

- :meth:`Fault.rate_limit` — HTTP 429 with ``Retry-After`` (Gemini: a ``RetryInfo`` detail instead, as Google sends);
- :meth:`Fault.server_error` / :meth:`Fault.http_error` — any status with the protocol's error body;
- :meth:`Fault.slow` — wait ``delay_s`` seconds before answering (drive a client timeout);
- :meth:`Fault.drop` — read the request, then close the socket without a response;
- :meth:`Fault.malformed` — HTTP 200 whose JSON body is cut off mid-object.

``latency_s`` delays every generation answer (the trial runner's concurrency benchmark uses 0.5 s).
Protocol subclasses live in :mod:`support.wire_servers`.

Token log-probabilities: a responder may return a :class:`WireAnswer` whose ``tokens`` script every
generated token with its log-probability and top-k alternatives (:func:`scripted_label_answer` builds the
usual ones: each label's first-token probability, a label missing from the top-k, empty top-k lists, a
quote that merges with the label). Each server sends them in its service's own shape when the request
asks for log-probabilities, cut to the ``top_logprobs`` asked for and to the answer-token limit, and
continues an assistant prefill the way the service does. An answer without a script is split into word
and punctuation tokens of log-probability 0 with no alternatives but themselves.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Literal

FaultKind = Literal["status", "slow", "drop", "malformed"]


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour of the next generation request (build with the class methods)."""

    kind: FaultKind
    status: int = 500
    message: str = "injected fault"
    retry_after: float | None = None
    """Seconds sent with a 429 (``Retry-After`` header; Gemini's ``RetryInfo`` body); None sends neither."""
    delay_s: float = 0.0

    @classmethod
    def rate_limit(cls, retry_after: float | None = 7.0, message: str = "Rate limit reached") -> Fault:
        """HTTP 429 with ``Retry-After: <retry_after>`` seconds."""
        return cls("status", status=429, message=message, retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500, message: str = "Internal server error") -> Fault:
        """An HTTP 5xx with the protocol's error body."""
        return cls("status", status=status, message=message)

    @classmethod
    def http_error(cls, status: int, message: str = "injected error") -> Fault:
        """Any HTTP error status (400, 401, 403, 404, …) with the protocol's error body."""
        return cls("status", status=status, message=message)

    @classmethod
    def slow(cls, delay_s: float) -> Fault:
        """Answer normally, but only after ``delay_s`` seconds."""
        return cls("slow", delay_s=delay_s)

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection after reading the request, without any response."""
        return cls("drop")

    @classmethod
    def malformed(cls) -> Fault:
        """HTTP 200 with ``Content-Type: application/json`` and a truncated JSON body."""
        return cls("malformed")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The JSON body parsed, or None (no body, or not JSON)."""
    received_s: float = 0.0
    """When the request had been read (:func:`time.monotonic`, seconds): tests measure the spacing of calls."""


@dataclass(frozen=True)
class WireChat:
    """A generation request in protocol-neutral form, handed to the responder."""

    model: str
    system: str | None
    user: str
    json_schema: dict[str, Any] | None
    temperature: float | None
    seed: int | None
    max_tokens: int | None


@dataclass(frozen=True)
class WireToken:
    """One scripted generated token: its text, natural-log probability and top-k alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()
    """``(token, logprob)`` alternatives, most probable first (the chosen one included where the service would)."""


@dataclass(frozen=True)
class WireAnswer:
    """What a responder may return instead of a plain string, to report token counts and a model version."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model_version: str | None = None
    tokens: tuple[WireToken, ...] | None = None
    """The answer's tokens with log-probabilities (their texts join to ``text``); None: split ``text`` plainly."""


Responder = Callable[[WireChat], "str | WireAnswer"]

VALID_VERDICT = json.dumps({"verdict": "REAL", "confidence": 70, "reasoning": "a fixed answer from the loopback "
                            "test server", "red_flags": [], "supporting_evidence": ["plausible values"]})
"""A schema-valid answer: the default reply of every wire server."""


_LABEL_PIECES = {"REAL": ("RE", "AL"), "SYNTHETIC": ("SY", "NTH", "ETIC")}
"""How the scripted answers split each label into tokens (multi-token, as real vocabularies do)."""


def plain_tokens(text: str) -> tuple[WireToken, ...]:
    """Split ``text`` into word, space and punctuation tokens of log-probability 0 (alternatives: themselves)."""
    import re

    pieces = re.findall(r"\s*[A-Za-z0-9_]+|\s*[^\sA-Za-z0-9_]+|\s+", text)
    return tuple(WireToken(piece, 0.0, ((piece, 0.0),)) for piece in pieces)


def scripted_label_answer(logprobs: dict[str, float] | None = None, *, omit: str | None = None,
                          empty_top: bool = False, merge_quote: bool = False,
                          extra: tuple[tuple[str, float], ...] = (("The", -4.0), ("1", -5.0)),
                          nan: bool = False) -> WireAnswer:
    """A valid verdict answer whose label position carries chosen log-probabilities.

    Args:
        logprobs: Log-probability of each label's first token at the label position (default REAL -0.4,
            SYNTHETIC -1.2); the more probable label is the one generated.
        omit: Leave this label out of the top-k list (a label the service does not list).
        empty_top: Send empty top-k lists at every position.
        merge_quote: The opening quote and the label's first piece are one token (`` "RE``), as some
            vocabularies tokenise it.
        extra: Other alternatives listed at the label position.
        nan: Send the non-chosen label's log-probability as NaN.

    Returns:
        A :class:`WireAnswer` whose text is a schema-valid answer and whose ``tokens`` script it.
    """
    import json as _json
    import math as _math

    values = dict(logprobs or {"REAL": -0.4, "SYNTHETIC": -1.2})
    chosen = max(values, key=lambda label: values[label])
    other = next(label for label in values if label != chosen)
    if nan:
        values[other] = _math.nan
    quote = ' "' if merge_quote else ""
    label_top = [(quote + _LABEL_PIECES[label][0], values[label]) for label in values if label != omit]
    label_top += list(extra)
    label_top.sort(key=lambda item: -item[1] if _math.isfinite(item[1]) else 0.0)
    head = [WireToken('{"', -0.001), WireToken("verdict", -0.001), WireToken('":', -0.001)]
    if not merge_quote:
        head.append(WireToken(' "', -0.002))
    first = WireToken(quote + _LABEL_PIECES[chosen][0], values[chosen], tuple(label_top))
    rest = [WireToken(piece, -0.01) for piece in _LABEL_PIECES[chosen][1:]]
    body = _json.dumps({"verdict": chosen, "confidence": 70, "reasoning": "scripted", "red_flags": [],
                        "supporting_evidence": []})
    tail = plain_tokens(body[len('{"verdict": "' + chosen):])
    tokens = [*head, first, *rest, *tail]
    tokens = [WireToken(t.token, t.logprob, () if empty_top else (t.top or ((t.token, t.logprob),)))
              for t in tokens]
    return WireAnswer(text="".join(t.token for t in tokens), tokens=tuple(tokens))


def answer_tokens(answer: WireAnswer, *, prefill: str | None, max_tokens: int | None,
                  top_k: int) -> tuple[list[WireToken], bool]:
    """The tokens a server sends for ``answer``: after a prefill, within the token limit, top-k cut.

    Args:
        answer: The responder's answer (scripted tokens or plain text).
        prefill: Assistant text the service continues (its tokens are not generated again), or None.
        max_tokens: Answer-token limit of the request (None: no limit).
        top_k: Alternatives per position the request asked for.

    Returns:
        ``(tokens, truncated)``: truncated is True when the limit cut the answer.
    """
    tokens = list(answer.tokens if answer.tokens is not None else plain_tokens(answer.text))
    if prefill:
        consumed = ""
        while tokens and len(consumed) < len(prefill) and prefill.startswith(consumed + tokens[0].token):
            consumed += tokens.pop(0).token
    truncated = max_tokens is not None and len(tokens) > max_tokens
    if truncated:
        tokens = tokens[:max_tokens]
    return [WireToken(t.token, t.logprob, t.top[:top_k]) for t in tokens], truncated


def fixed_answer(text: str = VALID_VERDICT) -> Responder:
    """Return a responder that answers every request with ``text``."""
    return lambda chat: text


def rough_token_count(text: str | None) -> int:
    """Whitespace token count: a stand-in for the usage figures a real service reports."""
    return len((text or "").split())


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        record = RecordedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body,
                                 received_s=time.monotonic())
        self.server.wire._record(record)
        self.server.wire._dispatch(self, record)

    do_GET = _handle
    do_POST = _handle
    do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    wire: WireServer


class WireServer:
    """Base of the loopback servers: start/stop, request log, faults, JSON replies. Use as a context manager.

    Args:
        responder: Callable from :class:`WireChat` to the answer text (default: a fixed valid verdict).
        models: Model ids the server "has"; others get the protocol's 404.
        api_key: If set, requests must carry it (as the protocol sends keys) or get the protocol's auth error.
        latency_s: Seconds every generation answer is delayed.
        faults: Faults queued from the start (see :meth:`add_faults`).
    """

    generation_paths: tuple[str, ...] = ()

    def __init__(self, *, responder: Responder | None = None, models: tuple[str, ...] | list[str] = ("test-model",),
                 api_key: str | None = None, latency_s: float = 0.0, faults: tuple[Fault, ...] = ()) -> None:
        self.responder: Responder = responder or fixed_answer()
        self.models = list(models)
        self.api_key = api_key
        self.latency_s = latency_s
        self._faults: deque[Fault] = deque(faults)
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle --------------------------------------------------------------------------------------
    def start(self) -> WireServer:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.wire = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port bound (only while started)."""
        if self._httpd is None:
            raise RuntimeError("the wire server is not started; use it in a `with` block or call start()")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (protocol subclasses may add a path such as ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- faults and log ----------------------------------------------------------------------------------
    def add_faults(self, *faults: Fault) -> None:
        """Queue faults; each generation request consumes the next one."""
        with self._lock:
            self._faults.extend(faults)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(record)

    @property
    def generation_requests(self) -> list[RecordedRequest]:
        """The logged requests that asked for a generation (not model listings)."""
        with self._lock:
            return [r for r in self.requests if self._is_generation(r.path)]

    def _is_generation(self, path: str) -> bool:
        return any(path.endswith(p) for p in self.generation_paths)

    # -- replies -----------------------------------------------------------------------------------------
    @staticmethod
    def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
                  headers: dict[str, str] | None = None) -> None:
        """Send ``payload`` as a JSON response with ``Content-Length``."""
        data = json.dumps(payload).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def run_generation(self, handler: BaseHTTPRequestHandler, chat: WireChat,
                       reply: Callable[[WireAnswer], Any]) -> None:
        """Apply the next fault (if any) and the latency, then send ``reply(answer)`` as JSON."""
        fault = self._next_fault()
        if fault is not None and fault.kind == "drop":
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.kind == "status":
            self.send_error_reply(handler, fault.status, fault.message, fault.retry_after)
            return
        delay = self.latency_s + (fault.delay_s if fault is not None and fault.kind == "slow" else 0.0)
        if delay:
            time.sleep(delay)
        if fault is not None and fault.kind == "malformed":
            data = b'{"truncated": [{"mess'
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        answer = self.responder(chat)
        if isinstance(answer, str):
            answer = WireAnswer(answer)
        if answer.prompt_tokens is None:
            answer = WireAnswer(answer.text, rough_token_count(f"{chat.system or ''} {chat.user}"),
                                rough_token_count(answer.text), answer.model_version, answer.tokens)
        try:
            self.send_json(handler, 200, reply(answer))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    # -- protocol hooks ----------------------------------------------------------------------------------
    def _dispatch(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        raise NotImplementedError

    def send_error_reply(self, handler: BaseHTTPRequestHandler, status: int, message: str,
                         retry_after: float | None = None) -> None:
        """Send an error in the protocol's format (overridden per protocol)."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        self.send_json(handler, status, {"error": message}, headers)


def answer_from_provider(provider: Any, config: Any = None) -> Responder:
    """Return a responder that asks a :class:`~llmdisc.discrimination.providers.base.Provider` (e.g. the embedded model).

    The provider's coroutine runs in a fresh event loop in the server's request thread, so an Ollama or
    OpenAI wire server can front the embedded model for end-to-end tests of the real client libraries.
    """
    import asyncio

    from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest

    def respond(chat: WireChat) -> WireAnswer:
        request = PromptRequest(system=chat.system or "", user=chat.user, json_schema=chat.json_schema)
        cfg = config or GenerateConfig(temperature=chat.temperature or 0.0, seed=chat.seed or 0,
                                       max_tokens=chat.max_tokens or 512)
        completion = asyncio.run(provider.complete(request, cfg))
        return WireAnswer(completion.text, completion.prompt_tokens, completion.completion_tokens,
                          completion.model_version)

    return respond

