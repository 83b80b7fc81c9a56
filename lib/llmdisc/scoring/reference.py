"""The paper's own trials, as this project's trial records (docs/protocol.md §5).

:func:`import_paper_trials` reads the paper's ``llm_results_*.jsonl`` files from the reference folder
(``llmdisc data fetch-reference``); :func:`trials_from_cell_counts` rebuilds trial records from the per-cell
counts of the paper's executed notebook (:data:`PAPER_CELL_COUNTS_CSV`, shipped because the paper prints them
only in notebook outputs), which reproduces any count-based score exactly. The ``PAPER_*`` constants hold the
orders and labels the paper's notebook iterated in, needed only to reproduce its seeded draws bit for bit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from llmdisc import LABELS
from llmdisc.errors import DataError
from llmdisc.paths import relative_to_root, require_reference

# The paper's notebook: APPROVED_MODELS dict order (Groq first), METHODS list, DATASETS list.
PAPER_MODEL_LABELS = {"llama-3.1-8b-instant": "Groq (LLaMA-3.1-8b)", "gemini-2.5-flash": "Google (Gemini-2.5-Flash)"}
PAPER_MODEL_ORDER = ("llama-3.1-8b-instant", "gemini-2.5-flash")
PAPER_PROVIDER_ORDER = ("groq", "google")
PAPER_METHOD_ORDER = ("ctgan", "tvae", "gaussian_copula")
PAPER_DATASET_ORDER = ("adult", "census")
PAPER_ORDERS = {"dataset": PAPER_DATASET_ORDER, "provider": PAPER_PROVIDER_ORDER, "model": PAPER_MODEL_ORDER,
                "synthetic_method": PAPER_METHOD_ORDER}
"""Visit order of the paper's permutation loop, for :func:`llmdisc.scoring.analyses.permutation_tests` ``orders``."""
SHORT_MODEL_NAMES = {"llama-3.1-8b-instant": "LLaMA", "gemini-2.5-flash": "Gemini"}
DATASET_KEYS = {"adult": "adult", "census": "census-codes"}
_PAPER_COUNTS = Path(__file__).resolve().parent / "paper_counts"
PAPER_CELL_COUNTS_CSV = _PAPER_COUNTS / "llm_cell_stats_from_notebook.csv"
"""The paper's per-cell LLM counts (its notebook's printed tables), shipped with the package."""
PAPER_HUMAN_CELLS_CSV = _PAPER_COUNTS / "human_cell_stats_recomputed.csv"
"""The paper's per-cell human-pilot rates (percent), shipped with the package."""


def reference_results_dir() -> Path:
    """``<reference>/results``; raises :class:`~llmdisc.errors.ReferenceMissingError` naming the fix when absent."""
    return require_reference("results", what="the paper's per-trial records (results/**/llm_results_*.jsonl)")


def paper_trial_files(root: Path | str | None = None) -> list[Path]:
    """Every ``llm_results_*.jsonl`` under ``root`` (default: the reference results), in the paper's order.

    The paper globbed ``results/{adult,census}/*.jsonl`` and sorted the paths; the reference copy keeps some
    files under ``res1/``, so the order is rebuilt as (dataset, file name).
    """
    root = Path(root) if root is not None else reference_results_dir()
    files = sorted(root.rglob("llm_results_*.jsonl"))
    return sorted(files, key=lambda p: (dataset_from_path(p), p.name))


def dataset_from_path(path: Path | str) -> str:
    """The dataset a paper-format file belongs to: ``census`` or ``adult`` from a folder of that name."""
    parts = [part.lower() for part in Path(path).parts[:-1]]
    for name in ("census", "adult"):
        if name in parts:
            return name
    raise DataError(f"cannot tell the dataset of {Path(path).name}: no 'adult' or 'census' folder in its path; "
                    "fix: pass dataset='adult' or dataset='census' to import_paper_trials")


def _expand(path_or_paths: Path | str | Iterable[Path | str]) -> list[Path]:
    if isinstance(path_or_paths, (str, Path)):
        path = Path(path_or_paths)
        if path.is_dir():
            return paper_trial_files(path)
        paths = [path]
    else:
        paths = [Path(p) for p in path_or_paths]
    if missing := [str(p) for p in paths if not p.is_file()]:
        raise DataError(f"paper trial file(s) not found: {missing[:3]}; fix: pass existing llm_results_*.jsonl "
                        "files or a folder holding them")
    return paths


def _record(raw: dict[str, Any], path: Path, line_no: int, dataset: str) -> dict[str, Any]:
    absent = [f for f in ("provider", "model", "condition", "true_label", "predicted_label", "synthetic_method")
              if f not in raw]
    if absent:
        raise DataError(f"{path.name} line {line_no} lacks field(s) {absent} of the paper's format; fix: pass "
                        "only llm_results_*.jsonl files written by the paper's evaluate.py")
    pred = raw.get("predicted_label")
    valid = pred in LABELS
    conf = raw.get("confidence")
    conf_ok = isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0 <= conf <= 100
    status, reason = "valid", None
    if not valid:
        status = "error"
        reason = f"paper record: predicted_label {pred!r}; {str(raw.get('reasoning', ''))[:200]}"
    elif not conf_ok:
        status, reason = "invalid", f"confidence {conf!r} is not a number in 0-100"
    condition = raw.get("condition")
    return {
        "trial_id": raw.get("trial_id"), "timestamp": raw.get("timestamp"),
        "provider": raw.get("provider"), "model": raw.get("model"),
        "model_label": SHORT_MODEL_NAMES.get(str(raw.get("model")), str(raw.get("model"))),
        "condition": condition, "true_label": raw.get("true_label"),
        "predicted_label": pred if status == "valid" else None,
        "correct": bool(raw.get("correct")) if status == "valid" else None,
        "confidence": float(conf) if status == "valid" else None,
        "reasoning": raw.get("reasoning"), "red_flags": raw.get("red_flags"),
        "supporting_evidence": raw.get("supporting_evidence"),
        "synthetic_method": raw.get("synthetic_method"),
        "dataset": dataset, "encoding": "codes" if dataset == "census" else None,
        "dataset_key": DATASET_KEYS.get(dataset, dataset),
        "sampling": "fixed", "prompt_variant": "paper",
        "metadata_source": "source" if condition == "C2" else None,
        "prompt_hash": None, "sample_seed": None,  # the paper recorded neither
        "status": status, "invalid_reason": reason, "raw_text": None,
        "run_id": path.stem, "source_file": relative_to_root(path), "line_no": line_no,
    }


def import_paper_trials(path_or_paths: Path | str | Iterable[Path | str], *,
                        dataset: str | None = None) -> pd.DataFrame:
    """Read paper-format ``llm_results_*.jsonl`` files into trial records (one row per line, none dropped).

    ``path_or_paths``: a file, a folder (searched recursively, files in the paper's order) or a list of files;
    ``dataset`` (``adult``/``census``) is by default read from a folder name in each file's path.

    Returns a DataFrame with the paper's fields plus dataset, dataset_key, model_label (LLaMA/Gemini), status
    (``valid``; ``error`` for lines without a REAL/SYNTHETIC verdict, e.g. the paper's quota errors;
    ``invalid`` for a confidence outside 0-100), invalid_reason, run_id (file stem), source_file and line_no,
    in file and line order. ``predicted_label``, ``correct`` and ``confidence`` are None unless valid.
    """
    rows: list[dict[str, Any]] = []
    for path in _expand(path_or_paths):
        ds = dataset or dataset_from_path(path)
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path.name} line {line_no} is not JSON ({exc.msg}); fix: repair or remove "
                                    "that line - every line of the paper's format is one JSON object") from exc
                rows.append(_record(raw, path, line_no, ds))
    return pd.DataFrame(rows)


def load_cell_counts(path: Path | str | None = None) -> pd.DataFrame:
    """Read the paper's per-cell counts (default :data:`PAPER_CELL_COUNTS_CSV`, shipped with the package)."""
    return pd.read_csv(PAPER_CELL_COUNTS_CSV if path is None else path)


def trials_from_cell_counts(counts: pd.DataFrame | Path | str | None = None) -> pd.DataFrame:
    """Rebuild trial-level records whose confusion matrix per cell equals the paper's counts.

    ``counts``: the cell-count table, a path to it, or None for :data:`PAPER_CELL_COUNTS_CSV`. One valid trial
    per counted trial; ``confidence`` is the cell's mean (only the mean is known); ``prompt_hash`` and
    ``reasoning`` are empty, so ``effective_n`` is unknown.
    """
    if not isinstance(counts, pd.DataFrame):
        counts = load_cell_counts(counts)
    need = ["dataset", "provider", "model", "method", "condition", "N_real", "N_syn", "correct_real",
            "correct_syn", "Avg_conf"]
    if missing := [c for c in need if c not in counts.columns]:
        raise DataError(f"cell-count table lacks {missing}; fix: pass llm_cell_stats_from_notebook.csv or a "
                        f"table with columns {need}")
    rows: list[dict[str, Any]] = []
    for cell in counts.itertuples(index=False):
        if not (0 <= cell.correct_real <= cell.N_real and 0 <= cell.correct_syn <= cell.N_syn):
            raise DataError(f"cell {cell.dataset}/{cell.model}/{cell.method}/{cell.condition} has correct counts "
                            "outside 0..N; fix: correct_real <= N_real and correct_syn <= N_syn")
        base = {"dataset": cell.dataset, "dataset_key": DATASET_KEYS.get(cell.dataset, cell.dataset),
                "provider": cell.provider, "model": cell.model,
                "model_label": SHORT_MODEL_NAMES.get(cell.model, cell.model),
                "synthetic_method": cell.method, "condition": cell.condition,
                "confidence": float(cell.Avg_conf), "status": "valid", "invalid_reason": None}
        plan = [("REAL", "REAL", int(cell.correct_real)), ("REAL", "SYNTHETIC", int(cell.N_real - cell.correct_real)),
                ("SYNTHETIC", "SYNTHETIC", int(cell.correct_syn)),
                ("SYNTHETIC", "REAL", int(cell.N_syn - cell.correct_syn))]
        for true, pred, count in plan:
            rows.extend({**base, "true_label": true, "predicted_label": pred, "correct": true == pred}
                        for _ in range(count))
    return pd.DataFrame(rows)


def paper_reported_cells(counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's printed per-cell DRS/accuracy (percent, 1 dp) keyed like our cells, for comparisons."""
    out = (load_cell_counts() if counts is None else counts).rename(columns={
        "method": "synthetic_method", "DRS": "paper_drs", "Accuracy": "paper_accuracy", "N": "paper_n"})
    return out[["dataset", "synthetic_method", "condition", "provider", "model", "paper_n", "paper_drs",
                "paper_accuracy"]]

