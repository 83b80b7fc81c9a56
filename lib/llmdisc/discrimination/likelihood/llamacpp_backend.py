"""Token log-likelihoods through llama.cpp (xllamacpp): forced tokens, one step each.

llama.cpp's server gives log-probabilities of *generated* tokens only, so a grammar of token ids (GBNF ``<[id]>``)
forces the text's own tokens after the prompt; with ``post_sampling_probs=false`` each ``logprob`` is taken before
the grammar, so it is the real one. Tokens and chat template come from the server itself, so the two backends
check each other. Cost (one step per token) and why: docs/measurements.md. Limits: bytes of a multi-byte character
cannot be forced, and generation stops at an end-of-generation token (both refused with the fix).
"""

from __future__ import annotations

from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL, LikelihoodScorer, verified_gguf
from llmdisc.discrimination.providers.packaged import LlamaServer, require_model_packages
from llmdisc.errors import ConfigError, ProviderError

DEFAULT_LLAMACPP_CONTEXT = 8192


class LlamaCppScorer(LikelihoodScorer):
    """Prompt-token log-probabilities from llama.cpp, tokens forced by a token-id grammar (``model``: a name
    from :data:`~.base.LIKELIHOOD_MODELS`; ``n_ctx``: context window allocated, tokens)."""

    backend = "llamacpp"

    def __init__(self, model: str = DEFAULT_LIKELIHOOD_MODEL, *, threads: int = 2,
                 n_ctx: int = DEFAULT_LLAMACPP_CONTEXT) -> None:
        require_model_packages("the embedded model (llama.cpp)", ("xllamacpp",))
        self.model = model
        self.path, self.model_digest = verified_gguf(model)
        self._llama = LlamaServer.start(self.path, threads=threads, n_ctx=n_ctx)  # its own, not the provider's
        self.server, self.load_seconds = self._llama.server, self._llama.load_seconds
        self.context_length = n_ctx
        self._partial: set[int] = set()
        """Token ids whose piece is not valid UTF-8 on its own (bytes of a multi-byte character)."""

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        found = self._llama.post("/tokenize", {"content": text, "add_special": False, "parse_special": True,
                                               "with_pieces": True})["tokens"]
        ids, offsets = [], []
        raw = text.encode("utf-8")
        # character index of every byte offset (a byte inside a multi-byte character maps to that character)
        char_at = [index for index, char in enumerate(text) for _ in char.encode("utf-8")] + [len(text)]
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
        """Log-probabilities of exactly ``forced`` generated after ``prefix`` under a token-id grammar."""
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
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self._llama.post("/apply-template", {"messages": messages, "add_generation_prompt": False})["prompt"]
