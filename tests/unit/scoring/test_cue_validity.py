"""Cue validity: planted true and false cues on a known sample, parser accuracy on the hand-checked set."""

from __future__ import annotations

import pandas as pd
import pytest

from llmdisc.paths import project_root
from llmdisc.scoring.cue_validity import (
    TableVocabulary,
    check_claim,
    parse_claims,
    parser_agreement,
    validity_table,
    verified_cues,
)

SAMPLE = pd.DataFrame({
    "age": [25, 40, 61, 33],
    "education": ["Bachelors", "HS-grad", "Masters", "HS-grad"],
    "education_num": [13, 9, 14, 9],
    "relationship": ["Husband", "Wife", "Not-in-family", "Husband"],
    "sex": ["Male", "Female", "Female", "Female"],
    "hours_per_week": [40, 38, 10, 50],
})
VOCAB = TableVocabulary.from_table(SAMPLE)


def _verdicts(text, sample=SAMPLE, **kw):
    return [(c.describe(), check_claim(c, sample, real=SAMPLE, **kw)[0]) for c in parse_claims(text, VOCAB, condition="C1")]


def test_true_planted_cue_is_confirmed_and_false_one_refuted():
    assert _verdicts("Row 4 has relationship = Husband and sex = Female.") == [
        ("row_values relationship=Husband;sex=Female rows=4", "true")]
    assert _verdicts("Row 1 has relationship = Husband and sex = Female.") == [
        ("row_values relationship=Husband;sex=Female rows=1", "false")]
    assert _verdicts("Husband and Female") == [("combination relationship=Husband;sex=Female", "true")]
    assert _verdicts("Wife and Male") == [("combination relationship=Wife;sex=Male", "false")]


def test_ranges_lists_single_values_missing_and_mapping():
    assert _verdicts("The age ranges from 25 to 61 in the sample.")[0][1] == "true"
    assert _verdicts("The age ranges from 18 to 61 in the sample.")[0][1] == "false"
    assert _verdicts("hours_per_week shows values like 40, 38, 10")[0][1] == "true"
    assert _verdicts("hours_per_week shows values like 40, 99")[0][1] == "false"
    assert _verdicts("No missing values in any column") == [("no_missing", "true")]
    assert _verdicts("The education and education_num mapping is perfectly consistent.") == [
        ("mapping education=education_num", "true")]
    broken = SAMPLE.assign(education_num=[10, 9, 14, 9])
    claim = parse_claims("Inconsistent mapping between 'education' and 'education_num'", VOCAB)[0]
    assert check_claim(claim, broken, real=SAMPLE)[0] == "true"
    assert check_claim(claim, SAMPLE, real=SAMPLE)[0] == "false"


def test_a_c2_range_without_the_word_sample_is_not_checkable_without_the_metadata_table():
    claim = parse_claims("hours_per_week has a realistic range (1-99)", VOCAB, condition="C2")[0]
    assert claim.scope == "unclear"
    assert check_claim(claim, SAMPLE)[0] == "not_checkable"
    whole = pd.DataFrame({"hours_per_week": [1, 40, 99]})
    assert check_claim(claim, SAMPLE, metadata_table=whole)[0] == "true"


def test_missing_sample_is_not_checkable():
    claim = parse_claims("Husband and Female", VOCAB)[0]
    assert check_claim(claim, None) == ("not_checkable", "the shown sample cannot be rebuilt")


def test_verified_cues_lists_only_claims_true_of_the_shown_rows():
    trials = pd.DataFrame([{"trial_id": "a", "status": "valid", "condition": "C1", "true_label": "SYNTHETIC",
                            "predicted_label": "SYNTHETIC", "reasoning": "Row 4 is a female Husband.",
                            "red_flags": ["Husband and Female", "Wife and Male"], "supporting_evidence": []}])
    found = verified_cues(trials, {"a": SAMPLE}, real=SAMPLE)
    assert [f["claim"] for f in found] == ["row_values relationship=Husband;sex=Female rows=4",
                                           "combination relationship=Husband;sex=Female"]
    assert all("Wife" not in f["text"] for f in found)


def test_validity_table_shares_carry_wilson_intervals():
    checked = pd.DataFrame({"source": "x", "provider": "p", "model": "m", "true_label": "REAL",
                            "verdict": ["true", "true", "false", "not_checkable"]})
    row = validity_table(checked).iloc[0]
    assert (row["n_true"], row["n_false"], row["n_not_checkable"]) == (2, 1, 1)
    assert row["share_true"] == 0.5 and row["share_true_ci_low"] < 0.5 < row["share_true_ci_high"]
    assert row["true_of_checked"] == pytest.approx(2 / 3)


def test_parser_accuracy_on_the_hand_checked_subset():
    ref = pd.read_csv(project_root() / "lib" / "llmdisc" / "scoring" / "cue_reference" / "cue_claims_v1.csv", keep_default_na=False)
    assert len(ref) >= 20
    adult = pd.DataFrame({"age": [1], "workclass": ["Private"], "education": ["Bachelors"], "education_num": [13],
                          "marital_status": ["Never-married"], "occupation": ["Adm-clerical"],
                          "relationship": ["Husband"], "race": ["White"], "sex": ["Female"],
                          "capital_gain": [0], "capital_loss": [0], "hours_per_week": [40],
                          "native_country": ["United-States"], "income": ["<=50K"], "fnlwgt": [1]})
    adult_vocab_rows = pd.concat([adult] * 1, ignore_index=True)
    values = {"education": ["Bachelors", "Some-college", "Masters", "10th", "HS-grad"],
              "marital_status": ["Married-civ-spouse", "Never-married"],
              "relationship": ["Unmarried", "Not-in-family", "Own-child", "Husband"], "sex": ["Male", "Female"]}
    for col, vals in values.items():
        extra = adult_vocab_rows.iloc[[0] * len(vals)].assign(**{col: vals})
        adult_vocab_rows = pd.concat([adult_vocab_rows, extra], ignore_index=True)
    census = pd.DataFrame({c: [1] for c in ("age", "class_of_worker", "education", "marital_status", "occupation",
                                            "place_of_birth", "relationship", "hours_per_week", "sex", "race",
                                            "income_above_50k")})
    vocabularies = {"adult": TableVocabulary.from_table(adult_vocab_rows),
                    "census-codes": TableVocabulary.from_table(census)}
    result = parser_agreement(ref, vocabularies)
    assert result.attrs["n_strings"] == len(ref)
    assert result.attrs["precision"] >= 0.8 and result.attrs["recall"] >= 0.8
