"""The side-by-side figure of every discriminator: colour = discriminator (shaded for its further models),
marker = the statistic (:data:`MARKERS`), open = condition C2."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from llmdisc.figures.comparison import AUC_STATISTICS, DISCRIMINATORS, ONE_LABEL_NOTE, SYNTHESIZER_ORDER
from llmdisc.figures.plots import PALETTE, ordered, set_style

COLOURS = dict(zip(DISCRIMINATORS, (PALETTE[0], PALETTE[2], PALETTE[1], PALETTE[9], PALETTE[4], (0.15, 0.15, 0.15))))
STATISTIC_NAMES = {"auc": "AUC → separation", "drs": "DRS", "batch_drs": "DRS, batch-calibrated",
                   "context_drs": "DRS, contextual"}
MARKERS = {"auc": "o", "drs": "s", "batch_drs": "D", "context_drs": "P"}
"""Marker per statistic: circle = an AUC read as separation, the others a DRS (square, diamond, plus)."""
_KEYS = ["discriminator", "statistic", "model", "condition"]


def _series(table: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """Every discriminator × statistic × model × condition present, in table order (one marker each)."""
    disc = {d: i for i, d in enumerate(DISCRIMINATORS)}
    keys = table[_KEYS].fillna("").astype(str).drop_duplicates()
    keys = keys.assign(_d=keys["discriminator"].map(disc).fillna(len(disc)),
                       _s=~keys["statistic"].isin(AUC_STATISTICS))
    return [tuple(k) for k in keys.sort_values(["_d", "_s", "statistic", "model", "condition"])[_KEYS].to_numpy()]


def _colours(series: list[tuple[str, str, str, str]]) -> dict[tuple[str, str, str, str], tuple[float, ...]]:
    """The discriminator's colour, darker for its second model (classifier), lighter for its third, …"""
    models: dict[str, dict[str, None]] = {}  # per discriminator, its models in order of appearance
    for disc, _, model, _ in series:
        models.setdefault(disc, {})[model] = None
    out = {}
    for key in series:
        base = np.array(COLOURS.get(key[0], PALETTE[5]), dtype=float)
        shade = (0.0, -0.45, 0.45, -0.7, 0.65)[list(models[key[0]]).index(key[2]) % 5]
        out[key] = tuple(base * (1 + shade) if shade < 0 else base + (1 - base) * shade)
    return out


def series_label(discriminator: str, statistic: str, model: str, condition: str) -> str:
    """Legend text of one series: ``LLM verdict DRS · local / m · C1``."""
    parts = [f"{DISCRIMINATORS.get(discriminator, discriminator)} {STATISTIC_NAMES.get(statistic, statistic)}"]
    parts += [p for p in (model, condition) if p]
    return " · ".join(parts)


def _n_labels(ax: plt.Axes, x: np.ndarray, y: np.ndarray, part: pd.DataFrame) -> None:
    """``n=…`` beside each marker: right of its interval, else left of it, else (it spans the axis) above it."""
    high = np.fmax(part["scale_high"].to_numpy(float), x)
    low = np.fmin(part["scale_low"].to_numpy(float), x)
    for xi, yi, lo, hi, n in zip(x, y, low, high, part["n"].to_numpy(float)):
        if np.isnan(n) or np.isnan(xi):
            continue
        if hi < 0.9:  # room right of the interval
            anchor, shift, ha = hi, (4, 0), "left"
        elif lo > 0.1:  # room left of it
            anchor, shift, ha = lo, (-4, 0), "right"
        else:  # the interval spans the axis: just above the marker
            anchor, shift, ha = xi, (4, 4), "left"
        ax.annotate(f"n={int(n)}", (anchor, yi), xytext=shift, textcoords="offset points", ha=ha, va="center",
                    fontsize=4.5, color="0.35")


def side_by_side(table: pd.DataFrame) -> plt.Figure:
    """Dot plot of :func:`llmdisc.figures.comparison.discriminator_comparison` on the common scale (0 = cannot
    tell, 1 = every sample told apart), one panel per dataset key."""
    set_style()
    datasets = sorted(table["dataset_key"].astype(str).unique())
    if not datasets:
        fig, ax = plt.subplots(figsize=(5, 2))
        ax.text(0.5, 0.5, "no discriminator table in this run", ha="center", va="center")
        ax.set_axis_off()
        return fig
    series = _series(table)
    colours = _colours(series)
    rows = ordered(table["synthesizer"].astype(str), SYNTHESIZER_ORDER)
    slot = 0.8 / max(len(series), 1)
    height = max(2.5, 0.6 + len(rows) * (0.3 + 0.11 * len(series)))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.4 * len(datasets), height), sharey=True, squeeze=False)
    keyed = table.assign(**{k: table[k].fillna("").astype(str) for k in _KEYS})
    for ax, dataset in zip(axes.flat, datasets):
        frame = keyed[keyed["dataset_key"].astype(str) == dataset]
        for j, key in enumerate(series):
            part = frame[(frame[_KEYS] == pd.Series(key, index=_KEYS)).all(axis=1)]
            if part.empty:
                continue
            y = np.array([rows.index(s) for s in part["synthesizer"].astype(str)]) - 0.4 + slot * (j + 0.5)
            x = part["scale_value"].to_numpy(float)
            err = np.vstack([x - part["scale_low"].to_numpy(float), part["scale_high"].to_numpy(float) - x])
            colour = colours[key]
            ax.errorbar(x, y, xerr=np.nan_to_num(err), fmt=MARKERS.get(key[1], "s"), ms=4,
                        color=colour, mfc="white" if key[3] == "C2" else colour, elinewidth=0.9, capsize=1.5,
                        label=series_label(*key))
            _n_labels(ax, x, y, part)
            one = part["notes"].astype(str).str.contains(ONE_LABEL_NOTE, regex=False).to_numpy() \
                if "notes" in part else np.zeros(len(part), bool)
            for xi, yi in zip(x[one], y[one]):
                ax.annotate("one label", (xi, yi), xytext=(4, -5), textcoords="offset points", ha="left",
                            va="center", fontsize=4.5, color="firebrick")
        for k in range(1, len(rows)):
            ax.axhline(k - 0.5, color="0.85", lw=0.6)
        ax.axvline(0.5, ls=":", color="grey", lw=0.8)
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_yticks(range(len(rows)), rows)
        ax.grid(axis="y", visible=False)
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel("separation 2·|AUC − 0.5|  or  DRS\n(0 = cannot tell, 1 = tells every sample apart)",
                      fontsize=7)
    handles = [Line2D([], [], marker=MARKERS.get(k[1], "s"), ls="", ms=4, color=colours[k],
                      mfc="white" if k[3] == "C2" else colours[k], label=series_label(*k)) for k in series]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=6, frameon=False,
               title="top to bottom within each row", title_fontsize=6)
    fig.suptitle("Every discriminator on one scale. ● AUC as separation 2·|AUC − 0.5|: 0 = chance. ■ ◆ ✚ DRS: "
                 "0 = cannot tell, about 0.5 = balanced guessing (dotted). Open markers: C2.", fontsize=8)
    fig.tight_layout()
    return fig
