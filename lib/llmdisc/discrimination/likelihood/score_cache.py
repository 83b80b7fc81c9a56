"""Content-addressed store of sample scores, shared by every run and the audit (like the response cache).

The key is the sha256 of everything that changes a score: the whole scored text, where the sample sits in it,
the backend, the weights' sha256 and Min-K %'s k. Values are :class:`SampleScores` as dicts plus the prompt's
token count. Storage: ``<cache>/likelihood/<first two hex digits>.jsonl`` (``$LLMDISC_CACHE_DIR`` or
``.llmdisc-cache/``) in a :class:`~llmdisc.discrimination.cache.ShardedJsonlStore` (locked, fsynced appends; a
corrupt or torn line is skipped: the cache is an optimisation, never a source of truth).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llmdisc.discrimination.cache import ShardedJsonlStore, default_cache_dir
from llmdisc.manifest import sha256_json

__all__ = ["ScoreCache", "ShardedJsonlStore", "score_key"]


def score_key(*, text: str, start: int, end: int, backend: str, model_digest: str, fraction: float) -> str:
    """sha256 of the score's inputs (canonical JSON)."""
    return sha256_json({"text": text, "start": start, "end": end, "backend": backend,
                        "model_digest": model_digest, "min_k_fraction": fraction})


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
        return self.read(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a value (appended to its shard under its lock, fsynced)."""
        self.write(key, value)
