"""Figures of the likelihood discriminator and the joint-structure contrast (their tables only), one panel per
dataset × model."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from llmdisc.figures.plots import PALETTE, SYNTH_ORDER, ordered, set_style

REAL_LABEL = "real holdout"
# The contrast's label is on two lines: on one it is taller than a 3.4-inch panel and runs into the title.
SCORE_LABELS = {"mean_logprob": "mean token log-likelihood (nats)", "min_k_logprob": "Min-K 20 % (nats)",
                "contrast": "C (nats) = log P(sample)\n− mean log P(recombined)"}
CONTROL_ORDER = ("shuffled_columns", "real_vs_real")


def _source_order(values) -> list[str]:  # noqa: ANN001
    return ordered(values, (*SYNTH_ORDER, *CONTROL_ORDER))


def _grid(n: int, width: float, height: float) -> tuple[plt.Figure, list]:
    cols = max(1, min(n, 2))
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _panels(frame: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    return [(d, m, g) for (d, m), g in frame.groupby(["dataset_key", "model"], sort=True)]


def score_distributions(samples: pd.DataFrame, cells: pd.DataFrame, *, score: str = "mean_logprob") -> plt.Figure:
    """Strip plot of per-sample ``score`` (nats) of ``samples``: real holdout, then each source (train samples
    as ``real_vs_real``, reference samples left out), each labelled with its AUC in ``cells``."""
    set_style()
    shown = samples[samples["role"] != "reference"].copy()
    shown["group"] = np.where(shown["source"] == "holdout", REAL_LABEL,
                              np.where(shown["source"] == "train", "real_vs_real", shown["source"]))
    panels = _panels(shown)
    most_groups = max((frame["group"].nunique() for _, _, frame in panels), default=1)
    fig, axes = _grid(len(panels), width=max(5.2, 0.8 * most_groups), height=3.4)  # room for every tick label
    for ax, (dataset_key, model, frame) in zip(axes, panels):
        order = [REAL_LABEL] + _source_order(frame.loc[frame["group"] != REAL_LABEL, "group"])
        aucs = cells[(cells["dataset_key"] == dataset_key) & (cells["model"] == model) & (cells["score"] == score)]
        auc_of = dict(zip(aucs["source"], aucs["auc"]))
        rng = np.random.default_rng(0)  # jitter only; fixed so the figure is byte-stable
        for x, group in enumerate(order):
            values = frame.loc[frame["group"] == group, score].to_numpy(float)
            colour = PALETTE[0] if group == REAL_LABEL else PALETTE[1 + x % (len(PALETTE) - 1)]
            ax.scatter(x + rng.uniform(-0.18, 0.18, len(values)), values, s=12, alpha=0.75, color=colour)
            if len(values):
                ax.hlines(np.median(values), x - 0.3, x + 0.3, color="black", linewidth=1)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([g if g == REAL_LABEL else f"{g}\nAUC {auc_of.get(g, float('nan')):.2f}"
                            for g in order], rotation=30, ha="right", fontsize=7)
        ax.set_title(f"{dataset_key} · {model}", fontsize=8)
        ax.set_ylabel(SCORE_LABELS.get(score, score), fontsize=8)
    fig.suptitle("Joint-structure contrast C per 20-row sample (higher = the rows' own combinations are more "
                 "probable than their values recombined)" if score == "contrast" else
                 "How probable the model finds each 20-row sample (higher = more probable; n per group shown as "
                 "points)", fontsize=8)
    fig.tight_layout()
    return fig


def column_contributions(columns: pd.DataFrame, *, top: int = 8) -> plt.Figure:
    """Bars of ``likelihood_columns``: synthetic minus real holdout nats per row of the ``top`` columns a
    panel."""
    set_style()
    panels = _panels(columns)
    fig, axes = _grid(len(panels), width=5.2, height=3.8)
    for ax, (dataset_key, model, frame) in zip(axes, panels):
        sources = _source_order(frame["source"])
        strength = frame.groupby("column")["delta_nats_per_row"].apply(lambda s: s.abs().max())
        chosen = list(strength.sort_values(ascending=False).index[:top])[::-1]
        height = 0.8 / max(len(sources), 1)
        for k, source in enumerate(sources):
            part = frame[frame["source"] == source].set_index("column").reindex(chosen)
            ax.barh(np.arange(len(chosen)) + k * height - 0.4 + height / 2, part["delta_nats_per_row"],
                    height=height, color=PALETTE[(1 + k) % len(PALETTE)], label=source)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(chosen)))
        ax.set_yticklabels(chosen, fontsize=7)
        ax.set_xlabel("synthetic − real (nats per row; < 0: less probable)")
        ax.set_title(f"{dataset_key} · {model}", fontsize=8)
        ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    return fig


def joint_dependence(columns: pd.DataFrame, *, value: str = "delta_split") -> plt.Figure:
    """Heatmap per dataset × model of ``joint_columns``' ``value`` (nats per sample), column × group; blue:
    that column is less predictable from the columns before it than in real rows."""
    set_style()
    panels = _panels(columns)
    fig, axes = _grid(len(panels), width=4.6, height=4.2)
    for ax, (dataset_key, model, frame) in zip(axes, panels):
        grid = frame.pivot_table(index="column", columns="source", values=value, aggfunc="mean")
        grid = grid[[s for s in _source_order(grid.columns)]]
        limit = float(np.nanmax(np.abs(grid.to_numpy()))) if grid.size else 1.0
        image = ax.imshow(grid.to_numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")  # lost = blue
        ax.grid(False)
        ax.set_xticks(range(grid.shape[1]))
        ax.set_xticklabels(grid.columns, rotation=30, ha="right", fontsize=7)
        ax.set_yticks(range(grid.shape[0]))
        ax.set_yticklabels(grid.index, fontsize=7)
        ax.set_title(f"{dataset_key} · {model}", fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.8, label="group − real holdout (nats per sample)")
    fig.suptitle("Where each group lost (blue) or gained (red) the joint structure real rows show the model",
                 fontsize=8)
    fig.tight_layout()
    return fig
