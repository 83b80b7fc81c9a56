"""Every discriminator side by side: one tidy table on one comparable scale (notebook 07 § 5b), read from the
results tables of the earlier stages (nothing is recomputed).

**The common scale** (``scale_*``, in [0, 1]): an AUC becomes the separation 2·|AUC − 0.5| (the way kept in
``direction``); a DRS is kept as it is. A balanced coin flip has DRS near 0.5 but separation near 0: the two
agree at 1, not at chance, so compare DRS with DRS and separation with separation.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from llmdisc import RELEASES
from llmdisc.discrimination.records import protocol_label
from llmdisc.errors import DataError
from llmdisc.paths import results_dir
from llmdisc.scoring.readings import read_baselines, read_table
from llmdisc.scoring.separation import separation
from llmdisc.synthesis.controls import CONTROLS, NEGATIVE_CONTROL

COLUMNS = ("dataset_key", "synthesizer", "discriminator", "model", "condition", "statistic", "estimate", "low",
           "high", "n", "direction", "scale_value", "scale_low", "scale_high", "source_table", "notes")
"""Columns of :func:`discriminator_comparison` (``notes``: what a reader must know about the row)."""
DISCRIMINATORS = {"llm_verdict": "LLM verdict", "llm_probability": "LLM probability", "likelihood": "likelihood",
                  "joint": "joint structure", "c2st": "C2ST", "human_pilot": "human pilot"}
"""Discriminator ids in table order, with the label figures show."""
INPUTS = ("llm_cells", "llm_probability_cells", "likelihood_cells", "joint_cells", "baselines", "baselines_headline",
          "human_cells")
"""Keys :func:`discriminator_comparison` reads (``baselines``: every ``results/baselines/*.csv`` concatenated)."""
AUC_STATISTICS = ("auc",)
"""Statistics mapped to the separation 2·|AUC − 0.5|; every other statistic is a DRS, kept as it is."""
SYNTHESIZER_ORDER = (*RELEASES, *CONTROLS)
C2ST_CLASSIFIERS = {"c2st_auc_hist_gb": "hist_gb", "c2st_auc_logistic": "logistic"}
HUMAN_DATASETS = {"census": "census-codes"}
"""The pilot's dataset names → dataset keys (the paper's Census samples are PUMS integer codes)."""
HUMAN_NOTE = "the pilot's cells are the paper's samples of its own releases, under its protocol, not this run's"


def auc_to_scale(auc: float, low: float, high: float) -> tuple[float, float, float]:
    """Separation 2·|AUC − 0.5| of an AUC and its interval: ``(value, low, high)`` in [0, 1], NaN where missing."""
    if math.isnan(low) or math.isnan(high):
        return 2 * abs(auc - 0.5), math.nan, math.nan
    folded = separation(auc, low, high)
    return folded.d, folded.low, folded.high


def _f(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


ONE_LABEL_NOTE = ("one label for every sample: the threshold lies outside the cell's scores, so DRS 0 says this "
                  "calibration cannot tell, not that the release is safe")
"""Note of a calibrated DRS whose threshold sends every sample, real and synthetic, to one label."""


def one_label(p_real: float, p_syn: float) -> bool:
    """True when a thresholded cell called every sample one label (p_REAL, p_SYN are 1 and 0, or 0 and 1)."""
    return {p_real, p_syn} == {0.0, 1.0}


def _need(table: pd.DataFrame, name: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataError(f"table {name} lacks column(s) {missing}; it has {list(table.columns)}; fix: rewrite it "
                        "with the notebook that produces it (07 for llm_*, 09 for likelihood_* and joint_*, 05, 06)")


def _row(dataset: object, synth: object, disc: str, model: str, condition: str, statistic: str, estimate: float,
         low: float, high: float, n: float, direction: str, source: str, notes: str = "") -> dict[str, object]:
    return {"dataset_key": str(dataset), "synthesizer": str(synth), "discriminator": disc, "model": model,
            "condition": condition, "statistic": statistic, "estimate": estimate, "low": low, "high": high, "n": n,
            "direction": direction, "source_table": source, "notes": notes}


def _who(row: pd.Series) -> str:
    """``provider / model``, and the protocol and configuration when the table has them (never pooled)."""
    protocol = protocol_label(row)
    return f"{row['provider']} / {row['model']}" + (f" ({protocol})" if protocol else "")


def _llm_verdict(cells: pd.DataFrame) -> list[dict[str, object]]:
    _need(cells, "llm_cells", ("synthetic_method", "condition", "provider", "model", "drs", "drs_ci_low",
                               "drs_ci_high", "n_valid"))
    key = "dataset_key" if "dataset_key" in cells else "dataset"
    return [_row(r[key], r["synthetic_method"], "llm_verdict", _who(r), r["condition"],
                 "drs", _f(r["drs"]), _f(r["drs_ci_low"]), _f(r["drs_ci_high"]), _f(r["n_valid"]), "",
                 "llm_cells", "n = valid trials")
            for _, r in cells.iterrows()]


def _llm_probability(cells: pd.DataFrame) -> list[dict[str, object]]:
    _need(cells, "llm_probability_cells", ("dataset_key", "synthetic_method", "condition", "provider", "model",
                                           "auc", "auc_ci_low", "auc_ci_high", "auc_direction", "n_real",
                                           "n_syn", "batch_drs", "batch_drs_ci_low", "batch_drs_ci_high"))
    rows = []
    for _, r in cells.iterrows():
        n = _f(r["n_real"]) + _f(r["n_syn"])
        head = (r["dataset_key"], r["synthetic_method"], "llm_probability", _who(r), r["condition"])
        if not math.isnan(_f(r["auc"])):
            rows.append(_row(*head, "auc", _f(r["auc"]), _f(r["auc_ci_low"]), _f(r["auc_ci_high"]), n,
                             str(r["auc_direction"]), "llm_probability_cells",
                             "AUC of log P(SYNTHETIC) - log P(REAL); n = scored samples"))
        for calib, note in (("batch", "threshold = the cell's median score"),
                            ("context", "threshold = a content-free table's score")):
            if f"{calib}_drs" in r and not math.isnan(_f(r[f"{calib}_drs"])):
                notes = f"calibrated DRS, {note} (reads no label)"
                if one_label(_f(r.get(f"{calib}_p_real")), _f(r.get(f"{calib}_p_syn"))):
                    notes += f"; {ONE_LABEL_NOTE}"
                rows.append(_row(*head, f"{calib}_drs", _f(r[f"{calib}_drs"]), _f(r.get(f"{calib}_drs_ci_low")),
                                 _f(r.get(f"{calib}_drs_ci_high")), n, "", "llm_probability_cells", notes))
    return rows


_SAMPLE_SCORE_COLUMNS = ("dataset_key", "backend", "model", "source", "auc", "auc_low", "auc_high", "direction",
                         "separation", "n_real", "n_syn", "drs", "drs_low", "drs_high")


def _sample_scores(cells: pd.DataFrame, table: str, discriminator: str, score: str,
                   condition: Callable[[pd.Series], str]) -> list[dict[str, object]]:
    """AUC and band-rule DRS rows of a per-sample score's cells; ``real_vs_real`` is shown as
    ``real_holdout``."""
    _need(cells, table, _SAMPLE_SCORE_COLUMNS)
    if "score" in cells:
        cells = cells[cells["score"] == score]
    rows = []
    for _, r in cells.iterrows():
        control = r["source"] == "real_vs_real"
        synth = NEGATIVE_CONTROL if control else r["source"]
        extra = "; real_vs_real: real train samples against real holdout samples" if control else ""
        n = _f(r["n_real"]) + _f(r["n_syn"])
        head = (r["dataset_key"], synth, discriminator, f"{r['backend']} / {r['model']}", condition(r))
        rows.append(_row(*head, "auc", _f(r["auc"]), _f(r["auc_low"]), _f(r["auc_high"]), n, str(r["direction"]),
                         table, f"AUC of {score}, separation {_f(r['separation']):.3f}; n = scored samples{extra}"))
        rows.append(_row(*head, "drs", _f(r["drs"]), _f(r["drs_low"]), _f(r["drs_high"]), n, "", table,
                         "band rule: SYNTHETIC when outside the central 95 percent of real reference scores"
                         + extra))
    return rows


def _likelihood(cells: pd.DataFrame) -> list[dict[str, object]]:
    return _sample_scores(cells, "likelihood_cells", "likelihood", "mean_logprob",
                          lambda r: str(r.get("context", "")))


def _joint(cells: pd.DataFrame) -> list[dict[str, object]]:
    """The contrast C's cells; condition = ``csv, k 2, m 20`` (serialisation, permutations, reference rows)."""
    _need(cells, "joint_cells", ("serialisation", "k", "reference_rows"))
    return _sample_scores(cells, "joint_cells", "joint", "contrast",
                          lambda r: f"{r['serialisation']}, k {int(r['k'])}, m {int(r['reference_rows'])}")


def _direction(auc: float) -> str:
    return "higher" if auc > 0.5 else "lower" if auc < 0.5 else "none"


def _c2st(long: pd.DataFrame | None, headline: pd.DataFrame | None) -> list[dict[str, object]]:
    rows = []
    if long is not None and not long.empty:
        _need(long, "baselines", ("dataset_key", "synthesizer", "baseline", "variant", "method", "metric", "value",
                                  "ci_low", "ci_high", "n"))
        picked = long[(long["baseline"] == "c2st") & (long["variant"] == "ours") & (long["metric"] == "auc")]
        return [_row(r["dataset_key"], r["synthesizer"], "c2st", str(r["method"]), "", "auc", _f(r["value"]),
                     _f(r["ci_low"]), _f(r["ci_high"]), _f(r["n"]), _direction(_f(r["value"])), "baselines",
                     "out-of-fold ROC-AUC over rows; Nadeau-Bengio corrected interval; n = rows")
                for _, r in picked.iterrows()]
    if headline is not None and not headline.empty:
        key = "dataset_key" if "dataset_key" in headline else "dataset"
        synth = "synthesizer" if "synthesizer" in headline else "synthetic_method"
        _need(headline, "baselines_headline", (key, synth))
        for _, r in headline.iterrows():
            for column, classifier in C2ST_CLASSIFIERS.items():
                if column in r and not math.isnan(_f(r[column])):
                    rows.append(_row(r[key], r[synth], "c2st", classifier, "", "auc", _f(r[column]), math.nan,
                                     math.nan, math.nan, _direction(_f(r[column])), "baselines_headline",
                                     "out-of-fold ROC-AUC over rows; no interval in the headline table"))
    return rows


def _human(cells: pd.DataFrame) -> list[dict[str, object]]:
    annot = "annotator" if "annotator" in cells else "annotator_id"
    method = "method" if "method" in cells else "synthetic_method"
    _need(cells, "human_cells", (annot, "dataset", method, "condition", "drs", "drs_ci_low", "drs_ci_high",
                                 "n_valid"))
    pooled = cells[cells[annot].astype(str).str.lower().isin(["pooled", "all"])]
    rows = []
    for _, r in pooled.iterrows():
        accuracy = f"accuracy {_f(r.get('accuracy')):.2f}; " if "accuracy" in r else ""
        fed_back = "; answered after feedback on C1" if str(r.get("contaminated", "")).lower() == "true" else ""
        # the pilot judged the paper's own releases: their cells (paper_ctgan …), not ours of the same name
        rows.append(_row(HUMAN_DATASETS.get(str(r["dataset"]), r["dataset"]), f"paper_{r[method]}", "human_pilot",
                         "pooled annotators", r["condition"], "drs", _f(r["drs"]), _f(r["drs_ci_low"]),
                         _f(r["drs_ci_high"]), _f(r["n_valid"]), "", "human_cells",
                         f"{accuracy}{HUMAN_NOTE}{fed_back}"))
    return rows


def _present(tables: Mapping[str, pd.DataFrame | None], name: str) -> pd.DataFrame | None:
    table = tables.get(name)
    return table if table is not None and not table.empty else None


def discriminator_comparison(tables: Mapping[str, pd.DataFrame | None]) -> pd.DataFrame:
    """Every discriminator's headline statistic per dataset × synthesizer (and control), on one scale.

    ``tables``: results tables by name (:data:`INPUTS`; absent, None or empty ones give no rows;
    ``baselines``, with intervals, is preferred over ``baselines_headline``). Returns columns :data:`COLUMNS`,
    one row per statistic with an estimate (AUC or DRS, fractions; ``n`` NaN where the table has none), sorted
    by dataset, synthesizers then controls, discriminator, model, condition. DataError when a present table
    lacks a column.
    """
    rows: list[dict[str, object]] = []
    for name, build in (("llm_cells", _llm_verdict), ("llm_probability_cells", _llm_probability),
                        ("likelihood_cells", _likelihood), ("joint_cells", _joint), ("human_cells", _human)):
        table = _present(tables, name)
        if table is not None:
            rows += build(table)
    rows += _c2st(_present(tables, "baselines"), _present(tables, "baselines_headline"))
    out = pd.DataFrame(rows, columns=[c for c in COLUMNS if not c.startswith("scale_")])
    out = out[out["estimate"].astype(float).notna()]  # e.g. a cell without a valid trial of one class
    scaled = [auc_to_scale(e, lo, hi) if s in AUC_STATISTICS else (e, lo, hi)
              for s, e, lo, hi in zip(out["statistic"], out["estimate"].astype(float), out["low"].astype(float),
                                      out["high"].astype(float))]
    out[["scale_value", "scale_low", "scale_high"]] = np.array(scaled, dtype=float).reshape(-1, 3)
    out = out[list(COLUMNS)]
    order = {s: i for i, s in enumerate(SYNTHESIZER_ORDER)}
    disc = {d: i for i, d in enumerate(DISCRIMINATORS)}
    out = out.assign(_s=out["synthesizer"].map(order).fillna(len(order)), _d=out["discriminator"].map(disc))
    return (out.sort_values(["dataset_key", "_s", "synthesizer", "_d", "model", "condition", "statistic"])
            .drop(columns=["_s", "_d"]).reset_index(drop=True))


def load_inputs(tables_dir: Path | None = None, baselines_dir: Path | None = None, *,
                computed: Mapping[str, pd.DataFrame | None] | None = None) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """``(tables, missing)``: the inputs of :func:`discriminator_comparison` read from disk, and the names of
    those not found (``baselines`` and ``baselines_headline`` count as one). ``computed``: tables just
    computed, by name, replacing the files on disk (None or empty: this run has none)."""
    tables_dir = tables_dir or results_dir() / "tables"
    baselines_dir = baselines_dir or results_dir() / "baselines"
    found = {name: read_baselines(baselines_dir) if name == "baselines" else
             read_table(tables_dir, name, keep_empty=True) for name in INPUTS}
    found = {name: table for name, table in found.items() if table is not None}
    for name, table in (computed or {}).items():
        found.pop(name, None)
        if table is not None and not table.empty:
            found[name] = table
    missing = [n for n in INPUTS if n not in found and n not in ("baselines", "baselines_headline")]
    if "baselines" not in found and "baselines_headline" not in found:
        missing.append("baselines (results/baselines/*.csv or baselines_headline)")
    return found, missing
