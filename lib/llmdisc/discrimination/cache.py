"""Content-addressed store of completed LLM responses (modelled on Inspect AI's ``model/_cache.py``).

The key (:func:`cache_key`) is the sha256 of everything that can change an answer. Values are completed responses
only: a failure is never stored (a retry is a fresh call), nor is any secret (the base URL is keyed without
user-info or query). Storage is :class:`ShardedJsonlStore` under :func:`default_cache_dir`, also used by the
likelihood's :class:`ScoreCache` and :class:`TokenCache`.

Modes:
    ``fill`` (default): read hits, store new responses.
    ``offline``: read hits; a miss raises :class:`~llmdisc.errors.CacheMissError` (reproduction without keys).
    ``refresh``: ignore hits, store new responses (they supersede the old ones).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import math
import os
import threading
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from llmdisc.discrimination.providers.base import (ANSWER_PREFIX, Completion, GenerateConfig, LabelScores,
                                                  PromptRequest)
from llmdisc.errors import CacheMissError, ConfigError, LlmdiscWarning
from llmdisc.manifest import sha256_json
from llmdisc.paths import in_checkout, project_root, relative_to_root

CACHE_MODES = ("fill", "offline", "refresh")
CACHE_DIR_ENV = "LLMDISC_CACHE_DIR"
DEFAULT_CACHE_DIRNAME = ".llmdisc-cache"


def default_cache_dir() -> Path:
    """``$LLMDISC_CACHE_DIR`` if set, else ``<project root>/.llmdisc-cache`` in a clone, else (installed from
    a wheel) ``$XDG_CACHE_HOME/llmdisc`` (``~/.cache/llmdisc``): one cache per user, never inside the
    environment's site-packages."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    if in_checkout() or os.environ.get("LLMDISC_ROOT"):
        return project_root() / DEFAULT_CACHE_DIRNAME
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "llmdisc"


def public_base_url(base_url: str | None) -> str | None:
    """Return ``base_url`` without user-info, query or fragment (where a key could hide); None stays None."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    host = (parts.hostname or "") + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def cache_key_parts(*, provider: str, model: str, model_digest: str | None, base_url: str | None, system: str,
                    user: str, json_schema: Mapping[str, Any] | None, temperature: float, seed: int,
                    max_tokens: int, replicate: int, sample_seed: int | None = None, kind: str = "completion",
                    label_method: str | None = None) -> dict[str, Any]:
    """The JSON-serialisable dict that :func:`cache_key` hashes (useful to see why two keys differ).

    Args:
        model_digest: weights hash / digest / version known before the call (None if unknown).
        base_url: service URL (credentials and query strings are stripped before hashing).
        replicate: replicate index, so repeated identical calls stay distinct (Inspect's epoch).
        sample_seed: the trial's sample seed (implied by the user text; kept for traceability).
        kind: ``completion`` or ``label_scores`` (the labels' log-probabilities after the answer prefix).
            ``completion`` adds nothing to the key, so keys cached before label scores existed are unchanged.
        label_method: for ``label_scores``, the provider's method when it has several (numbers differ
            slightly).

    Raises:
        ConfigError: unknown ``kind``.
    """
    if kind not in ("completion", "label_scores"):
        raise ConfigError(f"cache key kind {kind!r} is unknown; fix: use 'completion' or 'label_scores'")
    extra = {} if kind == "completion" else {"kind": kind, "answer_prefix": ANSWER_PREFIX}
    if kind == "label_scores" and label_method is not None:
        extra["label_method"] = label_method
    return {**extra, "provider": provider, "model": model, "model_digest": model_digest,
            "base_url": public_base_url(base_url),
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "json_schema": json_schema, "temperature": float(temperature), "seed": int(seed),
            "max_tokens": int(max_tokens), "replicate": int(replicate),
            "sample_seed": None if sample_seed is None else int(sample_seed)}


def cache_key(**parts: Any) -> str:
    """The cache key of one call: sha256 (64 lowercase hex) of :func:`cache_key_parts` ``(**parts)``."""
    return sha256_json(cache_key_parts(**parts))


def request_cache_key(identity: Mapping[str, Any], request: PromptRequest, config: GenerateConfig, *,
                      replicate: int, sample_seed: int | None = None, kind: str = "completion") -> str:
    """:func:`cache_key` of a call described by a provider's ``identity()``, a request and a config."""
    return cache_key(provider=str(identity.get("provider")), model=str(identity.get("model")),
                     model_digest=identity.get("model_digest"), base_url=identity.get("base_url"),
                     system=request.system, user=request.user, json_schema=request.json_schema,
                     temperature=config.temperature, seed=config.seed, max_tokens=config.max_tokens,
                     replicate=replicate, sample_seed=sample_seed, kind=kind,
                     label_method=identity.get("label_method"))


@contextmanager
def locked_append(path: Path) -> Iterator[int]:
    """Open ``path`` (created if missing) read-write for appending; yield its fd under an exclusive
    ``flock``."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the kernel releases it on close, and when the holder is killed
        yield fd
    finally:
        os.close(fd)


def append_line(path: Path, line: bytes) -> None:
    """Append one line (bytes ending in ``\\n``) to ``path`` under its lock, then fsync it.

    A writer killed mid-line leaves a last line without its newline; a newline goes first then, so that the torn
    line stays alone (and is skipped on read) instead of swallowing this one.
    """
    with locked_append(path) as fd:
        end = os.fstat(fd).st_size
        if end and os.pread(fd, 1, end - 1) != b"\n":
            line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)


@dataclass
class CacheStats:
    """Counters of one store since it was opened."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt_lines: int = 0


class ShardedJsonlStore:
    """JSON values by sha256 key in ``<path>/<first two hex digits>.jsonl`` shards, safe against killed writers.

    Each line is ``{"key": ..., "value": ..., "stored": <UTC time>}``; a later line for a key supersedes an earlier
    one. Appends go through :func:`append_line`. Reads skip and count a line that does not parse, never raise: a
    store is an optimisation. A shard is read once, then kept in memory. Thread-safe.

    Args:
        enabled: False: every lookup misses and every store is dropped.
        accept: predicate on a value; a line whose value fails it counts as corrupt (None: any JSON value).
        warn_as: the store's name in a :class:`~llmdisc.errors.LlmdiscWarning` on corrupt lines (None: silent).
    """

    def __init__(self, path: Path | str, *, enabled: bool = True, accept: Callable[[Any], bool] | None = None,
                 warn_as: str | None = None) -> None:
        self.path = Path(path)
        self.enabled = enabled
        self.stats = CacheStats()
        self._accept = accept
        self._warn_as = warn_as
        self._shards: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _entries(self, name: str) -> dict[str, Any]:
        """The entries of shard ``name`` (read from disk on first use; call with the lock held)."""
        entries = self._shards.get(name)
        if entries is not None:
            return entries
        entries, corrupt, file = {}, 0, self.path / f"{name}.jsonl"
        if file.exists():
            with open(file, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_SH)  # a line another process is appending is read whole, not torn
                for raw in handle:  # binary lines split on b"\n" only, as they were written
                    if not raw.strip():
                        continue
                    try:
                        item = json.loads(raw.decode("utf-8"))
                        key, value = item["key"], item["value"]
                        if not isinstance(key, str) or (self._accept is not None and not self._accept(value)):
                            raise ValueError("not an entry")
                    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                        corrupt += 1
                        continue
                    entries[key] = value
        self.stats.corrupt_lines += corrupt
        if corrupt and self._warn_as:
            warnings.warn(f"{self._warn_as} shard {relative_to_root(file)}: {corrupt} corrupt line(s) skipped; "
                          "they count as misses and are rewritten on the next store", LlmdiscWarning, stacklevel=4)
        self._shards[name] = entries
        return entries

    def read(self, key: str) -> Any:
        """The value stored under ``key``, or None (a miss; always None when disabled). Counts hits and misses."""
        with self._lock:
            value = self._entries(key[:2]).get(key) if self.enabled else None
            self.stats.misses += value is None
            self.stats.hits += value is not None
        return value

    def write(self, key: str, value: Any) -> None:
        """Append JSON-serialisable ``value`` under ``key`` (superseding any earlier value), durably; nothing when
        disabled. NaN is written as Python's ``NaN`` and read back as NaN."""
        if not self.enabled:
            return
        line = json.dumps({"key": key, "value": value,
                           "stored": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")},
                          ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            entries = self._entries(key[:2])
            self.path.mkdir(parents=True, exist_ok=True)
            append_line(self.path / f"{key[:2]}.jsonl", line.encode("utf-8"))
            entries[key] = value
            self.stats.writes += 1

    def __len__(self) -> int:
        """Number of distinct keys stored on disk (reads every shard)."""
        with self._lock:
            for shard in sorted(self.path.glob("*.jsonl")) if self.path.is_dir() else ():
                self._entries(shard.stem)
            return sum(len(entries) for entries in self._shards.values())


def score_key(*, text: str, start: int, end: int, backend: str, model_digest: str, fraction: float) -> str:
    """sha256 of what a likelihood sample's scores depend on: the whole text, the sample's span in it, the backend,
    the weights' sha256 and Min-K %'s k."""
    return sha256_json({"text": text, "start": start, "end": end, "backend": backend,
                        "model_digest": model_digest, "min_k_fraction": fraction})


class ScoreCache(ShardedJsonlStore):
    """Likelihood results by key (:func:`score_key`; the joint contrast's own key), shared by every run and the audit.
    ``path`` defaults to ``<cache>/likelihood``."""

    def __init__(self, path: Path | str | None = None, *, enabled: bool = True) -> None:
        super().__init__(Path(path) if path is not None else default_cache_dir() / "likelihood", enabled=enabled)

    get = ShardedJsonlStore.read
    put = ShardedJsonlStore.write


def token_key(*, text: str, backend: str, model_digest: str) -> str:
    """sha256 of what the token log-probabilities of ``text`` depend on (canonical JSON)."""
    return sha256_json({"text": text, "backend": backend, "model_digest": model_digest})


def _is_tokens(value: Any) -> bool:
    """True for a stored ``{"token_ids", "logprobs"}`` value (anything else reads as a miss)."""
    return isinstance(value, dict) and all(isinstance(value.get(part), list) for part in ("token_ids", "logprobs"))


class TokenCache(ShardedJsonlStore):
    """Whole-prompt token ids and log-probabilities by :func:`token_key` (NaN stored as null), so that the forward
    pass of a trial's label scores also serves the likelihood run of the same prompt (notebook 09). ``path``
    defaults to ``<cache>/likelihood-tokens``."""

    def __init__(self, path: Path | str | None = None, *, enabled: bool = True) -> None:
        super().__init__(Path(path) if path is not None else default_cache_dir() / "likelihood-tokens",
                         enabled=enabled, accept=_is_tokens)

    def get(self, key: str) -> tuple[list[int], list[float]] | None:
        """``(token_ids, logprobs)`` stored under ``key`` (NaN where none was computed), or None."""
        value = self.read(key)
        if value is None:
            return None
        return list(value["token_ids"]), [math.nan if v is None else float(v) for v in value["logprobs"]]

    def put(self, key: str, token_ids: list[int], logprobs: list[float]) -> None:
        """Store one text's tokens. Raises ValueError when the two lists differ in length."""
        if len(token_ids) != len(logprobs):
            raise ValueError(f"{len(token_ids)} token ids but {len(logprobs)} log-probabilities")
        self.write(key, {"token_ids": [int(t) for t in token_ids],
                         "logprobs": [None if not math.isfinite(v) else float(v) for v in logprobs]})


def _is_response(value: Any) -> bool:
    """True for a stored completion or label scores (what :class:`ResponseCache` writes)."""
    return isinstance(value, dict) and ("text" in value or "label_scores" in value)


class ResponseCache:
    """Completed responses by :func:`cache_key`, in a :class:`ShardedJsonlStore` under ``path`` (None:
    :func:`default_cache_dir`). ``mode``: ``fill``, ``offline`` or ``refresh`` (module docstring); ConfigError
    for any other."""

    def __init__(self, path: Path | str | None = None, mode: str = "fill") -> None:
        if mode not in CACHE_MODES:
            raise ConfigError(f"cache mode {mode!r} is unknown; fix: use one of {', '.join(CACHE_MODES)}")
        self.path = Path(path) if path is not None else default_cache_dir()
        self.mode = mode
        self._store = ShardedJsonlStore(self.path, accept=_is_response, warn_as="response cache")
        self.stats = self._store.stats

    @property
    def corrupt_lines(self) -> int:
        return self.stats.corrupt_lines

    def _lookup(self, key: str) -> dict[str, Any] | None:
        if self.mode == "refresh":
            self.stats.misses += 1
            return None
        value = self._store.read(key)
        if value is None and self.mode == "offline":
            raise CacheMissError(
                f"offline cache mode: no stored response for key {key[:16]}… in "
                f"{relative_to_root(self.path)}; fix: run once with cache mode 'fill' (needs the "
                "provider), or point LLMDISC_CACHE_DIR at the cache that holds this run's answers")
        return value

    def get_label_scores(self, key: str) -> LabelScores | None:
        """The stored label scores of a ``kind="label_scores"`` key; None on a miss (CacheMissError
        offline)."""
        stored = (self._lookup(key) or {}).get("label_scores")
        if not isinstance(stored, dict):
            return None  # a completion stored under this key by mistake is a miss, never a wrong type
        return LabelScores(
            logprobs={k: (float("nan") if v is None else float(v)) for k, v in stored["logprobs"].items()},
            n_tokens=dict(stored.get("n_tokens") or {}), label_mass=stored.get("label_mass"),
            model=stored.get("model", ""), model_version=stored.get("model_version"),
            prompt_tokens=stored.get("prompt_tokens"), latency_s=stored.get("latency_s"),
            invalid_reason=stored.get("invalid_reason"), metadata={"cache": "read"})

    def put_label_scores(self, key: str, scores: LabelScores) -> None:
        """Store label scores (also invalid ones: the model did answer), without metadata; TypeError for
        anything but a :class:`LabelScores`."""
        if not isinstance(scores, LabelScores):
            raise TypeError(f"only LabelScores can be stored here, got {type(scores).__name__}")
        finite = {k: float(v) if math.isfinite(v) else None for k, v in scores.logprobs.items()}
        self._store.write(key, {"label_scores": {
            "logprobs": finite, "n_tokens": dict(scores.n_tokens), "label_mass": scores.label_mass,
            "model": scores.model, "model_version": scores.model_version, "prompt_tokens": scores.prompt_tokens,
            "latency_s": scores.latency_s, "invalid_reason": scores.invalid_reason}})

    def get(self, key: str) -> Completion | None:
        """The stored completion of ``key``; None on a miss (always in ``refresh`` mode; CacheMissError
        offline)."""
        value = self._lookup(key)
        if value is None or "text" not in value:
            return None
        return Completion(text=value["text"], model=value.get("model", ""),
                          model_version=value.get("model_version"), prompt_tokens=value.get("prompt_tokens"),
                          completion_tokens=value.get("completion_tokens"), latency_s=value.get("latency_s"),
                          metadata={"cache": "read"})

    def put(self, key: str, completion: Completion) -> None:
        """Store a completed response (superseding any earlier one) without the provider's metadata, so that
        nothing secret reaches the file. TypeError for anything but a :class:`Completion`."""
        if not isinstance(completion, Completion):
            raise TypeError(f"only a Completion can be cached, got {type(completion).__name__}; "
                            "failures are never cached so that a retry makes a fresh call")
        self._store.write(key, {"text": completion.text, "model": completion.model,
                                "model_version": completion.model_version,
                                "prompt_tokens": completion.prompt_tokens,
                                "completion_tokens": completion.completion_tokens,
                                "latency_s": completion.latency_s})

    def __len__(self) -> int:  # distinct keys on disk (reads every shard)
        return len(self._store)

    def describe(self) -> dict[str, Any]:
        """Mode, root-relative directory and counters, for manifests and logs."""
        return {"mode": self.mode, "path": relative_to_root(self.path), **asdict(self.stats)}
