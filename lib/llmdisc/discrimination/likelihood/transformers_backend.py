"""Token log-likelihoods through transformers: the packaged GGUF weights dequantised, one forward pass.

transformers reads the GGUF file (``gguf_file=``), dequantises it to float32 and builds the tokenizer from the same
vocabulary, so token ids are llama.cpp's. Nothing is fetched (``HF_HUB_OFFLINE``, ``local_files_only=True``).
Converting takes about a minute and a half, so the converted copy is saved once (safetensors, :func:`converted_dir`,
keyed on the weights' sha256 and the transformers version). Records carry the GGUF file's sha256.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from llmdisc.discrimination.cache import TokenCache, default_cache_dir
from llmdisc.discrimination.likelihood.base import (DEFAULT_LIKELIHOOD_MODEL, LikelihoodScorer, TokenLogprobs,
                                                    llm_threads, verified_gguf)
from llmdisc.discrimination.providers.label_positions import common_prefix_length
from llmdisc.discrimination.providers.packaged import require_model_packages
from llmdisc.errors import ConfigError

_loaded: dict[tuple[str, str], tuple[object, object, float]] = {}
_lowered: dict[tuple[str, str, str], object] = {}
DTYPES = ("float32", "bfloat16")
BACKEND_DTYPES = {"transformers": "float32", "transformers-bfloat16": "bfloat16", "transformers-auto": "auto"}
"""Backend name → dtype; ``transformers-auto`` is resolved on the machine that runs (:func:`resolve_backend`) and
records carry the resolved name."""
_lock = threading.Lock()
TRANSFORMERS_MODULES = ("torch", "transformers", "gguf", "safetensors", "accelerate")


def native_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 in hardware (AMX or AVX-512 BF16): only there is bfloat16 faster than
    float32; emulated it is several times slower (docs/measurements.md)."""
    import torch

    for probe in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        supported = getattr(torch.cpu, probe, None)
        try:
            if supported is not None and supported():
                return True
        except Exception:  # noqa: BLE001 - a probe torch cannot run says nothing about the CPU: keep looking
            continue
    return False


def resolve_dtype(dtype: str) -> str:
    """``auto`` → ``bfloat16`` on a CPU with native bfloat16 (:func:`native_bfloat16`), else ``float32``; any
    other name unchanged."""
    return dtype if dtype != "auto" else "bfloat16" if native_bfloat16() else "float32"


def resolve_backend(backend: str) -> str:
    """``transformers-auto`` → the transformers backend of this CPU's faster precision (``transformers-bfloat16``
    or ``transformers``); any other backend name unchanged."""
    if BACKEND_DTYPES.get(backend) != "auto":
        return backend
    return "transformers" if resolve_dtype("auto") == "float32" else "transformers-bfloat16"


def head_logprobs(head: Any, hidden: Any, targets: list[int], chunk: int) -> list[float]:
    """``log_softmax(head(hidden[i]))[targets[i]]`` (float32) for every row, ``chunk`` rows at a time."""
    import torch

    values: list[float] = []
    for begin in range(0, len(targets), chunk):
        rows = head(hidden[begin:begin + chunk]).float()
        wanted = torch.tensor(targets[begin:begin + chunk], dtype=torch.long)[:, None]
        values.extend(torch.log_softmax(rows, dim=-1).gather(1, wanted)[:, 0].tolist())
    return values


def converted_dir(name: str, digest: str) -> Path:
    """Folder of the converted (safetensors) copy of model ``name`` with weights ``digest``."""
    import transformers

    return default_cache_dir() / "likelihood-models" / f"{name}-{digest[:16]}-transformers-{transformers.__version__}"


def _load(name: str, gguf: Path, digest: str) -> tuple[object, object, float]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    start = time.perf_counter()
    folder = converted_dir(name, digest)
    if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
        from safetensors.torch import load_model
        from transformers import AutoConfig

        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        load_model(model, str(folder / "model.safetensors"))
    else:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True,
                                                     dtype=torch.float32)
        _save_converted(model, tokenizer, folder)
    model.eval()
    return tokenizer, model, time.perf_counter() - start


def _save_converted(model, tokenizer, folder: Path) -> None:  # noqa: ANN001
    import shutil

    from safetensors.torch import save_model

    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    save_model(model, str(tmp / "model.safetensors"))
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # the float copy is not a GGUF-quantized model
    type(model.config).from_dict(config).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if folder.exists():  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(folder)


class TransformersScorer(LikelihoodScorer):
    """Every token's log-probability from one forward pass of the dequantised GGUF model (float32, CPU).

    Args:
        model: A name from :data:`~llmdisc.discrimination.likelihood.base.LIKELIHOOD_MODELS`.
        threads: torch CPU threads (default ``$LLMDISC_LLM_THREADS`` or 2).
        token_cache: Token log-probabilities stored by the ``local`` provider's label scoring (:mod:`~.prompt_pass`):
            a text found there is not run again. ``TokenCache(enabled=False)`` always runs the model.
        dtype: ``float32`` (default) or ``bfloat16`` (logits and log-softmax still float32; records carry the
            backend ``transformers-bfloat16``, so the two never share a cache entry); ``auto``: bfloat16 only
            where native (:func:`native_bfloat16`). Speeds and differences: docs/measurements.md.

    Raises:
        ModelNotFoundError / ProviderConfigError: unknown model, or packages or weights not installed.
        ChecksumError: the GGUF file differs from its pinned sha256.
    """

    backend = "transformers"
    batch_variants = True
    """:meth:`score_variants` runs the variants as one batch (True) or one after another (False)."""

    def __init__(self, model: str = DEFAULT_LIKELIHOOD_MODEL, *, threads: int | None = None,
                 token_cache: TokenCache | None = None, dtype: str = "float32") -> None:
        if dtype not in DTYPES + ("auto",):
            raise ConfigError(f"dtype {dtype!r} is not known; fix: use one of {', '.join(DTYPES)} or auto")
        require_model_packages("the embedded model (transformers)", TRANSFORMERS_MODULES)
        dtype = resolve_dtype(dtype)
        self.dtype = dtype
        if dtype != "float32":
            self.backend = f"transformers-{dtype}"
        self.model = model
        self.token_cache = token_cache if token_cache is not None else TokenCache()
        self.path, self.model_digest = verified_gguf(model)
        self.threads = threads or llm_threads()
        if self.threads < 1:
            raise ConfigError(f"threads={self.threads} must be at least 1; fix: pass threads=2")
        with _lock:
            key = (model, self.model_digest)
            if key not in _loaded:
                _loaded[key] = _load(model, self.path, self.model_digest)
            self.tokenizer, self.lm, self.load_seconds = _loaded[key]
            if dtype != "float32":  # a copy in the lower precision, kept beside the float32 one
                if key + (dtype,) not in _lowered:
                    import copy

                    import torch

                    _lowered[key + (dtype,)] = copy.deepcopy(self.lm).to(getattr(torch, dtype)).eval()
                self.lm = _lowered[key + (dtype,)]
        self.context_length = int(getattr(self.lm.config, "max_position_embeddings", 2048))
        self._prefix: tuple[list[int], object, object] | None = None
        """The kept prefix of :meth:`score_variants`: token ids, KV cache, hidden states."""

    def tokenize(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(encoded["input_ids"]), [tuple(span) for span in encoded["offset_mapping"]]

    def logits(self, token_ids: list[int]):  # noqa: ANN201 - a torch tensor
        """Raw next-token logits, shape ``(len(token_ids), vocab)`` (float32): row i predicts token i+1."""
        import torch

        torch.set_num_threads(self.threads)
        with torch.inference_mode():
            return self.lm(torch.tensor([token_ids], dtype=torch.long)).logits[0].float()

    def _score_ids(self, token_ids: list[int], first: int, stop: int) -> list[float]:
        import torch

        logits = self.logits(token_ids[:stop])
        rows = logits[first - 1:stop - 1]
        targets = torch.tensor(token_ids[first:stop], dtype=torch.long)
        logprobs = torch.log_softmax(rows, dim=-1).gather(1, targets[:, None])[:, 0]
        return logprobs.tolist()

    def score_variants(self, texts: list[str], *, start_chars: list[int], end_chars: list[int | None],
                       batch: bool | None = None) -> list[TokenLogprobs]:
        """Score variants of one text (a sample and its permutations) sharing their beginning.

        The shared tokens up to the first scored one run once and are kept as a KV cache on the scorer, which the
        next call reuses as far as its texts share it. The rest runs as one right-padded batch (so no padding
        precedes a real token) or one variant after another (``batch``; None = :attr:`batch_variants`). Values
        equal :meth:`token_logprobs`'s to float32 rounding (about 1e-5 nats per token; tested).

        Returns one :class:`~.base.TokenLogprobs` per text (``extras``: ``prefix_tokens``, ``prefix_reused``,
        ``tokens_run``; ``seconds``: the call's, divided evenly).
        """
        import copy

        import torch

        if not (len(texts) == len(start_chars) == len(end_chars)) or not texts:
            raise ConfigError(f"{len(texts)} texts, {len(start_chars)} start and {len(end_chars)} end characters; "
                              "fix: pass at least one text and one span per text")
        begin = time.perf_counter()
        batch = self.batch_variants if batch is None else batch
        torch.set_num_threads(self.threads)
        encoded = [self.tokenize(t) for t in texts]
        spans = [self._span(off, a, b, len(t)) for (_, off), t, a, b in zip(encoded, texts, start_chars, end_chars)]
        ids = [e[0][:stop] for e, (_, stop) in zip(encoded, spans)]
        shared = min(common_prefix_length(ids[0], i) for i in ids)
        if shared == 0:  # nothing in common, not even the first token: score them one by one
            return super().score_variants(texts, start_chars=start_chars, end_chars=end_chars)
        prefix = ids[0][:min(shared, min(first for first, _ in spans))]
        cache, hidden, reused, run = self._prefix_state(prefix)
        p = len(prefix)
        tails = [i[p:] for i in ids]
        with torch.inference_mode():
            if batch and len(texts) > 1:
                width = max(len(t) for t in tails)
                if width:
                    past = copy.deepcopy(cache)
                    past.batch_repeat_interleave(len(tails))
                    padded = torch.tensor([t + [0] * (width - len(t)) for t in tails], dtype=torch.long)
                    out = self._run(padded, past)
                    outs = [out[b, :len(t)] for b, t in enumerate(tails)]
                else:
                    outs = [hidden[:0] for _ in tails]
            else:
                outs = [self._run(torch.tensor([tail], dtype=torch.long), copy.deepcopy(cache))[0] if tail
                        else hidden[:0] for tail in tails]
            run += sum(len(t) for t in tails)
            # row r of a variant's states is the state after token p - 1 + r: it predicts token p + r
            values = [head_logprobs(self.lm.lm_head,
                                    torch.cat([hidden[-1:], out[:max(0, stop - p - 1)]])[first - p:stop - p],
                                    tokens[first:stop], 512)
                      for tokens, out, (first, stop) in zip(ids, outs, spans)]
        seconds = (time.perf_counter() - begin) / len(texts)
        return [TokenLogprobs(text=text, token_ids=token_ids, offsets=offsets,
                              logprobs=[math.nan] * first + v + [math.nan] * (len(token_ids) - stop),
                              model=self.model, model_digest=self.model_digest, backend=self.backend,
                              seconds=seconds, extras={"prefix_tokens": p, "prefix_reused": reused,
                                                       "tokens_run": run})
                for text, (token_ids, offsets), (first, stop), v in zip(texts, encoded, spans, values)]

    def _run(self, input_ids, past, chunk: int = 512):  # noqa: ANN001, ANN202 - torch tensors and a cache
        """Final hidden states of ``input_ids`` after the cache ``past`` (extended in place), in chunks so the
        attention scores stay small."""
        import torch

        return torch.cat([self.lm.model(input_ids=input_ids[:, start:start + chunk], past_key_values=past,
                                        use_cache=True).last_hidden_state
                          for start in range(0, input_ids.shape[1], chunk)], dim=1)

    def _prefix_state(self, prefix: list[int]):  # noqa: ANN202 - (DynamicCache, tensor, int, int)
        """``(cache, hidden, reused, run)`` of ``prefix``, reusing the kept cache's shared beginning; the kept
        cache is replaced by this one (callers copy it before extending it)."""
        import torch

        kept_ids, kept_cache, kept_hidden = self._prefix if self._prefix is not None else ([], None, None)
        reused = common_prefix_length(kept_ids, prefix)
        if reused == len(prefix) == len(kept_ids):
            return kept_cache, kept_hidden, reused, 0
        with torch.inference_mode():
            if reused:
                if reused < len(kept_ids):
                    kept_cache.crop(reused - len(kept_ids))  # transformers 5: a negative count of tokens to drop
                cache, hidden = kept_cache, kept_hidden[:reused]
            else:
                cache, hidden = None, None
            rest = prefix[reused:]
            if rest:
                if cache is None:
                    from transformers import DynamicCache

                    cache = DynamicCache(config=self.lm.config)
                out = self._run(torch.tensor([rest], dtype=torch.long), cache)[0]
                hidden = out if hidden is None else torch.cat([hidden, out])
        self._prefix = (list(prefix), cache, hidden)
        return cache, hidden, reused, len(rest)

    def chat_text(self, system: str, user: str) -> str:
        return self.tokenizer.apply_chat_template(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            tokenize=False, add_generation_prompt=False)
