"""Content-addressed store of whole-prompt token log-probabilities, so one forward pass serves two stages.

When the ``local`` provider scores a trial's labels through transformers
(:mod:`~llmdisc.discrimination.likelihood.prompt_pass`), the same forward pass gives the log-probability of every
prompt token, the shown table's included. It stores them here, keyed on the exact prompt text, the backend and the
weights' sha256; a likelihood run (notebook 09) that scores a sample inside the same C1 prompt then reads the
table's tokens from here instead of running the model again (:meth:`~.base.LikelihoodScorer.token_logprobs`).

Storage: ``<cache>/likelihood-tokens/<first two hex digits>.jsonl`` (``$LLMDISC_CACHE_DIR`` or ``.llmdisc-cache/``),
one ``{"key", "value": {"token_ids", "logprobs"}}`` per line, NaN stored as null, in a
:class:`~llmdisc.discrimination.cache.ShardedJsonlStore` (locked, fsynced appends; a corrupt or torn line is skipped:
the cache is an optimisation, a miss runs the model).
"""

from __future__ import annotations

import math
from pathlib import Path

from llmdisc.discrimination.cache import ShardedJsonlStore, default_cache_dir
from llmdisc.manifest import sha256_json


def token_key(*, text: str, backend: str, model_digest: str) -> str:
    """sha256 of what the token log-probabilities of ``text`` depend on (canonical JSON)."""
    return sha256_json({"text": text, "backend": backend, "model_digest": model_digest})


def _is_tokens(value: object) -> bool:
    """True for a stored ``{"token_ids", "logprobs"}`` value (anything else reads as a miss)."""
    return isinstance(value, dict) and all(isinstance(value.get(part), list) for part in ("token_ids", "logprobs"))


class TokenCache(ShardedJsonlStore):
    """Get and put the token ids and log-probabilities of whole texts by :func:`token_key`.

    Args:
        path: Folder of the shards (default ``<cache>/likelihood-tokens``).
        enabled: False turns every lookup into a miss and every store into nothing.
    """

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
        """Store one text's tokens (appended to its shard under its lock, fsynced)."""
        if len(token_ids) != len(logprobs):
            raise ValueError(f"{len(token_ids)} token ids but {len(logprobs)} log-probabilities")
        self.write(key, {"token_ids": [int(t) for t in token_ids],
                         "logprobs": [None if not math.isfinite(v) else float(v) for v in logprobs]})
