"""Human-pilot analysis (llmdisc.human.analysis): the paper's table reproduced, hand-checked scores, bad input."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.errors import DataError, LlmdiscWarning
from llmdisc.human import analysis as human
from llmdisc.human.label_app.schema import COLUMNS, PAPER_COLUMNS


def _write(path: Path, rows: list[dict], columns: tuple[str, ...] = PAPER_COLUMNS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _rows(annotator: str, session: str, answers: list[tuple[str, str, str, int]], *, method: str = "ctgan",
          dataset: str = "adult") -> list[dict]:
    """answers: (condition, true_label, predicted_label, confidence) in pair order (C1, C2 alternating)."""
    rows = []
    for i, (condition, true, pred, conf) in enumerate(answers):
        rows.append({"annotator_id": annotator, "session_id": session, "dataset": dataset, "method": method,
                     "pair_id": i // 2, "condition": condition, "n_rows_shown": 20, "true_label": true,
                     "predicted_label": pred, "correct": true == pred, "confidence": conf, "notes": "",
                     "timestamp": "2026-01-01T00:00:00", "sample_seed": 1, "row_ids": "[1]",
                     "metadata_source": "real", "elapsed_seconds": 3.0})
    return rows


# 4 REAL pairs (3 labelled REAL in C1) and 4 SYNTHETIC pairs (2 labelled SYNTHETIC in C1); C2 all right.
HAND = [("C1", "REAL", "REAL", 80), ("C2", "REAL", "REAL", 90),
        ("C1", "REAL", "REAL", 70), ("C2", "REAL", "REAL", 90),
        ("C1", "REAL", "REAL", 60), ("C2", "REAL", "REAL", 90),
        ("C1", "REAL", "SYNTHETIC", 50), ("C2", "REAL", "REAL", 90),
        ("C1", "SYNTHETIC", "SYNTHETIC", 90), ("C2", "SYNTHETIC", "SYNTHETIC", 90),
        ("C1", "SYNTHETIC", "SYNTHETIC", 70), ("C2", "SYNTHETIC", "SYNTHETIC", 90),
        ("C1", "SYNTHETIC", "REAL", 40), ("C2", "SYNTHETIC", "SYNTHETIC", 90),
        ("C1", "SYNTHETIC", "REAL", 30), ("C2", "SYNTHETIC", "SYNTHETIC", 90)]


@pytest.fixture(scope="module")
def analysis(reference: Path) -> human.HumanAnalysis:
    """The paper's 12 session files, analysed once for the module."""
    return human.analyse_labels([reference / "results" / "human"], seed=0)


class TestPaperReproduction:
    def test_reads_the_twelve_session_files_and_ignores_exports(self, analysis: human.HumanAnalysis) -> None:
        assert len(analysis.files) == 12 and all("_export-" not in f for f in analysis.files)
        assert len(analysis.labels) == 240 and analysis.problems == []
        assert set(analysis.labels["annotator"]) == {"HA1", "HA2"}

    @pytest.mark.parametrize(("annotator", "drs", "accuracy"),
                             [("HA1", 53.3, 62.5), ("HA2", 77.9, 80.0), ("pooled", 66.4, 71.2)])
    def test_totals_are_the_papers(self, analysis: human.HumanAnalysis, annotator: str, drs: float,
                                   accuracy: float) -> None:
        row = analysis.totals.set_index(["annotator", "condition"]).loc[(annotator, "all")]
        assert round(100 * row["drs"], 1) == drs and round(100 * row["accuracy"], 1) == accuracy
        # The paper's total is min(p_REAL, p_SYN) over pooled trials, not the mean of the cells' DRS.
        cells = analysis.cells[analysis.cells["annotator"] == annotator]
        assert abs(100 * cells["drs"].mean() - drs) > 1.0

    def test_per_cell_table_is_the_recomputed_one(self, analysis: human.HumanAnalysis,
                                                   reference: Path) -> None:
        from llmdisc.scoring.reference import PAPER_HUMAN_CELLS_CSV

        expected = pd.read_csv(PAPER_HUMAN_CELLS_CSV)
        ours = analysis.cells.set_index(["annotator", "dataset", "method", "condition"])
        assert len(ours) == len(expected) == 36
        for row in expected.itertuples(index=False):
            got = ours.loc[(row.annotator, row.dataset, row.method, row.condition)]
            assert (got["n_valid"], got["n_valid_real"], got["n_valid_syn"]) == (row.N, row.N_real, row.N_syn)
            for ours_col, theirs in (("p_real", row.p_real), ("p_syn", row.p_syn), ("drs", row.DRS),
                                     ("accuracy", row.acc)):
                assert round(100 * got[ours_col], 1) == pytest.approx(theirs), (row, ours_col)
            assert got["mean_confidence"] == pytest.approx(row.conf, abs=0.051)
            assert got["drs_ci_low"] <= got["drs"] <= got["drs_ci_high"]

    def test_c2_is_flagged_contaminated_and_c1_is_reported_beside_it(self,
                                                                     analysis: human.HumanAnalysis) -> None:
        labels = analysis.labels
        assert (labels["protocol"] == "paper").all()
        assert labels["contaminated"].sum() == 120 and not labels.loc[labels["condition"] == "C1",
                                                                       "contaminated"].any()
        totals = analysis.totals.set_index(["annotator", "condition"])
        assert not totals.loc[("pooled", "C1"), "contaminated"]
        assert totals.loc[("pooled", "C2"), "contaminated"]
        assert round(100 * totals.loc[("pooled", "C1"), "drs"], 1) == 57.8
        assert analysis.deltas["contaminated"].all()
        assert "contaminated" in analysis.notes[0] and "C1-only" in analysis.notes[0]
        assert analysis.notes[1].startswith("56.7 % of the confidences")


    def test_agreement_with_the_matched_llm_cells_is_the_papers(self, analysis: human.HumanAnalysis,
                                                                 reference: Path) -> None:
        from llmdisc.scoring import reference as paper
        from llmdisc.scoring.analyses import matched_n_sample
        from llmdisc.scoring.metrics import score_cells

        trials = paper.import_paper_trials(reference / "results")
        matched = matched_n_sample(trials, seed=2026, models=paper.PAPER_MODEL_ORDER)
        llm = score_cells(matched, by=["dataset", "synthetic_method", "condition", "model"])
        summary, merged = human.llm_agreement(analysis.cells, llm)
        stacked = summary.set_index("model").loc[human.STACKED]
        assert stacked["n_pairs"] == 20 and round(stacked["spearman_rho"], 3) == -0.018
        # -19.85 on exact DRS; the paper's -19.84 used human DRS rounded to 1 dp first.
        assert round(stacked["ba_mean_difference"], 2) == -19.85
        rounded = (100 * merged["drs_llm"] - (100 * merged["drs_human"]).round(1)).mean()
        assert round(rounded, 2) == -19.84


class TestScores:
    def test_hand_counted_cell_and_totals(self, tmp_path: Path) -> None:
        _write(tmp_path / "a.csv", _rows("X", "s1", HAND), COLUMNS)
        analysis = human.analyse_labels([tmp_path], annotator_map={"X": "HX"}, seed=1)
        cells = analysis.cells.set_index(["annotator", "condition"])
        c1 = cells.loc[("HX", "C1")]
        assert (c1["p_real"], c1["p_syn"], c1["drs"], c1["accuracy"]) == (0.75, 0.5, 0.5, 0.625)
        assert c1["mean_confidence"] == 61.25 and not c1["contaminated"]
        assert cells.loc[("HX", "C2"), "drs"] == 1.0
        totals = analysis.totals.set_index(["annotator", "condition"])
        assert totals.loc[("HX", "all"), "drs"] == min(7 / 8, 6 / 8)
        assert totals.loc[("pooled", "all"), "n_valid"] == 16
        delta = analysis.deltas.iloc[0]
        deltas = (delta["delta_drs"], delta["delta_accuracy"], delta["delta_mean_confidence"])
        assert deltas == (0.5, 0.375, 28.75)
        conf = analysis.confidence.set_index(["annotator", "condition"]).loc[("HX", "C1")]
        assert (conf["n_right"], conf["n_wrong"]) == (5, 3)
        assert conf["confidence_right"] == pytest.approx((80 + 70 + 60 + 90 + 70) / 5)
        assert conf["confidence_wrong"] == pytest.approx(40) and conf["difference"] == pytest.approx(34)
        assert analysis.notes == [
            "No answer followed correctness feedback: C1 and C2 figures are both usable."]

    def test_files_without_our_columns_are_the_papers_protocol(self, tmp_path: Path) -> None:
        _write(tmp_path / "paper.csv", _rows("ManelS", "p", HAND))
        _write(tmp_path / "ours.csv", _rows("A1", "o", HAND), COLUMNS)
        labels = human.analyse_labels([tmp_path]).labels
        assert set(labels.loc[labels["annotator"] == "HA1", "protocol"]) == {"paper"}
        assert set(labels.loc[labels["annotator"] == "A1", "protocol"]) == {"llmdisc"}
        assert labels["contaminated"].sum() == 8
        forced = human.analyse_labels([tmp_path], protocol="llmdisc").labels
        assert not forced["contaminated"].any()

    def test_agreement_with_llm_cells(self) -> None:
        cells = pd.DataFrame({"annotator": "pooled", "dataset": "adult",
                              "method": ["ctgan", "tvae", "gc", "x"], "condition": "C1",
                              "drs": [0.2, 0.4, 0.6, 0.8], "contaminated": False})
        llm = pd.DataFrame({"dataset": "adult", "synthetic_method": ["ctgan", "tvae", "gc", "x"],
                            "condition": "C1", "DRS": [30.0, 50.0, 90.0, 70.0]})
        summary, merged = human.llm_agreement(cells, llm)
        row = summary.iloc[0]
        assert row["n_pairs"] == 4 and row["spearman_rho"] == pytest.approx(0.8)
        assert row["ba_mean_difference"] == pytest.approx(10.0)
        assert row["ba_sd"] == pytest.approx(pd.Series([10.0, 10.0, 30.0, -10.0]).std())
        assert len(merged) == 4
        two = pd.concat([llm.assign(model="m1"), llm.assign(model="m2", DRS=[10.0, 20.0, 30.0, 40.0])])
        by_model = human.llm_agreement(cells, two)[0].set_index("model")
        assert list(by_model.index) == ["m1", "m2", human.STACKED]
        assert by_model.loc["m2", "spearman_rho"] == pytest.approx(1.0)
        assert by_model.loc["m2", "ba_mean_difference"] == pytest.approx(-25.0)
        assert by_model.loc[human.STACKED, "n_pairs"] == 8
        assert by_model.loc[human.STACKED, "ba_mean_difference"] == pytest.approx((10.0 - 25.0) / 2)
        constant = human.llm_agreement(cells, llm.assign(DRS=0.0))[0].iloc[0]
        assert math.isnan(constant["spearman_rho"]) and constant["ba_mean_difference"] == pytest.approx(-50.0)
        with pytest.raises(DataError, match=r"LLM cell table lacks \['drs'\].*fix: give one row per"):
            human.llm_agreement(cells, llm.drop(columns="DRS"))

    def test_tables_are_written(self, tmp_path: Path) -> None:
        _write(tmp_path / "in" / "a.csv", _rows("X", "s1", HAND), COLUMNS)
        analysis = human.analyse_labels([tmp_path / "in"])
        names = sorted(p.name for p in human.write_tables(analysis, tmp_path / "out"))
        assert names == ["human_cells.csv", "human_confidence.csv", "human_deltas.csv", "human_problems.csv",
                         "human_totals.csv"]
        assert len(pd.read_csv(tmp_path / "out" / "human_cells.csv")) == 4


class TestBadInput:
    def test_problems_name_file_and_line_and_the_rest_is_analysed(self, tmp_path: Path) -> None:
        good = _rows("X", "s1", HAND)
        _write(tmp_path / "good.csv", good, COLUMNS)
        misspelt = [{("confidance" if k == "confidence" else k): v for k, v in r.items()} for r in good]
        _write(tmp_path / "misspelt.csv", misspelt, tuple("confidance" if c == "confidence" else c
                                                           for c in PAPER_COLUMNS))
        bad_rows = _rows("Y", "s2", HAND[:4])
        bad_rows[1]["predicted_label"] = "MAYBE"
        bad_rows[2]["confidence"] = 150
        _write(tmp_path / "bad_rows.csv", bad_rows, COLUMNS)
        _write(tmp_path / "dup.csv", good[:1], COLUMNS)
        _write(tmp_path / "2026_export-ctgan.csv", [{"x": 1}], ("x",))
        with pytest.warns(LlmdiscWarning) as caught:
            analysis = human.analyse_labels([tmp_path])
        messages = [str(p) for p in analysis.problems]
        assert len(messages) == 4 and len(caught) == 4
        assert any(m.startswith("bad_rows.csv, line 3: predicted_label 'MAYBE' is not one of REAL, SYNTHETIC")
                   for m in messages)
        assert any(m.startswith("bad_rows.csv, line 4: confidence '150' is not a number from 0 to 100")
                   for m in messages)
        assert any(m.startswith("misspelt.csv: missing column(s) 'confidence' (is 'confidance' a misspelling")
                   for m in messages)
        assert any(m.startswith("good.csv, line 2: duplicate answer for session s1 pair 0 C1 (first given in "
                                "dup.csv, line 2)") for m in messages)
        assert len(analysis.files) == 4  # the export was never read
        assert len(analysis.labels) == 16 + 2
        key = ["session_id", "dataset", "method", "pair_id", "condition"]
        assert analysis.labels.duplicated(key).sum() == 0

    def test_inconsistent_correct_column_is_recomputed_and_reported(self, tmp_path: Path) -> None:
        rows = _rows("X", "s1", HAND[:2])
        rows[0]["correct"] = False
        _write(tmp_path / "a.csv", rows)
        with pytest.warns(LlmdiscWarning, match=r"a.csv, line 2: the 'correct' column disagrees"):
            labels = human.analyse_labels([tmp_path]).labels
        assert labels["correct"].all()

    def test_missing_path_is_an_error_with_the_fix(self, tmp_path: Path) -> None:
        with pytest.raises(DataError, match=r"label path 'nowhere' does not exist; fix: pass a label CSV"):
            human.analyse_labels([tmp_path / "nowhere"])

    def test_cli_prints_the_tables(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from llmdisc.cli.main import main

        _write(tmp_path / "a.csv", _rows("ManelS", "s1", HAND))
        assert main(["label-analyse", str(tmp_path), "--seed", "2"]) == 0
        out = capsys.readouterr().out
        assert "label files: 1; answers kept: 16; problems: 0" in out
        assert "Totals per annotator" in out and "HA1" in out and "contaminated" in out
        with pytest.warns(LlmdiscWarning):
            assert main(["label-analyse", str(_write(tmp_path / "e" / "b.csv", [{"x": 1}], ("x",)))]) == 1
