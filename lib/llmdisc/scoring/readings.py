"""The results tables read as separations: one :class:`Cell` per instrument, dataset and group (a release or a
control), with its AUC, its n per class and its Holm-adjusted p (:func:`collect`).

Every reader that states a separation (the findings, the claims table, the headline figure) reads it here, so
they show the same D, interval and direction (:mod:`llmdisc.scoring.separation`). Intervals are recomputed
from each cell's AUC and n, so every table reads with the current score interval, whenever it was written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from llmdisc.discrimination.records import protocol_label
from llmdisc.scoring.separation import Separation, auc_interval, holm, separation

MIN_N = 10
"""Fewer units than this in a class: the cell is shown as too few, not as a figure."""
ALPHA = 0.05
POSITIVE, NEGATIVE = "shuffled_columns", "real_vs_real"
INSTRUMENTS = ("c2st", "likelihood", "joint", "probability", "verdict")
TITLES = {"c2st": "C2ST (rows)", "likelihood": "table likelihood", "joint": "joint structure",
          "probability": "verdict probability (C1)", "verdict": "generated verdicts"}
WORDS = {"c2st": ("not told apart", "told apart"), "likelihood": ("less probable", "more probable"),
         "joint": ("less structured", "more structured"),
         "probability": ("called synthetic less often", "called synthetic more often")}
"""What a group scoring lower / higher than real data means, per instrument."""
EXPECTED = {"c2st": "higher", "likelihood": "lower", "joint": "lower", "probability": "higher"}
"""The direction in which each instrument must tell the positive control (columns shuffled) apart: shuffled rows
are less probable and less structured to the model, and should be called synthetic more often."""
HOLM_FAMILY = ("Holm's correction runs over one instrument's release cells across every dataset of the run: they "
               "answer one question of the instrument (does it tell releases from real data?), and the cells of a "
               "dataset share their real samples")
ROW_SEPARATION = 0.1
"""A row-level C2ST (thousands of rows a side, no interval in its table) counts as telling a release apart above
this D (AUC 0.55): its interval is narrower than the rounding."""


def p_text(p: float | None) -> str:
    """``< 0.001``, three decimals, or ``–``."""
    if p is None or not math.isfinite(p):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


@dataclass
class Cell:
    """One instrument's reading of one group against real data (the AUC as its table gives it, the n behind it)."""

    auc: float | None = None
    p: float | None = None
    n_real: int = 0
    n_other: int = 0
    p_holm: float | None = None
    note: str = ""
    rows: bool = False
    """A row-level reading with no interval (the C2ST on thousands of rows)."""
    one_sided: bool = False

    @property
    def enough(self) -> bool:
        return min(self.n_real, self.n_other) >= MIN_N and self.auc is not None and math.isfinite(self.auc)

    @property
    def separation(self) -> Separation | None:
        """D with its score interval at the cell's n (None with too few units)."""
        if not self.enough:
            return None
        low, high = (self.auc, self.auc) if self.rows else auc_interval(self.auc, self.n_real, self.n_other)
        return separation(self.auc, low, high, one_sided=self.one_sided)

    def text(self, words: tuple[str, str]) -> str:
        """``D 0.39 [0.03, 0.66], less structured, p (Holm) 0.252``, a note, or the n when too few."""
        if self.note:
            return self.note
        sep = self.separation
        if sep is None:
            return f"n = {self.n_real} / {self.n_other}: too few" if self.n_real or self.n_other else "–"
        way = {"lower": words[0], "higher": words[1]}.get(sep.direction, "") if sep.d > 0 else ""
        if self.rows:  # thousands of rows, no interval: told apart above ROW_SEPARATION, whatever the direction
            way = words[1] if self.separated else words[0]
        interval = "" if self.rows else f" [{sep.low:.2f}, {sep.high:.2f}]"
        holm_p = "" if self.p_holm is None else f", p (Holm) {p_text(self.p_holm)}"
        return f"{sep.d:.2f}{interval}" + (f", {way}" if way else "") + holm_p

    @property
    def separated(self) -> bool:
        """Told apart: D's lower bound above 0 and, where the cell has a p-value, its Holm-adjusted p below 0.05
        (a row-level C2ST: D above :data:`ROW_SEPARATION`)."""
        sep = self.separation
        if sep is None:
            return False
        if self.rows:
            return sep.d > ROW_SEPARATION
        return sep.low > 0 and (self.p_holm is None or self.p_holm < ALPHA)


def read_table(tables_dir: Path, name: str, *, keep_empty: bool = False) -> pd.DataFrame | None:
    """``<tables_dir>/<name>.csv``; None when it is missing, unreadable (half-written) or, unless ``keep_empty``,
    has no rows."""
    path = Path(tables_dir) / f"{name}.csv"
    try:
        frame = pd.read_csv(path) if path.is_file() else None
    except (ValueError, OSError):
        return None
    return None if frame is None or (frame.empty and not keep_empty) else frame


def read_baselines(baselines_dir: Path) -> pd.DataFrame | None:
    """Every ``<baselines_dir>/*.csv`` concatenated in name order; None when there is none."""
    files = sorted(Path(baselines_dir).glob("*.csv")) if Path(baselines_dir).is_dir() else []
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else None


SCORES = {"likelihood": "mean_logprob", "joint": "contrast"}
"""The score each sample instrument's headline reads (its tables hold others beside it)."""


def _sample_cells(frame: pd.DataFrame | None, instrument: str) -> dict[tuple[str, str], Cell]:
    if frame is None:
        return {}
    if "score" in frame:
        frame = frame[frame["score"] == SCORES[instrument]]
    key = "dataset_key" if "dataset_key" in frame else "dataset"
    return {(row[key], row["source"]): Cell(row.get("auc"), row.get("perm_p"), int(row.get("n_real") or 0),
                                            int(row.get("n_syn") or 0)) for row in frame.to_dict("records")}


def _c1_rows(frame: pd.DataFrame) -> Iterator[tuple[dict, str]]:
    """Each C1 row (every row without a condition column) and its group; with more than one protocol in the
    table, the protocol is part of the group (never pooled)."""
    rows = (frame[frame["condition"] == "C1"] if "condition" in frame else frame).to_dict("records")
    protocols = len({protocol_label(row) for row in rows})
    for row in rows:
        group = {"real_holdout": NEGATIVE}.get(row["synthetic_method"], row["synthetic_method"])
        yield row, f"{group} · {protocol_label(row)}" if protocols > 1 else group


def _probability_cells(frame: pd.DataFrame | None) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    key = "dataset_key" if frame is not None and "dataset_key" in frame else "dataset"
    for row, group in _c1_rows(frame) if frame is not None else ():
        out.setdefault((row[key], group), Cell(row.get("auc"), row.get("auc_p_value"), int(row.get("n_real") or 0),
                                               int(row.get("n_syn") or 0)))
    return out


def _verdict_cells(frame: pd.DataFrame | None) -> dict[tuple[str, str], Cell]:
    out: dict[tuple[str, str], Cell] = {}
    for row, group in _c1_rows(frame) if frame is not None else ():
        n_real, n_syn = int(row.get("n_valid_real") or 0), int(row.get("n_valid_syn") or 0)
        cell = Cell(None, None, n_real, n_syn)
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
            group = {"real_holdout": NEGATIVE}.get(row[synth], row[synth])
            out[(row[key], group)] = Cell(float(auc), None, 1000, 1000, rows=True, one_sided=True)
    return out


def collect(tables_dir: Path) -> dict[str, dict[tuple[str, str], Cell]]:
    """``{instrument: {(dataset, group): Cell}}`` from the tables present, Holm-adjusted per instrument."""
    found = {
        "c2st": _c2st_cells(read_table(tables_dir, "baselines_headline")),
        "likelihood": _sample_cells(read_table(tables_dir, "likelihood_cells"), "likelihood"),
        "joint": _sample_cells(read_table(tables_dir, "joint_cells"), "joint"),
        "probability": _probability_cells(read_table(tables_dir, "llm_probability_cells")),
        "verdict": _verdict_cells(read_table(tables_dir, "llm_cells")),
    }
    for cells in found.values():
        releases = [k for k, c in cells.items() if k[1] not in (POSITIVE, NEGATIVE) and c.p is not None]
        for k, adjusted in zip(releases, holm([cells[k].p for k in releases])):
            cells[k].p_holm = adjusted
    return found
