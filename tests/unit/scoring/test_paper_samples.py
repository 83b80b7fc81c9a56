"""The paper's shown samples: the paper's draw, the figures its records quote, and the verification verdicts.

Planted tables of known truth first (no reference needed), then the paper's own Census files and records."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from llmdisc.errors import DataError
from llmdisc.scoring.cue_validity import TableVocabulary
from llmdisc.scoring.paper_samples import (
    QuotedStatistic,
    draw_paper_sample,
    paper_samples,
    quoted_statistics,
    sample_status,
    statistic_matches,
    verify_paper_samples,
)

CENSUS_LIKE = pd.DataFrame({c: [1, 2] for c in ("age", "class_of_worker", "education", "marital_status", "occupation",
                                                  "place_of_birth", "relationship", "hours_per_week", "sex", "race",
                                                  "income_above_50k")})
VOCAB = TableVocabulary.from_table(CENSUS_LIKE)


def _toy(seed: int, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(17, 90, n), "occupation": rng.choice(np.arange(10, 9900, 3), n),
                         "hours_per_week": rng.integers(1, 99, n), "race": rng.choice([1, 1, 1, 2, 6], n)})


def _trial(trial_id: int, label: str, condition: str, text: str, method: str = "ctgan") -> dict:
    return {"source": "paper", "status": "valid", "dataset": "toy", "dataset_key": "toy", "synthetic_method": method,
            "true_label": label, "condition": condition, "provider": "google", "model": "m", "run_id": "run",
            "trial_id": trial_id, "line_no": trial_id, "predicted_label": "SYNTHETIC", "correct": label == "SYNTHETIC",
            "reasoning": text, "red_flags": [], "supporting_evidence": []}


def _quoting_trials(release: pd.DataFrame, real: pd.DataFrame) -> pd.DataFrame:
    """Records that quote the rows the paper's draw shows of each table, and the release's metadata figures."""
    shown, real_shown = draw_paper_sample(release), draw_paper_sample(real)
    occ = ", ".join(str(v) for v in shown["occupation"].iloc[:4])
    hours = ", ".join(str(v) for v in shown["hours_per_week"].iloc[4:7])
    return pd.DataFrame([
        _trial(0, "SYNTHETIC", "C1", f"The 'occupation' values like {occ} look arbitrary."),
        _trial(1, "SYNTHETIC", "C1", f"The 'hours_per_week' values like {hours} are odd."),
        _trial(2, "SYNTHETIC", "C2", f"'age' has a mean of {release['age'].mean():.2f} and 'hours_per_week' a mean of "
                                     f"{release['hours_per_week'].mean():.2f}."),
        _trial(3, "REAL", "C1", "The 'occupation' values like "
                                f"{', '.join(str(v) for v in real_shown['occupation'].iloc[:4])} look real."),
    ])


def test_the_draw_is_the_papers_and_needs_more_rows_than_it_shows():
    table = _toy(1)
    shown = draw_paper_sample(table)
    assert shown.equals(table.sample(n=20, random_state=42).sort_index())
    assert list(shown.index) == sorted(shown.index) and len(shown) == 20
    assert not shown.equals(table.sample(n=20, random_state=41).sort_index())
    with pytest.raises(DataError, match="showed it whole"):
        draw_paper_sample(table.head(20))


@pytest.mark.parametrize("text, expected", [
    ("The 'occupation' column has 7760 unique values and 'place_of_birth' has 495 unique values.",
     ["n_unique occupation=7760", "n_unique place_of_birth=495"]),
    # '7, unique=6' was once read as 7 unique values
    ("`class_of_worker` (max=7, unique=6) and `race` (max=8, unique=3) show gaps.",
     ["max class_of_worker=7", "max race=8", "n_unique class_of_worker=6", "n_unique race=3"]),
    ("`hours_per_week`: a mean of 35.84, median of 40.0, with a strong negative skewness (-1.7964).",
     ["mean hours_per_week=35.84", "median hours_per_week=40", "skewness hours_per_week=-1.7964"]),
    ("'age' ranges from 17 to 90 with a mean of 42.5", ["mean age=42.5", "range age=17-90"]),
    ("hours_per_week distribution is almost perfectly normal (Shapiro-Wilk p=0.4529).",
     ["shapiro_p hours_per_week=0.4529"]),
    ("`occupation` shows a strong negative correlation with `education` (r=-0.6014) and `income_above_50k` "
     "(r=-0.4036).", ["correlation occupation×education=-0.6014", "correlation occupation×income_above_50k=-0.4036"]),
    ("`hours_per_week × income_above_50k: r=0.3280`: more hours, more income.",
     ["correlation hours_per_week×income_above_50k=0.328"]),
    # ambiguous pairs, "all columns", numbers without a column and sample ranges are not read
    ("hours_per_week and education are positively correlated with income_above_50k (r=0.3833 and r=0.3309 "
     "respectively)", []),
    ("All columns show Shapiro-Wilk p=0.0 (non-normal).", []),
    ("The mean is 42.5.", []),
    ("The values for `age` (20-65 in sample) look realistic.", []),
])
def test_quoted_statistics_reads_the_figures_of_a_metadata_block(text, expected):
    assert sorted(q.describe() for q in quoted_statistics(text, VOCAB)) == sorted(expected)


def test_a_statistic_matches_to_the_precision_quoted():
    mean = QuotedStatistic("mean", ("age",), 42.5, 1, "")
    assert statistic_matches(mean, 42.4979) and not statistic_matches(mean, 44.8518)
    unique = QuotedStatistic("n_unique", ("occupation",), 7760.0, 0, "")
    assert statistic_matches(unique, 7760) and not statistic_matches(unique, 7804)
    span = QuotedStatistic("range", ("age",), (17.0, 90.0), 0, "")
    assert statistic_matches(span, (17.0, 90.0)) and not statistic_matches(span, (17.0, 92.0))
    assert not statistic_matches(mean, None)


def test_quoted_rows_and_figures_verify_the_file_the_trials_saw():
    release, real = _toy(1), _toy(2)
    trials = _quoting_trials(release, real)
    result = verify_paper_samples(trials, synthetic_tables={("toy", "ctgan"): release}, real_tables={"toy": real})
    assert result.status[("toy", "SYNTHETIC", "ctgan")][0] == "verified"
    assert result.status[("toy", "REAL", "")][0] == "verified"
    assert result.samples[("toy", "SYNTHETIC", "ctgan")].equals(draw_paper_sample(release))
    checks = result.checks
    assert checks["passed"].all() and set(checks["check"]) == {"release_statistic", "sample_value"}
    assert (checks.loc[checks["check"] == "sample_value", "p_chance"] < 0.01).any()
    cells = result.cells.set_index(["true_label", "condition"])
    assert cells.loc[("SYNTHETIC", "C1"), "rebuilt"] and cells.loc[("SYNTHETIC", "C1"), "n_failed"] == 0
    assert cells.loc[("SYNTHETIC", "C1"), "sample_rows"] == ";".join(map(str, draw_paper_sample(release).index))
    samples, reasons = paper_samples(trials, {"toy": real}, verification=result)
    assert samples[("paper", "run", 0, 0)].equals(draw_paper_sample(release).reset_index(drop=True))
    assert reasons == {}


def test_another_random_state_would_not_verify():
    release, real = _toy(1), _toy(2)
    trials = _quoting_trials(release, real)
    other = verify_paper_samples(trials, synthetic_tables={("toy", "ctgan"): release}, real_tables={"toy": real},
                                 seed=41)
    assert other.status[("toy", "SYNTHETIC", "ctgan")][0] == "mismatch"  # the figures pass, the rows do not


def test_a_release_with_one_value_changed_is_flagged_and_its_claims_are_not_checked():
    release, real = _toy(1), _toy(2)
    trials = _quoting_trials(release, real)
    planted = release.copy()
    row = draw_paper_sample(release).index[0]
    old = int(planted.loc[row, "occupation"])
    planted.loc[row, "occupation"] = 99999
    result = verify_paper_samples(trials, synthetic_tables={("toy", "ctgan"): planted}, real_tables={"toy": real})
    status, reason = result.status[("toy", "SYNTHETIC", "ctgan")]
    assert status == "disputed" and "quoted row values 1/2" in reason
    cell = result.cells.set_index(["true_label", "condition"]).loc[("SYNTHETIC", "C1")]
    assert cell["n_failed"] == 1 and f"shows no {old}" in cell["differences"]
    samples, reasons = paper_samples(trials, {"toy": real}, verification=result)
    assert samples[("paper", "run", 0, 0)] is None and "disputed" in reasons[("paper", "run", 0, 0)]
    assert samples[("paper", "run", 3, 3)] is not None  # the REAL sample is still verified


def test_a_regenerated_release_is_a_mismatch_and_a_missing_one_not_rebuilt():
    release, real = _toy(1), _toy(2)
    trials = _quoting_trials(release, real)
    result = verify_paper_samples(trials, synthetic_tables={("toy", "ctgan"): _toy(3)}, real_tables={"toy": real})
    assert result.status[("toy", "SYNTHETIC", "ctgan")][0] == "mismatch"
    none = verify_paper_samples(trials, synthetic_tables={}, real_tables={"toy": real})
    assert none.status[("toy", "SYNTHETIC", "ctgan")][0] == "not_rebuilt"
    assert not none.cells.set_index(["true_label", "condition"]).loc[("SYNTHETIC", "C1"), "rebuilt"]


def test_status_rule_on_counted_checks():
    def checks(release, values):
        rows = [{"check": "release_statistic", "statistic": "mean", "columns": f"c{i}", "quoted": "1",
                 "passed": ok, "p_chance": np.nan} for i, ok in enumerate(release)]
        rows += [{"check": "sample_value", "statistic": "listed_values", "columns": f"v{i}", "quoted": "1",
                  "passed": ok, "p_chance": p} for i, (ok, p) in enumerate(values)]
        return pd.DataFrame(rows, columns=["check", "statistic", "columns", "quoted", "passed", "p_chance"])

    assert sample_status(checks([True] * 9, []), rebuilt=True)[0] == "verified"
    assert sample_status(checks([True] * 9 + [False], []), rebuilt=True)[0] == "disputed"
    assert sample_status(checks([True] * 7 + [False] * 3, []), rebuilt=True)[0] == "mismatch"
    assert sample_status(checks([], [(True, 1e-6)]), rebuilt=True)[0] == "verified"
    assert sample_status(checks([], [(True, 0.5)]), rebuilt=True)[0] == "unverified"  # 'race = 1' proves nothing
    assert sample_status(checks([], []), rebuilt=True)[0] == "unverified"
    assert sample_status(checks([True], []), rebuilt=False)[0] == "not_rebuilt"


# --------------------------------------------------------------------------- the paper's own files and records
def _gc_place_of_birth_quote(reference) -> list[int]:
    from llmdisc.scoring.reference import import_paper_trials

    trials = import_paper_trials(reference / "results" / "res1" / "census" /
                                 "llm_results_gaussian_copula_google_20260526_191038.jsonl")
    syn = trials[(trials["status"] == "valid") & (trials["true_label"] == "SYNTHETIC")
                 & (trials["condition"] == "C1")]
    quotes = {m.group(1) for text in syn["reasoning"]
              for m in [re.search(r"place_of_birth\*\*: Similarly, the values \(e\.g\., ([\d, ]+)\)", text)] if m}
    assert len(quotes) == 1, quotes
    return [int(v) for v in quotes.pop().split(",")]


def test_the_papers_gaussian_copula_sample_is_rebuilt_row_for_row(reference):
    from llmdisc.data.reference import load_paper_release

    release = load_paper_release("gaussian_copula")
    quoted = _gc_place_of_birth_quote(reference)
    assert len(quoted) == 20  # the record lists place_of_birth of all 20 rows shown, in the order shown
    assert list(draw_paper_sample(release)["place_of_birth"]) == quoted
    assert list(draw_paper_sample(release, seed=41)["place_of_birth"]) != quoted
    assert list(release.sample(n=20, random_state=42)["place_of_birth"]) != quoted  # the order is the file's


def test_the_papers_census_samples_verify_except_the_regenerated_releases(reference):
    from llmdisc.data.reference import load_paper_census, load_paper_release
    from llmdisc.scoring.paper_samples import paper_release_tables, verify_paper_census_samples
    from llmdisc.scoring.reference import import_paper_trials, paper_trial_files

    result = verify_paper_census_samples()
    status = {k[1:]: v[0] for k, v in result.status.items()}
    assert status == {("REAL", ""): "verified", ("SYNTHETIC", "gaussian_copula"): "verified",
                      ("SYNTHETIC", "ctgan"): "mismatch", ("SYNTHETIC", "tvae"): "mismatch"}
    cells = result.cells
    assert set(cells["dataset"]) == {"census"} and cells["rebuilt"].all()
    ctgan = cells[(cells["synthetic_method"] == "ctgan") & (cells["true_label"] == "SYNTHETIC")
                  & (cells["provider"] == "google") & (cells["condition"] == "C2")].iloc[0]
    assert "n_unique occupation: quoted 7760, rebuilt 7804" in ctgan["differences"]
    assert cells.loc[cells["sample_status"] == "verified", "n_failed"].sum() == 0
    # one value changed in a shown row of the GaussianCopula release: flagged, its claims not checked
    releases = paper_release_tables()
    planted = releases[("census-codes", "gaussian_copula")].copy()
    row = draw_paper_sample(planted).index[0]
    old = int(planted.loc[row, "occupation"])
    planted.loc[row, "occupation"] = old + 1
    releases[("census-codes", "gaussian_copula")] = planted
    trials = import_paper_trials(paper_trial_files())
    edited = verify_paper_samples(trials, synthetic_tables=releases,
                                  real_tables={"census-codes": load_paper_census()})
    assert edited.status[("census-codes", "SYNTHETIC", "gaussian_copula")][0] in ("disputed", "mismatch")
    gc = edited.cells[(edited.cells["synthetic_method"] == "gaussian_copula")
                      & (edited.cells["true_label"] == "SYNTHETIC")]
    assert gc["differences"].str.contains(f"shows no {old}").any()
    assert load_paper_release("gaussian_copula").loc[row, "occupation"] == old  # the file itself is untouched
