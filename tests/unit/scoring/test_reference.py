"""The paper's own trials: importer, rebuilt counts, and the reproduction of its printed numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.errors import ConfigError, DataError
from llmdisc.scoring.analyses import matched_n_sample, permutation_tests
from llmdisc.scoring.metrics import score_cells
from llmdisc.scoring.reference import (
    PAPER_MODEL_ORDER,
    PAPER_ORDERS,
    import_paper_trials,
    load_cell_counts,
    paper_reported_cells,
    paper_trial_files,
    trials_from_cell_counts,
)
from llmdisc.scoring.tables import (
    paper_cell_table,
    paper_dataset_model_table,
    paper_model_table,
    reproduction_table,
    write_table,
)

GEMINI, LLAMA = "gemini-2.5-flash", "llama-3.1-8b-instant"


def _line(**overrides: object) -> str:
    record = {"trial_id": 0, "timestamp": "t", "provider": "google", "model": GEMINI, "condition": "C1",
              "true_label": "REAL", "predicted_label": "REAL", "correct": True, "confidence": 90,
              "reasoning": "r", "red_flags": [], "supporting_evidence": [], "synthetic_method": "ctgan"}
    record.update(overrides)
    return json.dumps(record)


class TestImporterOnAnyFile:
    def test_error_lines_are_kept(self, tmp_path: Path) -> None:
        path = tmp_path / "census" / "llm_results_ctgan_google_1.jsonl"
        path.parent.mkdir()
        path.write_text("\n".join([_line(), _line(predicted_label="ERROR", confidence=-1, correct=False,
                                                   reasoning="429 RESOURCE_EXHAUSTED")]) + "\n")
        out = import_paper_trials(path)
        assert out["status"].tolist() == ["valid", "error"]
        assert out["dataset"].tolist() == ["census", "census"] and out["dataset_key"].iloc[0] == "census-codes"
        assert out["predicted_label"].iloc[1] is None and pd.isna(out["confidence"].iloc[1])
        assert "ERROR" in out["invalid_reason"].iloc[1] and "429" in out["invalid_reason"].iloc[1]
        assert out["model_label"].iloc[0] == "Gemini" and out["line_no"].tolist() == [1, 2]
        scored = score_cells(out)
        assert scored[["n_total", "n_valid", "n_excluded"]].iloc[0].tolist() == [2, 1, 1]

    def test_bad_confidence_is_invalid(self, tmp_path: Path) -> None:
        path = tmp_path / "adult" / "llm_results_x.jsonl"
        path.parent.mkdir()
        path.write_text(_line(confidence=120) + "\n")
        out = import_paper_trials(path)
        assert out["status"].tolist() == ["invalid"] and "confidence 120" in out["invalid_reason"].iloc[0]

    def test_dataset_unknown(self, tmp_path: Path) -> None:
        path = tmp_path / "llm_results_x.jsonl"
        path.write_text(_line() + "\n")
        with pytest.raises(DataError, match=re.escape("cannot tell the dataset of llm_results_x.jsonl")):
            import_paper_trials(path)
        assert import_paper_trials(path, dataset="adult")["dataset"].iloc[0] == "adult"

    def test_broken_json_and_fields(self, tmp_path: Path) -> None:
        path = tmp_path / "adult" / "llm_results_x.jsonl"
        path.parent.mkdir()
        path.write_text("{not json\n")
        with pytest.raises(DataError, match="llm_results_x.jsonl line 1 is not JSON"):
            import_paper_trials(path)
        path.write_text(json.dumps({"provider": "google"}) + "\n")
        with pytest.raises(DataError, match=re.escape("line 1 lacks field(s) ['model', 'condition'")):
            import_paper_trials(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(DataError, match="paper trial file\\(s\\) not found"):
            import_paper_trials([tmp_path / "nope.jsonl"])

    def test_write_table(self, tmp_path: Path) -> None:
        paths = write_table(pd.DataFrame({"a": [1.5], "b": ["x"]}), "demo_table", tmp_path)
        assert paths["csv"].read_text().splitlines() == ["a,b", "1.5,x"]
        assert "\\toprule" in paths["tex"].read_text() and "1.500" in paths["tex"].read_text()
        with pytest.raises(ConfigError, match="table name 'a b' must be letters"):
            write_table(pd.DataFrame(), "a b", tmp_path)


@pytest.fixture(scope="module")
def paper_trials(reference: Path) -> pd.DataFrame:
    return import_paper_trials(reference / "results")


def _by_model(table: pd.DataFrame) -> dict[str, pd.Series]:
    return {row["model"]: row for _, row in table.iterrows()}


class TestFromCounts:
    def test_shipped_counts_equal_the_reference_copies(self, reference: Path) -> None:
        from llmdisc.scoring.reference import PAPER_CELL_COUNTS_CSV, PAPER_HUMAN_CELLS_CSV

        derived = reference / "derived"
        if not derived.is_dir():
            pytest.skip("this reference folder has no derived/ (a fetched one never has): nothing to compare")
        for shipped in (PAPER_CELL_COUNTS_CSV, PAPER_HUMAN_CELLS_CSV):
            assert shipped.read_bytes() == (derived / shipped.name).read_bytes(), shipped.name

    def test_per_model_and_dataset(self) -> None:
        trials = trials_from_cell_counts(load_cell_counts())
        models = _by_model(paper_model_table(trials).round(1))
        assert (models[GEMINI]["N"], models[GEMINI]["DRS"], models[GEMINI]["Accuracy"]) == (104, 83.7, 92.3)
        assert (models[LLAMA]["N"], models[LLAMA]["DRS"], models[LLAMA]["Accuracy"]) == (347, 20.2, 51.6)
        by_ds = paper_dataset_model_table(trials).round(1).set_index(["dataset", "model"])
        assert by_ds.loc[("adult", LLAMA), "DRS"] == 3.5
        assert by_ds.loc[("census", GEMINI), "DRS"] == 70.4

    def test_every_cell(self) -> None:
        counts = load_cell_counts()
        check = reproduction_table(paper_cell_table(trials_from_cell_counts(counts)), paper_reported_cells(counts))
        assert len(check) == 23 and check["matches"].all()


class TestFromPaperTrials:
    def test_counts(self, paper_trials: pd.DataFrame) -> None:
        assert len(paper_trials) == 860
        assert paper_trials["status"].value_counts().to_dict() == {"valid": 451, "error": 409}
        assert len(paper_trial_files()) == 17

    def test_per_model_table(self, paper_trials: pd.DataFrame) -> None:
        models = _by_model(paper_model_table(paper_trials).round(1))
        gem, lla = models[GEMINI], models[LLAMA]
        assert (gem["N"], gem["DRS"], gem["Accuracy"], gem["Pred_REAL_rate"], gem["Avg_conf"]) == (
            104, 83.7, 92.3, 60.6, 95.5)
        assert (lla["N"], lla["DRS"], lla["Accuracy"], lla["Pred_REAL_rate"], lla["Avg_conf"]) == (
            347, 20.2, 51.6, 81.3, 83.8)
        assert gem["n_excluded"] + lla["n_excluded"] == 409

    def test_census_gemini_and_every_cell(self, paper_trials: pd.DataFrame) -> None:
        cells = paper_cell_table(paper_trials)
        census = cells[(cells["dataset"] == "census") & (cells["model"] == GEMINI)].set_index(
            ["synthetic_method", "condition"])["DRS"]
        assert census.to_dict() == {("ctgan", "C1"): 100.0, ("ctgan", "C2"): 0.0, ("gaussian_copula", "C1"): 100.0,
                                    ("gaussian_copula", "C2"): 100.0, ("tvae", "C1"): 100.0, ("tvae", "C2"): 25.0}
        check = reproduction_table(cells[cells["N"] > 0], paper_reported_cells())
        assert len(check) == 23 and check["matches"].all()

    def test_effective_n_exposes_the_repeated_prompt(self, paper_trials: pd.DataFrame) -> None:
        scored = score_cells(paper_trials)
        scored = scored[scored["n_valid"] > 0]
        assert set(scored["effective_n_source"]) == {"reasoning"}
        assert scored["effective_n"].between(2, 4).all()
        census = scored[scored["dataset"] == "census"]
        assert census["n_valid"].between(8, 10).all()

    def test_matched_n_and_permutation(self, paper_trials: pd.DataFrame) -> None:
        drawn = matched_n_sample(paper_trials, seed=2026, models=PAPER_MODEL_ORDER)
        models = _by_model(paper_model_table(drawn).round(1))
        assert (models[GEMINI]["N"], models[GEMINI]["DRS"]) == (100, 83.0)
        assert (models[LLAMA]["N"], models[LLAMA]["DRS"]) == (100, 40.0)
        perm = permutation_tests(drawn, seed=20260531, n_perm=3000, orders=PAPER_ORDERS)
        census = perm[(perm["dataset"] == "census") & (perm["model"] == GEMINI)].set_index("synthetic_method")
        assert round(census.loc["ctgan", "p_two_sided"], 3) == 0.005
        assert round(census.loc["tvae", "p_two_sided"], 3) == 0.037
        assert (perm["p_two_sided"] < 0.05).sum() == 2  # only those two C1 -> C2 drops are significant
