"""Stage 07's inputs: read every earlier product and shape the tidy tables the figures draw.

Notebook 07 calls these functions, writes their results to ``results/tables/`` and hands them to
:mod:`llmdisc.figures.plots`. Nothing here runs a model or a fit; each function reads files or tables.
Our trials are scored per *dataset key* (``census-codes`` and ``census-labels`` are different
releases) × synthesizer × condition × provider × model.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from llmdisc.discrimination.records import load_trials
from llmdisc.errors import DataError
from llmdisc.paths import reference_dir, results_dir
from llmdisc.scoring.calibration import reliability_bins
from llmdisc.scoring.metrics import score_cells
from llmdisc.scoring.tables import effective_n_table, permutation_table

CELLS = ["dataset", "synthetic_method", "condition", "provider", "model"]


def load_our_trials(trials_dir: Path | None = None) -> pd.DataFrame:
    """Every trial record under ``results/trials`` with ``dataset`` set to the dataset key.

    Raises:
        DataError: no trial file exists (run notebook 04 first).
    """
    trials_dir = trials_dir or results_dir() / "trials"
    if not trials_dir.is_dir() or not any(trials_dir.glob("*.jsonl")):
        raise DataError(f"no trial records in {trials_dir.name}/; fix: run notebook 04 (or `make reproduce`) first")
    trials = load_trials(trials_dir)
    if "dataset_key" in trials:
        trials = trials.assign(dataset=trials["dataset_key"].fillna(trials["dataset"]))
    return trials


def llm_cells(trials: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per-cell scores of our trials (:func:`llmdisc.scoring.metrics.score_cells`), never pooled across models."""
    return score_cells(trials, by=CELLS, seed=seed)


def condition_tests(trials: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """DRS(C2) − DRS(C1) with permutation p-values per dataset × model × synthesizer (fractions)."""
    tests = permutation_table(trials, seed=seed)
    if tests.empty:
        return tests
    tests = tests.copy()
    for col in ("drs_c1", "drs_c2", "delta"):
        tests[col] = tests[col] / 100
    models = trials.drop_duplicates("model").set_index("model")["provider"]
    tests["provider"] = tests["model"].map(models).fillna("")
    return tests


def calibration_table(trials: pd.DataFrame, n_bins: int = 5) -> pd.DataFrame:
    """Reliability bins of stated confidence against correctness, per provider/model (valid trials only).

    Only trials that generated a verdict with a confidence count: a trial that only scored the labels
    (``scoring: probability``) states neither. Empty when no trial did.
    """
    valid = trials[trials["status"] == "valid"] if "status" in trials else trials
    valid = valid[valid["predicted_label"].notna() & pd.to_numeric(valid["confidence"], errors="coerce").notna()]
    frames = []
    for (provider, model), group in valid.groupby(["provider", "model"]):
        correct = (group["true_label"] == group["predicted_label"]).astype(float)
        bins = reliability_bins(group["confidence"].astype(float), correct, n_bins=n_bins)
        # plots.calibration draws both axes as fractions
        frames.append(bins.assign(model=f"{provider} / {model}", mean_confidence=bins["mean_confidence"] / 100))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def baseline_headlines(baselines_dir: Path | None = None) -> pd.DataFrame:
    """One row per dataset key × synthesizer with the baselines' main numbers (from notebook 05's CSVs)."""
    from llmdisc.baselines.report import headline

    baselines_dir = baselines_dir or results_dir() / "baselines"
    files = sorted(baselines_dir.glob("*.csv")) if baselines_dir.is_dir() else []
    if not files:
        return pd.DataFrame(columns=["dataset", "synthetic_method"])
    table = headline(pd.concat([pd.read_csv(f) for f in files], ignore_index=True))
    return table.rename(columns={"dataset_key": "dataset", "synthesizer": "synthetic_method"})


def baseline_agreement(cells: pd.DataFrame, baselines: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Directional agreement of the LLM's DRS with each baseline metric, over the synthesizers.

    Args:
        cells: per-cell LLM scores (:func:`llm_cells`; columns ``CELLS`` and ``drs``).
        baselines: one row per dataset × synthetic_method with the ``metrics`` columns
            (:func:`baseline_headlines`).
        metrics: baseline columns to compare, e.g. ``c2st_auc_hist_gb`` (higher = easier to tell apart)
            or ``dcr_share_closer`` (higher = synthetic records sit closer to the training data).

    Returns:
        One row per dataset × condition × provider × model × metric: ``n_synthesizers`` (cells with a DRS
        and the metric), ``kendall_tau`` (Kendall's τ-b between DRS and the metric across synthesizers:
        +1 = the LLM orders the releases as the metric does, −1 = reversed) and ``tau_note`` saying why τ
        is missing (fewer than 2 synthesizers, or one side constant, e.g. a DRS of 0 everywhere). With three
        synthesizers τ takes only the values ±1, ±1/3: a direction, not a test.
    """
    from scipy import stats

    keys = ["dataset", "condition", "provider", "model"]
    merged = cells.merge(baselines, on=["dataset", "synthetic_method"], how="inner")
    rows = []
    for key, group in merged.groupby(keys, sort=True):
        for metric in metrics:
            pair = group[["drs", metric]].astype(float).dropna()
            note = ""
            if len(pair) < 2:
                note = "fewer than 2 synthesizers"
            elif pair["drs"].nunique() < 2 or pair[metric].nunique() < 2:
                note = "constant " + ("DRS" if pair["drs"].nunique() < 2 else metric)
            tau = float("nan") if note else float(stats.kendalltau(pair["drs"], pair[metric]).statistic)
            rows.append({**dict(zip(keys, key)), "metric": metric, "n_synthesizers": len(pair),
                         "kendall_tau": tau, "tau_note": note})
    return pd.DataFrame(rows, columns=[*keys, "metric", "n_synthesizers", "kendall_tau", "tau_note"])


def protocol_effect_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Effective N per cell: our runs (by sampling mode) and, when ``../shared`` is present, the paper's trials."""
    parts = []
    for sampling, group in trials.groupby(trials.get("sampling", pd.Series("fresh", index=trials.index))):
        eff = effective_n_table(group, by=CELLS)
        parts.append(eff.assign(protocol=f"ours ({sampling} samples)"))
    ref = reference_dir()
    if ref is not None:
        from llmdisc.scoring.reference import import_paper_trials, paper_trial_files

        paper = import_paper_trials(paper_trial_files())
        eff = effective_n_table(paper.drop(columns=[c for c in ("prompt_hash",) if c in paper]), by=CELLS)
        parts.append(eff.assign(protocol="paper (fixed sample, distinct answers)"))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not out.empty:
        out["cell"] = out[CELLS].astype(str).agg(" | ".join, axis=1)
    return out


def human_llm_pairs(llm: pd.DataFrame, human_cells_csv: Path | None = None) -> pd.DataFrame:
    """Pooled human DRS beside each model's DRS for the same dataset × synthesizer × condition."""
    path = human_cells_csv or results_dir() / "tables" / "human_cells.csv"
    if not path.exists():
        return pd.DataFrame()
    human = pd.read_csv(path)
    annot = "annotator" if "annotator" in human else "annotator_id"
    method = "method" if "method" in human else "synthetic_method"
    pooled = human[human[annot].astype(str).str.lower().isin(["pooled", "all"])]
    if pooled.empty:
        return pd.DataFrame()
    pooled = pooled.rename(columns={method: "synthetic_method", "drs": "human_drs"})
    llm = llm.assign(dataset_base=llm["dataset"].str.split("-").str[0], llm_drs=llm["drs"])
    merged = llm.merge(pooled[["dataset", "synthetic_method", "condition", "human_drs"]],
                       left_on=["dataset_base", "synthetic_method", "condition"],
                       right_on=["dataset", "synthetic_method", "condition"], suffixes=("", "_human"))
    merged["model"] = merged["provider"] + " / " + merged["model"]
    return merged[["dataset", "synthetic_method", "condition", "model", "llm_drs", "human_drs"]]
