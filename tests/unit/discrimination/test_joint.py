"""The joint-structure contrast: permutations, exact p-values, the fast shared-prefix path, planted dependence, runs.

The model tests use the embedded SmolLM2 (transformers, loaded once per module) on samples of 5-6 rows and 3-4
columns, so each pass is a few dozen tokens.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmdisc.discrimination.likelihood.base import ContextOverflowError, LikelihoodScorer
from llmdisc.discrimination.likelihood.joint import (
    column_contrasts,
    contrast_statistics,
    joint_contrast,
    joint_text,
    permutation_seeds,
    permute_column,
    permute_within,
    table_score,
)
from llmdisc.discrimination.likelihood.joint_runs import run_joint
from llmdisc.discrimination.likelihood.records import JOINT_RECORD_COLUMNS, load_joint, read_records
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue
from llmdisc.discrimination.cache import ScoreCache
from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
from llmdisc.errors import DataError
from llmdisc.synthesis.controls import shuffled_columns_table

SAMPLE = pd.DataFrame({
    "age": [39, 50, 38, 53, 28],
    "education": ["Bachelors", "Bachelors", "HS-grad", "11th", "Masters"],
    "education_num": [13, 13, 9, 7, 14],
    "sex": ["Male", "Male", "Male", "Male", "Female"],
})
REFERENCE = pd.DataFrame({
    "age": [37, 49, 52],
    "education": ["Masters", "9th", "HS-grad"],
    "education_num": [14, 5, 9],
    "sex": ["Female", "Female", "Male"],
})


class PlantedScorer(LikelihoodScorer):
    """Characters as tokens; a scored text's total log-probability is planted (on its first scored token)."""

    backend = "planted"
    model = "planted"
    model_digest = "0" * 64
    context_length = 100_000

    def __init__(self, totals: dict[str, float] | None = None) -> None:
        self.totals = totals or {}
        self.calls = 0

    def tokenize(self, text):  # noqa: ANN001, ANN201
        return [ord(c) for c in text], [(i, i + 1) for i in range(len(text))]

    def _score_ids(self, token_ids, first, stop):  # noqa: ANN001, ANN201
        self.calls += 1
        text = "".join(map(chr, token_ids[:stop]))
        total = self.totals.get(text, -0.01 * sum(token_ids[first:stop]) % 97)
        return [total] + [0.0] * (stop - first - 1)

    def chat_text(self, system, user):  # noqa: ANN001, ANN201
        return f"<s>{system}</s><u>{user}</u>"


@pytest.fixture(scope="module")
def scorer() -> TransformersScorer:
    return TransformersScorer(threads=2)


def _multisets(frame: pd.DataFrame) -> dict[str, list]:
    return {c: sorted(map(str, frame[c])) for c in frame.columns}


def test_permutations_keep_every_columns_multiset_and_are_seeded():
    for seed in range(5):
        permuted = permute_within(SAMPLE, seed)
        assert _multisets(permuted) == _multisets(SAMPLE)
        assert list(permuted.dtypes) == list(SAMPLE.dtypes)
        assert permuted.equals(permute_within(SAMPLE, seed))
        only = permute_column(SAMPLE, "education", seed)
        assert _multisets(only) == _multisets(SAMPLE)
        assert only.drop(columns="education").equals(SAMPLE.drop(columns="education"))
    # some seed recombines the rows (a permutation is not the identity everywhere)
    assert any(not permute_within(SAMPLE, seed).equals(SAMPLE) for seed in range(5))
    # nested seeds: the first k' permutations of a k run are the k' run's
    assert permutation_seeds(7, 4)[:2] == permutation_seeds(7, 2)
    # the same permutation as the shuffled-columns control, column by column
    assert permute_within(SAMPLE, 3).equals(shuffled_columns_table(SAMPLE, seed=3))


@pytest.mark.parametrize("above", [0, 1, 2, 3])
def test_the_permutation_p_value_is_exact_for_a_planted_score_order(above):
    k = 3
    scorer = PlantedScorer()
    seeds = permutation_seeds(11, k)
    texts = [joint_text(scorer, t, reference=REFERENCE)
             for t in [SAMPLE] + [permute_within(SAMPLE, s) for s in seeds]]
    observed = -100.0
    planted = [observed + 5.0 * (j + 1) if j < above else observed - 5.0 * (j + 1) for j in range(k)]
    scorer.totals = {t.text[:t.end]: v for t, v in zip(texts, [observed] + planted)}
    scores = joint_contrast(scorer, SAMPLE, k=k, seed=11, reference=REFERENCE)
    assert scores.logprob == observed and scores.permuted_logprobs == planted
    assert scores.contrast == pytest.approx(observed - np.mean(planted))
    assert scores.p_value == (1 + above) / (k + 1)
    assert above / (k + 1) <= scores.p_randomised < (above + 1) / (k + 1)
    assert scores.contrast_std == pytest.approx(scores.contrast / np.std(planted, ddof=1))


def test_the_randomised_p_value_is_uniform_under_exchangeability_ties_included():
    rng = np.random.default_rng(0)
    for values in (lambda: rng.normal(size=3), lambda: rng.integers(0, 2, size=3).astype(float)):
        p = []
        for _ in range(3000):
            draw = values()
            p.append(contrast_statistics(draw[0], draw[1:], uniform=rng.random())["p_randomised"])
        assert stats.kstest(p, "uniform").pvalue > 0.01
    tied = contrast_statistics(1.0, [1.0, 1.0], uniform=0.5)
    assert tied["p_value"] == 1.0 and tied["p_randomised"] == 0.5 and math.isnan(tied["contrast_std"])
    assert math.isnan(contrast_statistics(1.0, [0.0], uniform=0.1)["contrast_std"])  # k = 1: no spread


@pytest.mark.parametrize("serialisation, context, reference", [
    ("markdown", "none", REFERENCE), ("great", "c1_prompt", None), ("csv", "none", REFERENCE)])
def test_the_fast_path_equals_token_logprobs_on_the_whole_texts(scorer, serialisation, context, reference):
    k = 2
    for _ in range(2):  # the second call reuses the kept prefix cache
        fast = joint_contrast(scorer, SAMPLE, k=k, seed=5, serialisation=serialisation, context=context,
                              reference=reference)
        totals = []
        for table in [SAMPLE] + [permute_within(SAMPLE, s) for s in fast.permutation_seeds]:
            jt = joint_text(scorer, table, serialisation=serialisation, context=context, reference=reference)
            tokens = LikelihoodScorer.token_logprobs(scorer, jt.text, start_char=jt.start, end_char=jt.end)
            totals.append(table_score(tokens, jt).logprob)
        assert fast.logprob == pytest.approx(totals[0], abs=1e-3)
        assert fast.contrast == pytest.approx(totals[0] - np.mean(totals[1:]), abs=1e-3)
        parts = sum(fast.column_contrast.values()) + fast.header_contrast + fast.layout_contrast
        assert parts == pytest.approx(fast.contrast, abs=1e-6)
        assert fast.prefix_tokens > 0
    assert fast.prefix_run == 0  # the whole shared beginning came from the kept cache


def test_csv_reference_rows_run_once_whatever_the_samples_values(scorer):
    # Markdown pads every column to the widest value of the whole table, so a sample with a longer value changes
    # the reference rows' text and the kept prefix cannot serve it; CSV rows do not depend on each other.
    longer = SAMPLE.assign(education=["Prof-school", "Doctorate", "Some-college", "Assoc-acdm", "Preschool"])
    for serialisation, reruns in (("csv", False), ("markdown", True)):
        joint_contrast(scorer, SAMPLE, k=1, seed=1, serialisation=serialisation, reference=REFERENCE)
        second = joint_contrast(scorer, longer, k=1, seed=1, serialisation=serialisation, reference=REFERENCE)
        assert (second.prefix_run > 0) is reruns, (serialisation, second.prefix_run)


def test_batched_and_sequential_variants_agree(scorer):
    jt = [joint_text(scorer, t, reference=REFERENCE) for t in [SAMPLE, permute_within(SAMPLE, 1)]]
    args = {"start_chars": [t.start for t in jt], "end_chars": [t.end for t in jt]}
    a = scorer.score_variants([t.text for t in jt], batch=True, **args)
    b = scorer.score_variants([t.text for t in jt], batch=False, **args)
    for x, y in zip(a, b):
        assert np.allclose(np.nan_to_num(x.logprobs), np.nan_to_num(y.logprobs), atol=1e-4)


def test_a_planted_dependence_gives_c_above_zero_and_its_shuffle_c_near_zero(scorer):
    rng = np.random.default_rng(3)
    colours = rng.choice(["red", "green", "blue", "yellow", "purple"], 6)
    planted = pd.DataFrame({"colour": colours, "copy": colours, "size": rng.integers(10, 99, 6)})
    k = 4
    seeds = range(8)
    copied = [joint_contrast(scorer, planted, k=k, seed=s).contrast for s in seeds]
    null = [joint_contrast(scorer, permute_within(planted, 100 + s), k=k, seed=s).contrast for s in seeds]
    spread = np.std(null, ddof=1) / np.sqrt(len(null))
    print(f"planted C {np.mean(copied):.2f} ± {np.std(copied, ddof=1):.2f}; shuffled C {np.mean(null):.2f} "
          f"± {np.std(null, ddof=1):.2f} nats (8 seeds)")
    # measured here: planted C 2.08 ± 1.48 nats, every seed > 0; its shuffles 0.32 ± 6.97 (each seed a different
    # table, hence the wider spread); the tolerance is three standard errors of the shuffles' mean
    assert min(copied) > 0
    assert abs(np.mean(null)) < 3 * spread


def test_samples_that_cannot_be_recombined_are_refused_with_the_fix(scorer):
    with pytest.raises(DataError, match="fix: draw samples of 2 or more rows"):
        joint_contrast(scorer, SAMPLE.iloc[:1], k=2, seed=0)
    constant = pd.DataFrame({"a": ["x"] * 4, "b": [1] * 4, "c": [1, 2, 3, 4]})
    with pytest.raises(DataError, match="1 column"):
        joint_contrast(scorer, constant, k=2, seed=0)


def test_a_constant_column_contributes_nothing(scorer):
    sample = SAMPLE.assign(country="United-States")
    scores = joint_contrast(scorer, sample, k=2, seed=1)
    assert scores.constant_columns == ["country"]
    columns = column_contrasts(PlantedScorer(), sample, k=2, seed=1)
    assert columns.contrasts["country"] == 0.0 and columns.constant == ["country"]
    assert set(columns.seeds) == set(sample.columns)


def test_context_overflow_with_reference_rows_names_how_many_fit(scorer, monkeypatch):
    reference = pd.concat([REFERENCE] * 10, ignore_index=True)
    monkeypatch.setattr(scorer, "context_length", 300)
    with pytest.raises(ContextOverflowError, match=r"reference rows fit; fix: pass at most \d+ reference rows"):
        joint_contrast(scorer, SAMPLE, k=1, seed=0, reference=reference)


def _tables() -> dict:
    rng = np.random.default_rng(0)
    n = 60
    a = rng.choice(["p", "q", "r"], n)
    holdout = pd.DataFrame({"a": a, "b": a, "c": rng.integers(0, 9, n)})
    train = holdout.sample(frac=1.0, random_state=1).reset_index(drop=True)
    return {"adult": {"holdout": holdout, "train": train,
                      "shuffled_columns": shuffled_columns_table(train, seed=2)}}


def test_run_joint_writes_records_resumes_repairs_and_caches(tmp_path):
    specs = build_likelihood_queue(["adult"], [], 2, run_seed=0, reference_samples=2)
    scorer, cache = PlantedScorer(), ScoreCache(tmp_path / "cache")
    out = tmp_path / "joint.jsonl"
    summary = run_joint(specs, _tables(), scorer, out, k=2, reference_rows=5, n_rows=4, column_k=1, cache=cache)
    assert summary.scored == len(specs) == 8
    records, _ = read_records(out)
    record = records["adult|holdout|test|0"]
    assert set(JOINT_RECORD_COLUMNS) == set(record)
    assert len(record["permutation_seeds"]) == 2 and len(record["reference_row_ids"]) == 5
    assert not set(record["row_ids"]) & set(record["reference_row_ids"])
    assert set(record["column_contrasts"]) == {"a", "b", "c"}
    frame = load_joint(tmp_path)
    assert len(frame) == 8 and frame["reference_rows"].eq(5).all()
    # a design study's records in a subfolder are read only when asked for (notebook 09 reads its own runs)
    (tmp_path / "design").mkdir()
    (tmp_path / "design" / out.name).write_text(out.read_text().splitlines()[0] + "\n")
    assert len(load_joint(tmp_path)) == 9 and len(load_joint(tmp_path, recursive=False)) == 8
    (tmp_path / "design" / out.name).unlink()
    # a torn last line is repaired and only the missing sample is scored again (from the cache)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    again = run_joint(specs, _tables(), scorer, out, k=2, reference_rows=5, n_rows=4, column_k=1, cache=cache)
    assert (again.skipped, again.cached, again.scored) == (7, 1, 0)
    assert all(json.loads(line) for line in out.read_text().splitlines())
    assert len(out.read_text().splitlines()) == 8
    # another k is another result
    third = run_joint(specs, _tables(), scorer, out, k=3, reference_rows=5, n_rows=4, cache=cache)
    assert third.scored == 8


def test_a_tie_between_the_first_and_the_last_column_is_found_at_both_ends_by_c_j(scorer):
    """The free split of C credits a dependence to the later column of a left-to-right model, so the first column of
    a tie reads less there than its own permutation costs; C_j (permute column j alone) sees both ends."""
    rng = np.random.default_rng(5)
    splits, both = [], []
    for seed in range(4):
        colours = rng.choice(["red", "green", "blue", "yellow", "purple", "orange"], 6, replace=False)
        tied = pd.DataFrame({"colour": colours, "size": rng.integers(10, 99, 6), "shade": colours})  # a copy
        columns = column_contrasts(scorer, tied, k=2, seed=seed)
        both.append((columns.contrasts["colour"], columns.contrasts["shade"]))
        splits.append(joint_contrast(scorer, tied, k=2, seed=seed).column_contrast)
    first, last = np.mean(both, axis=0)
    split_first = np.mean([s["colour"] for s in splits])
    print(f"C_j over 4 samples: colour {first:.2f}, shade {last:.2f} nats; free split: colour {split_first:.2f}, "
          f"shade {np.mean([s['shade'] for s in splits]):.2f}")
    assert first > 0 and last > 0  # both ends of the tie lose likelihood when either is permuted alone
    assert split_first < first  # the free split reads the tie at its later end


def test_the_joint_contrast_runs_at_the_precision_of_the_runs_backend() -> None:
    # the default run's backend is float32 on every CPU: its joint contrast must not take bfloat16 where native
    from llmdisc.discrimination.likelihood.configured import LikelihoodRunConfig, joint_scorer

    default = joint_scorer(LikelihoodRunConfig(backend="transformers"))
    assert (default.dtype, default.backend) == ("float32", "transformers")
    opted = joint_scorer(LikelihoodRunConfig(backend="transformers-bfloat16"))
    assert (opted.dtype, opted.backend) == ("bfloat16", "transformers-bfloat16")
    assert joint_scorer(LikelihoodRunConfig(backend="transformers-bfloat16"), "float32").dtype == "float32"


def test_the_fit_budget_table_and_the_audit_score_in_float32_whatever_the_cpu() -> None:
    # both once took the CPU's faster precision (bfloat16 where native), so their D's depended on the CPU
    from llmdisc.audit.instruments.samples import SamplePasses
    from llmdisc.baselines.fit_budget import _open_scorer

    assert (_open_scorer().dtype, SamplePasses(4)._open(None).dtype) == ("float32", "float32")
