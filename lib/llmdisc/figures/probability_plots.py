"""Figures of the verdict as a probability: ROC curves per cell, and raw against calibrated DRS (label bias).

:func:`roc_points` shapes trial records; the plot functions read tables only. One panel per dataset × model,
never pooled; the controls are drawn beside the synthesizers, dashed.
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
    """ROC curve points of ``log P(SYNTHETIC) - log P(REAL)`` per cell (valid label scores only).

    Args:
        trials: trial records with ``score_status``, ``logprob_real``, ``logprob_synthetic``, ``true_label``
            and the cell columns.

    Returns:
        Long table, columns :data:`ROC_COLUMNS` (rates at every threshold, SYNTHETIC = positive); cells lacking a
        class are left out.
    """
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
    """ROC curves, one panel per dataset × condition × model, one line per synthesizer or control.

    Args:
        points: :func:`roc_points` output.
        cells: optional :func:`~llmdisc.scoring.probability.score_probability_cells` output, for the AUC and
            its interval in the legend.
    """
    panels = _panels(points) if len(points) else []
    fig, axes = panel_grid(max(len(panels), 1), width=3.6, height=3.4)
    for ax, (title, group) in zip(axes, panels):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        for i, method in enumerate([m for m in CELL_ORDER if m in set(group["synthetic_method"])]):
            line = group[group["synthetic_method"] == method]
            label = f"{method} (n={line['n_real'].iloc[0]}+{line['n_syn'].iloc[0]})"
            if cells is not None:
                first = line.iloc[0]
                same = np.ones(len(cells), dtype=bool)
                for column in (c for c in CELL_KEY if c in cells and c in line):
                    same &= (cells[column] == first[column]).to_numpy()
                match = cells[same]
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
    """Raw against calibrated DRS per cell: label bias made visible.

    Args:
        cells: :func:`~llmdisc.scoring.probability.score_probability_cells` output.

    Returns:
        The figure: per cell the raw DRS (p_synthetic > 0.5), the batch-calibrated (median threshold) and the
        contextually calibrated DRS (content-free threshold), with 95 % bootstrap intervals. A raw bar at 0 beside
        a calibrated bar well above it is a model that perceives but always answers the same label.
    """
    frame = cells.assign(_cell=[f"{m}\n{c}" for m, c in zip(cells["synthetic_method"], cells["condition"])])
    frame = frame.assign(_panel=[f"{d}\n{who}" for d, who in zip(frame["dataset_key"], series_labels(frame))])
    panels = list(frame.groupby("_panel", sort=True))
    fig, axes = panel_grid(max(len(panels), 1), width=5.2, height=3.4)
    readings = (("raw", "raw (p > 0.5)"), ("batch", "batch-calibrated"), ("context", "contextual"))
    for ax, (title, group) in zip(axes, panels):
        order = sorted(group["_cell"].unique(), key=lambda s: (CELL_ORDER.index(s.split("\n")[0])
                                                              if s.split("\n")[0] in CELL_ORDER else 99, s))
        x = np.arange(len(order))
        width = 0.26
        for i, (name, label) in enumerate(readings):
            rows = group.set_index("_cell").reindex(order)
            value = rows[f"{name}_drs"].to_numpy(dtype=float)
            low = value - rows[f"{name}_drs_ci_low"].to_numpy(dtype=float)
            high = rows[f"{name}_drs_ci_high"].to_numpy(dtype=float) - value
            shown = np.isfinite(value)  # an undefined DRS (no threshold, an empty class) is not drawn as 0
            ax.bar((x + (i - 1) * width)[shown], value[shown], width, yerr=[low[shown], high[shown]],
                   color=PALETTE[i], label=label if shown.any() else f"{label}: not computed", capsize=2)
        ns = group.set_index("_cell").reindex(order)
        ax.set_xticks(x, [f"{c}\nn={int(r)}+{int(s)}" for c, r, s in zip(order, ns["n_real"], ns["n_syn"])],
                      fontsize=6)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set(ylim=(0, 1.05), ylabel="DRS", title=title)
        ax.legend(fontsize=6)
    for ax in list(axes)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("Raw vs calibrated DRS of the verdict probability (95 % bootstrap intervals)", y=1.04,
                 fontsize=9)
    return fig
