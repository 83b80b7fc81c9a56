"""Label scores of the ``local`` provider by llama.cpp forced tokens (``label_backend="llamacpp"``): the real
embedded model (SmolLM2-135M through xllamacpp). The default transformers route: ``test_local_label_pass.py``.

The model is loaded once per module (seconds). The agreement test loads the same GGUF a second time
through transformers (dequantised to float32, an independent implementation) and is marked slow.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from llmdisc import LABELS
from llmdisc.discrimination.providers.base import ANSWER_PREFIX, GenerateConfig, PromptRequest
from llmdisc.discrimination.providers.embedded import EmbeddedProvider
from llmdisc.discrimination.providers.label_positions import common_prefix_length
from llmdisc.discrimination.providers.errors import ProviderRequestError

SHORT = PromptRequest(system="You judge tables.", user="Is this table REAL or SYNTHETIC?\n\n| a |\n|---|\n| 1 |")
CONFIG = GenerateConfig(temperature=0.0, seed=0)


@pytest.fixture(scope="module")
def provider():
    local = EmbeddedProvider(label_backend="llamacpp")
    local.loaded()
    return local


@pytest.fixture(scope="module")
def scores(provider):
    return asyncio.run(provider.label_scores(SHORT, CONFIG))


def test_both_labels_get_their_full_token_sequence_scored(provider, scores):
    assert scores.invalid_reason is None and scores.model_version == provider.model_digest()
    ids = scores.metadata["label_token_ids"]
    assert scores.n_tokens == {label: len(ids[label]) for label in LABELS}
    assert scores.n_tokens["SYNTHETIC"] > 1  # multi-token: a first-token score would not be the label's
    for label in LABELS:
        assert math.isfinite(scores.logprobs[label]) and scores.logprobs[label] < 0
        assert scores.logprobs[label] <= scores.metadata["first_token_logprobs"][label] + 1e-9  # more tokens, less prob
    first = scores.metadata["first_token_logprobs"]
    assert scores.label_mass == pytest.approx(sum(math.exp(v) for v in first.values()))
    assert 0 < scores.label_mass <= 1


def test_the_prompt_is_evaluated_once_and_the_second_label_reuses_it(scores):
    evaluated, cached = scores.metadata["evaluated_prompt_tokens"], scores.metadata["cached_prompt_tokens"]
    assert cached[0] == 0 and evaluated[0] == scores.prompt_tokens  # first label: a fresh evaluation
    assert evaluated[1] == 1 and cached[1] == scores.prompt_tokens - 1  # second: only the last token again


def test_the_first_position_agrees_between_the_fresh_and_the_cached_evaluation(scores):
    listed = dict((token, value) for token, value in scores.metadata["top_tokens"])
    first = scores.metadata["first_token_logprobs"]
    # The second label's first token comes from the cached call; the fresh call's top list has it too.
    assert {"RE", "SY"} <= set(listed)
    assert first["REAL"] == pytest.approx(listed["RE"], abs=1e-3)
    assert first["SYNTHETIC"] == pytest.approx(listed["SY"], abs=1e-3)


def test_scores_are_reproducible_whatever_ran_before(provider, scores):
    other = PromptRequest(system="You judge tables.", user="Is this table REAL or SYNTHETIC?\n\n| b |\n|---|\n| 7 |")
    asyncio.run(provider.label_scores(other, CONFIG))
    again = asyncio.run(provider.label_scores(SHORT, CONFIG))
    assert again.logprobs == scores.logprobs and again.label_mass == scores.label_mass


def test_the_chat_template_accepts_the_prefill(provider):
    asyncio.run(provider.check_label_scores())


def test_a_template_that_does_not_continue_the_prefill_is_a_named_error(provider):
    with pytest.raises(ProviderRequestError, match="does not continue an assistant prefill.*fix: use scoring: verdict"):
        provider._require_prefill_accepted({"usage": {"prompt_tokens": 50}}, list(range(46)))


def test_common_prefix_of_token_sequences():
    assert common_prefix_length([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix_length([1, 2, 3], [1, 9, 3, 4]) == 1


@pytest.mark.slow
def test_label_scores_agree_with_transformers_on_the_same_gguf(provider, scores):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = provider.path
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                              dtype=torch.float32)
    model.eval()
    loaded = provider.loaded()
    rendered = provider._rendered(loaded, [{"role": "system", "content": SHORT.system},
                                           {"role": "user", "content": SHORT.user}])
    context = tokenizer(rendered + ANSWER_PREFIX, add_special_tokens=False)["input_ids"]
    independent = {}
    for label in LABELS:
        full = tokenizer(rendered + ANSWER_PREFIX + label, add_special_tokens=False)["input_ids"]
        assert full[len(context):] == scores.metadata["label_token_ids"][label]  # same tokens, in context
        with torch.no_grad():
            logprobs = torch.log_softmax(model(torch.tensor([full])).logits[0].double(), dim=-1)
        independent[label] = sum(float(logprobs[i - 1, full[i]]) for i in range(len(context), len(full)))
    # Q4_1 weights: llama.cpp multiplies them quantised (activations in q8_1), transformers dequantised to
    # float32. Measured on four short prompts: 0.03-0.23 nats per label, 0.004-0.17 on the log-odds.
    for label in LABELS:
        assert abs(independent[label] - scores.logprobs[label]) < 0.3
        assert abs(independent[label] - scores.logprobs[label]) < 0.08 * abs(independent[label])
    odds = scores.logprobs["SYNTHETIC"] - scores.logprobs["REAL"]
    independent_odds = independent["SYNTHETIC"] - independent["REAL"]
    assert abs(independent_odds - odds) < 0.25
    assert (independent_odds > 0) == (odds > 0)  # both prefer the same label
