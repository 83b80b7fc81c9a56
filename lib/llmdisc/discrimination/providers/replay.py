"""``replay``: answer from recorded trials, so a run can be reproduced without a key, a server or a model.

A record of a trials JSONL file (or folder) answers a request when its ``prompt_hash`` equals
:func:`~llmdisc.discrimination.providers.base.request_hash` of the request (and its ``model`` the provider's, when
given) and it holds an answer (``raw_text`` not null). Label scores are served the same way from the records'
score fields; a record scored ``invalid`` is replayed invalid.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Literal

from llmdisc import LABELS
from llmdisc.discrimination.providers.base import (Completion, LabelScores, GenerateConfig, PromptRequest,
                                                   Provider, request_hash)
from llmdisc.discrimination.providers.errors import ProviderConfigError
from llmdisc.errors import CacheMissError
from llmdisc.paths import relative_to_root

Pick = Literal["first", "cycle"]


class ReplayProvider(Provider):
    """Serve recorded answers.

    Args:
        model: Only replay records of this model (None: any model).
        path: A trials ``.jsonl`` file or a folder searched recursively for ``*.jsonl``.
        pick: For several records of one prompt: ``first`` in file order, or ``cycle`` in turn (replays a run's
            answer distribution when requests come in the recorded order).

    Raises:
        ProviderConfigError: no ``path``, or an unknown ``pick``.
    """

    name = "replay"
    is_remote = False
    supports_label_scores = True

    def __init__(self, model: str | None = None, *, path: str | Path | None = None, pick: Pick = "first",
                 max_connections: int = 8) -> None:
        super().__init__(model or "*", base_url=None, max_connections=max_connections)
        if path is None:
            raise ProviderConfigError("the replay provider needs path=<trials .jsonl file or folder>; fix: pass "
                                      "the results/trials file of the run to replay")
        if pick not in ("first", "cycle"):
            raise ProviderConfigError(f"pick={pick!r} is not 'first' or 'cycle'; fix: pass one of them")
        self.path = Path(path)
        self.pick: Pick = pick
        self.model_filter = model
        self._index: dict[str, list[dict[str, Any]]] | None = None
        self._score_index: dict[str, list[dict[str, Any]]] = {}
        self._unscored_hashes: set[str] = set()
        self._files: list[Path] = []
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()
        self.skipped_lines = 0
        """Lines that were not JSON objects (counted, not fatal)."""

    def _source_files(self) -> list[Path]:
        if self.path.is_file():
            return [self.path]
        if self.path.is_dir():
            files = sorted(self.path.rglob("*.jsonl"))
            if files:
                return files
            raise ProviderConfigError(f"the replay folder {relative_to_root(self.path)} holds no .jsonl file; fix: "
                                      "point path= at a results/trials folder or file")
        raise ProviderConfigError(f"the replay source {relative_to_root(self.path)} does not exist; fix: pass an "
                                  "existing trials .jsonl file or folder")

    def _load(self) -> dict[str, list[dict[str, Any]]]:
        with self._lock:
            if self._index is None:
                index: dict[str, list[dict[str, Any]]] = {}
                self._files = self._source_files()
                for file in self._files:
                    with open(file, encoding="utf-8") as handle:
                        for line in filter(str.strip, handle):
                            try:
                                record = json.loads(line)
                            except ValueError:
                                record = None  # e.g. a line cut off by a kill: skip, as the cache does
                            if not isinstance(record, dict):
                                self.skipped_lines += 1
                                continue
                            key = str(record.get("prompt_hash") or "")
                            if not key or self.model_filter not in (None, record.get("model")):
                                continue
                            if _has_scores(record):
                                self._score_index.setdefault(key, []).append(record)
                            else:
                                self._unscored_hashes.add(key)
                            if record.get("raw_text") is not None:
                                index.setdefault(key, []).append(record)
                self._index = index
            return self._index

    async def check(self) -> None:
        """The source exists and holds at least one replayable record (of the model, when given)."""
        index = self._load()
        if not index and not self._score_index:
            which = f" of model {self.model_filter!r}" if self.model_filter else ""
            raise CacheMissError(f"{self._describe_files()} hold no replayable record{which} (none with a "
                                 "prompt_hash and raw_text); fix: replay a trials file written by `llmdisc` "
                                 "or drop the model filter")

    def _describe_files(self) -> str:
        names = [relative_to_root(f) for f in self._files[:3]]
        more = f" and {len(self._files) - 3} more" if len(self._files) > 3 else ""
        return ", ".join(names) + more

    async def complete(self, request: PromptRequest, config: GenerateConfig) -> Completion:
        """Return the recorded answer to this exact prompt; CacheMissError (naming hash and files) if none."""
        index = self._load()
        key = request_hash(request)
        matches = index.get(key)
        if not matches:
            which = f" and model {self.model_filter!r}" if self.model_filter else ""
            raise CacheMissError(f"no recorded answer for prompt_hash {key}{which} in {self._describe_files()}; "
                                 "fix: replay the run that produced these prompts (same data, seeds and prompt "
                                 "variant), or use a live provider")
        record = self._pick(matches, key)
        replayed = _replayed(record, self.model)
        replayed["metadata"]["replay_matches"] = len(matches)
        return Completion(text=str(record["raw_text"]), completion_tokens=record.get("completion_tokens"),
                          **replayed)

    async def check_label_scores(self) -> None:
        """The source holds at least one record with label scores (of the model, when given); else
        CacheMissError."""
        self._load()
        if not self._score_index:
            which = f" of model {self.model_filter!r}" if self.model_filter else ""
            raise CacheMissError(f"{self._describe_files()} hold no record{which} with label scores (no "
                                 "logprob_real, logprob_synthetic, label_mass, score_status): the run was scored by "
                                 "verdict; fix: replay a run made with scoring: probability or both, or replay with "
                                 "scoring: verdict")

    async def label_scores(self, request: PromptRequest, config: GenerateConfig) -> LabelScores:
        """Return the recorded label scores of this exact prompt (``pick`` as for answers); CacheMissError
        when no record has the hash or its records hold no label scores (the message says which)."""
        self._load()
        key = request_hash(request)
        matches = self._score_index.get(key)
        if not matches:
            which = f" and model {self.model_filter!r}" if self.model_filter else ""
            if key in self._unscored_hashes:
                raise CacheMissError(f"the records for prompt_hash {key}{which} in {self._describe_files()} hold no "
                                     "label scores (logprob_real, logprob_synthetic and label_mass are absent: that "
                                     "run was scored by verdict); fix: replay a run made with scoring: probability "
                                     "or both, or use a live provider")
            raise CacheMissError(f"no recorded label scores for prompt_hash {key}{which} in {self._describe_files()}; "
                                 "fix: replay the run that produced these prompts (same data, seeds and prompt "
                                 "variant), or use a live provider")
        return _scores_from_record(self._pick(matches, f"scores:{key}"), self.model)

    def _pick(self, matches: list[dict[str, Any]], counter: str) -> dict[str, Any]:
        """The record to serve among ``matches`` by ``pick``; ``counter`` names the prompt's served count."""
        with self._lock:
            served = self._served.get(counter, 0)
            self._served[counter] = served + 1
        return matches[served % len(matches)] if self.pick == "cycle" else matches[0]


_SCORE_LABEL_FIELDS = {"REAL": "logprob_real", "SYNTHETIC": "logprob_synthetic"}


def _has_scores(record: dict[str, Any]) -> bool:
    """Whether a record carries label scores (a score status, or either log-probability)."""
    fields = ("score_status", *_SCORE_LABEL_FIELDS.values())
    return any(record.get(name) is not None for name in fields)


def _number(value: Any) -> float:
    """A recorded number as float; None (invalid scores are recorded as null) becomes NaN, never 0."""
    if isinstance(value, bool):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _scores_from_record(record: dict[str, Any], model: str) -> LabelScores:
    reason = record.get("score_invalid_reason")
    if record.get("score_status") == "invalid" and not reason:
        reason = "recorded as invalid without a reason"
    n_tokens = record.get("label_n_tokens")
    return LabelScores(logprobs={label: _number(record.get(_SCORE_LABEL_FIELDS[label])) for label in LABELS},
                       n_tokens=dict(n_tokens) if isinstance(n_tokens, dict) else {},
                       label_mass=_number(record.get("label_mass")),
                       invalid_reason=str(reason) if reason else None, **_replayed(record, model))


def _replayed(record: dict[str, Any], model: str) -> dict[str, Any]:
    """The fields a replayed answer or score takes from its record (model, digest, prompt tokens, origin)."""
    origin = {"replayed_trial_id": record.get("trial_id"), "replayed_provider": record.get("provider")}
    return {"model": str(record.get("model") or model), "model_version": record.get("model_digest"),
            "prompt_tokens": record.get("prompt_tokens"), "latency_s": 0.0, "metadata": origin}
