"""Notebook 07's tables keep protocols and configurations apart, and pair humans with LLMs only like with like."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.records import PROTOCOL_COLUMNS, TrialRecord, load_trials
from llmdisc.figures import figure_data
from llmdisc.pipeline.config import load_config
from llmdisc.paths import project_root
from llmdisc.scoring.tables import cell_table


def record(protocol, *, config: str | None, true: str, predicted: str, i: int, synth: str = "ctgan",
           condition: str = "C1", run_id: str | None = None) -> dict:
    """One trial record as the runner writes it (``config=None``: a file from before ``config_name``)."""
    rec = TrialRecord(
        trial_id=f"adult|{synth}|{condition}|{true}|{i}|r0", timestamp="2026-01-01T00:00:00+00:00",
        provider="ollama", model="llama3.1:8b", condition=condition, true_label=true, predicted_label=predicted,
        correct=true == predicted, confidence=80, reasoning="r", red_flags=[], supporting_evidence=[],
        synthetic_method=synth, run_id=run_id or f"adult__{protocol.variant}-{protocol.sampling}",
        dataset="adult", encoding="labels", dataset_key="adult", sampling=protocol.sampling, sample_seed=i,
        row_ids=list(range(20)), n_rows=20, prompt_variant=protocol.variant,
        metadata_source=protocol.metadata_source, prompt_hash=f"h{i}", model_digest=None, latency_s=1.0,
        prompt_tokens=10, completion_tokens=5, attempts=1, cache_hit=False, status="valid", invalid_reason=None,
        raw_text="{}", replicate=0, run_seed=0, scoring=protocol.scoring,
        **({} if config is None else {"config_name": config})).to_dict()
    if config is None:
        del rec["config_name"]
    return rec


def write_run(trials_dir: Path, name: str, records: list[dict]) -> None:
    trials_dir.mkdir(parents=True, exist_ok=True)
    (trials_dir / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture()
def paper_protocol_trials(tmp_path: Path) -> Path:
    """configs/paper.yaml's two protocols run on one cell: the paper's always says REAL, ours is always right."""
    config = load_config(project_root() / "configs" / "paper.yaml")
    assert len(config.trials.protocols) == 2
    trials_dir = tmp_path / "results" / "trials"
    for protocol in config.trials.protocols:
        rows = []
        for i in range(4):
            for true in ("REAL", "SYNTHETIC"):
                said = "REAL" if protocol.variant == "paper" else true
                rows.append(record(protocol, config=config.name, true=true, predicted=said, i=i))
        write_run(trials_dir, f"adult__{protocol.variant}-{protocol.sampling}", rows)
    return trials_dir


def test_the_paper_configs_two_protocols_give_two_rows_per_cell(paper_protocol_trials: Path) -> None:
    trials = figure_data.load_our_trials(paper_protocol_trials)
    cells = figure_data.llm_cells(trials, seed=0)
    assert len(cells) == 2  # one cell (adult × ctgan × C1 × one model), two protocols: never pooled
    assert set(PROTOCOL_COLUMNS) <= set(cells.columns)
    by_variant = cells.set_index("prompt_variant")
    assert by_variant.loc["paper", "sampling"] == "fixed" and by_variant.loc["paper", "metadata_source"] == "source"
    assert by_variant.loc["paper", "drs"] == 0.0 and by_variant.loc["neutral", "drs"] == 1.0  # pooled: 0.5
    assert set(cells["config_name"]) == {"paper"}
    assert set(cells["n_valid"]) == {8}
    # the first look at a run (`llmdisc trials show`) keys its cells the same way
    assert len(cell_table(load_trials(paper_protocol_trials))) == 2
    # so do the condition tests and the calibration bins
    calibration = figure_data.calibration_table(trials)
    assert calibration["prompt_variant"].nunique() == 2 and calibration["model"].nunique() == 2


def test_old_files_without_config_name_load_as_unrecorded(tmp_path: Path) -> None:
    protocol = load_config(project_root() / "configs" / "paper.yaml").trials.protocols[0]
    write_run(tmp_path, "old", [record(protocol, config=None, true="REAL", predicted="REAL", i=0, run_id="old")])
    trials = figure_data.load_our_trials(tmp_path)
    assert trials["config_name"].tolist() == ["unrecorded"]
    assert figure_data.llm_cells(trials)["config_name"].tolist() == ["unrecorded"]


def test_a_run_file_shared_by_two_configs_is_one_cell_named_after_both(tmp_path: Path) -> None:
    # configs/small.yaml and configs/default.yaml have the same protocol and seed: the second run resumes the
    # first's file, so its records name different writers; the file's cell stays whole.
    protocol = load_config(project_root() / "configs" / "default.yaml").trials.protocols[0]
    rows = [record(protocol, config="small" if i < 2 else "default", true=true, predicted=true, i=i, run_id="r")
            for i in range(4) for true in ("REAL", "SYNTHETIC")]
    rows = [{**r, "scoring": "verdict"} for r in rows]  # a verdict cell, so llm_cells scores it
    write_run(tmp_path, "r", rows)
    cells = figure_data.llm_cells(figure_data.load_our_trials(tmp_path))
    assert cells["config_name"].tolist() == ["default+small"] and cells["n_valid"].tolist() == [8]


def human_cells_csv(tmp_path: Path, protocol: str | None) -> Path:
    rows = [{"annotator": "pooled", "dataset": "adult", "method": "ctgan", "condition": "C1", "drs": 0.6}]
    frame = pd.DataFrame(rows)
    if protocol is not None:
        frame["protocol"] = protocol
    path = tmp_path / "human_cells.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture()
def our_cells(paper_protocol_trials: Path) -> pd.DataFrame:
    return figure_data.llm_cells(figure_data.load_our_trials(paper_protocol_trials), seed=0)


def paper_records() -> pd.DataFrame:
    rows = [{"dataset": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "gemini",
             "model": "gemini-2.5-flash", "true_label": t, "predicted_label": p, "confidence": 90.0,
             "status": "valid"} for t, p in (("REAL", "REAL"), ("SYNTHETIC", "REAL"), ("SYNTHETIC", "SYNTHETIC"))]
    return pd.DataFrame(rows)


def test_the_papers_pilot_pairs_only_with_the_papers_llm_records(tmp_path: Path, our_cells: pd.DataFrame) -> None:
    pairs = figure_data.human_llm_pairs(our_cells, human_cells_csv(tmp_path, "paper"), paper_trials=paper_records())
    assert list(pairs.columns) == figure_data.HUMAN_PAIR_COLUMNS
    same = pairs[pairs["comparable"]]
    assert same["model"].tolist() == ["gemini / gemini-2.5-flash"] and same["differs"].tolist() == [""]
    assert same["llm_drs"].tolist() == [0.5] and same["human_drs"].tolist() == [0.6]
    other = pairs[~pairs["comparable"]]
    assert len(other) == 2 and set(other["differs"]) == {"release, protocol"}  # our two protocols
    assert all(source.startswith("ours: ") for source in other["llm_source"])


def test_our_pilot_pairs_with_our_cells_and_not_with_the_papers(tmp_path: Path, our_cells: pd.DataFrame) -> None:
    pairs = figure_data.human_llm_pairs(our_cells, human_cells_csv(tmp_path, "llmdisc"),
                                        paper_trials=paper_records())
    assert pairs.loc[pairs["comparable"], "llm_source"].str.startswith("ours: ").all()
    assert pairs.loc[~pairs["comparable"], "model"].tolist() == ["gemini / gemini-2.5-flash"]


def test_a_pilot_of_unrecorded_protocol_is_compared_with_nothing(tmp_path: Path, our_cells: pd.DataFrame) -> None:
    pairs = figure_data.human_llm_pairs(our_cells, human_cells_csv(tmp_path, None), paper_trials=paper_records())
    assert not pairs["comparable"].any() and pairs["differs"].str.startswith("unknown").all()


def test_the_figure_draws_the_diagonal_only_for_comparable_pairs(tmp_path: Path, our_cells: pd.DataFrame) -> None:
    from llmdisc.figures import plots

    pairs = figure_data.human_llm_pairs(our_cells, human_cells_csv(tmp_path, "paper"), paper_trials=paper_records())
    fig = plots.human_vs_llm(pairs)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Same releases, same protocol", "Not comparable: differs in release, protocol"]
    diagonal = [[line for line in ax.get_lines() if list(line.get_xdata()) == [0, 1]] for ax in fig.axes]
    assert [len(d) for d in diagonal] == [1, 0]


def test_our_trials_on_the_papers_own_release_pair_with_its_pilot_differing_in_protocol_only(
        tmp_path: Path, our_cells: pd.DataFrame) -> None:
    on_paper = our_cells.assign(synthetic_method="paper_" + our_cells["synthetic_method"].astype(str))
    cells = pd.concat([our_cells, on_paper], ignore_index=True)
    pairs = figure_data.human_llm_pairs(cells, human_cells_csv(tmp_path, "paper"), paper_trials=paper_records())
    ours_on_paper = pairs[pairs["synthetic_method"] == "paper_ctgan"]
    assert len(ours_on_paper) == 2 and set(ours_on_paper["differs"]) == {"protocol"}
    assert not ours_on_paper["comparable"].any()
    assert set(pairs.loc[pairs["synthetic_method"] == "ctgan", "differs"]) == {"", "release, protocol"}
    # a pilot run on our releases (llmdisc's app) differs from our trials on the paper's release in the release
    ours = figure_data.human_llm_pairs(cells, human_cells_csv(tmp_path, "llmdisc"))
    assert set(ours.loc[ours["synthetic_method"] == "paper_ctgan", "differs"]) == {"release"}


def test_the_papers_own_records_carry_every_protocol_column() -> None:
    # notebook 07 keys the paper's records with ours: a protocol column they lack stops it (as label_method did)
    paper = figure_data.paper_llm_trials()
    if paper.empty:
        pytest.skip("../shared/reference is not beside the checkout")
    assert set(PROTOCOL_COLUMNS) <= set(paper.columns)
    assert set(paper["label_method"]) == {""} and set(paper["scoring"]) == {"verdict"}
    cells = figure_data.llm_cells(paper, seed=0)
    assert len(cells) and set(PROTOCOL_COLUMNS) <= set(cells.columns)


def _likelihood_and_joint_records(key: str, seed: int) -> tuple[list[dict], list[dict]]:
    """Records as notebook 09 writes them for one dataset: real holdout (test and reference), train, a release that
    is less probable and holds together less, and the shuffled-columns control (no joint structure)."""
    from llmdisc.discrimination.likelihood.joint import contrast_statistics

    rng = np.random.default_rng(seed)
    likelihood, joint = [], []
    groups = [("holdout", "test", 0.0, 30.0), ("holdout", "reference", 0.0, 30.0), ("train", "control", 0.0, 30.0),
              ("ctgan", "test", -1.0, 10.0), ("shuffled_columns", "test", 0.0, 0.0)]
    for source, role, shift, contrast in groups:
        label = "REAL" if source in ("holdout", "train") else "SYNTHETIC"
        for i in range(8):
            common = {"sample_id": f"{key}-{source}-{role}-{i}", "dataset_key": key, "backend": "transformers",
                      "model": "m", "context": "none", "source": source, "role": role, "true_label": label,
                      "index": i}
            value = float(rng.normal(shift, 0.3))
            likelihood.append({**common, "model_digest": "d", "serialisation": "markdown", "sample_seed": i,
                               "n_rows": 20, "prompt_tokens": 100, "n_tokens": 80, "total_logprob": value * 80,
                               "mean_logprob": value - 1, "min_k_logprob": value - 4, "header_logprob": -3.0,
                               "layout_logprob": -9.0, "seconds": 1.0, "column_logprob": {"age": 10 * value}})
            stats = contrast_statistics(float(rng.normal(contrast, 5.0)), rng.normal(0.0, 5.0, 2),
                                        uniform=float(rng.random()))
            joint.append({**common, "serialisation": "csv", "k": 2, "reference_rows": 20, **stats, "run_seed": seed,
                          "row_ids": sorted(int(r) for r in rng.choice(60, 20, replace=False)),
                          "column_contrast": {"age": stats["contrast"]}, "column_contrasts": {}})
    return likelihood, joint


def test_the_likelihood_and_joint_tables_cover_every_dataset_run_and_skip_the_design_study(tmp_path):
    from llmdisc.discrimination.records import write_atomically as write_records

    folder = tmp_path / "likelihood"
    assert figure_data.likelihood_tables(folder) == {}  # no run yet: nothing to write, nothing raised
    assert figure_data.joint_tables(folder)[1] == {}
    for seed, key in enumerate(("adult", "census-codes")):  # each dataset's notebook 09 writes its own files
        likelihood, joint = _likelihood_and_joint_records(key, seed)
        write_records(folder / f"likelihood-{key}.jsonl", likelihood)
        write_records(folder / "joint" / f"joint-{key}.jsonl", joint)
    write_records(folder / "joint" / "design" / "joint-design.jsonl",
                  _likelihood_and_joint_records("census-labels", 9)[1])  # the design study: not a run

    tables = figure_data.likelihood_tables(folder, seed=0)
    assert set(tables) == {"likelihood_cells", "likelihood_columns", "likelihood_samples"}
    cells = tables["likelihood_cells"].query("score == 'mean_logprob'")
    assert set(cells["dataset_key"]) == {"adult", "census-codes"}  # the joint records are not read as likelihood
    assert (cells.set_index(["dataset_key", "source"]).loc[("adult", "ctgan"), "auc"]) < 0.2

    rng = np.random.default_rng(5)  # the tables the samples were drawn from: a low-variety column varies per sample
    source_tables = {s: pd.DataFrame({"age": rng.integers(17, 90, 60), "sex": rng.integers(0, 3, 60)})
                     for s in ("holdout", "train", "ctgan", "shuffled_columns")}
    records, joint = figure_data.joint_tables(folder, seed=0, load_tables=lambda key, sources: source_tables)
    assert set(joint) == {"joint_cells", "joint_columns"}
    assert set(records["dataset_key"]) == {"adult", "census-codes"}  # design/ left out
    assert records["variety"].between(0, 1).all() and records["variety"].nunique() > 1
    assert set(joint["joint_cells"]["score"]) == {"contrast", "contrast_adjusted"}
    assert {"real_variety", "other_variety", "variety_slope", "variety_slope_low", "variety_slope_high",
            "variety_r"} <= set(joint["joint_cells"].columns)
    joint_cells = joint["joint_cells"].query("score == 'contrast'").set_index(["dataset_key", "source"])
    assert joint_cells.loc[("adult", "shuffled_columns"), "auc"] < 0.1  # C near 0 against real rows' +30
    assert 0.2 < joint_cells.loc[("adult", "real_vs_real"), "auc"] < 0.8  # train rows hold together as holdout rows
