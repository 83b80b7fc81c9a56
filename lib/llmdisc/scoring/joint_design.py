"""The power of the joint-structure contrast by design: which design to run by default.

From a base design (Markdown table, k = 2 permutations, m = 40 real reference rows) one factor varies at a time
(:data:`VARIATIONS`); each design scores real holdout samples against shuffled-columns samples (the positive
control: must separate) and, where asked, against real train samples (must not). Designs that differ only in k
share one run with the largest k: permutation j has the same seed whatever k, so the first k' permutations of a
k run *are* the k' run (:meth:`~llmdisc.discrimination.likelihood.joint.JointScores.restrict`); their rows are
exact, their cost estimated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL, LikelihoodScorer
from llmdisc.discrimination.likelihood.joint import JointScores
from llmdisc.discrimination.likelihood.joint_runs import default_joint_path, run_joint
from llmdisc.discrimination.likelihood.records import load_joint
from llmdisc.discrimination.likelihood.runs import build_likelihood_queue, load_likelihood_tables
from llmdisc.scoring.likelihood import likelihood_auc
from llmdisc.scoring.joint import attainable_level, count_at_level
from llmdisc.scoring.tables import tables_dir
from llmdisc.synthesis.controls import POSITIVE_CONTROL


@dataclass(frozen=True)
class JointDesign:
    """How the contrast is computed: serialisation, context, permutations k and reference rows m."""

    serialisation: str = "markdown"
    context: str = "none"
    k: int = 2
    reference_rows: int = 40


BASE_DESIGN = JointDesign()
VARIATIONS: tuple[tuple[str, object], ...] = (("k", 1), ("k", 4), ("serialisation", "great"),
                                              ("serialisation", "csv"), ("context", "c1_prompt"),
                                              ("reference_rows", 0), ("reference_rows", 20))
"""One factor at a time from :data:`BASE_DESIGN`."""


def designs(base: JointDesign = BASE_DESIGN,
            variations: Sequence[tuple[str, object]] = VARIATIONS) -> list[tuple[str, JointDesign]]:
    """``[("base", base), ("k=1", …), …]``: the base, then each variation of one factor."""
    return [("base", base)] + [(f"{name}={value}", replace(base, **{name: value})) for name, value in variations]


def _restricted(frame: pd.DataFrame, k: int) -> pd.DataFrame:
    names = set(JointScores.__dataclass_fields__)
    out = []
    for record in frame.to_dict("records"):
        scores = JointScores(**{n: record[n] for n in names if n in record}, extras={})
        out.append({**record, **asdict(scores.restrict(k))})
    return pd.DataFrame(out)


def joint_design_study(dataset_keys: Sequence[str], scorer: LikelihoodScorer, *, samples_per_group: int = 8,
                       n_rows: int = 20, run_seed: int = 0, base: JointDesign = BASE_DESIGN,
                       variations: Sequence[tuple[str, object]] = VARIATIONS, real_vs_real: str = "base",
                       records_dir: Path | str | None = None, table_path: Path | str | None = None,
                       progress: Callable | None = None) -> pd.DataFrame:
    """Run every design on every dataset key and tabulate power and cost.

    ``real_vs_real``: ``base`` (train samples only for designs run with the base's serialisation, context and
    m), ``all`` or ``none``. ``records_dir`` holds the runs' resumable JSONL files (default
    ``results/likelihood/joint/design``); ``table_path`` is the CSV written (default
    ``results/tables/joint_design.csv``; ``""`` writes nothing).

    Returns one row per dataset key × design: ``model`` (records of a model other than the embedded one go to
    files named after it), the design; ``auc_control`` = P(real C > shuffled C) with its interval and
    permutation p; ``auc_real_vs_real`` = P(holdout C > train C) (0.5 expected) and its p; mean C per group;
    ``share_p_real``/``share_p_control``, the shares of samples with per-sample p <= ``share_level``
    (:func:`llmdisc.scoring.joint.attainable_level`); ``seconds_per_sample`` (wall time, varies with the
    machine's load), ``tokens_run_per_sample`` (the load-free cost) and ``power_per_second`` = separation D /
    seconds per sample (D = 2·|AUC − 0.5|).
    """
    folder = Path(records_dir) if records_dir is not None else default_joint_path("design").parent / "design"
    plan = designs(base, variations)
    model = getattr(scorer, "model", DEFAULT_LIKELIHOOD_MODEL)
    tag = "" if model == DEFAULT_LIKELIHOOD_MODEL else f"-{model}"  # the embedded model's files keep their names
    runs: dict[tuple, int] = {}
    for _, design in plan:
        key = (design.serialisation, design.context, design.reference_rows)
        runs[key] = max(runs.get(key, 0), design.k)
    rows = []
    for dataset_key in dataset_keys:
        frames = {}
        for (serialisation, context, m), k in runs.items():
            control = real_vs_real == "all" or (real_vs_real == "base" and (serialisation, context, m) == (
                base.serialisation, base.context, base.reference_rows))
            specs = [s for s in build_likelihood_queue([dataset_key], [], samples_per_group, run_seed=run_seed,
                                                       reference_samples=2, train_control=control)
                     if s.role != "reference"]
            tables = load_likelihood_tables(dataset_key, sorted({s.source for s in specs} | {"holdout"}),
                                            run_seed=run_seed)
            path = folder / f"{dataset_key}-{serialisation}-{context}-m{m}-k{k}-n{n_rows}-s{run_seed}{tag}.jsonl"
            run_joint(specs, {dataset_key: tables}, scorer, path, k=k, reference_rows=m,
                      serialisation=serialisation, context=context, n_rows=n_rows, progress=progress)
            frames[(serialisation, context, m)] = load_joint(path)
        for label, design in plan:
            frame = frames[(design.serialisation, design.context, design.reference_rows)]
            if design.k != int(frame["k"].iloc[0]):
                frame = _restricted(frame, design.k)
            rows.append({"model": model, **_design_row(dataset_key, label, design, frame, run_seed)})
    table = pd.DataFrame(rows)
    if table_path != "":
        out = Path(table_path) if table_path is not None else tables_dir() / "joint_design.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(out, index=False)
    return table


def merged_rows(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The design table with ``new``'s rows in place of ``old``'s of the same model, dataset key, ``n_real``
    (a study at more samples is a second measurement, kept beside the first) and design; rows ordered by
    model (the embedded one first, also for a table without a ``model`` column), dataset key (the old table's
    first), ``n_real`` and design (:func:`designs` order)."""
    if "model" not in old:
        old = old.copy()
        old.insert(0, "model", DEFAULT_LIKELIHOOD_MODEL)
    keys = ["model", "dataset_key", "n_real", "design"]
    done = set(new[keys].itertuples(index=False, name=None))
    replaced = [key in done for key in old[keys].itertuples(index=False, name=None)]
    table = pd.concat([old[[not r for r in replaced]], new], ignore_index=True)
    datasets = list(dict.fromkeys([*old["dataset_key"], *new["dataset_key"]]))  # the old table's order
    labels = {label: rank for rank, (label, _) in enumerate(designs())}
    ranks = pd.DataFrame({"model": table["model"] != DEFAULT_LIKELIHOOD_MODEL,  # the embedded model first
                          "dataset": table["dataset_key"].map(datasets.index), "n": table["n_real"],
                          "design": table["design"].map(labels).fillna(len(labels))})
    order = ranks.sort_values(list(ranks.columns), kind="stable").index
    return table.loc[order].reset_index(drop=True)


def _design_row(dataset_key: str, label: str, design: JointDesign, frame: pd.DataFrame, seed: int) -> dict:
    real = frame[(frame["source"] == "holdout") & (frame["role"] == "test")]
    control = frame[frame["source"] == POSITIVE_CONTROL]
    train = frame[frame["source"] == "train"]
    level = attainable_level(design.k)
    row = {"dataset_key": dataset_key, "design": label, **asdict(design), "n_real": len(real),
           "n_control": len(control), "n_train": len(train)}
    test = likelihood_auc(real["contrast"], control["contrast"], seed=seed)  # P(shuffled > real)
    row.update({"auc_control": 1 - test["auc"], "auc_control_low": 1 - test["auc_high"],
                "auc_control_high": 1 - test["auc_low"], "separation": test["separation"],
                "perm_p_control": test["perm_p"]})
    if len(train):
        rr = likelihood_auc(real["contrast"], train["contrast"], seed=seed)
        row.update({"auc_real_vs_real": 1 - rr["auc"], "perm_p_real_vs_real": rr["perm_p"]})
    else:
        row.update({"auc_real_vs_real": np.nan, "perm_p_real_vs_real": np.nan})
    row.update({"real_mean_c": float(real["contrast"].mean()), "control_mean_c": float(control["contrast"].mean()),
                "train_mean_c": float(train["contrast"].mean()) if len(train) else np.nan,
                "share_level": level,
                "share_p_real": count_at_level(real["p_value"], level) / len(real) if len(real) else np.nan,
                "share_p_control": (count_at_level(control["p_value"], level) / len(control)
                                    if len(control) else np.nan)})
    both = pd.concat([real, control, train])
    seconds = float(both["seconds"].mean())
    row.update({"seconds_per_sample": seconds, "tokens_run_per_sample": float(both["tokens_run"].mean()),
                "power_per_second": test["separation"] / seconds if seconds else np.nan})
    return row
