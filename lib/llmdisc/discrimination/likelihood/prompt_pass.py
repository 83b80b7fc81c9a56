"""One forward pass of a trial's prompt: both labels' scores and the log-probability of every prompt token.

The ``local`` provider's label scores (``label_backend="transformers"``) come from :func:`prompt_pass`: one pass
over the chat-templated prompt with the answer opened as ``{"verdict": "`` gives each label's first token; each
label's remaining tokens run on the KV cache (cropped back after each), and the hidden states of the prompt's own
positions give ``log P(t_i | t_<i)`` for every prompt token at the cost of the output layer only. Those go to the
:class:`~llmdisc.discrimination.cache.TokenCache`, so notebook 09's likelihood run need not run the model again.
Transformers because llama.cpp's server cannot return prompt-token probabilities (docs/measurements.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from llmdisc import LABELS
from llmdisc.discrimination.likelihood.base import ContextOverflowError
from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer, head_logprobs
from llmdisc.discrimination.providers.base import ANSWER_PREFIX
from llmdisc.discrimination.providers.label_positions import label_token_ids
from llmdisc.errors import ConfigError

HEAD_CHUNK = 256
"""Positions per output-layer call when scoring the prompt's tokens (bounds the logits held at once)."""
TOP_K = 20
"""Alternatives kept (in the metadata) at the first answer position."""


class PrefillNotContinuedError(ConfigError):
    """The chat template does not render an opened assistant turn as a continuation of the prompt."""


@dataclass
class PromptPass:
    """What one forward pass gave.

    Attributes:
        label_logprobs: ``{label: log P(label tokens | prompt, prefix)}`` in nats; empty when
            :attr:`invalid_reason` is set.
        first_token_logprobs: Log-probability (nats) of each label's first token at the first answer position.
        label_mass: Probability (0-1) the two labels' first tokens hold at that position.
        top_tokens: ``[[token, logprob], ...]``: the :data:`TOP_K` most probable tokens there.
        prompt_text: The prompt without the assistant's turn (what a likelihood run scores).
        prompt_logprobs: ``log P(t_i | t_<i)`` of each prompt token (NaN for the first); empty when the opened
            text does not begin with the prompt's own tokens.
        context_tokens: Tokens of the scored context (prompt, assistant opening and prefix).
        invalid_reason: Why the labels could not be scored, else None.
    """

    label_logprobs: dict[str, float]
    label_token_ids: dict[str, list[int]]
    first_token_logprobs: dict[str, float]
    label_mass: float
    top_tokens: list[list[Any]]
    prompt_text: str
    prompt_token_ids: list[int]
    prompt_logprobs: list[float]
    context_tokens: int
    seconds: float
    invalid_reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)


def opened_chat_text(scorer: TransformersScorer, system: str, user: str) -> tuple[str, str]:
    """``(prompt_text, opened)``: the chat-templated prompt, and the same with the assistant's turn opened.

    Raises:
        PrefillNotContinuedError: ``opened`` does not begin with ``prompt_text`` (this template cannot take a
            prefill as a continuation; the fix is ``scoring: verdict`` or ``label_backend="llamacpp"``).
    """
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    prompt_text = scorer.chat_text(system, user)
    opened = scorer.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if not opened.startswith(prompt_text):
        raise PrefillNotContinuedError(
            f"the chat template of {scorer.model} does not continue the prompt when the assistant's turn opens, so "
            f"its label scores would not be the answer's first value; fix: use scoring: verdict with this model")
    return prompt_text, opened


def prompt_pass(scorer: TransformersScorer, system: str, user: str, *, labels: Sequence[str] = LABELS,
                prefix: str = ANSWER_PREFIX, score_prompt: bool = True) -> PromptPass:
    """Score ``labels`` as the answer's first value and (``score_prompt``) every prompt token, in one pass.

    ``prefix`` opens the answer up to its first value; ``score_prompt`` costs about 15 % of the pass. Labels that
    cannot be scored give :attr:`PromptPass.invalid_reason`, never an exception.

    Raises:
        PrefillNotContinuedError: the chat template does not continue an opened assistant turn.
        ContextOverflowError: prompt plus the longest label exceed the model's context window.
    """
    import torch

    begin = time.perf_counter()
    prompt_text, opened = opened_chat_text(scorer, system, user)
    context_text = opened + prefix
    context_ids, _ = scorer.tokenize(context_text)
    prompt_ids, _ = scorer.tokenize(prompt_text)
    label_ids, reason = label_token_ids(lambda text: scorer.tokenize(text)[0], context_text, context_ids,
                                        labels)
    longest = max((len(ids) for ids in label_ids.values()), default=0)
    if len(context_ids) + longest > scorer.context_length:
        raise ContextOverflowError(
            f"the prompt has {len(context_ids)} tokens (with the answer prefix), more than the "
            f"{scorer.context_length}-token context of {scorer.model}; fix: show fewer rows (n_rows) or use a model "
            "with a longer context")
    shares_prompt = context_ids[:len(prompt_ids)] == prompt_ids
    torch.set_num_threads(scorer.threads)
    decoder, head = scorer.lm.get_decoder(), scorer.lm.get_output_embeddings()
    timings: dict[str, float] = {}
    with torch.inference_mode():
        start = time.perf_counter()
        out = decoder(input_ids=torch.tensor([context_ids], dtype=torch.long), use_cache=True)
        hidden, cache = out.last_hidden_state[0], out.past_key_values
        timings["forward_s"] = time.perf_counter() - start
        start = time.perf_counter()
        last = torch.log_softmax(head(hidden[-1:]).float(), dim=-1)[0]
        top = torch.topk(last, TOP_K)
        top_tokens = [[scorer.tokenizer.convert_ids_to_tokens(int(i)), float(v)]
                      for v, i in zip(top.values.tolist(), top.indices.tolist())]
        label_logprobs: dict[str, float] = {}
        first: dict[str, float] = {}
        for label, ids in label_ids.items() if reason is None else ():
            values = [float(last[ids[0]])]
            if len(ids) > 1:
                step = decoder(input_ids=torch.tensor([ids[:-1]], dtype=torch.long), past_key_values=cache,
                               use_cache=True)
                values += head_logprobs(head, step.last_hidden_state[0], ids[1:], HEAD_CHUNK)
                cache.crop(-(len(ids) - 1))  # remove this label's tokens: back to the prompt, for the next label
            if not all(math.isfinite(v) for v in values):
                reason = f"label {label}: non-finite log-probabilities {values}"
                break
            label_logprobs[label], first[label] = math.fsum(values), values[0]
        timings["labels_s"] = time.perf_counter() - start
        prompt_logprobs: list[float] = []
        if score_prompt and shares_prompt and len(prompt_ids) > 1:
            start = time.perf_counter()
            prompt_logprobs = [math.nan] + head_logprobs(head, hidden[:len(prompt_ids) - 1], prompt_ids[1:],
                                                             HEAD_CHUNK)
            timings["prompt_tokens_s"] = time.perf_counter() - start
    mass = math.nan if reason is not None else min(1.0, sum(math.exp(v) for v in first.values()))
    return PromptPass(
        label_logprobs={} if reason is not None else label_logprobs, label_token_ids=label_ids,
        first_token_logprobs=first, label_mass=mass, top_tokens=top_tokens, prompt_text=prompt_text,
        prompt_token_ids=prompt_ids if prompt_logprobs else [], prompt_logprobs=prompt_logprobs,
        context_tokens=len(context_ids), seconds=time.perf_counter() - begin, invalid_reason=reason,
        timings=timings)
