"""What the run found, in one summary generated from ``results/tables/``: the README's results block and the
first section of the landing page are this same text (:func:`findings_markdown`).

Per dataset × release (and both controls), every discriminator side by side on one reading, the AUC of
telling the group from real data (0.5 = not told apart; below 0.5 = the group scores *lower*, e.g. less
probable; read both directions):

- **C2ST** — gradient-boosted trees on rows (``baselines_headline.csv``; thousands of rows, so no interval is
  shown: it is narrower than the rounding);
- **table likelihood** — the embedded model's mean token log-likelihood of 20-row samples (``likelihood_cells``);
- **joint structure** — the contrast of the rows against their values recombined (``joint_cells``);
- **verdict probability** — the LLM's p_synthetic in C1 (``llm_probability_cells``);
- **generated verdicts** — the paper's DRS with its n (``llm_cells``).

A cell with fewer than :data:`MIN_N` units per class is shown as ``n = a / b: too few``, never as a point estimate
with a collapsed interval. p-values print as ``< 0.001`` below that. The cells of one instrument share their real
samples and are read together, so the instrument's p-values are Holm-adjusted across its release cells
(``p_holm``), and a release counts as told apart only when its Holm-adjusted p is below 0.05 *and* the
instrument passed its controls on that dataset (detects the shuffled-columns control, sits at chance on real vs
real). Each research question gets one sentence that these numbers support, or "not measured here".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL

MIN_N = 10
"""Fewer units than this in a class: the cell is shown as too few, not as a figure."""
ALPHA = 0.05
POSITIVE, NEGATIVE = "shuffled_columns", "real_vs_real"
INSTRUMENTS = ("c2st", "likelihood", "joint", "probability", "verdict")
TITLES = {"c2st": "C2ST (rows)", "likelihood": "table likelihood", "joint": "joint structure",
          "probability": "verdict probability (C1)", "verdict": "generated verdicts"}


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (NaN kept, not counted)."""
    p = np.asarray(p_values, float)
    ok = np.flatnonzero(np.isfinite(p))
    out = np.full(len(p), np.nan)
    order = ok[np.argsort(p[ok])]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p[index]))
        out[index] = running
    return out.tolist()


def p_text(p: float | None) -> str:
    """``< 0.001``, three decimals, or ``–``."""
    if p is None or not math.isfinite(p):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


@dataclass
class Cell:
    """One instrument's reading of one group against real data."""

    auc: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    n_real: int = 0
    n_other: int = 0
    p_holm: float | None = None
    note: str = ""

    @property
    def enough(self) -> bool:
        return min(self.n_real, self.n_other) >= MIN_N and self.auc is not None and math.isfinite(self.auc)

    def text(self) -> str:
        if self.note:
            return self.note
        if not self.enough:
            return f"n = {self.n_real} / {self.n_other}: too few" if self.n_real or self.n_other else "–"
        interval = "" if self.low is None or not math.isfinite(self.low) else f" [{self.low:.2f}, {self.high:.2f}]"
        holm_p = "" if self.p_holm is None else f", p (Holm) {p_text(self.p_holm)}"
        return f"{self.auc:.2f}{interval}{holm_p}"

    @property
    def separated(self) -> bool:
        if not self.enough:
            return False
        if self.low is not None and math.isfinite(self.low) and self.high is not None:
            excludes = self.low > 0.5 or self.high < 0.5
            return excludes and (self.p_holm is None or self.p_holm < ALPHA)
        return abs(self.auc - 0.5) > 0.05  # a row-level C2ST: thousands of rows, its interval is negligible


def _read(tables_dir: Path, name: str) -> pd.DataFrame | None:
    path = tables_dir / f"{name}.csv"
    if not path.exists():
        return None
    frame = pd.read_csv(path)
    return None if frame.empty else frame


SCORES = {"likelihood": "mean_logprob", "joint": "contrast"}
"""The score each sample instrument's headline reads (its tables hold others beside it)."""


def _sample_cells(frame: pd.DataFrame | None, instrument: str) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    if frame is None:
        return out
    if "score" in frame:
        frame = frame[frame["score"] == SCORES[instrument]]
    key = "dataset_key" if "dataset_key" in frame else "dataset"
    for row in frame.to_dict("records"):
        out[(row[key], row["source"])] = Cell(row.get("auc"), row.get("auc_low"), row.get("auc_high"),
                                              row.get("perm_p"), int(row.get("n_real") or 0),
                                              int(row.get("n_syn") or 0))
    return out


def _group(row: dict, protocols: int) -> str:
    """The row's group; with more than one protocol in the table, the protocol is part of it (never pooled)."""
    from llmdisc.discrimination.records import protocol_label

    group = {"real_holdout": NEGATIVE}.get(row["synthetic_method"], row["synthetic_method"])
    return f"{group} · {protocol_label(row)}" if protocols > 1 else group


def _protocols(frame: pd.DataFrame) -> int:
    from llmdisc.discrimination.records import protocol_label

    return len({protocol_label(row) for row in frame.to_dict("records")})


def _probability_cells(frame: pd.DataFrame | None) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    if frame is None:
        return out
    part = frame[frame["condition"] == "C1"] if "condition" in frame else frame
    key = "dataset_key" if "dataset_key" in part else "dataset"
    protocols = _protocols(part)
    for row in part.to_dict("records"):
        group = _group(row, protocols)
        out.setdefault((row[key], group), Cell(row.get("auc"), row.get("auc_ci_low"), row.get("auc_ci_high"),
                                               row.get("auc_p_value"), int(row.get("n_real") or 0),
                                               int(row.get("n_syn") or 0)))
    return out


def _verdict_cells(frame: pd.DataFrame | None) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    if frame is None:
        return out
    part = frame[frame["condition"] == "C1"] if "condition" in frame else frame
    protocols = _protocols(part)
    for row in part.to_dict("records"):
        group = _group(row, protocols)
        n_real, n_syn = int(row.get("n_valid_real") or 0), int(row.get("n_valid_syn") or 0)
        cell = Cell(None, None, None, None, n_real, n_syn)
        if min(n_real, n_syn) >= MIN_N:
            cell.note = (f"DRS {100 * row['drs']:.0f} % [{100 * row['drs_ci_low']:.0f}, {100 * row['drs_ci_high']:.0f}],"
                         f" n = {n_real} / {n_syn}")
        out.setdefault((row["dataset"], group), cell)
    return out


def _c2st_cells(frame: pd.DataFrame | None) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    if frame is None or "c2st_auc_hist_gb" not in frame:
        return out
    key = "dataset_key" if "dataset_key" in frame else "dataset"
    synth = "synthesizer" if "synthesizer" in frame else "synthetic_method"
    for row in frame.to_dict("records"):
        auc = row.get("c2st_auc_hist_gb")
        if auc is not None and math.isfinite(auc):
            out[(row[key], row[synth])] = Cell(float(auc), None, None, None, 1000, 1000)
    return out


def collect(tables_dir: Path) -> dict[str, dict[tuple[str, str], Cell]]:
    """``{instrument: {(dataset, group): Cell}}`` from the tables present, Holm-adjusted per instrument."""
    found = {
        "c2st": _c2st_cells(_read(tables_dir, "baselines_headline")),
        "likelihood": _sample_cells(_read(tables_dir, "likelihood_cells"), "likelihood"),
        "joint": _sample_cells(_read(tables_dir, "joint_cells"), "joint"),
        "probability": _probability_cells(_read(tables_dir, "llm_probability_cells")),
        "verdict": _verdict_cells(_read(tables_dir, "llm_cells")),
    }
    for cells in found.values():
        releases = [k for k, c in cells.items() if k[1] not in (POSITIVE, NEGATIVE) and c.p is not None]
        for k, adjusted in zip(releases, holm([cells[k].p for k in releases])):
            cells[k].p_holm = adjusted
    return found


def passes_controls(cells: dict[tuple[str, str], Cell], dataset: str) -> bool | None:
    """True when the instrument detects the positive control and not the negative one on ``dataset`` (None: not
    measured there)."""
    positive, negative = cells.get((dataset, POSITIVE)), cells.get((dataset, NEGATIVE))
    if positive is None or not positive.enough:
        return None
    detected = positive.low is not None and (positive.low > 0.5 or positive.high < 0.5)
    at_chance = negative is None or not negative.enough or not (negative.low > 0.5 or negative.high < 0.5)
    return bool(detected and at_chance)


def _sentences(found: dict[str, dict[tuple[str, str], Cell]], datasets: list[str]) -> list[str]:
    lines = []
    c2st = found["c2st"]
    if c2st:
        parts, counts = [], []
        for whose, paper in (("our", False), ("the paper's own", True)):
            cells = [c for k, c in c2st.items() if k[1] not in (POSITIVE, NEGATIVE) and k[1].startswith("paper_") == paper]
            if cells:
                aucs, told = [c.auc for c in cells], sum(c.separated for c in cells)
                counts.append((told, len(cells)))
                parts.append(f"{'every one' if told == len(cells) else told} of {whose} {len(cells)} releases "
                             f"(C2ST AUC {min(aucs):.2f}–{max(aucs):.2f})")
        if parts:
            told_all, n_all = map(sum, zip(*counts))
            answer = "Yes" if told_all == n_all else "No" if told_all == 0 else "Partly"
            lines.append(f"- **Can a classifier tell the releases from real rows?** {answer}: " + "; ".join(parts) + ".")
    for name, question in (("likelihood", "Does the table likelihood see what a classifier sees?"),
                           ("joint", "Does the joint-structure statistic see whether a row's values belong "
                                     "together?")):
        cells = found[name]
        if not cells:
            where = (" (a run with `likelihood.joint: true`, as in `configs/default.yaml`, measures it; "
                     "`llmdisc audit` reads it on a release by default)") if name == "joint" else ""
            lines.append(f"- **{question}** Not measured here{where}.")
            continue
        verdicts = []
        for dataset in datasets:
            ok = passes_controls(cells, dataset)
            pos = cells.get((dataset, POSITIVE))
            if ok is None:
                verdicts.append(f"{dataset}: too few samples")
                continue
            told = [k[1] for k, c in cells.items() if k[0] == dataset and k[1] not in (POSITIVE, NEGATIVE)
                    and c.separated]
            verdicts.append(f"{dataset}: " + (f"passes its controls (shuffled columns AUC {pos.auc:.2f}) and tells "
                                              f"{len(told)} of the releases apart" if ok else
                                              f"fails its controls (shuffled columns AUC {pos.auc:.2f} "
                                              f"[{pos.low:.2f}, {pos.high:.2f}]), so its release figures vouch "
                                              "for nothing"))
        lines.append(f"- **{question}** " + "; ".join(verdicts) + ".")
    prob, verdict = found["probability"], found["verdict"]
    enough = [c for c in prob.values() if c.enough]
    if not enough:
        lines.append("- **Can the LLM's verdict tell them apart?** Not measured here (too few trials per cell).")
    else:
        told = [k for k, c in prob.items() if k[1] not in (POSITIVE, NEGATIVE) and c.separated]
        controls = [d for d in datasets if passes_controls(prob, d)]
        lines.append(f"- **Can the LLM's verdict tell them apart?** Its probability separates {len(told)} of "
                     f"{sum(k[1] not in (POSITIVE, NEGATIVE) for k in prob)} release cells after Holm's correction; "
                     f"it passes its controls on {len(controls)} of {len(datasets)} datasets"
                     + ("" if controls else ", so it vouches for none") + ".")
    if not verdict:
        lines.append("- **Generated verdicts (the paper's reading)**: not in this run (`configs/paper.yaml` generates "
                     "them).")
    elif not any(c.note for c in verdict.values()):
        lines.append("- **Generated verdicts (the paper's reading)**: too few per cell here to give a DRS.")
    return lines


def findings_markdown(tables_dir: Path, *, heading: str = "###") -> list[str]:
    """The summary as Markdown lines (a heading, one sentence per question, the side-by-side table, notes).

    Args:
        tables_dir: ``results/tables``.
        heading: the Markdown heading level of its title.

    Returns:
        Lines; a single "not measured" line when no table is present.
    """
    found = collect(Path(tables_dir))
    keys = sorted({k for cells in found.values() for k in cells})
    if not keys:
        return ["_No results yet: run `make reproduce` to fill this summary from `results/tables/`._"]
    datasets = sorted({k[0] for k in keys})
    shown = [i for i in INSTRUMENTS if found[i]]  # an instrument this run did not measure gets no column
    lines = [f"{heading} What the run found", "", *_sentences(found, datasets), "",
             "AUC of telling each group from real data, per instrument (0.5 = not told apart; below 0.5 the group "
             "scores lower, e.g. less probable or less structured), 95 % interval and Holm-adjusted p across the "
             "release cells of that instrument:", "",
             "| dataset | group | " + " | ".join(TITLES[i] for i in shown) + " |",
             "|---|---|" + "---|" * len(shown)]
    order = {POSITIVE: 1, NEGATIVE: 2}
    for dataset, group in sorted(keys, key=lambda k: (k[0], order.get(k[1], 0), k[1])):
        name = {POSITIVE: "positive control (columns shuffled)", NEGATIVE: "negative control (real vs real)"}.get(
            group, group)
        cells = [found[i].get((dataset, group)) for i in shown]
        lines.append(f"| {dataset} | {name} | " + " | ".join("–" if c is None else c.text() for c in cells) + " |")
    lines += ["", f"Cells with fewer than {MIN_N} samples per class show their n instead of a figure. The release "
              "cells of one instrument share their real samples, so they are read together with Holm's correction; "
              "an instrument that misses the positive control or separates real from real vouches for no release."]
    return lines + design_markdown(_read(Path(tables_dir), "joint_design"))


def design_markdown(design: pd.DataFrame | None) -> list[str]:
    """The joint-structure design study (``joint_design.csv``, ``llmdisc bench joint-design``) as a Markdown table:
    per model, dataset and design, the positive control's AUC with its interval, real vs real where measured, and
    the tokens a sample runs through the model (the load-free cost; seconds depend on what else the machine ran).
    No lines when the table is absent."""
    if design is None:
        return []
    lines = ["", "How the joint-structure design was chosen (`llmdisc bench joint-design`, one factor at a time from "
             "the base: Markdown table, k = 2 recombinations, 40 real reference rows before the sample): real holdout "
             "samples against shuffled-columns samples (AUC 1 = every real sample above every shuffled one) and, for "
             "the base, against real train samples (0.5 expected). The model is the embedded SmolLM2-135M unless the "
             "row names an opt-in one (`--model`):", "",
             "| model | dataset | design | n per group | shuffled columns AUC | real vs real AUC | tokens per sample |",
             "|---|---|---|---|---|---|---|"]
    for _, row in design.iterrows():
        rr = "–" if pd.isna(row["auc_real_vs_real"]) else f"{row['auc_real_vs_real']:.2f}"
        model = row.get("model", "–")  # tables written before the model was a column do not say
        lines.append(f"| {model} | {row['dataset_key']} | {row['design']} | {int(row['n_real'])} | "
                     f"{row['auc_control']:.2f} "
                     f"[{row['auc_control_low']:.2f}, {row['auc_control_high']:.2f}] | {rr} | "
                     f"{row['tokens_run_per_sample']:,.0f} |")
    return lines + _cheapest_design(design)


def _cheapest_design(design: pd.DataFrame) -> list[str]:
    """The sentence naming the cheapest design that separates the control at n >= 6 per group with its interval's
    low end at 0.9 or more, per dataset of the embedded model, and the datasets where none does."""
    if "model" in design:
        design = design[design["model"] == DEFAULT_LIKELIHOOD_MODEL]
    if design.empty:  # only opt-in models measured: nothing to say of the embedded one
        return []
    rows = design[(design["auc_control_low"] >= 0.9) & (design["n_real"] >= 6)]
    found = []
    for dataset, group in rows.groupby("dataset_key", sort=False):
        best = group.loc[group["tokens_run_per_sample"].idxmin()]
        found.append(f"on {dataset}, `{best['design']}` ({best['tokens_run_per_sample']:,.0f} tokens a sample, "
                     f"AUC {best['auc_control']:.2f})")
    missing = [d for d in dict.fromkeys(design["dataset_key"]) if d not in set(rows["dataset_key"])]
    if missing:
        found.append(f"none on {', '.join(missing)}")
    return ["", "Cheapest design of the embedded model whose interval on the shuffled-columns control stays above "
            "0.9: " + "; ".join(found) + ". The runs and the audit write the table as CSV "
            "(`likelihood.joint_serialisation`), with k = 2 and 20 reference rows (`configs/default.yaml`)."]
