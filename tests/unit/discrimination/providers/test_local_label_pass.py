"""Label scores of the ``local`` provider by one transformers forward pass (the default ``label_backend``).

The real packaged model (SmolLM2-135M GGUF, dequantised to float32 by transformers; loaded once per module from the
converted copy in the test cache, ~30-90 s the first time). Checked against a direct computation from the model's
logits, against llama.cpp's forced tokens, and the prompt tokens it stores against a likelihood scorer's own pass.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from llmdisc import LABELS
from llmdisc.discrimination.cache import request_cache_key
from llmdisc.discrimination.cache import TokenCache, token_key
from llmdisc.discrimination.providers.base import ANSWER_PREFIX, GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.embedded import EmbeddedProvider
from llmdisc.discrimination.providers.errors import ProviderConfigError

pytest.importorskip("transformers")

SHORT = PromptRequest(system="You judge tables.", user="Is this table REAL or SYNTHETIC?\n\n| a |\n|---|\n| 1 |")
CONFIG = GenerateConfig(temperature=0.0, seed=0)


@pytest.fixture(scope="module")
def provider():
    return EmbeddedProvider()


@pytest.fixture(scope="module")
def scores(provider):
    asyncio.run(provider.check_label_scores())
    return asyncio.run(provider.label_scores(SHORT, CONFIG))


def test_the_default_route_is_transformers_and_it_is_in_the_label_score_cache_key(provider):
    assert provider.label_backend == "transformers"
    other = EmbeddedProvider(label_backend="llamacpp")
    ours, theirs = provider.identity(), other.identity()
    assert ours["label_method"] == "transformers-float32" and "label_method" not in theirs
    keys = {kind: (request_cache_key(ours, SHORT, CONFIG, replicate=0, kind=kind),
                   request_cache_key(theirs, SHORT, CONFIG, replicate=0, kind=kind))
            for kind in ("completion", "label_scores")}
    assert keys["completion"][0] == keys["completion"][1]  # verdicts are the same llama.cpp call either way
    assert keys["label_scores"][0] != keys["label_scores"][1]  # label scores differ by method


def test_label_scores_equal_a_direct_computation_from_the_logits(provider, scores):
    import torch

    scorer = provider._transformers_scorer()
    assert scores.invalid_reason is None and scores.model_version == provider.model_digest()
    opened = scorer.tokenizer.apply_chat_template(
        [{"role": "system", "content": SHORT.system}, {"role": "user", "content": SHORT.user}],
        tokenize=False, add_generation_prompt=True)
    context, _ = scorer.tokenize(opened + ANSWER_PREFIX)
    for label in LABELS:
        full, _ = scorer.tokenize(opened + ANSWER_PREFIX + label)
        assert full[len(context):] == scores.metadata["label_token_ids"][label]
        logprobs = torch.log_softmax(scorer.logits(full).double(), dim=-1)
        direct = sum(float(logprobs[i - 1, full[i]]) for i in range(len(context), len(full)))
        assert scores.logprobs[label] == pytest.approx(direct, abs=1e-4)
    assert scores.n_tokens["SYNTHETIC"] > 1
    first = scores.metadata["first_token_logprobs"]
    assert scores.label_mass == pytest.approx(sum(math.exp(v) for v in first.values()))
    assert scores.prompt_tokens == len(context)


def test_scores_agree_with_llamacpp_forced_tokens(scores):
    forced = asyncio.run(EmbeddedProvider(label_backend="llamacpp").label_scores(SHORT, CONFIG))
    # Q4_1 arithmetic in llama.cpp against float32: measured 0.03-0.23 nats per label on short prompts
    for label in LABELS:
        assert abs(forced.logprobs[label] - scores.logprobs[label]) < 0.3
    assert (forced.logprobs["SYNTHETIC"] > forced.logprobs["REAL"]) == (
        scores.logprobs["SYNTHETIC"] > scores.logprobs["REAL"])
    assert forced.metadata["label_token_ids"] == scores.metadata["label_token_ids"]


def test_the_prompt_tokens_are_stored_and_answer_a_likelihood_scorer(provider, scores):
    scorer = provider._transformers_scorer()
    prompt_text = scorer.chat_text(SHORT.system, SHORT.user)
    key = token_key(text=prompt_text, backend=scorer.backend, model_digest=scorer.model_digest)
    stored = scorer.token_cache.get(key)
    assert stored is not None and scores.metadata["prompt_tokens_stored"]
    ids, values = stored
    assert ids == scorer.tokenize(prompt_text)[0] and math.isnan(values[0])
    served = scorer.token_logprobs(prompt_text, start_char=prompt_text.index("| a |"))
    assert served.extras["token_cache"] == "hit"
    saved, scorer.token_cache = scorer.token_cache, TokenCache(enabled=False)
    try:
        computed = scorer.token_logprobs(prompt_text, start_char=prompt_text.index("| a |"))
    finally:
        scorer.token_cache = saved
    assert computed.extras["token_cache"] == "miss"
    pairs = [(a, b) for a, b in zip(served.logprobs, computed.logprobs) if not math.isnan(b)]
    assert pairs and all(a == pytest.approx(b, abs=1e-4) for a, b in pairs)
    assert sum(math.isnan(a) for a in served.logprobs) == sum(math.isnan(b) for b in computed.logprobs)


def test_scores_are_reproducible_whatever_ran_before(provider, scores):
    other = PromptRequest(system="You judge tables.", user="Is this table REAL or SYNTHETIC?\n\n| b |\n|---|\n| 7 |")
    asyncio.run(provider.label_scores(other, CONFIG))
    again = asyncio.run(provider.label_scores(SHORT, CONFIG))
    assert again.logprobs == pytest.approx(scores.logprobs, abs=1e-9) and again.label_mass == pytest.approx(
        scores.label_mass, abs=1e-9)


def test_a_gguf_path_model_needs_the_llamacpp_route(provider, tmp_path):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(provider.path.read_bytes()[:1024])
    custom = EmbeddedProvider("mine", gguf_path=weights)
    with pytest.raises(ProviderConfigError, match="label_backend='llamacpp'"):
        asyncio.run(custom.check_label_scores())


def test_an_unknown_label_backend_is_refused():
    with pytest.raises(ProviderConfigError, match="label_backend='vllm' is not known.*transformers, transformers-bfloat16, transformers-auto, llamacpp"):
        EmbeddedProvider(label_backend="vllm")


def test_the_bfloat16_route_is_close_to_float32_keyed_apart_and_read_by_its_likelihood_backend(provider, scores,
                                                                                               tmp_path):
    from llmdisc.discrimination.likelihood.configured import open_scorer

    half = EmbeddedProvider(label_backend="transformers-bfloat16", token_cache_dir=tmp_path)
    assert half.identity()["label_method"] == "transformers-bfloat16"
    assert (request_cache_key(half.identity(), SHORT, CONFIG, replicate=0, kind="label_scores")
            != request_cache_key(provider.identity(), SHORT, CONFIG, replicate=0, kind="label_scores"))
    got = asyncio.run(half.label_scores(SHORT, CONFIG))
    assert got.invalid_reason is None and got.metadata["label_backend"] == "transformers-bfloat16"
    assert "bfloat16" in got.metadata["scored"]
    for label in LABELS:  # another precision: close, not equal
        assert got.logprobs[label] == pytest.approx(scores.logprobs[label], abs=0.5)
    assert got.logprobs != scores.logprobs
    prompt_text = half._transformers_scorer().chat_text(SHORT.system, SHORT.user)
    start = prompt_text.index("| a |")
    for backend, expected in (("transformers-bfloat16", "hit"), ("transformers", "miss")):
        scorer = open_scorer(provider.model, backend, threads=1)
        saved, scorer.token_cache = scorer.token_cache, TokenCache(tmp_path)
        try:
            assert scorer.token_logprobs(prompt_text, start_char=start).extras["token_cache"] == expected, backend
        finally:
            scorer.token_cache = saved
