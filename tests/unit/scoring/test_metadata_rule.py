"""The rule that reads only the C2 block's distinct-value counts, on tables and trials made here."""

from __future__ import annotations

import pandas as pd

from llmdisc.scoring.metadata_rule import distinct_count_rule, distinct_counts, metadata_rule_table


def test_the_rule_answers_synthetic_only_when_a_column_lists_more_values_than_the_real_table():
    real = {"occupation": 526, "age": 77}
    assert distinct_count_rule(real, real) == ("REAL", [])
    assert distinct_count_rule({"occupation": 7804, "age": 75}, real) == ("SYNTHETIC", ["occupation 7,804 > 526"])
    assert distinct_count_rule({"occupation": 300, "age": 60}, real) == ("REAL", [])  # fewer values: no signal


def _trials(method: str, answers: dict[str, list[str]]) -> pd.DataFrame:
    rows = []
    for label, predicted in answers.items():
        rows += [{"dataset": "census", "synthetic_method": method, "provider": "google", "model": "m",
                  "condition": "C2", "true_label": label, "predicted_label": p, "status": "valid"}
                 for p in predicted]
    rows.append({"dataset": "census", "synthetic_method": method, "provider": "google", "model": "m",
                 "condition": "C1", "true_label": "REAL", "predicted_label": "SYNTHETIC", "status": "valid"})
    rows.append({"dataset": "census", "synthetic_method": method, "provider": "google", "model": "m",
                 "condition": "C2", "true_label": "REAL", "predicted_label": None, "status": "error"})
    return pd.DataFrame(rows)


def test_the_table_scores_the_rule_and_the_model_on_the_same_valid_c2_trials():
    real = pd.DataFrame({"code": [1, 2, 3, 1], "age": [20, 30, 40, 50]})
    inventing = pd.DataFrame({"code": [1, 7, 9, 11], "age": [20, 30, 40, 50]})
    faithful = pd.DataFrame({"code": [1, 2, 2, 3], "age": [21, 31, 41, 51]})
    assert distinct_counts(real) == {"code": 3, "age": 4}
    trials = pd.concat([_trials("inventing", {"REAL": ["REAL", "REAL"], "SYNTHETIC": ["REAL", "SYNTHETIC"]}),
                        _trials("faithful", {"REAL": ["SYNTHETIC"], "SYNTHETIC": ["SYNTHETIC", "SYNTHETIC"]})])
    table = metadata_rule_table(trials, real, {"inventing": inventing, "faithful": faithful}, dataset="census")
    rows = table.set_index("synthetic_method")
    assert rows.loc["inventing", ["n_real", "n_syn"]].tolist() == [2, 2]  # C1 and the error line left out
    assert rows.loc["inventing", "rule_drs"] == 100 and rows.loc["inventing", "model_drs"] == 50
    assert rows.loc["inventing", "deciding_columns"] == "code 4 > 3"
    # a release that lists no more values than the real table: the rule says REAL to both labels, DRS 0
    assert rows.loc["faithful", "rule_on_release"] == "REAL" and rows.loc["faithful", "rule_drs"] == 0
    assert rows.loc["faithful", "model_drs"] == 0 and rows.loc["faithful", "model_p_syn"] == 100
