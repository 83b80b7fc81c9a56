"""The headline figure: every instrument's separation D = 2·|AUC − 0.5| of every release and both controls
from real data (the cells of :func:`llmdisc.scoring.readings.collect`), at the README's width.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.lines import Line2D

from llmdisc.figures.plots import PALETTE, plt, set_style
from llmdisc.scoring.readings import EXPECTED, NEGATIVE, POSITIVE, TITLES, WORDS, collect, read_table

NAME = "headline"
INSTRUMENTS = ("c2st", "likelihood", "joint", "probability")
MARKERS = {"c2st": "s", "likelihood": "o", "joint": "D", "probability": "^"}
GROUP_NAMES = {POSITIVE: "positive control\n(columns shuffled)", NEGATIVE: "negative control\n(real vs real)"}
WIDTH_IN, DPI = 9.0, 100
"""9 inches at 100 dpi: 900 px, drawn at the README's width without scaling."""


def headline_frame(tables_dir: Path) -> pd.DataFrame:
    """One row per dataset × group × instrument with a reading (D, interval, direction and n; interval and n
    None for the row-level C2ST)."""
    rows = []
    for instrument, cells in collect(Path(tables_dir)).items():
        if instrument not in INSTRUMENTS:
            continue
        for (dataset, group), cell in cells.items():
            sep = cell.separation
            if sep is None:
                continue
            rows.append({"dataset": dataset, "group": group, "instrument": instrument, "d": sep.d,
                         "low": None if cell.rows else sep.low, "high": None if cell.rows else sep.high,
                         "direction": sep.direction, "expected": sep.direction == EXPECTED[instrument],
                         "words": dict(zip(("lower", "higher"), WORDS[instrument])).get(sep.direction, ""),
                         "n_real": None if cell.rows else cell.n_real,
                         "n_other": None if cell.rows else cell.n_other})
    return pd.DataFrame(rows)


def _group_order(groups: list[str]) -> list[str]:
    releases = sorted(g for g in groups if g not in (POSITIVE, NEGATIVE))
    return releases + [g for g in (POSITIVE, NEGATIVE) if g in groups]


def _n_text(frame: pd.DataFrame) -> str:
    samples = frame.dropna(subset=["n_real"])
    if samples.empty:
        return ""
    sizes = sorted({int(n) for n in pd.concat([samples["n_real"], samples["n_other"]])})
    shown = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
    return f"sample instruments: {shown} samples of 20 rows a group, 95 % score intervals"


def headline_figure(frame: pd.DataFrame, *, model: str) -> plt.Figure:
    """One panel per dataset, one row per release and control, one marker per instrument with its interval
    (hollow: the other way than its positive control must read); ``model`` is named in the title."""
    set_style()
    if frame.empty:
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.5), dpi=DPI)
        ax.text(0.5, 0.5, "no separation in results/tables: run `make reproduce`", ha="center", va="center")
        ax.set_axis_off()
        return fig
    datasets = sorted(frame["dataset"].unique())
    orders = {d: _group_order(list(frame.loc[frame["dataset"] == d, "group"].unique())) for d in datasets}
    heights = [len(orders[d]) for d in datasets]
    fig, axes = plt.subplots(len(datasets), 1, figsize=(WIDTH_IN, 1.55 + 0.42 * sum(heights)), dpi=DPI,
                             sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights})
    shown = [i for i in INSTRUMENTS if i in set(frame["instrument"])]
    colours = {i: PALETTE[k] for k, i in enumerate(INSTRUMENTS)}
    slot = 0.72 / len(shown)
    for ax, dataset in zip(axes[:, 0], datasets):
        order = orders[dataset]
        part = frame[frame["dataset"] == dataset]
        for j, instrument in enumerate(shown):
            for row in part[part["instrument"] == instrument].itertuples():
                y = order.index(row.group) - 0.36 + slot * (j + 0.5)
                colour = colours[instrument]
                if row.low is not None and not pd.isna(row.low):
                    ax.hlines(y, row.low, row.high, color=colour, lw=1.2)
                ax.plot(row.d, y, MARKERS[instrument], ms=6, color=colour,
                        mfc=colour if row.expected or row.d == 0 else "white", mew=1.3)
        for k in range(1, len(order)):
            ax.axhline(k - 0.5, color="0.85", lw=0.6)
        ax.set_ylim(len(order) - 0.5, -0.5)
        ax.set_yticks(range(len(order)), [GROUP_NAMES.get(g, g) for g in order], fontsize=8)
        ax.set_xlim(-0.02, 1.02)
        ax.set_title(dataset, fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("separation D from real data (0 = not told apart, 1 = every sample told apart)",
                           fontsize=8)
    handles = [Line2D([], [], marker=MARKERS[i], ls="", ms=6, color=colours[i], label=TITLES[i]) for i in shown]
    handles.append(Line2D([], [], marker="o", ls="", ms=6, color="0.3", mfc="white",
                          label="hollow: the other way (e.g. more probable than real)"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    note = "\n".join(t for t in (f"language model: {model}; {_n_text(frame)}".strip("; "),
                                  "C2ST: gradient-boosted trees on thousands of rows a side (interval narrower than "
                                  "the marker)") if t)
    fig.suptitle("How far each release and control is from real data, per instrument\n" + note, fontsize=8)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def sample_models(tables_dir: Path) -> str:
    """The language models named in the sample instruments' tables (their ``model`` column), comma-separated."""
    models: set[str] = set()
    for name in ("likelihood_cells", "joint_cells", "llm_probability_cells"):
        frame = read_table(tables_dir, name)
        if frame is not None and "model" in frame:
            models |= {str(m) for m in frame["model"].dropna()}
    return ", ".join(sorted(models)) or "not recorded"


def draw_headline(tables_dir: Path) -> plt.Figure:
    return headline_figure(headline_frame(tables_dir), model=sample_models(tables_dir))


