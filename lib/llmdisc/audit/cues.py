"""Which cues the LLM cited in the audit's own trials were true of the rows it was shown
(:func:`cue_section`): claims parsed from the cue strings ("age ranges from 18 to 57") are checked against the
20 rows that trial showed (:mod:`llmdisc.scoring.cue_validity`); a cue not tied to a column and a value is no
claim and is not counted."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

import pandas as pd


def shown_rows(trials: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``{trial_id: the rows it showed, in the order shown}`` (REAL samples from ``tables["real"]``)."""
    out = {}
    for rec in trials.to_dict("records"):
        ids = rec.get("row_ids")
        if ids is None or not len(ids):
            continue
        table = tables["real"] if rec["true_label"] == "REAL" else tables[rec["synthetic_method"]]
        out[rec["trial_id"]] = table.iloc[[int(i) for i in ids]].reset_index(drop=True)
    return out


def cue_section(trials: pd.DataFrame, tables: Mapping[str, pd.DataFrame], *, cell: str) -> dict[str, Any]:
    """The verified cues of one cell's valid verdicts and the counts of every claim's verdict: ``{"cell",
    "n_trials" (valid verdicts read; 0 under ``--scoring probability``), "n_cue_strings", "counts": {"true",
    "false", "not_checkable"}, "verified": [...]}`` (each verified claim: trial_id, true_label,
    predicted_label, field, text, claim, detail). ``tables`` are ``{"real": ..., cell: ...}``, the tables the
    samples were drawn from."""
    from llmdisc.scoring.cue_validity import TableVocabulary, check_claim, parse_claims, verified_cues
    from llmdisc.scoring.cues import cue_strings

    part = trials[(trials["synthetic_method"] == cell) & (trials["status"] == "valid")]
    if "scoring" in part:
        part = part[part["scoring"].fillna("verdict") != "probability"]
    out: dict[str, Any] = {"cell": cell, "n_trials": int(len(part)), "n_cue_strings": 0,
                           "counts": {"true": 0, "false": 0, "not_checkable": 0}, "verified": []}
    if part.empty:
        return out
    samples = shown_rows(part, tables)
    real = tables["real"]
    vocab = TableVocabulary.from_table(real)
    counts: Counter[str] = Counter()
    cues = cue_strings(part)
    out["n_cue_strings"] = int((cues["text"].astype(str).str.strip() != "").sum()) if not cues.empty else 0
    for rec in cues.to_dict("records"):
        sample = samples.get(rec["trial_id"])
        for claim in parse_claims(rec["text"], vocab, condition=rec.get("condition")):
            counts[check_claim(claim, sample, real=real)[0] if sample is not None else "not_checkable"] += 1
    out["counts"] = {k: int(counts.get(k, 0)) for k in ("true", "false", "not_checkable")}
    out["verified"] = verified_cues(part, samples, real=real)
    return out
