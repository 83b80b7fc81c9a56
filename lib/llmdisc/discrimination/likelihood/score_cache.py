"""Content-addressed store of sample scores, shared by every run and the audit (like the response cache).

The key is the sha256 of everything that changes a score: the whole scored text, where the sample sits in it,
the backend, the weights' sha256 and Min-K %'s k. Values are :class:`SampleScores` as dicts plus the prompt's
token count. Storage: ``<cache>/likelihood/<first two hex digits>.jsonl`` (``$LLMDISC_CACHE_DIR`` or
``.llmdisc-cache/``); a corrupt line is skipped (the cache is an optimisation, never a source of truth).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from llmdisc.discrimination.cache import default_cache_dir
from llmdisc.manifest import sha256_json


def score_key(*, text: str, start: int, end: int, backend: str, model_digest: str, fraction: float) -> str:
    """sha256 of the score's inputs (canonical JSON)."""
    return sha256_json({"text": text, "start": start, "end": end, "backend": backend,
                        "model_digest": model_digest, "min_k_fraction": fraction})


class ShardedJsonlStore:
    """Values stored by sha256 key in ``<path>/<first two hex digits>.jsonl`` shards, one ``{"key", "value"}`` per
    line, appended and flushed; a corrupt line is skipped. The common part of :class:`ScoreCache` and
    :class:`~.token_cache.TokenCache`.

    Args:
        path: Folder of the shards.
        enabled: False turns every lookup into a miss and every store into nothing.
    """

    def __init__(self, path: Path, *, enabled: bool = True) -> None:
        self.path = Path(path)
        self.enabled = enabled
        self._shards: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0

    def _shard(self, key: str) -> dict[str, Any]:
        name = key[:2]
        if name not in self._shards:
            entries: dict[str, Any] = {}
            file = self.path / f"{name}.jsonl"
            if file.exists():
                for line in file.read_text(encoding="utf-8").splitlines():
                    try:
                        item = json.loads(line)
                        entries[item["key"]] = item["value"]
                    except (ValueError, KeyError, TypeError):
                        continue
            self._shards[name] = entries
        return self._shards[name]

    def _get(self, key: str) -> Any:
        value = self._shard(key).get(key) if self.enabled else None
        self.hits += value is not None
        self.misses += value is None
        return value

    def _put(self, key: str, value: Any) -> None:
        if not self.enabled:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        self._shard(key)[key] = value
        with open(self.path / f"{key[:2]}.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"key": key, "value": value}, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())


class ScoreCache(ShardedJsonlStore):
    """Get and put sample scores by :func:`score_key`.

    Args:
        path: Folder of the shards (default ``<cache>/likelihood``).
        enabled: False turns every lookup into a miss and every store into nothing.
    """

    def __init__(self, path: Path | str | None = None, *, enabled: bool = True) -> None:
        super().__init__(Path(path) if path is not None else default_cache_dir() / "likelihood", enabled=enabled)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or None."""
        return self._get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a value (appended to its shard, flushed)."""
        self._put(key, value)
