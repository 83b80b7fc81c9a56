"""The joint-structure design study (issue 26, item 3): one row per design, k rows read exactly from one run with
the largest k, the controls read the right way round, and the command runs only the variations it is asked for.

The scorer knows one dependence the way a language model knows education ↔ education_num: a row whose ``b`` is
twice its ``a`` is likely, any other row unlikely. Real rows keep that tie; the shuffled-columns control breaks it.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pandas as pd
import pytest

from llmdisc.cli.benchmarks.joint_design import chosen_variations
from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL, LikelihoodScorer, likelihood_gguf_path
from llmdisc.errors import ConfigError
from llmdisc.scoring.joint_design import BASE_DESIGN, VARIATIONS, designs, joint_design_study, merged_rows

ROW = re.compile(r"^\|\s*(-?\d+)\s*\|\s*(-?\d+)\s*\|")


class DependenceScorer(LikelihoodScorer):
    """Characters as tokens; each scored Markdown row costs 0.1 nats when ``b == 2a``, else 3 nats, plus a small
    seeded jitter per row text (no ties), all put on the row's first scored character."""

    backend = "dependence"
    model = "dependence"
    model_digest = "0" * 64
    context_length = 1_000_000

    def __init__(self) -> None:
        self.passes = 0

    def tokenize(self, text):  # noqa: ANN001, ANN201
        return [ord(c) for c in text], [(i, i + 1) for i in range(len(text))]

    def _score_ids(self, token_ids, first, stop):  # noqa: ANN001, ANN201
        self.passes += 1
        text = "".join(map(chr, token_ids[:stop]))
        values = [0.0] * (stop - first)
        position = first
        for line in text[first:stop].split("\n"):
            match = ROW.match(line)
            if match and position < stop:
                a, b = int(match.group(1)), int(match.group(2))
                jitter = int(hashlib.sha256(line.encode()).hexdigest()[:6], 16) / 16**6 * 0.05
                values[position - first] = -(0.1 if b == 2 * a else 3.0) - jitter
            position += len(line) + 1
        return values

    def chat_text(self, system, user):  # noqa: ANN001, ANN201
        return f"<s>{system}</s><u>{user}</u>"


@pytest.fixture()
def project(tmp_path, monkeypatch):
    """A project whose processed ``adult`` holds a tie (b = 2a) and a free column."""
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    rng = np.random.default_rng(0)
    folder = tmp_path / "data" / "processed" / "adult"
    folder.mkdir(parents=True)
    for split, n in (("train", 400), ("holdout", 200)):
        a = rng.integers(1, 60, n)
        pd.DataFrame({"a": a, "b": 2 * a, "c": rng.choice(["x", "y", "z"], n)}).to_parquet(folder / f"{split}.parquet")
    return tmp_path


def test_each_design_is_a_row_k_rows_are_exact_and_the_controls_read_the_right_way(project) -> None:
    scorer = DependenceScorer()
    variations = (("k", 1), ("reference_rows", 0))
    table = joint_design_study(["adult"], scorer, samples_per_group=5, n_rows=6, variations=variations,
                               table_path=project / "joint_design.csv")
    assert table["design"].tolist() == ["base", "k=1", "reference_rows=0"]
    assert (table["model"] == "dependence").all()
    assert (project / "joint_design.csv").is_file()
    rows = table.set_index("design")
    # the scorer knows the tie: every real sample above every shuffled one, in every design
    assert (table["auc_control"] == 1.0).all() and (table["real_mean_c"] > table["control_mean_c"]).all()
    # real vs real only where the base's text settings are run (k = 1 shares the base's run)
    assert rows.loc["base", "n_train"] == 5 and rows.loc["reference_rows=0", "n_train"] == 0
    assert 0.0 <= rows.loc["base", "auc_real_vs_real"] <= 1.0
    # k = 1 is read from the same records as the base (k = 2): same samples, first permutation only
    assert rows.loc["k=1", "n_real"] == rows.loc["base", "n_real"] == 5
    assert rows.loc["k=1", "tokens_run_per_sample"] < rows.loc["base", "tokens_run_per_sample"]
    # records stay under results/likelihood/joint/design, named after a model that is not the embedded one, and a
    # second call resumes from them
    records = sorted(p.name for p in (project / "results" / "likelihood" / "joint" / "design").glob("*.jsonl"))
    assert records == ["adult-markdown-none-m0-k2-n6-s0-dependence.jsonl",
                       "adult-markdown-none-m40-k2-n6-s0-dependence.jsonl"]
    passes = scorer.passes
    again = joint_design_study(["adult"], scorer, samples_per_group=5, n_rows=6, variations=variations,
                               table_path="")
    assert scorer.passes == passes
    pd.testing.assert_frame_equal(again.drop(columns=["seconds_per_sample", "power_per_second"]),
                                  table.drop(columns=["seconds_per_sample", "power_per_second"]))


def test_the_command_runs_only_the_variations_named_and_names_an_unknown_one() -> None:
    assert chosen_variations(None) == VARIATIONS
    assert chosen_variations(["k=1,reference_rows=20", "k=1"]) == (("k", 1), ("reference_rows", 20))
    assert [label for label, _ in designs(BASE_DESIGN, chosen_variations(["k=4"]))] == ["base", "k=4"]
    assert [label for label, _ in designs(BASE_DESIGN, chosen_variations(["none"]))] == ["base"]
    with pytest.raises(ConfigError, match="m=20.*reference_rows=20"):
        chosen_variations(["m=20"])


def test_the_command_names_an_unknown_model_and_keeps_other_models_and_designs_rows() -> None:
    with pytest.raises(ConfigError, match="gpt-4o.*smollm2-135m-instruct-q4_1"):  # what --model gpt-4o meets
        likelihood_gguf_path("gpt-4o")
    # a table written before the model was a column: its rows are the embedded model's
    old = pd.DataFrame({"dataset_key": ["census-codes", "adult"], "design": ["base", "base"], "n_real": [6, 6],
                        "auc_control": [0.8, 1]})
    qwen = pd.DataFrame({"model": ["qwen"], "dataset_key": ["census-codes"], "design": ["base"], "n_real": [6],
                         "auc_control": [0.9]})
    both = merged_rows(old, qwen)
    assert list(zip(both["model"], both["dataset_key"], both["auc_control"])) == [
        (DEFAULT_LIKELIHOOD_MODEL, "census-codes", 0.8), (DEFAULT_LIKELIHOOD_MODEL, "adult", 1.0),
        ("qwen", "census-codes", 0.9)]
    # a new run of the embedded model on census-codes replaces that model's census-codes rows only
    again = merged_rows(both, qwen.assign(model=DEFAULT_LIKELIHOOD_MODEL, auc_control=0.3))
    assert list(zip(again["model"], again["dataset_key"], again["auc_control"])) == [
        (DEFAULT_LIKELIHOOD_MODEL, "census-codes", 0.3), (DEFAULT_LIKELIHOOD_MODEL, "adult", 1.0),
        ("qwen", "census-codes", 0.9)]  # the embedded model's rows first
    # the same study at more samples per group is a second measurement, kept beside the first
    more = merged_rows(again, qwen.assign(n_real=20, auc_control=0.85))
    assert list(zip(more["model"], more["n_real"], more["auc_control"]))[-2:] == [("qwen", 6, 0.9), ("qwen", 20, 0.85)]
    # a run of one variation replaces that design's row and keeps the others', in the study's order
    csv = merged_rows(more, qwen.assign(design="serialisation=csv", auc_control=0.95))
    k1 = merged_rows(csv, qwen.assign(design="k=1", auc_control=0.7))
    assert list(zip(k1["model"], k1["design"], k1["n_real"], k1["auc_control"]))[-4:] == [
        ("qwen", "base", 6, 0.9), ("qwen", "k=1", 6, 0.7), ("qwen", "serialisation=csv", 6, 0.95),
        ("qwen", "base", 20, 0.85)]
