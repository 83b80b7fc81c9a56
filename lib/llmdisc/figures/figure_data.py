"""Stage 07's inputs: read every earlier product and shape the tidy tables the figures draw (no model, no
fit). Trials are scored per cell (:data:`CELLS`): protocols and configurations are never pooled.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from llmdisc.discrimination.records import (
    PROTOCOL_COLUMNS,
    UNRECORDED_CONFIG,
    cell_columns,
    load_trials,
    protocol_label,
)
from llmdisc.errors import DataError
from llmdisc.manifest import read_manifest
from llmdisc.paths import data_dir, reference_dir, results_dir
from llmdisc.scoring.calibration import reliability_bins
from llmdisc.scoring.metrics import score_cells
from llmdisc.scoring.tables import effective_n_table, permutation_table

CELLS = ["dataset", "synthetic_method", "condition", "provider", "model", *PROTOCOL_COLUMNS]
"""A cell of our trials: dataset key × synthesizer × condition × provider × model × protocol × configuration."""


def run_file_configs(trials: pd.DataFrame) -> pd.Series:
    """Per trial, the configurations whose runs wrote its run file, joined by ``+`` (``default+small``): two
    configurations with the same protocol and seed share one run file, whose records name only the first."""
    named = trials["config_name"].where(trials["config_name"] != UNRECORDED_CONFIG)
    writers = named.groupby(trials["run_id"].fillna(""), sort=False).agg(
        lambda s: "+".join(sorted(set(s.dropna()))) or UNRECORDED_CONFIG)
    return trials["run_id"].fillna("").map(writers)


def load_our_trials(trials_dir: Path | None = None) -> pd.DataFrame:
    """Every trial record under ``results/trials``, ``dataset`` set to the dataset key and ``config_name`` to
    its run file's writers (:func:`run_file_configs`); DataError when there is none."""
    trials_dir = trials_dir or results_dir() / "trials"
    if not trials_dir.is_dir() or not any(trials_dir.glob("*.jsonl")):
        raise DataError(f"no trial records in {trials_dir.name}/; fix: run notebook 04 (or `make reproduce`) first")
    trials = load_trials(trials_dir)
    if "dataset_key" in trials:
        trials = trials.assign(dataset=trials["dataset_key"].fillna(trials["dataset"]))
    return trials.assign(config_name=run_file_configs(trials))


def llm_cells(trials: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Per-cell scores of our trials (:func:`llmdisc.scoring.metrics.score_cells`), one row per
    :data:`CELLS`."""
    return score_cells(trials, by=cell_columns(trials, CELLS[:5]), seed=seed)


def condition_tests(trials: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """DRS(C2) − DRS(C1) with permutation p-values per dataset × model × synthesizer × protocol (fractions)."""
    tests = permutation_table(trials, seed=seed, group_cols=cell_columns(
        trials, ("dataset", "provider", "model", "synthetic_method")))
    if tests.empty:
        return tests
    models = trials.drop_duplicates("model").set_index("model")["provider"]
    return tests.assign(**{col: tests[col] / 100 for col in ("drs_c1", "drs_c2", "delta")},
                        provider=tests["model"].map(models).fillna(""))


def calibration_table(trials: pd.DataFrame, n_bins: int = 5) -> pd.DataFrame:
    """Reliability bins of stated confidence per provider/model and protocol (valid trials with a
    confidence)."""
    valid = trials[trials["status"] == "valid"] if "status" in trials else trials
    valid = valid[valid["predicted_label"].notna() & pd.to_numeric(valid["confidence"], errors="coerce").notna()]
    frames = []
    keys = cell_columns(valid, ("provider", "model"))
    for key, group in valid.groupby(keys, sort=True):
        named = dict(zip(keys, key))
        correct = (group["true_label"] == group["predicted_label"]).astype(float)
        bins = reliability_bins(group["confidence"].astype(float), correct, n_bins=n_bins)
        protocol = protocol_label(named)
        frames.append(bins.assign(**{k: named[k] for k in keys[2:]},
                                  model=f"{named['provider']} / {named['model']}" + (f" ({protocol})" if protocol else ""),
                                  mean_confidence=bins["mean_confidence"] / 100))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def baseline_headlines(baselines_dir: Path | None = None) -> pd.DataFrame:
    """One row per dataset key × synthesizer with the baselines' main numbers (from notebook 05's CSVs)."""
    from llmdisc.baselines.report import headline
    from llmdisc.scoring.readings import read_baselines

    baselines = read_baselines(baselines_dir or results_dir() / "baselines")
    if baselines is None:
        return pd.DataFrame(columns=["dataset", "synthetic_method"])
    return headline(baselines).rename(columns={"dataset_key": "dataset", "synthesizer": "synthetic_method"})


RELEASE_COLUMNS = ["dataset_key", "release", "synthesizer", "origin", "rows", "epochs", "fit_rows", "seed",
                   "kernels", "sha256"]


def release_checksums(synthetic_dir: Path | None = None) -> pd.DataFrame:
    """One row per release under ``synthetic_dir`` (default ``data/synthetic``), from its manifest (notebook 02):
    ``origin`` ``fitted`` (ours: epochs, fit rows and seed of the fit) or ``paper`` (the paper's file, read as is),
    ``kernels`` the instruction set our fit ran at (:mod:`llmdisc.determinism`), ``sha256`` of the parquet file.
    Two runs made the same release exactly when the checksums agree; empty (with the columns) when there is none."""
    rows = []
    for path in sorted((synthetic_dir or data_dir() / "synthetic").glob("*/*.manifest.json")):
        manifest = read_manifest(path)
        if manifest is None:
            raise DataError(f"the release manifest {path} cannot be read; fix: re-run notebooks/02_synthesis.ipynb")
        params, (output, digest) = manifest["parameters"], next(iter(manifest["outputs"].items()))
        paper = "release" in params
        rows.append({"dataset_key": params["dataset_key"], "release": Path(output).stem,
                     "synthesizer": params["synthesizer"], "origin": "paper" if paper else "fitted",
                     "rows": params["num_rows"], "epochs": None if paper else params.get("epochs"),
                     "fit_rows": None if paper else params.get("fit_rows"), "seed": None if paper else manifest["seed"],
                     "kernels": None if paper else (manifest.get("kernels") or {}).get("mode"), "sha256": digest})
    return pd.DataFrame(rows, columns=RELEASE_COLUMNS).astype({c: "Int64" for c in ("rows", "epochs", "fit_rows",
                                                                                     "seed")})


def likelihood_tables(likelihood_dir: Path | None = None, *, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``likelihood_cells``, ``likelihood_columns`` and ``likelihood_samples`` over every notebook-09 run
    under ``likelihood_dir`` (recursive; default ``results/likelihood``); empty when there is none."""
    from llmdisc.discrimination.likelihood.records import load_likelihood
    from llmdisc.scoring import likelihood as likelihood_scoring

    likelihood_dir = likelihood_dir or results_dir() / "likelihood"
    every = load_likelihood(likelihood_dir) if likelihood_dir.is_dir() else pd.DataFrame()
    every = every[~every["sample_id"].isna()] if len(every) else every
    if every.empty:
        return {}
    return {"likelihood_cells": pd.concat([likelihood_scoring.likelihood_table(every, score=score, seed=seed)
                                           for score in likelihood_scoring.SCORE_COLUMNS], ignore_index=True),
            "likelihood_columns": likelihood_scoring.column_contributions(every),
            "likelihood_samples": likelihood_scoring.samples_table(every)}


def joint_tables(likelihood_dir: Path | None = None, *, seed: int = 0,
                 load_tables: Callable[[str, list[str]], dict[str, pd.DataFrame]] | None = None
                 ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """``(records, {"joint_cells": …, "joint_columns": …})`` of the joint-structure contrast over the
    ``*.jsonl`` of ``<likelihood_dir>/joint/`` (not its subfolders), each record variety-adjusted against the
    tables ``load_tables(dataset_key, sources)`` drew it from (DataError when one is missing or differs)."""
    from llmdisc.discrimination.likelihood.records import load_joint
    from llmdisc.discrimination.likelihood.runs import load_likelihood_tables
    from llmdisc.scoring import joint as joint_scoring
    from llmdisc.scoring import variety

    folder = (likelihood_dir or results_dir() / "likelihood") / "joint"
    records = load_joint(folder, recursive=False) if folder.is_dir() else pd.DataFrame()
    if records.empty:
        return records, {}
    run_seeds = records.groupby("dataset_key")["run_seed"].first()
    records = variety.with_variety(records, load_tables or (lambda key, sources: load_likelihood_tables(
        key, sources, run_seed=int(run_seeds[key]))))
    records = variety.variety_adjusted(records, list(joint_scoring.JOINT_CELL_COLUMNS))
    adjusted = variety.adjusted_records(records)  # a quick run's cells have too few reference samples to fit
    cells = pd.concat([joint_scoring.joint_table(records, seed=seed)]
                      + ([joint_scoring.joint_table(adjusted, score=variety.ADJUSTED_SCORE, seed=seed)]
                         if len(adjusted) else []), ignore_index=True)
    return records, {"joint_cells": cells, "joint_columns": joint_scoring.joint_column_table(records)}


def baseline_agreement(cells: pd.DataFrame, baselines: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Kendall τ-b of the LLM's DRS with each baseline metric across the synthesizers, per cell (``tau_note``:
    why τ is missing). With three synthesizers τ takes only ±1, ±1/3: a direction, not a test."""
    from scipy import stats

    keys = cell_columns(cells, ("dataset", "condition", "provider", "model"))
    merged = cells.merge(baselines, on=["dataset", "synthetic_method"], how="inner")
    rows = []
    for key, group in merged.groupby(keys, sort=True, dropna=False):
        for metric in metrics:
            pair = group[["drs", metric]].astype(float).dropna()
            flat = [name for col, name in (("drs", "DRS"), (metric, metric)) if pair[col].nunique() < 2]
            note = "fewer than 2 synthesizers" if len(pair) < 2 else f"constant {flat[0]}" if flat else ""
            tau = float("nan") if note else float(stats.kendalltau(pair["drs"], pair[metric]).statistic)
            rows.append({**dict(zip(keys, key)), "metric": metric, "n_synthesizers": len(pair),
                         "kendall_tau": tau, "tau_note": note})
    return pd.DataFrame(rows, columns=[*keys, "metric", "n_synthesizers", "kendall_tau", "tau_note"])


PAPER_RECORDS = "paper's records"
"""``config_name`` of the paper's own LLM trial records (``../shared/reference``): not a run of ours."""


def paper_llm_trials() -> pd.DataFrame:
    """The paper's own LLM trial records with our protocol columns, or an empty table without
    ``../shared``."""
    if reference_dir() is None:
        return pd.DataFrame()
    from llmdisc.scoring.reference import import_paper_trials, paper_trial_files

    return import_paper_trials(paper_trial_files()).assign(
        prompt_variant="paper", metadata_source="source", sampling="fixed", scoring="verdict", label_method="",
        config_name=PAPER_RECORDS)


def protocol_effect_table(trials: pd.DataFrame) -> pd.DataFrame:
    """Effective N per cell: our runs (by sampling mode) and, when ``../shared`` is present, the paper's trials."""
    parts = []
    for sampling, group in trials.groupby(trials.get("sampling", pd.Series("fresh", index=trials.index))):
        eff = effective_n_table(group, by=cell_columns(group, CELLS[:5]))
        parts.append(eff.assign(protocol=f"ours ({sampling} samples)"))
    paper = paper_llm_trials()
    if not paper.empty:
        eff = effective_n_table(paper.drop(columns=[c for c in ("prompt_hash",) if c in paper]), by=CELLS)
        parts.append(eff.assign(protocol="paper (fixed sample, distinct answers)"))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if not out.empty:
        out["cell"] = out[CELLS].astype(str).agg(" | ".join, axis=1)
    return out


HUMAN_PAIR_COLUMNS = ["dataset", "synthetic_method", "condition", "model", "llm_source", "human_source", "llm_drs",
                      "human_drs", "comparable", "differs"]

_HUMAN_SOURCES = {"paper": "the paper's pilot: its releases, its app (fixed samples, source metadata)",
                  "llmdisc": "our pilot: this project's releases, llmdisc's app"}


def _pair_differs(human_protocol: str, llm_is_paper: bool, on_paper_release: bool = False) -> str:
    """What differs between a human cell and an LLM cell ("" = same releases and protocol);
    ``on_paper_release``: our trials on the paper's own release (``paper_ctgan`` …)."""
    if human_protocol not in ("paper", "llmdisc"):
        return "unknown: the human cells do not record their protocol (re-run notebook 06)"
    paper_pilot = human_protocol == "paper"  # the paper's releases under its protocol, else ours under ours
    same = {"release": (on_paper_release or llm_is_paper) == paper_pilot,
            "protocol": llm_is_paper == paper_pilot}
    return ", ".join(what for what, alike in same.items() if not alike)


def human_llm_pairs(llm: pd.DataFrame, human_cells_csv: Path | None = None, *,
                    paper_trials: pd.DataFrame | None = None) -> pd.DataFrame:
    """Pooled human DRS (``human_cells_csv``) beside LLM DRS (our cells ``llm`` and the paper's
    ``paper_trials``) per dataset × synthesizer × condition; a pair is *comparable* only when both sides
    judged the same releases under the same protocol, else ``differs`` names what differs. Empty without a
    human table."""
    path = human_cells_csv or results_dir() / "tables" / "human_cells.csv"
    if not path.exists():
        return pd.DataFrame(columns=HUMAN_PAIR_COLUMNS)
    human = pd.read_csv(path)
    annot = "annotator" if "annotator" in human else "annotator_id"
    method = "method" if "method" in human else "synthetic_method"
    pooled = human[human[annot].astype(str).str.lower().isin(["pooled", "all"])]
    if pooled.empty:
        return pd.DataFrame(columns=HUMAN_PAIR_COLUMNS)
    pooled = pooled.rename(columns={method: "synthetic_method", "drs": "human_drs"}).assign(
        human_protocol=pooled["protocol"].astype(str) if "protocol" in pooled else "unknown")
    sides = []
    if llm is not None and not llm.empty:
        method = llm["synthetic_method"].astype(str)
        sides.append(llm.assign(dataset_base=llm["dataset"].astype(str).str.split("-").str[0], llm_drs=llm["drs"],
                                llm_source=["ours: " + protocol_label(r) for r in llm.to_dict("records")],
                                llm_is_paper=False, on_paper_release=method.str.startswith("paper_"),
                                release=method.str.removeprefix("paper_")))
    if paper_trials is not None and not paper_trials.empty:
        paper = score_cells(paper_trials, by=["dataset", "synthetic_method", "condition", "provider", "model"],
                            seed=0, n_boot=1)
        sides.append(paper.assign(dataset_base=paper["dataset"], llm_drs=paper["drs"], llm_is_paper=True,
                                  on_paper_release=True, release=paper["synthetic_method"],
                                  llm_source="the paper's LLM records: its releases, its protocol"))
    if not sides:
        return pd.DataFrame(columns=HUMAN_PAIR_COLUMNS)
    side = pd.concat(sides, ignore_index=True)
    # a human cell names the synthesizer; our cells on the paper's own release (paper_ctgan) pair with it too
    merged = side.merge(pooled[["dataset", "synthetic_method", "condition", "human_drs", "human_protocol"]]
                        .rename(columns={"synthetic_method": "release"}),
                        left_on=["dataset_base", "release", "condition"],
                        right_on=["dataset", "release", "condition"], suffixes=("", "_human"))
    merged["model"] = merged["provider"] + " / " + merged["model"]
    merged["human_source"] = merged["human_protocol"].map(_HUMAN_SOURCES).fillna("a pilot of unrecorded protocol")
    merged["differs"] = [_pair_differs(h, bool(p), bool(r)) for h, p, r in
                         zip(merged["human_protocol"], merged["llm_is_paper"], merged["on_paper_release"])]
    merged["comparable"] = merged["differs"] == ""
    return merged[HUMAN_PAIR_COLUMNS].sort_values(["comparable", "dataset", "synthetic_method", "condition", "model"],
                                                  ascending=[False, True, True, True, True]).reset_index(drop=True)
