"""Figures of the verdict as a probability: ROC curves per cell, and raw against calibrated DRS (label bias);
one panel per dataset × model, the controls dashed beside the synthesizers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import roc_curve

from llmdisc import RELEASES
from llmdisc.discrimination.records import CELL_KEY, cell_columns
from llmdisc.figures.plots import PALETTE, panel_grid, plt, series_labels
from llmdisc.synthesis.controls import CONTROLS

ROC_COLUMNS = (*CELL_KEY, "fpr", "tpr", "n_real", "n_syn")
CELL_ORDER = (*RELEASES, *CONTROLS)


def roc_points(trials: pd.DataFrame) -> pd.DataFrame:
    """ROC curve points (:data:`ROC_COLUMNS`, SYNTHETIC = positive) of ``log P(SYNTHETIC) - log P(REAL)`` per
    cell of ``trials`` with valid label scores and both classes."""
    scored = trials[trials.get("score_status", pd.Series(dtype=object)) == "valid"]
    parts = []
    keys = cell_columns(scored)
    for key, cell in scored.groupby(keys, dropna=False):
        y = (cell["true_label"] == "SYNTHETIC").to_numpy()
        if y.all() or not y.any():
            continue
        s = (pd.to_numeric(cell["logprob_synthetic"]) - pd.to_numeric(cell["logprob_real"])).to_numpy()
        fpr, tpr, _ = roc_curve(y, s)
        parts.append(pd.DataFrame({"fpr": fpr, "tpr": tpr}).assign(
            **dict(zip(keys, key)), n_real=int((~y).sum()), n_syn=int(y.sum())))
    if not parts:
        return pd.DataFrame(columns=ROC_COLUMNS)
    return pd.concat(parts, ignore_index=True)[[*keys, *ROC_COLUMNS[len(CELL_KEY):]]]


def _panels(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    frame = frame.assign(_panel=[f"{d} · {c}\n{who}" for d, c, who in zip(
        frame["dataset_key"], frame["condition"], series_labels(frame))])
    return [(title, group) for title, group in frame.groupby("_panel", sort=True)]


def roc_curves(points: pd.DataFrame, cells: pd.DataFrame | None = None) -> plt.Figure:
    """ROC curves of :func:`roc_points`, one panel per dataset × condition × model, one line per synthesizer
    or control; ``cells`` puts each AUC in the legend."""
    panels = _panels(points) if len(points) else []
    fig, axes = panel_grid(max(len(panels), 1), width=3.6, height=3.4)
    for ax, (title, group) in zip(axes, panels):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        for i, method in enumerate([m for m in CELL_ORDER if m in set(group["synthetic_method"])]):
            line = group[group["synthetic_method"] == method]
            label = f"{method} (n={line['n_real'].iloc[0]}+{line['n_syn'].iloc[0]})"
            if cells is not None:
                keys = [c for c in CELL_KEY if c in cells and c in line]
                match = cells[(cells[keys] == line.iloc[0][keys]).all(axis=1)]
                if len(match):
                    r = match.iloc[0]
                    label = f"{method} AUC {r['auc']:.2f} [{r['auc_ci_low']:.2f}, {r['auc_ci_high']:.2f}]"
            ax.step(line["fpr"], line["tpr"], where="post", color=PALETTE[i % len(PALETTE)],
                    ls="--" if method in CONTROLS else "-", lw=1.4, label=label)
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="real samples called SYNTHETIC (FPR)",
               ylabel="synthetic samples called SYNTHETIC (TPR)", title=title)
        ax.legend(fontsize=6, loc="lower right")
    for ax in list(axes)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("ROC of the verdict probability log P(SYNTHETIC) − log P(REAL), per cell", y=1.04, fontsize=9)
    return fig


def raw_vs_calibrated(cells: pd.DataFrame) -> plt.Figure:
    """Per cell, the raw (p_synthetic > 0.5), batch-calibrated and contextual DRS with 95 % intervals: a raw
    bar at 0 beside a calibrated one well above it is a model that perceives but always answers one label."""
    frame = cells.assign(_cell=[f"{m}\n{c}" for m, c in zip(cells["synthetic_method"], cells["condition"])])
    frame = frame.assign(_panel=[f"{d}\n{who}" for d, who in zip(frame["dataset_key"], series_labels(frame))])
    panels = list(frame.groupby("_panel", sort=True))
    fig, axes = panel_grid(max(len(panels), 1), width=5.2, height=3.4)
    readings = (("raw", "raw (p > 0.5)"), ("batch", "batch-calibrated"), ("context", "contextual"))
    for ax, (title, group) in zip(axes, panels):
        order = sorted(group["_cell"].unique(), key=lambda s: (CELL_ORDER.index(s.split("\n")[0])
                                                              if s.split("\n")[0] in CELL_ORDER else 99, s))
        x, width = np.arange(len(order)), 0.26
        rows = group.set_index("_cell").reindex(order)
        for i, (name, label) in enumerate(readings):
            value = rows[f"{name}_drs"].to_numpy(dtype=float)
            low = value - rows[f"{name}_drs_ci_low"].to_numpy(dtype=float)
            high = rows[f"{name}_drs_ci_high"].to_numpy(dtype=float) - value
            shown = np.isfinite(value)  # an undefined DRS (no threshold, an empty class) is not drawn as 0
            ax.bar((x + (i - 1) * width)[shown], value[shown], width, yerr=[low[shown], high[shown]],
                   color=PALETTE[i], label=label if shown.any() else f"{label}: not computed", capsize=2)
        ticks = [f"{c}\nn={int(r)}+{int(s)}" for c, r, s in zip(order, rows["n_real"], rows["n_syn"])]
        ax.set_xticks(x, ticks, fontsize=6)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set(ylim=(0, 1.05), ylabel="DRS", title=title)
        ax.legend(fontsize=6)
    for ax in list(axes)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Raw vs calibrated DRS of the verdict probability (95 % bootstrap intervals)", y=1.04,
                 fontsize=9)
    return fig
