"""The cue codebook, the rule-based coder, cue strings from bad input, and agreement with the reference set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from llmdisc.paths import project_root
from llmdisc.scoring.cues import (
    code_text,
    coder_agreement,
    cue_strings,
    input_quality_table,
    load_codebook,
    note_cues,
    split_field,
    themes_as_sets,
)

REFERENCE = project_root() / "lib" / "llmdisc" / "scoring" / "cue_reference" / "cue_reference_v1.csv"
CODEBOOK = load_codebook()


@pytest.mark.parametrize("theme", CODEBOOK.themes, ids=lambda t: t.id)
def test_codebook_classifies_its_own_examples(theme):
    for example in theme.include_examples:
        assert theme.id in code_text(example, CODEBOOK), f"{theme.id} missed its include example {example!r}"
    for example in theme.exclude_examples:
        assert theme.id not in code_text(example, CODEBOOK), f"{theme.id} took its exclude example {example!r}"


def test_codebook_has_the_issue_themes_and_generic_is_exclusive():
    wanted = {"cross_column", "implausible_value", "distribution_shape", "rounding_heaping",
              "repetition_diversity", "invalid_code", "metadata_correlation", "dataset_recognition", "generic"}
    assert wanted <= set(CODEBOOK.theme_ids)
    assert code_text("Husband and Female") == ["cross_column"]
    assert code_text("") == ["generic"] and code_text(None) == ["generic"]


def test_reference_set_is_large_enough_and_uses_this_codebook():
    ref = pd.read_csv(REFERENCE, keep_default_na=False)
    assert len(ref) >= 150
    assert set(ref["codebook_version"]) == {CODEBOOK.version}
    assert {"reasoning", "red_flags", "supporting_evidence", "notes"} <= set(ref["field"])
    assert set().union(*themes_as_sets(ref["reference_themes"])) <= set(CODEBOOK.theme_ids)


def test_agreement_figures_recomputed_from_the_stored_reference_set():
    ref = pd.read_csv(REFERENCE, keep_default_na=False)
    table = coder_agreement(ref).set_index("theme")
    truth = themes_as_sets(ref["reference_themes"])
    predicted = [set(code_text(t)) for t in ref["text"]]
    for theme in ("cross_column", "implausible_value", "metadata_correlation"):
        y = np.array([theme in s for s in truth])
        p = np.array([theme in s for s in predicted])
        assert table.loc[theme, "support"] == y.sum()
        assert table.loc[theme, "precision"] == pytest.approx((y & p).sum() / p.sum())
        assert table.loc[theme, "recall"] == pytest.approx((y & p).sum() / y.sum())
        assert table.loc[theme, "kappa"] == pytest.approx(cohen_kappa_score(y, p))
    assert table.loc["all", "n"] == len(ref)
    assert set(table["quality"]) <= {"good", "moderate", "poor", "undefined"}


def test_agreement_refuses_a_reference_set_of_another_codebook_version():
    ref = pd.read_csv(REFERENCE, keep_default_na=False).assign(codebook_version=CODEBOOK.version + 1)
    with pytest.raises(Exception, match="codebook v"):
        coder_agreement(ref)


def test_bad_input_is_split_and_counted_never_dropped():
    assert split_field(None, is_list_field=True) == [("", "missing")]
    assert split_field(float("nan"), is_list_field=False) == [("", "missing")]
    assert split_field([], is_list_field=True) == [("", "empty")]
    assert split_field("   ", is_list_field=False) == [("   ", "empty")]
    assert split_field("['a', 'b']", is_list_field=True) == [("a", "list_as_string"), ("b", "list_as_string")]
    assert split_field('["x"]', is_list_field=True) == [("x", "list_as_string")]
    assert split_field("one flag", is_list_field=True) == [("one flag", "string_for_list")]
    assert split_field([3, None, "ok"], is_list_field=True) == [("3", "non_string"), ("", "missing"), ("ok", "ok")]
    assert split_field(42, is_list_field=False) == [("42", "non_string")]
    trials = pd.DataFrame([
        {"trial_id": "t1", "status": "valid", "reasoning": None, "red_flags": "['Husband and Female']",
         "supporting_evidence": []},
        {"trial_id": "t2", "status": "valid", "reasoning": 7, "red_flags": [None], "supporting_evidence": "x"},
        {"trial_id": "t3", "status": "error", "reasoning": "429 quota", "red_flags": [], "supporting_evidence": []},
    ])
    cues = cue_strings(trials, source="test")
    assert len(cues) == 6  # two valid trials x three fields, one row each
    counts = input_quality_table(cues, {"test": trials}).set_index(["field", "input_issue"])["n"]
    assert counts[("reasoning", "missing")] == 1 and counts[("reasoning", "non_string")] == 1
    assert counts[("red_flags", "list_as_string")] == 1 and counts[("red_flags", "missing")] == 1
    assert counts[("supporting_evidence", "empty")] == 1
    assert counts[("supporting_evidence", "string_for_list")] == 1
    assert counts[("record", "not_valid_record")] == 1


def test_notes_in_other_languages_are_flagged_and_still_coded():
    labels = pd.DataFrame({"annotator": ["HA1"] * 4, "dataset": ["adult"] * 4, "method": ["ctgan"] * 4,
                           "condition": ["C1"] * 4, "true_label": ["REAL"] * 4, "predicted_label": ["REAL"] * 4,
                           "correct": [True] * 4,
                           "notes": ["Husband and Female", "la corrélation est fausse", None, ""]})
    cues = note_cues(labels)
    assert list(cues["input_issue"]) == ["ok", "non_english", "missing", "empty"]
    assert code_text(cues["text"][1]) == ["generic"]
