"""Figures of the reasoning cues (notebook 10): theme shares under C1 and C2, and the validity of cited
facts."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from llmdisc.figures.plots import CONDITION_COLOURS, PALETTE, panel_grid, set_style

VERDICT_COLOURS = {"true": PALETTE[2], "false": PALETTE[3], "not_checkable": "0.75"}


def theme_shift_figure(shift: pd.DataFrame, theme_labels: dict[str, str] | None = None) -> plt.Figure:
    """Share of trials using each theme under C1 and C2, one panel per model × dataset (``theme_labels``: y
    axis)."""
    set_style()
    theme_labels = theme_labels or {}
    groups = list(shift.groupby(["source", "provider", "model", "dataset"], sort=True))
    fig, axes = panel_grid(len(groups), width=4.6, height=3.6)
    for ax, ((source, provider, model, dataset), grp) in zip(axes, groups):
        themes = list(dict.fromkeys(grp["theme"]))
        y = np.arange(len(themes))
        for offset, cond in ((-0.15, "C1"), (0.15, "C2")):
            sub = grp.set_index("theme").reindex(themes)
            value = sub[f"share_{cond.lower()}"].to_numpy(dtype=float)
            low = value - sub[f"share_{cond.lower()}_ci_low"].to_numpy(dtype=float)
            high = sub[f"share_{cond.lower()}_ci_high"].to_numpy(dtype=float) - value
            ax.errorbar(value, y + offset, xerr=[low, high], fmt="o", ms=4, capsize=2,
                        color=CONDITION_COLOURS[cond], label=cond)
        n1, n2 = int(grp["n_c1"].iloc[0]), int(grp["n_c2"].iloc[0])
        ax.set_yticks(y, [theme_labels.get(t, t) for t in themes], fontsize=7)
        ax.set_xlim(-0.02, 1.02)
        ax.invert_yaxis()
        ax.set_title(f"{source}: {provider}/{model}\n{dataset} (n C1={n1}, C2={n2})", fontsize=8)
        ax.set_xlabel("share of trials using the theme")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def validity_figure(validity: pd.DataFrame) -> plt.Figure:
    """Stacked shares of cited checkable facts that are true, false or not checkable (``cues_validity``), one
    bar per source × provider/model × true label × claim set with its n claims (and n distinct) at its end."""
    set_style()
    frame = validity.assign(claim_set=validity["claim_set"] if "claim_set" in validity else "substantive")
    order = ["source", "provider", "model", "true_label", "claim_set"]
    frame = frame[frame["n_claims"] > 0].sort_values(order).reset_index(drop=True)
    labels = [f"{r.source}: {r.provider}/{r.model} | {r.true_label}" + (" | trivial" if r.claim_set == "trivial"
                                                                          else "") for r in frame.itertuples()]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * max(len(frame), 2) + 1.2))
    left = np.zeros(len(frame))
    for verdict, colour in VERDICT_COLOURS.items():
        share = frame[f"share_{verdict}"].fillna(0).to_numpy(dtype=float)
        ax.barh(np.arange(len(frame)), share, left=left, color=colour, label=verdict.replace("_", " "))
        left += share
    distinct = frame["distinct_n_claims"] if "distinct_n_claims" in frame else pd.Series(np.nan, index=frame.index)
    for i, (n, k) in enumerate(zip(frame["n_claims"], distinct)):
        ax.text(1.01, i, f"n={int(n)}" + ("" if pd.isna(k) else f" ({int(k)} distinct)"), va="center", fontsize=7)
    ax.set_yticks(np.arange(len(frame)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.3)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("share of parsed checkable claims (by mention)")
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.4, 1.0), ncol=3, frameon=False)
    fig.tight_layout()
    return fig
