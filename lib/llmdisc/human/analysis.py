"""Analysis of human label files: the paper's pilot (docs/protocol.md §7) and sessions of llmdisc's app.

Entry point :func:`analyse_labels`. Rates are fractions in [0, 1] (DRS 0.5 = chance-level); confidences are
0-100. The paper's app showed C1 correctness before C2, so its C2 answers are flagged ``contaminated``
(docs/protocol.md §8 row 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

from llmdisc.errors import DataError
from llmdisc.human.label_app.label_files import (PAPER_ANNOTATOR_MAP, LabelProblem, find_label_files,
                                                 read_label_file, read_labels)
from llmdisc.human.label_app.schema import PROTOCOL_PAPER
from llmdisc.paths import data_dir, reference_dir
from llmdisc.scoring.metrics import score_cells

POOLED = "pooled"
"""The ``annotator`` value of rows pooled over annotators."""
CELL = ("dataset", "method", "condition")
SCORE_COLUMNS = ["n_valid", "n_valid_real", "n_valid_syn", "p_real", "p_real_ci_low", "p_real_ci_high",
                 "p_syn", "p_syn_ci_low", "p_syn_ci_high", "drs", "drs_ci_low", "drs_ci_high", "accuracy",
                 "mean_confidence", "bootstrap_seed"]


@dataclass
class HumanAnalysis:
    """Every table of the human-pilot analysis (fractions in [0, 1], confidences 0-100)."""

    labels: pd.DataFrame  # the checked, de-duplicated answers, with annotator, protocol and contaminated
    problems: list[LabelProblem]
    files: list[str]
    cells: pd.DataFrame
    totals: pd.DataFrame
    confidence: pd.DataFrame
    deltas: pd.DataFrame
    agreement: pd.DataFrame | None = None
    agreement_cells: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def _with_pooled(labels: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([labels, labels.assign(annotator=POOLED)], ignore_index=True)


def _score(labels: pd.DataFrame, by: list[str], seed: int, n_boot: int) -> pd.DataFrame:
    trials = labels.assign(status="valid")
    scored = score_cells(trials, by=by, seed=seed, n_boot=n_boot)
    groups = trials.groupby(by, sort=True)
    flags = groups["contaminated"].any().rename("contaminated").reset_index()
    if "protocol" in trials:  # which app's answers (paper / llmdisc): the releases and protocol they judged
        flags = flags.merge(groups["protocol"].agg(lambda s: "+".join(sorted(set(s.astype(str))))).reset_index(),
                            on=by, how="left")
    return scored[by + SCORE_COLUMNS].merge(flags, on=by, how="left")


def cell_table(labels: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Scores per annotator × dataset × method × condition, annotators first, then ``pooled`` rows.

    Returns:
        Columns ``annotator``, :data:`CELL`, the :data:`SCORE_COLUMNS` (p_real/p_syn with Wilson 95 % bounds,
        drs with bootstrap 95 % bounds), ``contaminated`` and ``protocol`` (``paper``, ``llmdisc`` or
        ``+``-joined: humans are paired only with LLM cells of the same releases and protocol).
    """
    return _score(_with_pooled(labels), ["annotator", *CELL], seed, n_boot)


def annotator_totals(labels: pd.DataFrame, *, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Totals per annotator and pooled, over all answers (``condition == "all"``) and per condition.

    DRS here is min(p_REAL, p_SYN) over the pooled answers, not the mean of the cells' DRS: the paper's
    definition for its totals (it reproduces HA1 53.3, HA2 77.9, pooled 66.4).
    """
    pooled = _with_pooled(labels)
    overall = _score(pooled.assign(condition="all"), ["annotator", "condition"], seed, n_boot)
    by_condition = _score(pooled, ["annotator", "condition"], seed, n_boot)
    return pd.concat([overall, by_condition], ignore_index=True)


def confidence_by_correctness(labels: pd.DataFrame) -> pd.DataFrame:
    """Mean confidence (0-100) of right and of wrong answers, per annotator (and pooled) × condition: columns
    ``annotator, condition, n_right, n_wrong, confidence_right, confidence_wrong`` and ``difference``."""
    pooled = _with_pooled(labels)
    pooled = pd.concat([pooled, pooled.assign(condition="all")], ignore_index=True)
    keys = ["annotator", "condition"]
    out = pd.DataFrame(index=pooled.groupby(keys).size().index)
    for name, part in (("right", pooled[pooled["correct"]]), ("wrong", pooled[~pooled["correct"]])):
        stats_ = part.groupby(keys)["confidence"].agg(["size", "mean"]).reindex(out.index)
        out[f"n_{name}"] = stats_["size"].fillna(0).astype(int)
        out[f"confidence_{name}"] = stats_["mean"].astype(float)
    out = out[["n_right", "n_wrong", "confidence_right", "confidence_wrong"]].reset_index()
    out["difference"] = out["confidence_right"] - out["confidence_wrong"]
    return out


def condition_deltas(cells: pd.DataFrame) -> pd.DataFrame:
    """C2 − C1 per annotator × dataset × method, from :func:`cell_table` (DRS, accuracy, confidence); where
    ``contaminated``, the difference mixes the metadata's effect with that of C1 feedback."""
    keys = ["annotator", "dataset", "method"]
    values = ["drs", "accuracy", "mean_confidence", "n_valid"]
    wide = cells.pivot_table(index=keys, columns="condition", values=values, aggfunc="first")
    out = pd.DataFrame(index=wide.index)
    for value in values[:3]:
        out[f"{value}_c1"] = wide.get((value, "C1"))
        out[f"{value}_c2"] = wide.get((value, "C2"))
        out[f"delta_{value}"] = out[f"{value}_c2"] - out[f"{value}_c1"]
    flags = cells[cells["condition"] == "C2"].set_index(keys)["contaminated"]
    out["contaminated"] = flags.reindex(out.index).fillna(False).astype(bool)
    return out.reset_index()


STACKED = "all models (stacked)"
"""``model`` of the agreement row computed over every (cell, model) pair at once, the paper's way."""


def _agreement_row(group: pd.DataFrame, model: str, annotator: str) -> dict[str, object]:
    from scipy import stats

    group = group.dropna(subset=["drs_llm", "drs_human"])
    diff = 100 * (group["drs_llm"] - group["drs_human"])
    constant = group["drs_llm"].nunique() < 2 or group["drs_human"].nunique() < 2
    rho = stats.spearmanr(group["drs_llm"], group["drs_human"]) if len(group) >= 3 and not constant else None
    sd = float(diff.std(ddof=1)) if len(group) > 1 else math.nan
    mean = float(diff.mean()) if len(group) else math.nan
    return {"model": model, "annotator": annotator, "n_pairs": len(group),
            "spearman_rho": float(rho.statistic) if rho else math.nan,
            "spearman_p": float(rho.pvalue) if rho else math.nan,
            "ba_mean_difference": mean, "ba_sd": sd,
            "ba_loa_low": mean - 1.96 * sd, "ba_loa_high": mean + 1.96 * sd}


def llm_agreement(human_cells: pd.DataFrame, llm_cells: pd.DataFrame, *,
                  annotator: str = POOLED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Agreement between human and LLM DRS over the cells both cover (Spearman ρ, Bland–Altman).

    Args:
        human_cells: :func:`cell_table` output; its ``annotator`` rows are compared.
        llm_cells: one row per LLM cell with ``dataset``, ``method`` (or ``synthetic_method``),
            ``condition`` and ``drs`` (fraction) or ``DRS`` (percent, the paper's tables); optionally
            ``model`` and ``fair_cell_Nmin8`` (only True rows kept).

    Returns:
        ``(summary, merged)``: ``summary`` has one row per model and, with several models, a row
        :data:`STACKED`; columns ``n_pairs, spearman_rho, spearman_p`` (NaN when a side is constant or under
        3 pairs) and Bland–Altman ``ba_mean_difference, ba_sd, ba_loa_low, ba_loa_high`` (LLM − human, DRS
        points 0-100; limits mean ± 1.96 SD). ``merged`` is the per-cell table.

    Raises:
        DataError: ``llm_cells`` lacks a cell column or a DRS column.
    """
    llm = llm_cells.rename(columns={"synthetic_method": "method"}).copy()
    if "drs" not in llm.columns and "DRS" in llm.columns:
        llm["drs"] = llm["DRS"] / 100.0
    missing = [c for c in (*CELL, "drs") if c not in llm.columns]
    if missing:
        raise DataError(f"LLM cell table lacks {missing}; it has {list(llm.columns)}; fix: give one row per "
                        "dataset × method × condition (× model) with a drs (0-1) or DRS (percent) column")
    if "fair_cell_Nmin8" in llm.columns:
        llm = llm[llm["fair_cell_Nmin8"].astype(bool)]
    if "model" not in llm.columns:
        llm["model"] = "llm"
    human = human_cells[human_cells["annotator"] == annotator][[*CELL, "drs", "contaminated"]]
    merged = llm[["model", *CELL, "drs"]].merge(human, on=list(CELL), suffixes=("_llm", "_human"))
    rows = [_agreement_row(group, str(model), annotator)
            for model, group in merged.groupby("model", sort=True)]
    if merged["model"].nunique() > 1:
        rows.append(_agreement_row(merged, STACKED, annotator))
    return pd.DataFrame(rows), merged


def protocol_notes(labels: pd.DataFrame) -> list[str]:
    """Plain-language notes on the paper's protocol defects visible in the answers: C2 answers given after C1
    feedback, and the share of confidences at 50, the paper slider's preset."""
    notes = []
    paper = labels[labels["protocol"] == PROTOCOL_PAPER] if not labels.empty else labels
    if labels.empty or not labels["contaminated"].any():
        notes.append("No answer followed correctness feedback: C1 and C2 figures are both usable.")
    else:
        notes.append(
            f"{int(labels['contaminated'].sum())} C2 answers from {paper['source_file'].nunique()} file(s) "
            "of the paper's app are marked contaminated: that app showed whether the C1 answer was right "
            "before C2 was answered. Their C2 and all-condition figures mix the metadata's effect with that "
            "feedback; the C1-only figures are reported beside them (files recognised by the absence of "
            "llmdisc's columns sample_seed, row_ids, metadata_source, elapsed_seconds).")
    if len(paper):
        at_default = float((paper["confidence"] == 50).mean())
        notes.append(f"{100 * at_default:.1f} % of the confidences in the paper's files are exactly 50, its "
                     "slider's preset value: such answers cannot be told apart from an untouched slider.")
    return notes


def analyse_labels(paths: Iterable[Path | str], *, annotator_map: Mapping[str, str] | None = None,
                   seed: int = 0, llm_cells: pd.DataFrame | None = None, protocol: str = "auto",
                   n_boot: int = 2000) -> HumanAnalysis:
    """Run the whole human-pilot analysis on the label files under ``paths``.

    ``paths``, ``annotator_map`` and ``protocol`` as :func:`read_labels`; ``seed``: base seed of the DRS
    bootstraps (each cell's derives from it and the cell); ``llm_cells``: LLM cells for :func:`llm_agreement`.
    """
    labels, problems, files = read_labels(paths, annotator_map=annotator_map, protocol=protocol)
    if labels.empty:
        empty = pd.DataFrame()
        return HumanAnalysis(labels, problems, files, empty, empty, empty, empty,
                             notes=["No valid answers were found."])
    cells = cell_table(labels, seed=seed, n_boot=n_boot)
    totals = annotator_totals(labels, seed=seed, n_boot=n_boot)
    analysis = HumanAnalysis(labels, problems, files, cells, totals, confidence_by_correctness(labels),
                             condition_deltas(cells), notes=protocol_notes(labels))
    if llm_cells is not None:
        analysis.agreement, analysis.agreement_cells = llm_agreement(cells, llm_cells)
    return analysis


def default_label_dirs() -> list[Path]:
    """The paper's labels (``<reference>/results/human``) where the reference folder
    (:func:`llmdisc.paths.reference_dir`) holds them, else ``data/human``."""
    ref = reference_dir()
    if ref is not None and (ref / "results" / "human").is_dir():
        return [ref / "results" / "human"]
    return [data_dir() / "human"]


def write_tables(analysis: HumanAnalysis, out_dir: Path | str) -> list[Path]:
    """Write ``human_{cells,totals,confidence,deltas,problems}.csv`` (+ ``human_agreement*.csv``) into
    ``out_dir``; return the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {"cells": analysis.cells, "totals": analysis.totals, "confidence": analysis.confidence,
              "deltas": analysis.deltas,
              "problems": pd.DataFrame([vars(p) for p in analysis.problems],
                                       columns=["file", "line", "message"])}
    if analysis.agreement is not None:
        tables.update(agreement=analysis.agreement, agreement_cells=analysis.agreement_cells)
    for name, table in tables.items():
        table.to_csv(out_dir / f"human_{name}.csv", index=False)
    return [out_dir / f"human_{name}.csv" for name in tables]


def _percent(table: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return table.assign(**{c: (100 * table[c]).round(1) for c in columns if c in table.columns})


def format_report(analysis: HumanAnalysis) -> str:
    """The analysis as plain text (rates in percent, 1 dp), for ``llmdisc label-analyse``."""
    rate_columns = ["p_real", "p_syn", "drs", "drs_ci_low", "drs_ci_high", "accuracy"]
    parts = [f"label files: {len(analysis.files)}; answers kept: {len(analysis.labels)}; "
             f"problems: {len(analysis.problems)}"]
    parts += [f"  problem: {p}" for p in analysis.problems]
    parts += [f"note: {n}" for n in analysis.notes]
    if not analysis.labels.empty:
        show = ["n_valid", "n_valid_real", "n_valid_syn", *rate_columns, "mean_confidence", "contaminated"]
        sections = [
            ("Totals per annotator (DRS = min(p_REAL, p_SYN) over the pooled answers; percent)",
             _percent(analysis.totals, rate_columns)[["annotator", "condition", *show]]),
            ("Per annotator x dataset x method x condition (percent)",
             _percent(analysis.cells, rate_columns)[["annotator", *CELL, *show]]),
            ("Confidence (0-100) when right vs wrong", analysis.confidence.round(1)),
            ("C2 - C1 per cell (DRS and accuracy in points)",
             _percent(analysis.deltas, [c for c in analysis.deltas.columns
                                        if "drs" in c or "accuracy" in c])),
        ]
        if analysis.agreement is not None:
            sections.append(("Human (pooled) vs LLM DRS over shared cells", analysis.agreement.round(3)))
        for title, table in sections:
            parts += ["", title, table.to_string(index=False)]
    return "\n".join(parts)


__all__ = ["CELL", "PAPER_ANNOTATOR_MAP", "POOLED", "SCORE_COLUMNS", "STACKED", "HumanAnalysis",
           "LabelProblem", "analyse_labels", "annotator_totals", "cell_table", "condition_deltas",
           "confidence_by_correctness", "default_label_dirs", "find_label_files", "format_report",
           "llm_agreement", "protocol_notes", "read_label_file", "read_labels", "write_tables"]
