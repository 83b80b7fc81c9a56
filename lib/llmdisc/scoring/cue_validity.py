"""Cue validity: the claims of cue strings checked against the rows shown, and the tables of their verdicts.

:func:`parse_claims` finds the claims of a cue about the rows shown (rows × attributes × quantifier:
:mod:`~llmdisc.scoring.cue_claims`), :func:`check_claim` says ``true``, ``false`` or ``not_checkable``; here cue
tables are checked and their verdicts counted, trivial kinds apart. The parser is measured on real cue strings
(:func:`parser_agreement`) and two paraphrase sets (:func:`paraphrase_accuracy`): one tuned on, one held out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from llmdisc.errors import DataError
from llmdisc.scoring.cue_claims import (CLAIM_KINDS, TRIVIAL_KINDS, VERDICTS, Claim, TableVocabulary,
                                        check_claim, is_trivial)
from llmdisc.scoring.cue_parse import cue_segments, parse_claims
from llmdisc.scoring.cues import cue_strings
from llmdisc.scoring.metrics import wilson_interval

__all__ = ["CLAIM_KINDS", "DISTINCT_KEY", "TRIVIAL_KINDS", "VERDICTS", "Claim", "TableVocabulary", "check_claim",
           "check_cues", "cue_segments", "is_trivial", "load_paraphrase_set", "paraphrase_accuracy",
           "paraphrase_summary", "parse_claims", "parser_agreement", "parser_coverage",
           "row_fact_conflicts", "validity_table", "verified_cues"]


# --------------------------------------------------------------------------- tables of claims
TRIAL_KEY = ("source", "run_id", "trial_id", "line_no")


def check_cues(cues: pd.DataFrame, samples: Mapping[Any, pd.DataFrame | None], *,
               vocabularies: Mapping[str, TableVocabulary], reals: Mapping[str, pd.DataFrame] | None = None,
               metadata_tables: Mapping[Any, pd.DataFrame | None] | None = None,
               unavailable_reasons: Mapping[Any, str] | None = None, key: Sequence[str] = TRIAL_KEY) -> pd.DataFrame:
    """Parse and check every cue string of a cue table; one row per claim.

    ``cues``: cue strings (:func:`llmdisc.scoring.cues.cue_strings`) with ``dataset_key``, ``condition`` and
    ``text``; ``samples``, ``metadata_tables``, ``unavailable_reasons``: per trial key (the tuple of a cue's
    ``key`` columns) the shown rows (or None), the table the C2 metadata described, why its sample cannot be
    rebuilt; ``vocabularies``, ``reals``: per ``dataset_key``, of the real table.

    Returns columns: the cue columns, cue_row (the index label of the claim's cue string in ``cues``),
    claim_kind, claim (:meth:`Claim.describe`), parsed (the :class:`Claim`), verdict, detail. Cue strings
    without a claim do not appear: :func:`parser_coverage` counts them.
    """
    rows, reals, metadata_tables = [], reals or {}, metadata_tables or {}
    for cue_row, rec in zip(cues.index, cues.to_dict("records")):
        vocab = vocabularies.get(rec.get("dataset_key"))
        trial = tuple(rec.get(k) for k in key)
        sample = samples.get(trial)
        for claim in parse_claims(rec.get("text"), vocab, condition=rec.get("condition")) if vocab else ():
            verdict, detail = check_claim(claim, sample, real=reals.get(rec.get("dataset_key")),
                                          metadata_table=metadata_tables.get(trial))
            detail = (unavailable_reasons or {}).get(trial, detail) if sample is None else detail
            rows.append({**rec, "cue_row": cue_row, "claim_kind": claim.kind, "claim": claim.describe(),
                         "parsed": claim, "verdict": verdict, "detail": detail})
    return pd.DataFrame(rows)


def verified_cues(trials: pd.DataFrame, samples: Mapping[str, pd.DataFrame], *,
                  real: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The cited cues of trial records that are verified true of the rows each trial was shown (for the audit).

    ``samples``: ``{trial_id: the rows shown, in order}``; ``real``: the real table (vocabulary, valid codes,
    code mapping; default the union of the samples). One dict per claim verified true and not trivial:
    trial_id, true_label, predicted_label, field, text (the cue string), claim (its description) and detail.
    """
    if not samples:
        return []
    base = real if real is not None else pd.concat(list(samples.values()), ignore_index=True)
    checked = check_cues(cue_strings(trials).assign(dataset_key="_audit"), {(k,): v for k, v in samples.items()},
                         vocabularies={"_audit": TableVocabulary.from_table(base)}, reals={"_audit": base},
                         key=("trial_id",))
    keep = checked[(checked["verdict"] == "true") & ~checked["claim_kind"].map(is_trivial)] if len(checked) else checked
    return keep.reindex(columns=["trial_id", "true_label", "predicted_label", "field", "text", "claim",
                                 "detail"]).to_dict("records")


def parser_agreement(reference: pd.DataFrame, vocabularies: Mapping[str, TableVocabulary]) -> pd.DataFrame:
    """Claim-level agreement of :func:`parse_claims` with hand-written expected claims.

    ``reference``: columns text, condition, dataset_key and ``expected_claims`` (`` || ``-joined
    :meth:`Claim.describe` strings; empty for none). Returns one row per string (parsed_claims, exact) and in
    ``.attrs`` precision, recall, exact_share, n_strings, n_expected, n_parsed and n_correct.
    """
    rows, tp, n_pred, n_exp = [], 0, 0, 0
    for rec in reference.to_dict("records"):
        parsed = {c.describe() for c in parse_claims(rec["text"], vocabularies[rec["dataset_key"]],
                                                     condition=rec.get("condition"))}
        expected = {e.strip() for e in str(rec.get("expected_claims") or "").split(" || ") if e.strip()}
        tp, n_pred, n_exp = tp + len(parsed & expected), n_pred + len(parsed), n_exp + len(expected)
        rows.append({**rec, "parsed_claims": " || ".join(sorted(parsed)), "exact": parsed == expected})
    out = pd.DataFrame(rows)
    out.attrs.update(precision=tp / n_pred if n_pred else float("nan"), recall=tp / n_exp if n_exp else float("nan"),
                     exact_share=float(out["exact"].mean()) if len(out) else float("nan"), n_strings=len(out),
                     n_expected=n_exp, n_parsed=n_pred, n_correct=tp)
    return out


DISTINCT_KEY = ("dataset_key", "claim", "verdict")
"""What makes a claim distinct: its table (Census codes and labels differ), description and verdict. Trials at
temperature 0 on one fixed sample repeat one answer, so one claim can be mentioned a hundred times; counted by
distinct claim it counts once per verdict it received (true of one sample and false of another: twice)."""


def _verdict_counts(frame: pd.DataFrame, prefix: str) -> dict[str, Any]:
    """The n and share (Wilson 95 %) of each verdict, and true among the checked, with column names under
    ``prefix``."""
    counts, n = frame["verdict"].value_counts(), len(frame)
    k = {v: int(counts.get(v, 0)) for v in VERDICTS}
    row: dict[str, Any] = {f"{prefix}n_claims": n}
    for count, name, hits, total in [*((f"n_{v}", f"share_{v}", k[v], n) for v in VERDICTS),
                                     ("n_checked", "true_of_checked", k["true"], k["true"] + k["false"])]:
        est = wilson_interval(hits, total)
        row.update({f"{prefix}{count}": hits if count != "n_checked" else total, f"{prefix}{name}": est.value,
                    f"{prefix}{name}_ci_low": est.ci_low, f"{prefix}{name}_ci_high": est.ci_high})
    return row


def validity_table(checked: pd.DataFrame, by: Sequence[str] = ("source", "provider", "model", "true_label"),
                   ) -> pd.DataFrame:
    """Share of claims true, false and not checkable per group, by mention and by distinct claim.

    Claims of a kind in :data:`TRIVIAL_KINDS` are counted in their own row (``claim_set = "trivial"``), the rest
    in the headline row (``claim_set = "substantive"``); every group has both rows (n 0 where it has none).
    In ``checked`` (:func:`check_cues` output) without ``claim_kind`` every claim is substantive; without
    ``claim`` every mention is its own claim.

    Returns columns ``by``, claim_set; by mention: n_claims, n_<verdict> and share_<verdict> (a fraction with
    Wilson 95 % bounds) for each verdict, and n_checked and true_of_checked (true among the checkable ones,
    likewise); by distinct claim (:data:`DISTINCT_KEY`) the same columns prefixed ``distinct_``.
    """
    if checked.empty:
        return pd.DataFrame(columns=[*by, "claim_set", "n_claims", "distinct_n_claims"])
    kinds = checked["claim_kind"] if "claim_kind" in checked else pd.Series("", index=checked.index)
    frame = checked.assign(claim_set=np.where(kinds.map(is_trivial), "trivial", "substantive"),
                           _mention=np.arange(len(checked)))
    key = [c for c in DISTINCT_KEY if c in frame.columns] + ([] if "claim" in frame else ["_mention"])
    rows = []
    for group, grp in frame.groupby(list(by), dropna=False, sort=True):
        for claim_set in ("substantive", "trivial"):
            part = grp[grp["claim_set"] == claim_set]
            rows.append({**dict(zip(by, group)), "claim_set": claim_set, **_verdict_counts(part, ""),
                         **_verdict_counts(part.drop_duplicates(key), "distinct_")})
    return pd.DataFrame(rows)


def parser_coverage(cues: pd.DataFrame, checked: pd.DataFrame, by: Sequence[str] = ("source", "true_label"), *,
                    themes: Sequence[str] = ()) -> pd.DataFrame:
    """How many cue strings the parser found a checkable claim in: overall, per field, per theme, per claim kind.

    ``cues``: every cue string the parser read (with the ``by`` columns, ``field`` and ``theme_<id>``);
    ``checked``: :func:`check_cues` output for them; ``themes``: the codebook's theme ids.

    Returns columns ``by``, breakdown (``all``, ``field``, ``theme`` or ``claim_kind``), part (the field,
    theme or kind; ``all``; a theme no string of the group has gets no row), n_cue_strings (strings in the
    part; for ``claim_kind`` every string of the group), n_with_claim (of them, strings with a parsed claim;
    for ``claim_kind``, with a claim of that kind), coverage = n_with_claim / n_cue_strings with its Wilson
    95 % interval, and n_claims. Strings without a claim are counted, never dropped.
    """
    kinds = checked.groupby(["cue_row", "claim_kind"]).size().unstack(fill_value=0) if len(checked) else None
    frame = cues.assign(**{f"_kind_{k}": kinds[k].reindex(cues.index, fill_value=0) if kinds is not None and k in
                           kinds else 0 for k in CLAIM_KINDS})
    frame["_n_claims"] = frame[[f"_kind_{k}" for k in CLAIM_KINDS]].sum(axis=1)
    rows = []
    for key, grp in frame.groupby(list(by), dropna=False, sort=True):
        parts = [("all", "all", grp, "_n_claims"), *(("field", str(f), sub, "_n_claims")
                                                     for f, sub in grp.groupby("field", sort=True)),
                 *(("theme", t, grp[grp[f"theme_{t}"].astype(bool)], "_n_claims") for t in themes
                   if f"theme_{t}" in grp and grp[f"theme_{t}"].astype(bool).any()),
                 *(("claim_kind", k, grp, f"_kind_{k}") for k in CLAIM_KINDS)]
        for breakdown, part, sub, column in parts:
            k = int((sub[column] > 0).sum())
            est = wilson_interval(k, len(sub))
            rows.append({**dict(zip(by, key)), "breakdown": breakdown, "part": part, "n_cue_strings": len(sub),
                         "n_with_claim": k, "coverage": est.value, "coverage_ci_low": est.ci_low,
                         "coverage_ci_high": est.ci_high, "n_claims": int(sub[column].sum())})
    return pd.DataFrame(rows)


def row_fact_conflicts(checked: pd.DataFrame,
                       by: Sequence[str] = ("source", "dataset_key", "synthetic_method", "true_label")) -> pd.DataFrame:
    """Row facts that contradict each other among trials that were shown the same rows.

    All trials of one dataset × synthesizer × label of the paper saw the same 20 rows (``random_state=42``), so
    two ``row_values`` claims naming one row and column with different values cannot both be true, even where
    the sample is not available. Pass only :func:`check_cues` rows of trials known to share their sample.

    Returns one row per group: n_row_facts (distinct row × column pairs named), n_conflicting (pairs named
    with two or more values) and share_conflicting with its Wilson 95 % interval.
    """
    facts = [{**{k: rec.get(k) for k in by}, "row": row, "column": col, "value": value}
             for rec in checked[checked["claim_kind"] == "row_values"].to_dict("records")
             for row in rec["parsed"].rows for col, value in rec["parsed"].values.items()] if len(checked) else []
    if not facts:
        return pd.DataFrame(columns=[*by, "n_row_facts", "n_conflicting", "share_conflicting"])
    out = []
    for key, grp in pd.DataFrame(facts).groupby(list(by), dropna=False):
        values = grp.groupby(["row", "column"])["value"].nunique()
        est = wilson_interval(int((values > 1).sum()), len(values))
        out.append({**dict(zip(by, key)), "n_row_facts": len(values), "n_conflicting": int((values > 1).sum()),
                    "share_conflicting": est.value, "share_conflicting_ci_low": est.ci_low,
                    "share_conflicting_ci_high": est.ci_high})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- the paraphrase sets
def load_paraphrase_set(folder: Path | str) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Read a hand-checked set of paraphrased cues and the small tables they refer to.

    ``folder`` holds ``cues.csv`` (cue_id, table_id, expected_truth, text, hand_check; the tuning set adds
    fold and expected_kind, the held-out set category) and ``tables/<table_id>.csv``;
    ``tables/<dataset>_real.csv`` is the real table of ``<dataset>_<x>``. Returns ``(cues, {table_id: shown
    rows}, {table_id: its real table})``.
    """
    path = Path(folder) / "cues.csv"
    if not path.is_file():
        raise DataError(f"no paraphrase set at {path}; fix: point at the folder holding cues.csv and tables/")
    cues = pd.read_csv(path, keep_default_na=False, dtype=str)
    shown, reals = {}, {}
    for table_id in sorted(set(cues["table_id"])):
        shown_path, real_path = (path.parent / "tables" / f"{t}.csv" for t in
                                 (table_id, f"{table_id.split('_')[0]}_real"))
        if not shown_path.is_file() or not real_path.is_file():
            raise DataError(f"table {table_id!r} of {path} or its real table {real_path.name} is missing; "
                            "fix: add both under tables/")
        shown[table_id], reals[table_id] = pd.read_csv(shown_path), pd.read_csv(real_path)
    return cues, shown, reals


def paraphrase_accuracy(cues: pd.DataFrame, shown: Mapping[str, pd.DataFrame],
                        reals: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Parse and check every line of a hand-checked paraphrase set against its table; say which parses are right.

    Each line states at most one claim: ``expected_truth`` is its truth of the shown table (``true``/``false``;
    empty for a line without a claim). A parse is *wrong* when its verdict is not that (any parse of a line without
    a claim). With ``expected_kind`` (the tuning set) a line is *correct* when one claim has that kind and the
    expected truth; without (the held-out set), when it is parsed and no parse is wrong.

    Returns one row per line: its columns plus parsed (the claims' descriptions), parsed_kinds, verdicts,
    n_parses, covered, wrong and correct (summarised by :func:`paraphrase_summary`).
    """
    vocabularies, rows = {t: TableVocabulary.from_table(r) for t, r in reals.items()}, []
    for rec in cues.to_dict("records"):
        claims = parse_claims(rec["text"], vocabularies[rec["table_id"]], condition=rec.get("condition") or "C1")
        verdicts = [check_claim(c, shown[rec["table_id"]], real=reals[rec["table_id"]])[0] for c in claims]
        covered, wrong = bool(rec["expected_truth"]) and bool(claims), any(v != rec["expected_truth"] for v in verdicts)
        correct = covered and not wrong if "expected_kind" not in rec else any(
            c.kind == rec["expected_kind"] and v == rec["expected_truth"] for c, v in zip(claims, verdicts))
        rows.append({**rec, "parsed": " || ".join(c.describe() for c in claims),
                     "parsed_kinds": " ".join(c.kind for c in claims), "verdicts": " ".join(verdicts),
                     "n_parses": len(claims), "covered": covered, "wrong": wrong, "correct": correct})
    return pd.DataFrame(rows)


def paraphrase_summary(result: pd.DataFrame, by: str = "expected_kind") -> pd.DataFrame:
    """Recall, precision and coverage of the parser on a paraphrase set, overall, per fold and per ``by`` group.

    recall = correct parses / lines that state a claim; precision = correct parses / claims emitted (Wilson 95 %
    intervals); coverage = lines with a claim that got a parse / lines that state a claim; n_wrong = wrong lines.
    Columns: subset (``all`` or a fold), ``by`` (``all`` or a group; ``category`` for the held-out set),
    n_strings, n_expected, n_parsed, n_correct, recall and precision (with intervals), n_covered, coverage,
    n_wrong.
    """
    parts = [("all", result)] + ([(f, g) for f, g in result.groupby("fold", sort=True)] if "fold" in result else [])
    rows = []
    for subset, frame in parts:
        for group, grp in [("all", frame)] + [(k, g) for k, g in frame.groupby(by, sort=True)]:
            n_expected, n_covered = int((grp["expected_truth"] != "").sum()), int(grp["covered"].sum())
            n_parsed, n_correct = int(grp["n_parses"].sum()), int(grp["correct"].sum())
            rec, prec = wilson_interval(n_correct, n_expected), wilson_interval(n_correct, n_parsed)
            rows.append({"subset": subset, by: group, "n_strings": len(grp), "n_expected": n_expected,
                         "n_parsed": n_parsed, "n_correct": n_correct, "recall": rec.value, "recall_ci_low": rec.ci_low,
                         "recall_ci_high": rec.ci_high, "precision": prec.value, "precision_ci_low": prec.ci_low,
                         "precision_ci_high": prec.ci_high, "n_covered": n_covered, "n_wrong": int(grp["wrong"].sum()),
                         "coverage": n_covered / n_expected if n_expected else float("nan")})
    return pd.DataFrame(rows)
