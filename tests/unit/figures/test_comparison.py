"""Every discriminator side by side: input tables from the real scoring functions, one scale, one panel per dataset."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmdisc.baselines.report import RESULT_COLUMNS, headline
from llmdisc.errors import DataError
from llmdisc.figures import comparison, comparison_plots
from llmdisc.figures.figure_data import llm_cells
from llmdisc.figures.plots import save_figure
from llmdisc.human.analysis import cell_table as human_cell_table
from llmdisc.scoring import score_probability_cells, write_table
from llmdisc.discrimination.likelihood.joint import contrast_statistics
from llmdisc.scoring.joint import joint_table
from llmdisc.scoring.likelihood import likelihood_table

KEYS = ("adult", "census-codes")
SYNTHS = ("gaussian_copula", "ctgan")


def _verdict_trials() -> pd.DataFrame:
    """Verdict trials per cell: 4 real, 4 synthetic; the model gets 3 of 4 of each right."""
    rows = []
    for key in KEYS:
        for synth in (*SYNTHS, "shuffled_columns"):
            for condition in ("C1", "C2"):
                for label, other in (("REAL", "SYNTHETIC"), ("SYNTHETIC", "REAL")):
                    for i in range(4):
                        rows.append({"dataset": key, "synthetic_method": synth, "condition": condition,
                                     "provider": "local", "model": "m", "true_label": label,
                                     "predicted_label": label if i < 3 else other, "confidence": 70,
                                     "status": "valid", "scoring": "both"})
    return pd.DataFrame(rows)


def _probability_trials(auc_shift: float) -> pd.DataFrame:
    """Label-score trials: synthetic samples' log-odds shifted by ``auc_shift`` (negative: ranked below real)."""
    rng = np.random.default_rng(0)
    rows = []
    for key in KEYS:
        for synth in (*SYNTHS, "real_holdout"):
            for label in ("REAL", "SYNTHETIC"):
                for _ in range(8):
                    s = rng.normal(auc_shift if label == "SYNTHETIC" and synth != "real_holdout" else 0, 1)
                    rows.append({"dataset_key": key, "synthetic_method": synth, "condition": "C1",
                                 "provider": "local", "model": "m", "true_label": label, "scoring": "both",
                                 "score_status": "valid", "logprob_real": -0.1, "logprob_synthetic": -0.1 + s,
                                 "logprob_real_per_char": -0.02, "logprob_synthetic_per_char": (-0.1 + s) / 9,
                                 "p_synthetic": 1 / (1 + math.exp(-s)), "label_mass": 0.9})
    return pd.DataFrame(rows)


def _likelihood_records() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for key in KEYS:
        for source, role, shift in (("holdout", "test", 0), ("holdout", "reference", 0), ("train", "control", 0),
                                    ("gaussian_copula", "test", -1.5), ("ctgan", "test", -0.2),
                                    ("shuffled_columns", "test", -2)):
            for i in range(8):
                value = rng.normal(shift, 0.5)
                rows.append({"dataset_key": key, "backend": "transformers", "model": "m", "model_digest": "d",
                             "serialisation": "markdown", "context": "c1_prompt", "source": source, "role": role,
                             "true_label": "REAL" if source in ("holdout", "train") else "SYNTHETIC", "index": i,
                             "sample_seed": i, "n_rows": 20, "prompt_tokens": 100, "n_tokens": 80,
                             "total_logprob": value * 80, "mean_logprob": value - 1, "min_k_logprob": value - 4,
                             "header_logprob": -3.0, "layout_logprob": -9.0, "seconds": 1.0,
                             "column_logprob": {"age": -20 + 10 * value}})
    return pd.DataFrame(rows)


def _joint_records() -> pd.DataFrame:
    """Joint contrasts: real samples around +30 nats, GaussianCopula around 0 (lost its ties), CTGAN around +25."""
    rng = np.random.default_rng(2)
    rows = []
    for key in KEYS:
        for source, role, shift in (("holdout", "test", 30), ("holdout", "reference", 30), ("train", "control", 30),
                                    ("gaussian_copula", "test", 0), ("ctgan", "test", 25),
                                    ("shuffled_columns", "test", 0)):
            for i in range(8):
                stats = contrast_statistics(float(rng.normal(shift, 5)), rng.normal(0, 5, 2), uniform=rng.random())
                rows.append({"dataset_key": key, "backend": "transformers-bfloat16", "model": "m",
                             "serialisation": "csv", "context": "none", "k": 2, "reference_rows": 20,
                             "source": source, "role": role, "index": i, **stats})
    return pd.DataFrame(rows)


def _baselines() -> pd.DataFrame:
    """Notebook 05's long rows (:data:`RESULT_COLUMNS`) for C2ST AUCs with intervals, per key × synthesizer."""
    rows = []
    for key in KEYS:
        for k, synth in enumerate(SYNTHS):
            for method, auc in (("hist_gb", 0.95 - 0.1 * k), ("logistic", 0.45)):
                rows.append({"dataset_key": key, "synthesizer": synth, "baseline": "c2st", "variant": "ours",
                             "method": method, "metric": "auc", "value": auc, "ci_low": auc - 0.07,
                             "ci_high": auc + 0.04, "n": 200, "seed": 0, "note": ""})
            rows.append({"dataset_key": key, "synthesizer": synth, "baseline": "dcr", "variant": "ours",
                         "method": "gower", "metric": "share_closer_than_holdout_median", "value": 0.5,
                         "ci_low": 0.4, "ci_high": 0.6, "n": 100, "seed": 0, "note": ""})
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def _human_cells() -> pd.DataFrame:
    rows = []
    for dataset in ("adult", "census"):
        for condition in ("C1", "C2"):
            for annotator in ("HA1", "HA2"):
                for label, other in (("REAL", "SYNTHETIC"), ("SYNTHETIC", "REAL")):
                    for i in range(5):
                        rows.append({"annotator": annotator, "dataset": dataset, "method": "ctgan",
                                     "condition": condition, "true_label": label,
                                     "predicted_label": label if i < 4 else other, "confidence": 60,
                                     "contaminated": condition == "C2"})
    return human_cell_table(pd.DataFrame(rows), n_boot=200)


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    probability = _probability_trials(-1.5)
    return {"llm_cells": llm_cells(_verdict_trials()),
            "llm_probability_cells": score_probability_cells(probability, permutations=50),
            "likelihood_cells": pd.concat([likelihood_table(_likelihood_records(), score=s, n_perm=50, n_boot=100)
                                           for s in ("mean_logprob", "min_k_logprob")], ignore_index=True),
            "joint_cells": joint_table(_joint_records(), n_perm=50, n_boot=100),
            "baselines": _baselines(), "human_cells": _human_cells()}


class TestScale:
    @pytest.mark.parametrize(("auc", "low", "high", "expected"), [
        (0.2, 0.1, 0.3, (0.6, 0.4, 0.8)),
        (0.9, 0.85, 0.95, (0.8, 0.7, 0.9)),
        (0.55, 0.4, 0.7, (0.1, 0.0, 0.4)),  # straddles 0.5: chance is in the interval
        (0.45, 0.2, 0.55, (0.1, 0.0, 0.6)),
        (0.5, math.nan, math.nan, (0.0, math.nan, math.nan)),
    ])
    def test_auc_maps_to_separation_and_keeps_its_interval_in_order(self, auc, low, high, expected) -> None:
        got = comparison.auc_to_scale(auc, low, high)
        np.testing.assert_allclose(got, expected, atol=1e-12)
        if not math.isnan(got[1]):
            assert got[1] <= got[0] <= got[2]

    def test_an_auc_of_0_2_reads_0_6_lower_and_a_drs_is_kept(self) -> None:
        probability = pd.DataFrame([{
            "dataset_key": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "local", "model": "m",
            "auc": 0.2, "auc_ci_low": 0.1, "auc_ci_high": 0.3, "auc_direction": "lower", "n_real": 10, "n_syn": 10,
            "batch_drs": 0.7, "batch_drs_ci_low": 0.5, "batch_drs_ci_high": 0.9, "context_drs": math.nan}])
        out = comparison.discriminator_comparison({"llm_probability_cells": probability})
        auc = out[out["statistic"] == "auc"].iloc[0]
        assert auc["scale_value"] == pytest.approx(0.6) and auc["direction"] == "lower"
        assert (auc["scale_low"], auc["scale_high"]) == pytest.approx((0.4, 0.8))
        drs = out[out["statistic"] == "batch_drs"].iloc[0]
        assert (drs["scale_value"], drs["scale_low"], drs["scale_high"]) == (0.7, 0.5, 0.9)
        assert set(out["statistic"]) == {"auc", "batch_drs"}  # no contextual DRS measured: no row


class TestComparison:
    def test_every_discriminator_gives_its_rows_on_the_common_scale(self, tables) -> None:
        out = comparison.discriminator_comparison(tables)
        assert list(out.columns) == list(comparison.COLUMNS)
        assert set(out["discriminator"]) == set(comparison.DISCRIMINATORS)
        assert set(out["source_table"]) == {"llm_cells", "llm_probability_cells", "likelihood_cells", "joint_cells",
                                            "baselines", "human_cells"}
        verdict = out[(out["discriminator"] == "llm_verdict") & (out["dataset_key"] == "adult")
                      & (out["synthesizer"] == "ctgan")]
        assert sorted(verdict["condition"]) == ["C1", "C2"] and (verdict["n"] == 8).all()
        assert verdict["scale_value"].tolist() == pytest.approx([0.75, 0.75])  # DRS = min(3/4, 3/4), kept
        finite = out.dropna(subset=["scale_low", "scale_high"])
        assert (finite["scale_low"] <= finite["scale_value"] + 1e-12).all()
        assert (finite["scale_value"] <= finite["scale_high"] + 1e-12).all()
        assert out["scale_value"].between(0, 1).all()

    def test_likelihood_uses_mean_logprob_keeps_direction_and_shows_real_vs_real_as_the_negative_control(
            self, tables) -> None:
        out = comparison.discriminator_comparison(tables)
        lk = out[out["discriminator"] == "likelihood"]
        cells = tables["likelihood_cells"]
        source = cells[(cells["score"] == "mean_logprob") & (cells["dataset_key"] == "adult")
                       & (cells["source"] == "gaussian_copula")].iloc[0]
        row = lk[(lk["dataset_key"] == "adult") & (lk["synthesizer"] == "gaussian_copula")
                 & (lk["statistic"] == "auc")].iloc[0]
        assert row["estimate"] == source["auc"] and row["direction"] == "synthetic less probable"
        assert row["scale_value"] == pytest.approx(source["separation"])  # the table's separation is D already
        assert row["n"] == source["n_real"] + source["n_syn"]
        assert set(lk["synthesizer"]) == {"gaussian_copula", "ctgan", "shuffled_columns", "real_holdout"}
        assert len(lk) == 2 * 2 * 4  # auc and drs, per key × source: min_k_logprob rows left out
        assert lk.loc[lk["synthesizer"] == "real_holdout", "notes"].str.contains("real_vs_real").all()

    def test_the_joint_contrast_names_how_the_table_was_written_and_reads_like_the_likelihood(self, tables) -> None:
        out = comparison.discriminator_comparison(tables)
        joint = out[out["discriminator"] == "joint"]
        assert set(joint["synthesizer"]) == {"gaussian_copula", "ctgan", "shuffled_columns", "real_holdout"}
        assert set(joint["condition"]) == {"csv, k 2, m 20"} and set(joint["statistic"]) == {"auc", "drs"}
        cells = tables["joint_cells"].set_index(["dataset_key", "source"])
        lost = joint[(joint["dataset_key"] == "adult") & (joint["synthesizer"] == "gaussian_copula")
                     & (joint["statistic"] == "auc")].iloc[0]
        assert lost["estimate"] == cells.loc[("adult", "gaussian_copula"), "auc"] < 0.1  # planted: ties lost
        assert lost["scale_value"] == pytest.approx(cells.loc[("adult", "gaussian_copula"), "separation"])
        assert lost["notes"].startswith("AUC of contrast")
        control = joint[(joint["synthesizer"] == "real_holdout") & (joint["statistic"] == "auc")]
        assert control["notes"].str.contains("real_vs_real").all() and len(control) == 2

    def test_probability_auc_below_one_half_reads_as_separation_with_direction_lower(self, tables) -> None:
        out = comparison.discriminator_comparison(tables)
        auc = out[(out["discriminator"] == "llm_probability") & (out["statistic"] == "auc")
                  & (out["synthesizer"] == "gaussian_copula")]
        assert (auc["estimate"] < 0.5).all() and (auc["direction"] == "lower").all()
        assert np.allclose(auc["scale_value"], 2 * (0.5 - auc["estimate"]))

    def test_c2st_and_human_rows(self, tables) -> None:
        out = comparison.discriminator_comparison(tables)
        c2st = out[out["discriminator"] == "c2st"]
        assert len(c2st) == 2 * 2 * 2 and set(c2st["model"]) == {"hist_gb", "logistic"}  # the DCR row is not C2ST
        logistic = c2st[c2st["model"] == "logistic"].iloc[0]  # AUC 0.45 [0.38, 0.49]: lower, interval below 0.5
        assert logistic["direction"] == "lower"
        assert (logistic["scale_value"], logistic["scale_low"], logistic["scale_high"]) == pytest.approx(
            (0.1, 0.02, 0.24))
        human = out[out["discriminator"] == "human_pilot"]
        assert set(human["dataset_key"]) == {"adult", "census-codes"}  # the pilot's census is the codes form
        assert (human["model"] == "pooled annotators").all() and (human["n"] == 20).all()
        assert human["notes"].str.contains("paper's samples").all()
        assert human["synthesizer"].str.startswith("paper_").all()  # the paper's releases, not ours
        assert human.loc[human["condition"] == "C2", "notes"].str.contains("feedback").all()

    def test_the_headline_table_stands_in_for_the_long_baselines_without_an_interval(self, tables) -> None:
        out = comparison.discriminator_comparison({"baselines_headline": headline(tables["baselines"])})
        assert len(out) == 8 and (out["source_table"] == "baselines_headline").all()
        assert out["scale_low"].isna().all() and out["n"].isna().all()

    def test_missing_or_empty_tables_give_no_rows(self, tables) -> None:
        assert comparison.discriminator_comparison({}).empty
        assert list(comparison.discriminator_comparison({}).columns) == list(comparison.COLUMNS)
        partial = comparison.discriminator_comparison({"llm_cells": tables["llm_cells"], "likelihood_cells": None,
                                                       "human_cells": pd.DataFrame()})
        assert set(partial["discriminator"]) == {"llm_verdict"}
        undefined = tables["llm_cells"].assign(drs=np.nan)
        assert comparison.discriminator_comparison({"llm_cells": undefined}).empty

    def test_a_table_without_its_columns_is_an_error_naming_them(self) -> None:
        with pytest.raises(DataError, match=r"likelihood_cells lacks column\(s\) \['backend'"):
            comparison.discriminator_comparison({"likelihood_cells": pd.DataFrame({"dataset_key": ["adult"]})})

    def test_load_inputs_reads_what_is_there_and_names_the_rest(self, tables, tmp_path) -> None:
        write_table(tables["llm_cells"], "llm_cells", tmp_path / "tables")
        found, missing = comparison.load_inputs(tmp_path / "tables", tmp_path / "baselines")
        assert list(found) == ["llm_cells"]
        assert missing == ["llm_probability_cells", "likelihood_cells", "joint_cells", "human_cells",
                           "baselines (results/baselines/*.csv or baselines_headline)"]
        (tmp_path / "baselines").mkdir()
        tables["baselines"].to_csv(tmp_path / "baselines" / "adult.csv", index=False)
        found, missing = comparison.load_inputs(tmp_path / "tables", tmp_path / "baselines")
        assert "baselines" in found and not any(m.startswith("baselines") for m in missing)


class TestFigure:
    def test_one_panel_per_dataset_with_every_row_and_series(self, tables, tmp_path) -> None:
        out = comparison.discriminator_comparison(tables)
        fig = comparison_plots.side_by_side(out)
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert [ax.get_title() for ax in panels] == list(KEYS)
        rows = [t.get_text() for t in panels[0].get_yticklabels()]
        assert rows == ["gaussian_copula", "ctgan", "paper_ctgan", "shuffled_columns", "real_holdout"]  # pilot: paper_*
        assert panels[0].get_xlim()[0] < 0 < 1 < panels[0].get_xlim()[1]
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert "likelihood AUC → separation · transformers / m · c1_prompt" in labels
        assert len(labels) == len(set(labels))
        paths = save_figure(fig, "discriminators_side_by_side", tmp_path)
        assert all(p.stat().st_size > 1000 for p in paths)

    def test_a_calibration_that_calls_every_sample_one_label_is_named_in_the_notes_and_on_the_figure(self) -> None:
        trials = _probability_trials(-1.5)
        # a content-free log-odds below every sample's score sends every sample, real and synthetic, to SYNTHETIC
        content_free = pd.DataFrame([{"dataset_key": key, "condition": "C1", "provider": "local", "model": "m",
                                      "log_odds": -50.0} for key in KEYS])
        cells = score_probability_cells(trials, permutations=20, content_free=content_free)
        assert (cells["context_drs"] == 0).all() and (cells["context_p_syn"] == 1).all()
        out = comparison.discriminator_comparison({"llm_probability_cells": cells})
        context = out[out["statistic"] == "context_drs"]
        batch = out[out["statistic"] == "batch_drs"]
        assert context["notes"].str.contains(comparison.ONE_LABEL_NOTE, regex=False).all()
        assert not batch["notes"].str.contains(comparison.ONE_LABEL_NOTE, regex=False).any()  # median: both labels
        fig = comparison_plots.side_by_side(out)
        marks = [t for ax in fig.axes for t in ax.texts if t.get_text() == "one label"]
        assert len(marks) == len(context)

    @pytest.mark.parametrize(("p_real", "p_syn", "expected"), [(0.0, 1.0, True), (1.0, 0.0, True),
                                                               (0.0, 0.0, False), (0.45, 0.55, False)])
    def test_one_label_reads_the_two_shares(self, p_real, p_syn, expected) -> None:
        assert comparison.one_label(p_real, p_syn) is expected

    def test_an_empty_table_still_gives_a_figure(self) -> None:
        fig = comparison_plots.side_by_side(comparison.discriminator_comparison({}))
        assert len(fig.axes) == 1
