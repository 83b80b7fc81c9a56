"""Figures: one function per figure, each taking tidy tables and returning a matplotlib Figure; every bar with
its n and its interval, every panel about one provider/model — never pooled.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import matplotlib

matplotlib.use("Agg")  # headless: notebooks and the pipeline save files, nothing is shown on a screen
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from llmdisc import RELEASES  # noqa: E402
from llmdisc.discrimination.records import protocol_label  # noqa: E402
from llmdisc.paths import figures_dir  # noqa: E402

PALETTE = sns.color_palette("colorblind")
CONDITION_COLOURS = {"C1": PALETTE[0], "C2": PALETTE[1]}
SYNTH_ORDER = RELEASES  # ours, then the paper's own Census releases


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.0)
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight"})


def save_figure(fig: plt.Figure, name: str, directory: Path | None = None, *, dpi: float | None = None) -> list[Path]:
    """Write ``<name>.pdf`` and ``<name>.png`` (PNG at ``dpi``) to ``figures/`` (or ``directory``), close
    ``fig`` and return both paths."""
    directory = directory or figures_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{name}.pdf", directory / f"{name}.png"]
    for path in paths:
        # PDFs carry a creation date by default: drop it so unchanged figures hash the same.
        fig.savefig(path, metadata={"CreationDate": None} if path.suffix == ".pdf" else None,
                    dpi=dpi if dpi and path.suffix == ".png" else None)
    plt.close(fig)
    return paths


def model_label(provider: str, model: str) -> str:
    return f"{provider} / {model}"


def series_labels(frame: pd.DataFrame) -> list[str]:
    """Per row, ``provider / model`` and, on a second line, its protocol and configuration when recorded."""
    return [model_label(row["provider"], row["model"]) + (f"\n{p}" if (p := protocol_label(row)) else "")
            for row in frame.to_dict("records")]


def _panels(cells: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    cells = cells.assign(_model=series_labels(cells))
    return [(d, m, g) for (d, m), g in cells.groupby(["dataset", "_model"], sort=True)]


def panel_grid(n: int, width: float = 4.2, height: float = 3.2) -> tuple[plt.Figure, np.ndarray]:
    """A figure of ``n`` panels, three to a row (``width`` x ``height`` inches each); the spare axes are hidden."""
    cols = min(n, 3)
    rows = math.ceil(n / cols) if n else 1
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes.flat


def ordered(values: Sequence[str], order: Sequence[str] = SYNTH_ORDER) -> list[str]:
    """The distinct ``values``: those in ``order`` first, in its order, then the others sorted."""
    present = set(values)
    return [s for s in order if s in present] + sorted(present.difference(order))


def _bars(ax: plt.Axes, frame: pd.DataFrame, value: str, low: str, high: str, n_col: str,
          hue: str = "condition") -> None:
    """Grouped bars of ``value`` by synthesizer and ``hue`` with [low, high] error bars and n on each bar."""
    synths = ordered(frame["synthetic_method"])
    hues = sorted(frame[hue].unique())
    width = 0.8 / max(len(hues), 1)
    for j, level in enumerate(hues):
        sub = frame[frame[hue] == level].set_index("synthetic_method").reindex(synths)
        x = np.arange(len(synths)) + (j - (len(hues) - 1) / 2) * width
        y = sub[value].to_numpy(dtype=float)
        err = np.vstack([np.nan_to_num(y - sub[low].to_numpy(dtype=float)),
                         np.nan_to_num(sub[high].to_numpy(dtype=float) - y)])
        colour = CONDITION_COLOURS.get(level, PALETTE[(j + 2) % len(PALETTE)])
        ax.bar(x, np.nan_to_num(y), width, yerr=err, capsize=3, color=colour, label=str(level))
        for xi, yi, n in zip(x, y, sub[n_col].to_numpy()):
            text = "n/a" if np.isnan(yi) else f"n={int(n) if not pd.isna(n) else 0}"
            ax.annotate(text, (xi, 0.01), ha="center", va="bottom", fontsize=6, rotation=90, color="white"
                        if not np.isnan(yi) and yi > 0.25 else "black")
    ax.set_xticks(np.arange(len(synths)), synths, rotation=15)
    ax.set_ylim(0, 1.05)


def drs_by_cell(cells: pd.DataFrame) -> plt.Figure:
    """DRS of :func:`llmdisc.scoring.metrics.score_cells` by synthesizer × condition with 95 % bootstrap
    intervals, one panel per dataset × provider/model."""
    return _bar_panels(cells, ("drs", "drs_ci_low", "drs_ci_high", "n_valid"), "DRS = min(p_REAL, p_SYN)",
                       "Disclosure Risk Score by synthesizer and condition (n = valid trials)",
                       extra=lambda ax, _: ax.axhline(0.5, ls="--", lw=0.8, color="grey"))


def _bar_panels(cells: pd.DataFrame, columns: tuple[str, str, str, str], ylabel: str, title: str, *,
                hue: str = "condition", legend: dict | None = None,
                extra: Callable[[plt.Axes, pd.DataFrame], object] | None = None) -> plt.Figure:
    """:func:`_bars` of ``columns`` (value, low, high, n) per dataset × provider/model panel;
    ``extra(ax, frame)`` draws over the bars."""
    panels = _panels(cells)
    fig, axes = panel_grid(len(panels))
    for ax, (dataset, model, frame) in zip(axes, panels):
        _bars(ax, frame, *columns, hue=hue)
        if extra is not None:
            extra(ax, frame)
        ax.set_title(f"{dataset} — {model}", fontsize=9)
        ax.set_ylabel(ylabel)
    axes[0].legend(**(legend or {"title": "condition", "fontsize": 7}))
    fig.suptitle(title)
    return fig


def drs_decomposition(cells: pd.DataFrame) -> plt.Figure:
    """p_REAL and p_SYN (Wilson 95 %) side by side: which half of the task limits the DRS."""
    long = []
    for _, row in cells.iterrows():
        for part, n_col in (("p_real", "n_valid_real"), ("p_syn", "n_valid_syn")):
            long.append({**row.to_dict(), "part": f"{part} {row['condition']}", "value": row[part],
                         "low": row[f"{part}_ci_low"], "high": row[f"{part}_ci_high"], "n": row[n_col]})
    return _bar_panels(pd.DataFrame(long), ("value", "low", "high", "n"), "share answered correctly",
                       "DRS decomposition: p_REAL (real called REAL) vs p_SYN (synthetic called SYNTHETIC)",
                       hue="part", legend={"fontsize": 6})


def label_bias(cells: pd.DataFrame) -> plt.Figure:
    """Share of REAL answers and mean stated confidence per cell (an always-REAL model sits at 1)."""
    def confidence(ax: plt.Axes, frame: pd.DataFrame) -> None:
        synths = ordered(frame["synthetic_method"])
        for _, row in frame.iterrows():
            ax.plot(synths.index(row["synthetic_method"]) + (-0.2 if row["condition"] == "C1" else 0.2),
                    row["mean_confidence"] / 100, marker="D", color="black", ms=4)

    rate = "real_prediction_rate"  # no interval: low = high = the rate
    return _bar_panels(cells, (rate, rate, rate, "n_valid"),
                       "REAL-answer rate (bars); mean confidence/100 (◆)",
                       "Label bias and stated confidence", extra=confidence)


def condition_change(tests: pd.DataFrame) -> plt.Figure:
    """DRS(C1) → DRS(C2) per cell with the permutation p-value (columns dataset, model, synthetic_method,
    drs_c1, drs_c2, p_value and optionally provider)."""
    if "provider" not in tests:
        tests = tests.assign(provider="")
    panels = _panels(tests)
    fig, axes = panel_grid(len(panels))
    for ax, (dataset, model, frame) in zip(axes, panels):
        synths = ordered(frame["synthetic_method"])
        frame = frame.set_index("synthetic_method").reindex(synths)
        for i, (name, row) in enumerate(frame.iterrows()):
            ax.plot([0, 1], [row["drs_c1"], row["drs_c2"]], marker="o", color=PALETTE[i % len(PALETTE)],
                    label=f"{name} (p={row['p_value']:.3f})" if not pd.isna(row["p_value"]) else f"{name} (p n/a)")
        ax.set_xticks([0, 1], ["C1: table", "C2: + metadata"])
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"{dataset} — {model}", fontsize=9)
        ax.set_ylabel("DRS")
        ax.legend(fontsize=6)
    fig.suptitle("Effect of the metadata block (permutation test of DRS(C2) − DRS(C1))")
    return fig


def seed_stability(stability: pd.DataFrame) -> plt.Figure:
    """Mean DRS and 2.5–97.5 % interval over re-draw seeds (:func:`llmdisc.scoring.analyses.seed_stability`;
    provider and n optional)."""
    stability = stability.assign(**{c: v for c, v in (("provider", ""), ("n", np.nan)) if c not in stability})
    return _bar_panels(stability, ("drs_mean", "drs_q025", "drs_q975", "n"),
                       "DRS over seeds (mean, 2.5–97.5 %)", "Seed stability of the matched-N DRS")


DATASET_MARKERS = ("o", "s", "^", "D", "v", "P")
METRIC_LABELS = {"c2st_auc_hist_gb": "C2ST ROC-AUC (gradient boosting)",
                 "c2st_auc_logistic": "C2ST ROC-AUC (logistic regression)",
                 "dcr_share_closer": "DCR: share of synthetic rows below the holdout median"}


def llm_vs_baselines(cells: pd.DataFrame, baselines: pd.DataFrame, metrics: Sequence[str],
                     agreement: pd.DataFrame | None = None) -> plt.Figure:
    """LLM DRS against baseline metrics, one panel per model × metric, one point per synthesizer;
    ``agreement`` puts each series' Kendall τ in the legend."""
    merged = cells.merge(baselines, on=["dataset", "synthetic_method"], how="inner")
    merged = merged.assign(_model=series_labels(merged))
    models = sorted(set(merged["_model"]))
    datasets = sorted(merged["dataset"].unique())
    taus = {} if agreement is None else {
        (label, r["dataset"], r["condition"], r["metric"]):
            (f"τ={r['kendall_tau']:+.2f}" if not pd.isna(r["kendall_tau"]) else f"τ n/a: {r['tau_note']}")
        for label, r in zip(series_labels(agreement), agreement.to_dict("records"))}
    fig, axes = panel_grid(max(len(metrics) * max(len(models), 1), 1), width=4.6, height=3.6)
    for model in models:
        sub = merged[merged["_model"] == model]
        for metric in metrics:
            ax = next(axes)
            for (cond, dataset), frame in sub.groupby(["condition", "dataset"]):
                tau = taus.get((model, dataset, cond, metric))
                ax.errorbar(frame[metric], frame["drs"],
                            yerr=[frame["drs"] - frame["drs_ci_low"], frame["drs_ci_high"] - frame["drs"]],
                            fmt=DATASET_MARKERS[datasets.index(dataset) % len(DATASET_MARKERS)], capsize=2,
                            color=CONDITION_COLOURS.get(cond, PALETTE[3]), alpha=0.85,
                            label=f"{dataset} {cond}" + (f" ({tau})" if tau else ""))
                for _, row in frame.iterrows():
                    ax.annotate(row["synthetic_method"], (row[metric], row["drs"]), fontsize=6,
                                xytext=(3, 4), textcoords="offset points", rotation=30)
            ax.axhline(0.5, ls="--", color="grey", lw=0.8)
            ax.set_ylim(-0.05, 1.05)
            ax.set_xlabel(METRIC_LABELS.get(metric, metric))
            ax.set_ylabel("LLM DRS" if ax.get_subplotspec().is_first_col() else "")
            ax.set_title(model, fontsize=9)
            ax.legend(fontsize=6, loc="upper left")
    fig.suptitle("LLM DRS against classifier and distance baselines (τ = Kendall, across synthesizers)")
    return fig


def _diagonal_axes(ax: plt.Axes, xlabel: str, ylabel: str, title: str, *, xlim: tuple[float, float],
                   ylim: tuple[float, float], diagonal: bool = True, **title_kw: float) -> None:
    """Unit-square axes, with the y = x reference line (agreement, perfect calibration) when ``diagonal``."""
    if diagonal:
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=0.8)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6)
    ax.set_title(title, **title_kw)


def human_vs_llm(pairs: pd.DataFrame) -> plt.Figure:
    """Human DRS against LLM DRS per cell: the comparable pairs with the y = x line, the others one panel per
    kind of difference *without* it (there a point above it compares releases, not humans with the LLM)."""
    if "comparable" not in pairs:
        pairs = pairs.assign(comparable=False, differs="not recorded")
    groups = [(True, "", pairs[pairs["comparable"].astype(bool)])]
    groups += [(False, d, g) for d, g in pairs[~pairs["comparable"].astype(bool)].groupby("differs", sort=True)]
    groups = [g for g in groups if len(g[2])]
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(4.8 * max(len(groups), 1), 4.4), squeeze=False)
    for ax, (comparable, differs, part) in zip(axes.flat, groups):
        for (model, source, cond), frame in part.groupby(["model", "llm_source", "condition"]):
            ax.scatter(frame["human_drs"], frame["llm_drs"], label=f"{model} {cond}\n{source}"[:90],
                       color=CONDITION_COLOURS.get(cond, PALETTE[3]), marker="o" if cond == "C1" else "s")
        title = "Same releases, same protocol" if comparable else f"Not comparable: differs in {differs}"
        _diagonal_axes(ax, "human DRS (pooled annotators)", "LLM DRS", title,
                       xlim=(-0.05, 1.05), ylim=(-0.05, 1.05), diagonal=comparable,
                       **({} if comparable else {"fontsize": 9}))
    fig.suptitle("Humans against the LLM, per cell")
    return fig


def calibration(bins: pd.DataFrame) -> plt.Figure:
    """Reliability diagram of :func:`llmdisc.scoring.calibration.reliability_bins`: confidence vs accuracy."""
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    for i, (model, frame) in enumerate(bins.groupby("model")):
        frame = frame[frame["n"] > 0]
        ax.plot(frame["mean_confidence"], frame["accuracy"], marker="o", color=PALETTE[i % len(PALETTE)],
                label=model)
        for _, row in frame.iterrows():
            ax.annotate(f"n={int(row['n'])}", (row["mean_confidence"], row["accuracy"]), fontsize=6)
    _diagonal_axes(ax, "stated confidence (mean in bin, /100)", "observed accuracy", "Confidence calibration",
                   xlim=(0, 1.02), ylim=(-0.02, 1.02))
    return fig


def encoding_effect(cells: pd.DataFrame) -> plt.Figure:
    """DRS on Census with integer codes vs text labels (rows of ``cells`` whose dataset is census-*)."""
    census = cells[cells["dataset"].astype(str).str.startswith("census")]
    census = census.assign(encoding=census["dataset"].str.replace("census-", "", regex=False),
                           dataset="census")
    panels = list(census.groupby(pd.Series(series_labels(census), index=census.index, dtype=object)))
    fig, axes = panel_grid(max(len(panels), 1))
    for ax, (model, frame) in zip(axes, panels):
        frame = frame.assign(hue=frame["encoding"] + " " + frame["condition"])
        _bars(ax, frame, "drs", "drs_ci_low", "drs_ci_high", "n_valid", hue="hue")
        ax.set_title(f"census — {model}", fontsize=9)
        ax.set_ylabel("DRS")
        ax.legend(fontsize=6)
    fig.suptitle("Encoding effect: PUMS integer codes vs text labels")
    return fig


def protocol_effect(effective: pd.DataFrame) -> plt.Figure:
    """Effective N (distinct prompts or answers) against trials per cell (columns protocol, cell, n_valid,
    effective_n): the paper's fixed sample vs fresh."""
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for i, (protocol, frame) in enumerate(effective.groupby("protocol", sort=True)):
        ax.scatter(frame["n_valid"], frame["effective_n"], label=f"{protocol} ({len(frame)} cells)",
                   color=PALETTE[i % len(PALETTE)], alpha=0.8)
    top = float(np.nanmax(effective[["n_valid", "effective_n"]].to_numpy(dtype=float))) if len(effective) else 1
    ax.plot([0, top], [0, top], ls="--", color="grey", lw=0.8, label="every trial distinct")
    ax.set_xlabel("valid trials in the cell")
    ax.set_ylabel("effective N (distinct prompts / answers)")
    ax.legend(fontsize=7)
    ax.set_title("The paper's fixed 20-row sample repeats one prompt; fresh samples do not")
    return fig
