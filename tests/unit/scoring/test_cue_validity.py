"""Cue validity: planted true and false cues on known tables, validity by mention and by distinct claim, the
parser's coverage, and its accuracy on the two hand-checked sets."""

from __future__ import annotations

import pandas as pd
import pytest

from llmdisc.paths import project_root
from llmdisc.scoring.cue_claims import QUANTIFIERS, Claim, claim_literals
from llmdisc.scoring.cue_validity import (
    CLAIM_KINDS,
    TRIVIAL_KINDS,
    TableVocabulary,
    check_claim,
    check_cues,
    is_trivial,
    load_paraphrase_set,
    paraphrase_accuracy,
    paraphrase_summary,
    parse_claims,
    parser_agreement,
    parser_coverage,
    row_fact_conflicts,
    validity_table,
    verified_cues,
)
from llmdisc.scoring.metrics import wilson_interval

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


# --------------------------------------------------------------------------- the kinds added for paraphrased cues
KNOWN = pd.DataFrame({  # 6 rows; facts: race all White, Female in 4, Husband in rows 2 and 5, Divorced once
    "age": [23, 45, 31, 67, 45, 19],
    "marital_status": ["Never-married", "Married-civ-spouse", "Divorced", "Widowed", "Married-civ-spouse",
                       "Never-married"],
    "relationship": ["Own-child", "Husband", "Unmarried", "Not-in-family", "Husband", "Own-child"],
    "race": ["White"] * 6,
    "sex": ["Female", "Female", "Female", "Female", "Male", "Male"],
    "capital_gain": [0, 0, 0, 99999, 0, 0],
    "hours_per_week": [40, 40, 40, 40, 20, 50],
})
KNOWN_VOCAB = TableVocabulary.from_table(KNOWN)


def _on_known(text):
    return [(c.describe(), check_claim(c, KNOWN, real=KNOWN)[0]) for c in parse_claims(text, KNOWN_VOCAB)]


@pytest.mark.parametrize("text, expected", [
    # every_row: true only when all rows have the value (a common word is read after its column's name)
    ("Every row has race White.", [("every_row race=White", "true")]),
    ("All rows are Female.", [("every_row sex=Female", "false")]),
    ("Each record shows hours_per_week = 40.", [("every_row hours_per_week=40", "false")]),
    # one_row: exactly one row
    ("Only one row is Divorced.", [("one_row marital_status=Divorced", "true")]),
    ("capital_gain 99999 appears exactly once", [("one_row capital_gain=99999", "true")]),
    ("Only one row has relationship Husband.", [("one_row relationship=Husband", "false")]),
    # appears: at least one row, exactly N with a count, none when negated
    ("Widowed appears in the sample.", [("appears marital_status=Widowed", "true")]),
    ("Husband appears 2 times.", [("appears relationship=Husband n=2", "true")]),
    ("Husband appears three times.", [("appears relationship=Husband n=3", "false")]),
    ("Never-married appears in 2 rows.", [("appears marital_status=Never-married n=2", "true")]),
    ("No row is Divorced.", [("not appears marital_status=Divorced", "false")]),
    ("Nobody is Separated.", []),  # not a value of this table: nothing to tie the claim to
    # most_rows: strictly more than half
    ("Most rows are Female.", [("most_rows sex=Female", "true")]),
    ("hours_per_week is 40 for most rows", [("most_rows hours_per_week=40", "true")]),
    ("Most people are Married-civ-spouse.", [("most_rows marital_status=Married-civ-spouse", "false")]),
    ("The majority of rows are Never-married.", [("most_rows marital_status=Never-married", "false")]),
    # row_count (trivial) and rows named in other words
    ("The sample has 6 rows.", [("row_count n=6", "true")]),
    ("There are 20 rows.", [("row_count n=20", "false")]),
    ("The 4th row has capital_gain of 99999.", [("row_values capital_gain=99999 rows=4", "true")]),
    ("Record 2 is a Female Husband.", [("row_values relationship=Husband;sex=Female rows=2", "true")]),
    ("The first row is a 23-year-old Husband.", [("row_values age=23;relationship=Husband rows=1", "false")]),
])
def test_each_added_kind_against_a_table_of_known_truth(text, expected):
    assert _on_known(text) == expected


def test_a_half_is_not_most_and_a_negated_quantifier_is_no_claim():
    half = KNOWN.assign(sex=["Female", "Female", "Female", "Male", "Male", "Male"])
    claim, = parse_claims("Most rows are Female.", KNOWN_VOCAB)
    assert check_claim(claim, half)[0] == "false"
    assert parse_claims("Not every row is Female.", KNOWN_VOCAB) == []


@pytest.mark.parametrize("text, expected", [
    # a range that ends its sentence was never read ((?![.\d]) refused the full stop)
    ("age ranges from 19 to 67.", [("range age=19-67", "true")]),
    ("Ages range between 19 and 67", [("range age=19-67", "true")]),
    ("hours_per_week spans 20 to 50.", [("range hours_per_week=20-50", "true")]),
    # 'Never-married' is a value, not a negation
    ("Own-child paired with Never-married.", [("combination marital_status=Never-married;relationship=Own-child",
                                              "true")]),
    # '9291 unique values' was read as the listed value 929
    ("hours_per_week has 9291 unique values.", []),
    # the source table's size, a statement about data in general, a dominant value: no claim about the rows
    ("For a dataset of 32561 rows this is odd.", []),
    ("In real data hours_per_week are typically e.g. 35, 45, 60.", []),
    ("race is highly concentrated around a single value.", []),
    # a statistic of the C2 metadata block is no shown value (the paper's GaussianCopula red flag)
    ("hours_per_week distribution is almost perfectly normal (Shapiro-Wilk p=0.4529).", []),
    ("hours_per_week is correlated with age (r=0.21).", []),
])
def test_regressions_found_by_the_paraphrase_set_and_the_papers_cues(text, expected):
    assert _on_known(text) == expected


def test_trivial_kinds_are_claim_kinds_each_with_its_reason():
    assert set(TRIVIAL_KINDS) <= set(CLAIM_KINDS)
    assert all(len(why) > 40 for why in TRIVIAL_KINDS.values())
    assert is_trivial("no_missing") and not is_trivial("duplicates") and not is_trivial("mapping")


def test_validity_counts_by_mention_and_by_distinct_claim_and_keeps_trivial_claims_apart():
    checked = pd.DataFrame({
        "source": "x", "provider": "p", "model": "m", "true_label": "REAL", "dataset_key": "adult",
        "claim_kind": ["range"] * 5 + ["row_values", "no_missing", "no_missing", "no_missing"],
        "claim": ["range age=1-9"] * 5 + ["row_values sex=Female rows=1"] + ["no_missing"] * 3,
        "verdict": ["true"] * 5 + ["false"] + ["true"] * 3,
    })
    table = validity_table(checked).set_index("claim_set")
    head, trivial = table.loc["substantive"], table.loc["trivial"]
    assert (head["n_claims"], head["n_true"], head["n_false"]) == (6, 5, 1)
    assert (head["distinct_n_claims"], head["distinct_n_true"], head["distinct_n_false"]) == (2, 1, 1)
    assert head["true_of_checked"] == pytest.approx(5 / 6)
    assert head["distinct_true_of_checked"] == pytest.approx(1 / 2)
    est = wilson_interval(1, 2)
    assert (head["distinct_true_of_checked_ci_low"], head["distinct_true_of_checked_ci_high"]) == \
        pytest.approx((est.ci_low, est.ci_high))
    assert (trivial["n_claims"], trivial["distinct_n_claims"], trivial["n_true"]) == (3, 1, 3)
    # the same claim true of one table and false of another is two distinct claims
    two = checked.assign(verdict=["true", "false"] + ["true"] * 7)
    assert validity_table(two).set_index("claim_set").loc["substantive", "distinct_n_claims"] == 3


def test_coverage_counts_cue_strings_without_a_claim():
    cues = pd.DataFrame({"source": "x", "true_label": "REAL", "dataset_key": "k", "condition": "C1",
                         "field": ["red_flags", "red_flags", "reasoning"],
                         "theme_cross_column": [True, False, True],
                         "text": ["Row 2 is a Female Husband. Most rows are Female.", "Looks real.",
                                  "The sample has 6 rows."]}, index=[10, 11, 12])
    checked = check_cues(cues, {}, vocabularies={"k": KNOWN_VOCAB})
    assert list(checked["cue_row"]) == [10, 10, 12]
    cov = parser_coverage(cues, checked, themes=["cross_column"]).set_index(["breakdown", "part"])
    assert (cov.loc[("all", "all"), "n_cue_strings"], cov.loc[("all", "all"), "n_with_claim"]) == (3, 2)
    assert cov.loc[("all", "all"), "n_claims"] == 3
    red_flags = cov.loc[("field", "red_flags")]
    assert (red_flags["n_cue_strings"], red_flags["n_with_claim"]) == (2, 1)
    assert cov.loc[("theme", "cross_column"), "coverage"] == 1.0
    assert cov.loc[("claim_kind", "row_count"), "n_with_claim"] == 1
    assert cov.loc[("claim_kind", "most_rows"), "coverage"] == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- the hand-checked paraphrase set
PARAPHRASES = project_root() / "tests" / "fixtures" / "cue_paraphrases"


def _hand_measured(cues, shown, reals):
    """Recall and precision computed here, line by line, from the hand labels (not by paraphrase_summary)."""
    correct = parses = expected = 0
    for rec in cues.to_dict("records"):
        vocab = TableVocabulary.from_table(reals[rec["table_id"]])
        claims = parse_claims(rec["text"], vocab, condition="C1")
        parses += len(claims)
        if rec["expected_kind"] == "none":
            continue
        expected += 1
        hits = [c for c in claims if c.kind == rec["expected_kind"]
                and check_claim(c, shown[rec["table_id"]], real=reals[rec["table_id"]])[0] == rec["expected_truth"]]
        correct += bool(hits)
    return correct, parses, expected


def test_the_paraphrase_set_is_hand_labelled_in_the_agreed_form():
    cues, shown, reals = load_paraphrase_set(PARAPHRASES)
    assert len(cues) >= 40
    assert set(cues["expected_kind"]) <= {*CLAIM_KINDS, "none"}
    for kind in ("every_row", "one_row", "appears", "most_rows", "row_values", "combination", "conditional", "none"):
        assert (cues["expected_kind"] == kind).sum() >= 5, kind
    labelled = cues["expected_kind"] != "none"
    assert set(cues.loc[labelled, "expected_truth"]) == {"true", "false"}
    assert set(cues.loc[~labelled, "expected_truth"]) == {""}
    assert (cues["hand_check"].str.len() > 0).all()
    assert set(shown) == set(cues["table_id"]) == set(reals)


def test_parser_recall_and_precision_on_the_paraphrase_set_are_those_of_the_hand_labels():
    cues, shown, reals = load_paraphrase_set(PARAPHRASES)
    result = paraphrase_accuracy(cues, shown, reals)
    summary = paraphrase_summary(result)
    top = summary[(summary["subset"] == "all") & (summary["expected_kind"] == "all")].iloc[0]
    correct, parses, expected = _hand_measured(cues, shown, reals)
    assert (top["n_correct"], top["n_parsed"], top["n_expected"]) == (correct, parses, expected)
    assert top["recall"] == pytest.approx(correct / expected)
    assert top["precision"] == pytest.approx(correct / parses)
    # the level reached by the rules of this version (measured 113 of 116 found, 113 of 113 parses right);
    # a change that loses paraphrases or adds wrong parses fails here
    assert top["recall"] >= 0.97 and top["precision"] == 1.0
    # per fold and per kind the counts add up to the whole
    folds = summary[(summary["subset"] != "all") & (summary["expected_kind"] == "all")]
    assert folds["n_correct"].sum() == correct and folds["n_strings"].sum() == len(cues)


def test_a_wrong_hand_label_lowers_the_measured_recall_by_one_line():
    cues, shown, reals = load_paraphrase_set(PARAPHRASES)
    result = paraphrase_accuracy(cues, shown, reals)
    line = result[result["correct"]].index[0]
    flipped = cues.copy()
    flipped.loc[line, "expected_truth"] = {"true": "false", "false": "true"}[flipped.loc[line, "expected_truth"]]
    before = paraphrase_summary(result).iloc[0]
    after = paraphrase_summary(paraphrase_accuracy(flipped, shown, reals)).iloc[0]
    assert after["n_correct"] == before["n_correct"] - 1
    assert after["recall"] == pytest.approx((before["n_correct"] - 1) / before["n_expected"])


def test_a_claim_on_a_line_that_holds_none_counts_against_precision():
    cues = pd.DataFrame([{"cue_id": "x", "fold": "dev", "table_id": "t", "expected_kind": "none",
                          "expected_truth": "", "text": "Most rows are Female.",
                          "hand_check": "mislabelled on purpose"}])
    result = paraphrase_accuracy(cues, {"t": KNOWN}, {"t": KNOWN})
    row = paraphrase_summary(result).iloc[0]
    assert (row["n_parsed"], row["n_correct"], row["precision"]) == (1, 0, 0.0)


# --------------------------------------------------------------------------- rows × attributes × quantifier
@pytest.mark.parametrize("text, described, quantifier, verdict", [
    # quantities over rows
    ("Several rows are Female.", "appears sex=Female n>=2", "at_least", "true"),
    ("Multiple people are Divorced.", "appears marital_status=Divorced n>=2", "at_least", "false"),
    ("At least three rows have hours_per_week 40.", "appears hours_per_week=40 n>=3", "at_least", "true"),
    ("More than half of the rows are Female.", "most_rows sex=Female", "most", "true"),
    ("Two people are Never-married.", "appears marital_status=Never-married n=2", "exactly", "true"),
    # a value's presence or absence
    ("The sample contains a Widowed person.", "appears marital_status=Widowed", "some", "true"),
    ("Divorced is absent from the sample.", "not appears marital_status=Divorced", "none", "false"),
    ("The table lacks any Unmarried rows.", "not appears relationship=Unmarried", "none", "false"),
    # a row described by a number and a category together
    ("There is a 67-year-old Widowed person.", "combination age=67;marital_status=Widowed", "some", "true"),
    ("A Male aged 45 works 20 hours a week.", "combination age=45;hours_per_week=20;sex=Male", "some", "true"),
    ("No 19-year-old is Female.", "not combination age=19;sex=Female", "none", "true"),
    # a mapping between two columns stated for every row (the rows selected by attributes)
    ("Every Husband is Male.", "conditional sex=Male where relationship=Husband", "every", "false"),
    ("Each Own-child row is Never-married.",
     "conditional marital_status=Never-married where relationship=Own-child", "every", "true"),
    ("Widowed always goes with capital_gain 99999.", "conditional capital_gain=99999 where marital_status=Widowed",
     "every", "true"),
    ("If sex is Male, hours_per_week is always 20.", "conditional hours_per_week=20 where sex=Male", "every", "false"),
    ("Most Female rows have hours_per_week 40.", "most_rows hours_per_week=40 where sex=Female", "most", "true"),
])
def test_every_count_claim_is_rows_attributes_and_a_quantifier(text, described, quantifier, verdict):
    claim, = parse_claims(text, KNOWN_VOCAB)
    assert (claim.describe(), claim.quantifier) == (described, quantifier)
    assert check_claim(claim, KNOWN, real=KNOWN)[0] == verdict


def test_the_quantifier_alone_decides_the_verdict_of_one_count():
    # the same rows and attributes, every quantifier: Female is 4 of the 6 rows
    verdicts = {q: check_claim(Claim("appears", values={"sex": "Female"}, quantifier=q, count=4), KNOWN)[0]
                for q in QUANTIFIERS}
    assert verdicts == {"every": "false", "some": "true", "none": "false", "exactly": "true", "at_least": "true",
                        "most": "true"}
    named = Claim("row_values", values={"sex": "Female"}, rows=(1, 5), quantifier="every")
    assert check_claim(named, KNOWN) == ("false", "row 5 sex='Male', not 'Female'")
    with pytest.raises(ValueError, match="quantifier 'many'"):
        Claim("appears", values={"sex": "Female"}, quantifier="many")


def test_rows_selected_by_attributes_no_row_has_is_not_checkable():
    vocab = TableVocabulary.from_table(pd.concat([KNOWN, KNOWN.assign(relationship="Wife")]))
    claim, = parse_claims("Every Wife is Female.", vocab)
    assert claim.where == {"relationship": "Wife"}
    assert check_claim(claim, KNOWN)[0] == "not_checkable"  # no shown row is a Wife


def test_a_selector_with_an_unread_claim_is_no_claim_rather_than_a_wrong_one():
    # 'White' is a common word read only after its column's name: "most Husbands are White" is not "most rows are
    # Husbands"
    assert parse_claims("Most Husbands are White.", KNOWN_VOCAB) == []
    assert parse_claims("Only one Husband is White.", KNOWN_VOCAB) == []
    assert [c.describe() for c in parse_claims("Only one Widowed person in the table.", KNOWN_VOCAB)] == [
        "one_row marital_status=Widowed"]


def test_listed_values_are_checked_value_by_value_and_invalid_ones_against_the_real_table():
    listed, = parse_claims("capital_gain values like 0, 99999, 5", KNOWN_VOCAB)
    assert check_claim(listed, KNOWN) == ("false", "capital_gain shows no 5")
    invalid, = parse_claims("hours_per_week has invalid values like 20, 50", KNOWN_VOCAB)
    assert invalid.kind == "invalid_values"
    assert check_claim(invalid, KNOWN, real=KNOWN)[0] == "false"  # valid values of the real table
    assert check_claim(invalid, KNOWN, real=KNOWN[KNOWN["hours_per_week"] == 40])[0] == "true"
    assert check_claim(invalid, KNOWN)[0] == "not_checkable"


# --------------------------------------------------------------------------- dataset literals from the codebook
def test_adults_literals_apply_only_to_a_table_with_adults_columns():
    other = pd.DataFrame({"age": [37, 52], "plan": ["Private", "Public"]})  # an audited table, not Adult
    assert claim_literals(tuple(other.columns)).number_phrases == {}
    assert claim_literals(tuple(KNOWN.columns)).number_phrases.keys() == {"age", "hours_per_week"}
    vocab = TableVocabulary.from_table(other)
    assert parse_claims("There is a 37-year-old Public.", vocab) == [
        Claim("appears", values={"plan": "Public"}, quantifier="some", text="There is a 37-year-old Public.")]
    assert [c.describe() for c in parse_claims("Private appears.", vocab)] == ["appears plan=Private"]
    adult_like = TableVocabulary.from_table(KNOWN.assign(race=["Private"] * 6))
    assert parse_claims("Private appears.", adult_like) == []  # one of Adult's labels that are English words
    # Adult's '?' is a missing cell of Adult's tables only
    claim, = parse_claims("No missing values.", KNOWN_VOCAB)
    assert check_claim(claim, KNOWN.assign(race=["?"] + ["White"] * 5))[0] == "false"
    assert check_claim(claim, other.assign(plan=["?", "Public"]))[0] == "true"


def test_row_fact_conflicts_reads_the_claims_not_their_descriptions():
    cues = pd.DataFrame({"source": "paper", "dataset_key": "k", "synthetic_method": "ctgan", "true_label": "REAL",
                         "condition": "C1", "text": ["Row 2 is a Female Husband.", "Row 2 is Male.",
                                                     "Rows 1 and 3 are Female."]})
    checked = check_cues(cues, {}, vocabularies={"k": KNOWN_VOCAB})
    assert [c.rows for c in checked["parsed"]] == [(2,), (2,), (1, 3)]
    out = row_fact_conflicts(checked).iloc[0]
    assert (out["n_row_facts"], out["n_conflicting"]) == (4, 1)  # row 2's sex named Female and Male


# --------------------------------------------------------------------------- the held-out paraphrase set
HELD_OUT = PARAPHRASES / "heldout"
CATEGORIES = ("quantity", "presence", "number_and_category", "mapping")


def test_the_held_out_set_is_kept_apart_from_the_tuning_set():
    held, held_shown, _ = load_paraphrase_set(HELD_OUT)
    tuning, tuning_shown, _ = load_paraphrase_set(PARAPHRASES)
    assert not set(held["text"].str.lower()) & set(tuning["text"].str.lower())
    assert not set(held["cue_id"]) & set(tuning["cue_id"])
    assert not any(h.equals(t) for h in held_shown.values() for t in tuning_shown.values())
    assert "expected_kind" not in held  # labelled with truths only: nothing names the parser's kinds
    for category in CATEGORIES:
        lines = held[held["category"] == category]
        assert len(lines) >= 15 and set(lines["expected_truth"]) == {"true", "false"}, category
    assert set(held.loc[held["category"] == "none", "expected_truth"]) == {""}
    assert (held["hand_check"].str.len() > 0).all()


def test_on_the_held_out_paraphrases_no_parsed_claim_gets_a_wrong_verdict():
    result = paraphrase_accuracy(*load_paraphrase_set(HELD_OUT))
    summary = paraphrase_summary(result, by="category").set_index("category")
    # recounted here from the verdicts, line by line
    wrong = [rec["cue_id"] for rec in result.to_dict("records")
             if any(v != rec["expected_truth"] for v in rec["verdicts"].split())]
    assert wrong == [] and summary.loc["all", "n_wrong"] == 0
    claimed = result[result["expected_truth"] != ""]
    assert summary.loc["all", "coverage"] == pytest.approx((claimed["n_parses"] > 0).mean())
    # measured: 77 of 82 lines with a claim parsed; the misses are Adult labels that are English words ("Black",
    # "White", "Private", "Other-service"), read only after their column's name
    assert summary.loc["all", "coverage"] >= 0.9
    for category in CATEGORIES:
        assert summary.loc[category, "coverage"] >= 0.85, category
    assert summary.loc["none", "n_parsed"] == 0


def test_a_wrong_verdict_on_the_held_out_set_is_caught():
    cues, shown, reals = load_paraphrase_set(HELD_OUT)
    line = cues.index[cues["cue_id"] == "m01"][0]  # "Every Husband in the sample is Male." (true)
    flipped = cues.assign(expected_truth=cues["expected_truth"].where(cues.index != line, "false"))
    summary = paraphrase_summary(paraphrase_accuracy(flipped, shown, reals), by="category").set_index("category")
    assert summary.loc["all", "n_wrong"] == 1 and summary.loc["mapping", "n_wrong"] == 1
