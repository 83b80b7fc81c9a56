"""Token log-likelihoods of texts under the packaged model: both implementations, cell mapping, resumable runs.

The model is loaded once per module (the transformers copy from its converted cache, llama.cpp in its own server).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.likelihood.base import ContextOverflowError
from llmdisc.discrimination.likelihood.llamacpp_backend import LlamaCppScorer
from llmdisc.discrimination.likelihood.records import read_records
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, run_likelihood
from llmdisc.discrimination.likelihood.sample_scores import min_k, score_sample
from llmdisc.discrimination.cache import ScoreCache
from llmdisc.discrimination.likelihood.serialise import csv_text, great_text, markdown_text, place, serialise
from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
from llmdisc.discrimination.prompts import build_prompt, render_table
from llmdisc.discrimination.samples import build_trial_queue
from llmdisc.errors import ConfigError, DataError

SAMPLE = pd.DataFrame({
    "age": [39, 50, 38],
    "workclass": ["State-gov", "Self-emp-not-inc", "Private"],
    "city": ["Zürich", "München", "Köln"],
    "account": [1234567890123, 42, 7],
})


@pytest.fixture(scope="module")
def scorer() -> TransformersScorer:
    return TransformersScorer(threads=2)


@pytest.fixture(scope="module")
def llamacpp() -> LlamaCppScorer:
    return LlamaCppScorer(threads=2, n_ctx=2048)


def test_log_likelihood_equals_a_direct_computation_from_the_logits(scorer):
    import torch

    text = "age is 39, workclass is State-gov"
    tokens = scorer.token_logprobs(text)
    ids = tokens.token_ids
    with torch.no_grad():
        logits = scorer.lm(torch.tensor([ids])).logits[0].double()
    direct = [float(logits[i - 1, ids[i]] - torch.logsumexp(logits[i - 1], dim=0)) for i in range(1, len(ids))]
    assert math.isnan(tokens.logprobs[0])
    assert tokens.logprobs[1:] == pytest.approx(direct, abs=1e-4)
    assert all(v < 0 for v in tokens.logprobs[1:])
    assert tokens.model_digest == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    # Offsets index into the text: the pieces spell it out.
    assert "".join(text[s:e] for s, e in tokens.offsets) == text


def test_the_two_implementations_agree_on_tokens_templates_and_log_probabilities(scorer, llamacpp):
    text = "| age | workclass |\n|---:|:---|\n| 39 | State-gov |"
    a, b = scorer.token_logprobs(text), llamacpp.token_logprobs(text)
    assert a.token_ids == b.token_ids and a.offsets == b.offsets
    x, y = np.array(a.logprobs[1:]), np.array(b.logprobs[1:])
    diffs = np.abs(x - y)
    print(f"max |diff| {diffs.max():.3f}, mean |diff| {diffs.mean():.3f} nats, totals {x.sum():.2f} / {y.sum():.2f}, "
          f"r = {np.corrcoef(x, y)[0, 1]:.4f}")
    # llama.cpp multiplies Q4_1 weights with 8-bit-quantised activations; transformers uses the float32
    # dequantised weights: per token they differ by tenths of a nat, in total by about a percent.
    assert diffs.max() < 0.6 and diffs.mean() < 0.25, diffs
    assert np.corrcoef(x, y)[0, 1] > 0.99
    assert x.sum() == pytest.approx(y.sum(), rel=0.03)
    assert scorer.chat_text("S", "U") == llamacpp.chat_text("S", "U")


def test_llamacpp_refuses_a_split_multibyte_character_with_the_fix(llamacpp):
    with pytest.raises(ConfigError, match="transformers scorer"):
        llamacpp.token_logprobs("city 東京")


def test_markdown_cell_spans_are_the_values_as_shown():
    shown = markdown_text(SAMPLE)
    assert shown.text == render_table(SAMPLE)
    by_cell = {(c.row, c.column): shown.text[c.start:c.end] for c in shown.cells}
    assert by_cell[(0, 1)] == "State-gov" and by_cell[(2, 2)] == "Köln" and by_cell[(0, 3)] == "1234567890123"
    assert [shown.text[s:e] for s, e in shown.header] == list(SAMPLE.columns)


def test_great_text_is_one_row_per_line_of_column_is_value():
    shown = great_text(SAMPLE)
    assert shown.text.split("\n")[0] == "age is 39, workclass is State-gov, city is Zürich, account is 1234567890123"
    assert {(c.row, c.column): shown.text[c.start:c.end] for c in shown.cells}[(1, 2)] == "München"


def test_csv_text_is_a_header_then_unpadded_rows_with_rfc4180_quotes():
    table = SAMPLE.assign(note=['says "hi", twice', "plain", None], score=[1.0, 2.5, float("nan")])
    shown = csv_text(table)
    lines = shown.text.split("\n")
    assert lines[0] == "age,workclass,city,account,note,score"
    assert lines[1] == '39,State-gov,Zürich,1234567890123,"says ""hi"", twice",1'
    assert lines[3] == "38,Private,Köln,7,,"  # missing values are empty fields
    by_cell = {(c.row, c.column): shown.text[c.start:c.end] for c in shown.cells}
    assert by_cell[(1, 1)] == "Self-emp-not-inc" and by_cell[(1, 5)] == "2.5" and by_cell[(2, 4)] == ""
    assert by_cell[(0, 4)] == '"says ""hi"", twice"'  # the quotes belong to the cell
    assert [shown.text[s:e] for s, e in shown.header] == list(table.columns)
    # Every character not in a cell or a name is a comma or a newline.
    layout = {ch for ch, (owner, _) in zip(shown.text, shown.character_owners()) if owner == -2}
    assert layout == {",", "\n"}


@pytest.mark.parametrize("serialisation", ["markdown", "great", "csv"])
def test_parts_by_column_and_by_row_add_up_to_the_total(scorer, serialisation):
    placed = place(SAMPLE, serialise(SAMPLE, serialisation), context="c1_prompt", chat_text=scorer.chat_text)
    assert placed.text[placed.start:placed.end] == placed.sample.text
    tokens = scorer.token_logprobs(placed.text, start_char=placed.start, end_char=placed.end)
    scores = score_sample(tokens, placed)
    by_column = sum(scores.column_logprob.values()) + scores.header_logprob + scores.layout_logprob
    by_row = sum(scores.row_logprob) + scores.header_logprob + scores.layout_logprob
    assert by_column == pytest.approx(scores.total_logprob, abs=1e-9)
    assert by_row == pytest.approx(scores.total_logprob, abs=1e-9)
    assert scores.mean_logprob == pytest.approx(scores.total_logprob / scores.n_tokens)
    assert scores.min_k_logprob <= scores.mean_logprob
    assert all(scores.column_tokens[c] > 0 for c in SAMPLE.columns)
    assert len(scores.row_logprob) == len(SAMPLE)
    # The long number's digits (one token each) all land in its column.
    assert scores.column_tokens["account"] >= len("1234567890123")


def test_the_table_is_scored_inside_the_c1_prompt_exactly_as_shown(scorer):
    placed = place(SAMPLE, markdown_text(SAMPLE), context="c1_prompt", chat_text=scorer.chat_text)
    request = build_prompt(SAMPLE, condition="C1", variant="neutral")
    assert placed.text == scorer.chat_text(request.system, request.user)
    assert placed.text[placed.start:placed.end] == render_table(SAMPLE)


def test_min_k_is_the_mean_of_the_lowest_fifth():
    assert min_k([-1.0, -2.0, -3.0, -4.0, -10.0] * 2) == pytest.approx(-10.0)
    assert min_k([-1.0, -5.0, -3.0]) == pytest.approx(-5.0)
    with pytest.raises(ConfigError, match="0.2"):
        min_k([-1.0], fraction=0.0)


def test_bad_input_gets_errors_that_name_the_fix(scorer):
    long_table = pd.DataFrame({"n": np.arange(3000) * 7919})
    placed = place(long_table, markdown_text(long_table), context="none")
    with pytest.raises(ContextOverflowError, match="fewer rows"):
        scorer.token_logprobs(placed.text)
    with pytest.raises(DataError, match=r"'\|'"):
        markdown_text(pd.DataFrame({"a": ["x|y", "z"]}))
    with pytest.raises(DataError, match="newlines"):
        great_text(pd.DataFrame({"a": ["x\ny", "z"]}))
    with pytest.raises(DataError, match="fix: replace newlines in that column"):  # a '|' is fine in CSV
        csv_text(pd.DataFrame({"a": ["x|y", "z\nw"]}))
    assert csv_text(pd.DataFrame({"a": ["x|y", "z"]})).text == "a\nx|y\nz"
    with pytest.raises(DataError, match="at least one row"):
        markdown_text(pd.DataFrame({"a": []}))
    with pytest.raises(ConfigError, match="serialisation"):
        serialise(SAMPLE, "xml")


def test_synthetic_samples_use_the_c1_trials_seeds_and_real_samples_the_holdout():
    queue = build_likelihood_queue(["adult"], ["ctgan"], 3, run_seed=7)
    trials = {(t.synthesizer, t.true_label, t.index): t.sample_seed
              for t in build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=7)}
    synthetic = [s for s in queue if s.source == "ctgan"]
    assert [s.sample_seed for s in synthetic] == [trials[("ctgan", "SYNTHETIC", i)] for i in range(3)]
    real = [s for s in queue if s.true_label == "REAL"]
    assert {s.source for s in real} == {"holdout", "train"}
    assert {(s.source, s.role) for s in real} == {("holdout", "test"), ("holdout", "reference"), ("train", "control")}
    assert len({s.sample_seed for s in queue}) == len(queue)
    assert {s.source for s in queue} == {"holdout", "train", "ctgan", "shuffled_columns"}
    with pytest.raises(ConfigError, match="at least 2"):
        build_likelihood_queue(["adult"], ["ctgan"], 1, run_seed=7)


def test_a_run_resumes_and_redoes_nothing_finished(scorer, tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"age": rng.integers(18, 80, 30), "job": rng.choice(["Sales", "Tech", "Craft"], 30)})
    tables = {"adult": {"holdout": table, "train": table.iloc[::-1].reset_index(drop=True),
                        "ctgan": table.assign(age=99), "shuffled_columns": table}}
    specs = build_likelihood_queue(["adult"], ["ctgan"], 2, run_seed=1)
    out = tmp_path / "run.jsonl"
    kwargs = dict(context="none", n_rows=3, cache=ScoreCache(tmp_path / "cache"))
    first = run_likelihood(specs, tables, scorer, out, **kwargs)
    assert (first.scored, first.skipped) == (len(specs), 0)
    records, _ = read_records(out)
    assert len(records) == len(specs)
    one = records["adult|ctgan|test|0"]
    assert one["model_digest"] == scorer.model_digest and one["serialisation"] == "markdown"
    assert one["true_label"] == "SYNTHETIC" and len(one["row_ids"]) == 3
    # Kill mid-write: drop the last record and leave a torn line.
    lines = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20], encoding="utf-8")
    second = run_likelihood(specs, tables, scorer, out, **kwargs)
    assert (second.scored + second.cached, second.skipped) == (1, len(specs) - 1)
    assert second.cached == 1  # the torn sample's scores came back from the score cache
    assert read_records(out) == (records, 0) or len(read_records(out)[0]) == len(specs)
    third = run_likelihood(specs, tables, scorer, out, **kwargs)
    assert (third.scored, third.cached, third.skipped) == (0, 0, len(specs))
    assert len(out.read_text(encoding="utf-8").splitlines()) == len(specs)


def test_every_sample_but_the_band_is_one_a_c1_trial_shows():
    from llmdisc.synthesis.controls import CONTROLS

    queue = build_likelihood_queue(["adult"], ["ctgan", "tvae"], 3, run_seed=7)
    trials = {(t.synthesizer, t.true_label, t.index): t.sample_seed
              for t in build_trial_queue(["adult"], ["ctgan", "tvae", *CONTROLS], ["C1"], 3, run_seed=7,
                                         share_real_samples=True)}
    expected = {("holdout", "test"): ("real_holdout", "SYNTHETIC"), ("train", "control"): ("ctgan", "REAL"),
                ("ctgan", "test"): ("ctgan", "SYNTHETIC"), ("tvae", "test"): ("tvae", "SYNTHETIC"),
                ("shuffled_columns", "test"): ("shuffled_columns", "SYNTHETIC")}
    for spec in queue:
        if (spec.source, spec.role) == ("holdout", "reference"):
            assert spec.sample_seed not in trials.values()  # the band is the one group no trial shows
            continue
        cell, label = expected[(spec.source, spec.role)]
        assert spec.sample_seed == trials[(cell, label, spec.index)], spec.sample_id


def test_tables_a_trial_pass_scored_are_read_from_it_not_run_again(scorer, tmp_path):
    from llmdisc.discrimination.likelihood.prompt_pass import prompt_pass
    from llmdisc.discrimination.cache import TokenCache, token_key
    from llmdisc.discrimination.samples import sample_rows

    rng = np.random.default_rng(3)
    table = pd.DataFrame({"age": rng.integers(18, 80, 30), "job": rng.choice(["Sales", "Tech", "Craft"], 30)})
    tables = {"adult": {"holdout": table, "train": table.iloc[::-1].reset_index(drop=True),
                        "ctgan": table.assign(age=99), "shuffled_columns": table}}
    specs = build_likelihood_queue(["adult"], ["ctgan"], 2, run_seed=1)
    saved = scorer.token_cache
    try:
        scorer.token_cache = TokenCache(tmp_path / "tokens")
        trial_specs = [s for s in specs if s.role != "reference"]
        for spec in trial_specs:  # what the local provider does for each C1 trial
            sample, _ = sample_rows(tables["adult"][spec.source], 3, seed=spec.sample_seed)
            request = build_prompt(sample, condition="C1", variant="neutral")
            done = prompt_pass(scorer, request.system, request.user)
            scorer.token_cache.put(token_key(text=done.prompt_text, backend=scorer.backend,
                                             model_digest=scorer.model_digest),
                                   done.prompt_token_ids, done.prompt_logprobs)
        shared = run_likelihood(specs, tables, scorer, tmp_path / "shared.jsonl", n_rows=3,
                                cache=ScoreCache(enabled=False))
        assert (shared.scored, shared.from_trials) == (len(specs), len(trial_specs))
        scorer.token_cache = TokenCache(enabled=False)
        own = run_likelihood(specs, tables, scorer, tmp_path / "own.jsonl", n_rows=3, cache=ScoreCache(enabled=False))
        assert own.from_trials == 0
    finally:
        scorer.token_cache = saved
    a, b = read_records(tmp_path / "shared.jsonl")[0], read_records(tmp_path / "own.jsonl")[0]
    for sample_id, record in a.items():
        assert record["mean_logprob"] == pytest.approx(b[sample_id]["mean_logprob"], abs=1e-4)
        assert record["min_k_logprob"] == pytest.approx(b[sample_id]["min_k_logprob"], abs=1e-4)


def test_the_token_cache_round_trips_nan_and_skips_a_corrupt_line(tmp_path):
    from llmdisc.discrimination.cache import TokenCache, token_key

    key = token_key(text="| a |", backend="transformers", model_digest="d" * 64)
    assert key != token_key(text="| a |", backend="llamacpp", model_digest="d" * 64)
    cache = TokenCache(tmp_path)
    cache.put(key, [5, 6, 7], [math.nan, -1.5, -0.25])
    (tmp_path / f"{key[:2]}.jsonl").open("a").write('{"key": "torn\n')
    ids, values = TokenCache(tmp_path).get(key)
    assert ids == [5, 6, 7] and math.isnan(values[0]) and values[1:] == [-1.5, -0.25]
    assert TokenCache(tmp_path, enabled=False).get(key) is None
    with pytest.raises(ValueError, match="3 token ids but 2"):
        cache.put(key, [1, 2, 3], [0.0, 0.0])


def test_auto_precision_is_bfloat16_only_on_a_cpu_that_computes_it(monkeypatch):
    import torch

    from llmdisc.discrimination.likelihood import transformers_backend as tb
    from llmdisc.pipeline.config import LikelihoodConfig, ModelConfig

    def probes(amx, avx512_bf16):  # what torch reports about the CPU
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", amx, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", avx512_bf16, raising=False)

    def broken():
        raise RuntimeError("probe not built into this torch")

    probes(lambda: False, lambda: False)  # AVX2 only: emulated bfloat16 would be ~4.7x slower
    assert not tb.native_bfloat16() and tb.resolve_dtype("auto") == "float32"
    assert tb.resolve_backend("transformers-auto") == "transformers"
    assert LikelihoodConfig(backend="transformers-auto").backend == "transformers"
    assert ModelConfig(provider="local", label_backend="transformers-auto").label_backend == "transformers"
    probes(broken, lambda: True)  # a probe that fails says nothing; the other one decides
    assert tb.native_bfloat16() and tb.resolve_dtype("auto") == "bfloat16"
    assert tb.resolve_backend("transformers-auto") == "transformers-bfloat16"
    assert ModelConfig(provider="local", label_backend="transformers-auto").label_backend == "transformers-bfloat16"
    for fixed in ("transformers", "transformers-bfloat16", "llamacpp"):  # an explicit choice is never changed
        assert tb.resolve_backend(fixed) == fixed
    assert tb.resolve_dtype("float32") == "float32" and tb.resolve_dtype("bfloat16") == "bfloat16"
