"""The rows the paper's trials were shown, rebuilt as the paper drew them and verified against its records.

Every trial of one dataset × label saw the same 20 rows of the whole source table (docs/protocol.md §8 row 1).
A file may not be the one the trials saw (committed Census releases may be later regenerations), so
:func:`verify_paper_samples` checks each rebuilt sample against the records: ``release_statistic`` (a
whole-table statistic quoted from a C2 metadata block must equal the file's, to the precision quoted) and
``sample_value`` (values quoted from the shown rows, each with ``p_chance``, the chance that 20 random rows
would match too). Claims checked on a verified sample are true by construction; the verification's strength
lies in the release statistics and small ``p_chance``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from llmdisc.errors import DataError
from llmdisc.scoring.cue_validity import Claim, TableVocabulary, check_claim, parse_claims
# QuotedStatistic … re-exported: one face for the paper's forensics
from llmdisc.scoring.paper_quotes import (SAMPLE_WORDS, QuotedStatistic, format_number, quoted_statistics,
                                          statistic_matches, table_statistic)

PAPER_SAMPLE_ROWS = 20
PAPER_SAMPLE_SEED = 42
"""The paper's draw: ``sample(n=20, random_state=42).sort_index()`` of the whole table."""
TRIAL_KEY = ("source", "run_id", "trial_id", "line_no")
CELL = ("dataset", "dataset_key", "synthetic_method", "true_label", "provider", "model", "condition")
SAMPLE_EVIDENCE_KINDS = ("row_values", "listed_values", "single_value", "every_row", "range")
"""Claim kinds that quote values of the shown rows (``range`` only when it is about the sample: C1, or a C2
range that says "sample"); the rest state counts or judgements, which a right sample can still contradict."""
STATUSES = ("verified", "disputed", "mismatch", "unverified", "not_rebuilt")
"""Sample statuses (rule: :func:`sample_status`); claims are checked only on a ``verified`` sample. ``disputed``:
a misquote or a few edited values; ``mismatch``: a different table than the trials saw (e.g. a later
regeneration); ``not_rebuilt``: the file is not available."""
MISMATCH_SHARE = 0.2
"""A regenerated file disagrees on most release statistics, a misquote or an edited value on one."""
STRONG_CHANCE = 0.01
"""Chance match below which one quoted row value is decisive (a 4-digit occupation code, not ``sex = 1``)."""


def draw_paper_sample(table: pd.DataFrame, *, n_rows: int = PAPER_SAMPLE_ROWS,
                      seed: int = PAPER_SAMPLE_SEED) -> pd.DataFrame:
    """The rows the paper's prompt showed of ``table`` (the whole table in file order, index 0..n-1), in
    the order shown, index = their row numbers in the file. Raises DataError for a table of at most ``n_rows``
    rows (the paper then showed it whole)."""
    if len(table) <= n_rows:
        raise DataError(f"a table of {len(table)} rows: the paper showed it whole, there is no draw to rebuild; "
                        f"fix: pass the whole source table (the paper's files hold 32,561 rows)")
    return table.sample(n=n_rows, random_state=seed).sort_index()


# --------------------------------------------------------------------------- quoted row values
def _value_share(series: pd.Series, value: Any) -> float:
    return float(np.isclose(series.astype(float), float(value)).mean()) if pd.api.types.is_numeric_dtype(series) \
        else float((series.astype(str).str.strip().str.lower() == str(value).strip().lower()).mean())


def chance_of(claim: Claim, table: pd.DataFrame, n_rows: int = PAPER_SAMPLE_ROWS) -> float:
    """Probability that ``n_rows`` rows drawn at random from ``table`` make a quoted-values claim true: small
    means a match is strong evidence that these are the rows shown.

    Binomial approximation (draws with replacement, values independent) from the values' frequencies in
    ``table``, the whole table sampled. NaN for a kind without a simple form (a range).
    """
    if claim.kind == "listed_values":
        (col, values), = claim.values.items()
        return float(np.prod([1 - (1 - _value_share(table[col], v)) ** n_rows for v in values]))
    if claim.kind not in ("single_value", "every_row", "row_values"):
        return float("nan")
    mask = np.ones(len(table), dtype=bool)
    for col, value in claim.values.items():
        if value is None and claim.kind != "row_values":
            return float(sum(s ** n_rows for s in table[col].value_counts(normalize=True)))
        mask &= np.isclose(table[col].astype(float), float(value)) if pd.api.types.is_numeric_dtype(
            table[col]) else (table[col].astype(str) == str(value)).to_numpy()
    return float(mask.mean() ** (len(claim.rows) if claim.kind == "row_values" else n_rows))


def is_sample_evidence(claim: Claim, condition: str | None) -> bool:
    """True for a claim that quotes values of the shown rows (:data:`SAMPLE_EVIDENCE_KINDS`)."""
    if claim.kind not in SAMPLE_EVIDENCE_KINDS or claim.negated:
        return False
    if claim.kind == "range":
        return claim.scope == "sample" and (condition != "C2" or bool(SAMPLE_WORDS.search(claim.text)))
    if claim.kind == "single_value":
        return next(iter(claim.values.values())) is not None
    return True


# --------------------------------------------------------------------------- verification
@dataclass
class SampleVerification:
    """What :func:`verify_paper_samples` found: ``samples`` (:func:`sample_key` → shown rows of every rebuilt
    sample, index = row numbers in the file), ``status`` (same key → (one of :data:`STATUSES`, reason)),
    ``checks`` (one row per check: trial key, cell columns, field, check = ``release_statistic`` or
    ``sample_value``, statistic, columns, quoted, rebuilt, passed, p_chance, text) and ``cells``
    (:func:`cell_table`)."""

    samples: dict[tuple, pd.DataFrame] = field(default_factory=dict)
    status: dict[tuple, tuple[str, str]] = field(default_factory=dict)
    checks: pd.DataFrame = field(default_factory=pd.DataFrame)
    cells: pd.DataFrame = field(default_factory=pd.DataFrame)


def sample_key(dataset_key: str, true_label: str, synthetic_method: str | None) -> tuple[str, str, str]:
    """``(dataset_key, true_label, synthetic_method)`` of the sample a trial saw; REAL trials of every
    synthesizer share one (``synthetic_method = ""``)."""
    return (dataset_key, true_label, "" if true_label == "REAL" else str(synthetic_method or ""))


def _distinct(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop_duplicates(["statistic", "columns", "quoted", "passed"])


def sample_status(checks: pd.DataFrame, *, rebuilt: bool) -> tuple[str, str]:
    """Decide whether a rebuilt sample (``rebuilt``: its file was there) is the one the trials saw, from its
    checks (:attr:`SampleVerification.checks` rows of all its trials).

    Rule (counted over distinct checks, so a repeated answer counts once): ``mismatch`` when more than
    :data:`MISMATCH_SHARE` of the release statistics, or more than half of the quoted row values, fail;
    ``disputed`` when fewer fail but some do; ``verified`` when none fails and at least one release statistic
    passes, or (none quoted) a quoted row value passes whose chance match is below :data:`STRONG_CHANCE`;
    otherwise ``unverified``.
    """
    if not rebuilt:
        return "not_rebuilt", "the file is not in the reference folder"
    if checks.empty:
        return "unverified", "the records quote nothing of this sample that can be checked"
    release = _distinct(checks[checks["check"] == "release_statistic"])
    values = _distinct(checks[checks["check"] == "sample_value"])
    r_fail, v_fail = int((~release["passed"]).sum()), int((~values["passed"]).sum())
    counts = (f"release statistics {len(release) - r_fail}/{len(release)} match, quoted row values "
              f"{len(values) - v_fail}/{len(values)} shown (distinct checks)")
    if (len(release) and r_fail > MISMATCH_SHARE * len(release)) or (len(values) and 2 * v_fail > len(values)):
        return "mismatch", f"the file is not the table the trials saw: {counts}"
    if r_fail or v_fail:
        return "disputed", f"some of the records' figures differ from the rebuilt sample: {counts}"
    strong = values[values["passed"] & (values["p_chance"] < STRONG_CHANCE)]
    if len(release) or len(strong):
        return "verified", counts
    return "unverified", f"no decisive evidence: {counts}"


def _difference(rec: Mapping[str, Any]) -> str:
    return f"{rec['statistic']} {rec['columns']}: quoted {rec['quoted']}, rebuilt {rec['rebuilt']}"


def cell_table(verification_checks: pd.DataFrame, trials: pd.DataFrame, samples: Mapping[tuple, pd.DataFrame],
               status: Mapping[tuple, tuple[str, str]]) -> pd.DataFrame:
    """One row per cell: its trials, whether its sample was rebuilt, its checks and where they differ.

    Columns :data:`CELL`, n_trials, rebuilt, sample_rows (the file's 0-based row numbers shown, ``;``-joined),
    check counts (``n_*`` over every mention, ``n_distinct_*`` over distinct checks), min_p_chance (the
    strongest passed row-value match), sample_status and status_reason (decided by all trials that saw the
    sample), differences (distinct failed checks) and agreements (up to five distinct passed checks).
    """
    checks = verification_checks if not verification_checks.empty else pd.DataFrame(
        {c: pd.Series(dtype=bool if c == "passed" else float if c == "p_chance" else object)
         for c in ("cell", "check", "statistic", "columns", "quoted", "rebuilt", "passed", "p_chance")})
    rows = []
    for key, grp in trials.groupby(list(CELL), dropna=False, sort=True):
        rec = dict(zip(CELL, key))
        skey = sample_key(rec["dataset_key"], rec["true_label"], rec["synthetic_method"])
        mine = checks[checks["cell"] == "|".join(map(str, key))]
        sample = samples.get(skey)
        st, reason = status.get(skey, ("not_rebuilt", "no file for this sample"))
        distinct = _distinct(mine)
        passed, failed = distinct[distinct["passed"]], distinct[~distinct["passed"]]
        kind, ok = mine["check"], mine["passed"]
        p_values = mine.loc[ok & (kind == "sample_value"), "p_chance"]
        rows.append({**rec, "n_trials": len(grp), "rebuilt": sample is not None,
                     "sample_rows": ";".join(map(str, sample.index)) if sample is not None else "",
                     "n_checks": len(mine), "n_passed": int(ok.sum()), "n_failed": int((~ok).sum()),
                     "n_release_checks": int((kind == "release_statistic").sum()),
                     "n_release_failed": int(((kind == "release_statistic") & ~ok).sum()),
                     "n_sample_checks": int((kind == "sample_value").sum()),
                     "n_sample_failed": int(((kind == "sample_value") & ~ok).sum()),
                     "n_distinct_checks": len(distinct), "n_distinct_failed": len(failed),
                     "min_p_chance": float(p_values.min()) if len(p_values) else float("nan"),
                     "sample_status": st, "status_reason": reason,
                     "differences": " | ".join(_difference(r) for r in failed.to_dict("records")),
                     "agreements": " | ".join(_difference(r) for r in passed.head(5).to_dict("records"))})
    return pd.DataFrame(rows)


def verify_paper_samples(trials: pd.DataFrame, *, synthetic_tables: Mapping[tuple[str, str], pd.DataFrame],
                         real_tables: Mapping[str, pd.DataFrame], n_rows: int = PAPER_SAMPLE_ROWS,
                         seed: int = PAPER_SAMPLE_SEED) -> SampleVerification:
    """Rebuild the sample every paper trial was shown and check it against what the trial's record shows of it.

    Only valid ``trials`` of datasets in ``real_tables`` (``{dataset_key: the paper's real table}``, in file
    order: the REAL trials' source and the cue strings' vocabulary) are read; a SYNTHETIC trial of a method
    without a release in ``synthetic_tables`` (``{(dataset_key, synthetic_method): release}``) is
    ``not_rebuilt``.
    """
    from llmdisc.discrimination.metadata import metadata_statistics
    from llmdisc.scoring.cues import cue_strings

    trials = trials[(trials["status"] == "valid") & trials["dataset_key"].isin(list(real_tables))]
    trials = trials.assign(synthetic_method=trials["synthetic_method"].fillna(""))
    vocabularies = {k: TableVocabulary.from_table(t) for k, t in real_tables.items()}
    sources: dict[tuple, pd.DataFrame] = {}
    for dkey in sorted(set(trials["dataset_key"])):
        sources[sample_key(dkey, "REAL", "")] = real_tables[dkey]
        for method in sorted(set(trials.loc[trials["dataset_key"] == dkey, "synthetic_method"])):
            if (dkey, method) in synthetic_tables:
                sources[sample_key(dkey, "SYNTHETIC", method)] = synthetic_tables[(dkey, method)]
    samples = {k: draw_paper_sample(t, n_rows=n_rows, seed=seed) for k, t in sources.items()}
    stats_cache: dict[tuple, dict] = {}
    rows: list[dict[str, Any]] = []
    cues = cue_strings(trials, source="paper")
    for rec in cues.to_dict("records"):
        skey = sample_key(rec["dataset_key"], rec["true_label"], rec["synthetic_method"])
        sample = samples.get(skey)
        if sample is None:
            continue
        source = sources[skey]
        vocab = vocabularies[rec["dataset_key"]]
        base = {**{k: rec.get(k) for k in (*TRIAL_KEY, *CELL)}, "field": rec["field"],
                "cell": "|".join(str(rec.get(k)) for k in CELL), "text": rec["text"]}
        shown = sample.reset_index(drop=True)
        if rec["condition"] == "C2":  # the metadata block described the whole source table
            if skey not in stats_cache:
                stats_cache[skey] = {"table": metadata_statistics(source), "sample": metadata_statistics(shown)}
            for quoted in quoted_statistics(rec["text"], vocab):
                value = table_statistic(stats_cache[skey]["table"], quoted)
                passed = statistic_matches(quoted, value)
                if quoted.statistic == "range" and not passed:  # a range may describe the 20 rows shown
                    passed = statistic_matches(quoted, table_statistic(stats_cache[skey]["sample"], quoted))
                rows.append({**base, "check": "release_statistic", "statistic": quoted.statistic,
                             "columns": "×".join(quoted.columns), "quoted": _quoted_text(quoted.value),
                             "rebuilt": _quoted_text(value), "passed": bool(passed),
                             "p_chance": float("nan")})
        for claim in parse_claims(rec["text"], vocab, condition=rec["condition"]):
            if not is_sample_evidence(claim, rec["condition"]):
                continue
            verdict, detail = check_claim(claim, shown, real=real_tables[rec["dataset_key"]])
            if verdict == "not_checkable":
                continue
            rows.append({**base, "check": "sample_value", "statistic": claim.kind,
                         "columns": "×".join(sorted(claim.values)), "quoted": claim.describe(), "rebuilt": detail,
                         "passed": verdict == "true",
                         "p_chance": chance_of(claim, source, n_rows) if verdict == "true" else float("nan")})
    checks = pd.DataFrame(rows, columns=[*TRIAL_KEY, *CELL, "field", "cell", "check", "statistic", "columns",
                                         "quoted", "rebuilt", "passed", "p_chance", "text"])
    checks["passed"] = checks["passed"].astype(bool)
    check_keys = [sample_key(*key) for key in
                  zip(checks["dataset_key"], checks["true_label"], checks["synthetic_method"])]
    status = {skey: sample_status(checks[[k == skey for k in check_keys]], rebuilt=skey in samples)
              for skey in sorted({sample_key(r["dataset_key"], r["true_label"], r["synthetic_method"])
                                  for r in trials.to_dict("records")})}
    return SampleVerification(samples=samples, status=status, checks=checks,
                              cells=cell_table(checks, trials, samples, status))


def _quoted_text(value: Any) -> str:
    """A quoted or rebuilt value as text: ``none``, ``17-90`` for a range, else rounded to 4 dp."""
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return "-".join(_quoted_text(v) for v in value)
    return format_number(round(float(value), 4))


def check_details(verification: SampleVerification) -> pd.DataFrame:
    """The distinct checks of a :class:`SampleVerification` per cell (table ``paper_sample_check_details``):
    the check's columns, p_chance, n_mentions (cue strings quoting it) and an example (240 characters)."""
    keys = ["dataset", "synthetic_method", "true_label", "provider", "model", "condition", "check", "statistic",
            "columns", "quoted", "rebuilt", "passed"]
    checks = verification.checks
    if checks.empty:
        return pd.DataFrame(columns=[*keys, "p_chance", "n_mentions", "example"])
    return checks.groupby(keys, sort=True, dropna=False).agg(
        p_chance=("p_chance", "first"), n_mentions=("text", "size"),
        example=("text", lambda s: str(s.iloc[0])[:240])).reset_index()


def paper_release_tables() -> dict[tuple[str, str], pd.DataFrame]:
    """The paper's Census releases in the reference folder, ``{("census-codes", synthesizer): release}``.

    A release missing from the folder is left out (its SYNTHETIC samples are then ``not_rebuilt``).
    """
    from llmdisc.data.reference import PAPER_SYNTHESIZERS, load_paper_release
    from llmdisc.errors import ReferenceMissingError
    from llmdisc.scoring.reference import DATASET_KEYS

    releases = {}
    for method in PAPER_SYNTHESIZERS:
        try:
            releases[(DATASET_KEYS["census"], method)] = load_paper_release(method)
        except ReferenceMissingError:
            continue
    return releases


def verify_paper_census_samples(trials: pd.DataFrame | None = None) -> SampleVerification:
    """:func:`verify_paper_samples` on the paper's Census trials, its Census extract and its three releases.

    ``trials`` default to every ``llm_results_*.jsonl`` of the reference folder. ReferenceMissingError without
    a reference folder or Census extract (fix: ``llmdisc data fetch-reference``).
    """
    from llmdisc.data.reference import load_paper_census
    from llmdisc.scoring.reference import DATASET_KEYS, import_paper_trials, paper_trial_files

    if trials is None:
        trials = import_paper_trials(paper_trial_files())
    return verify_paper_samples(trials, synthetic_tables=paper_release_tables(),
                                real_tables={DATASET_KEYS["census"]: load_paper_census()})


def paper_samples(trials_or_cues: pd.DataFrame, real_tables: Mapping[str, pd.DataFrame], *,
                  verification: SampleVerification | None = None, n_rows: int = PAPER_SAMPLE_ROWS,
                  seed: int = PAPER_SAMPLE_SEED) -> tuple[dict, dict]:
    """The sample each paper trial was shown, for checking its claims; None (with the reason) where unknown.

    A trial whose sample ``verification`` covers gets it only when ``verified`` (checking claims on a
    ``mismatch`` sample would count them against the wrong rows). Other REAL trials get
    ``draw_paper_sample`` of their real table.

    ``real_tables``: ``{dataset_key: the paper's real table in file order}`` (Adult: UCI ``adult.data`` with
    ``?`` rows dropped; Census: the paper's ``census.csv``). Returns ``(samples, reasons)`` per trial key: the
    rows shown in order (index reset) or None, and why a sample is None.
    """
    drawn = {k: draw_paper_sample(t, n_rows=n_rows, seed=seed).reset_index(drop=True)
             for k, t in real_tables.items()}
    covered = {k[0] for k in verification.status} if verification is not None else set()
    samples, reasons = {}, {}
    for rec in trials_or_cues.drop_duplicates([k for k in TRIAL_KEY if k in trials_or_cues]).to_dict("records"):
        key = tuple(rec.get(k) for k in TRIAL_KEY)
        dkey, label = rec.get("dataset_key"), rec.get("true_label")
        samples[key] = None
        if dkey in covered:
            skey = sample_key(dkey, label, rec.get("synthetic_method"))
            st, why = verification.status.get(skey, ("not_rebuilt", "no file for this sample"))
            if st == "verified":
                samples[key] = verification.samples[skey].reset_index(drop=True)
            else:
                reasons[key] = f"sample {st}: {why}"
        elif label == "REAL" and dkey in drawn:
            samples[key] = drawn[dkey]
        else:
            reasons[key] = ("the paper's synthetic tables of this dataset are not available" if label == "SYNTHETIC"
                            else "the paper's real table of this dataset is not available")
    return samples, reasons


__all__ = [
    "PAPER_SAMPLE_ROWS", "PAPER_SAMPLE_SEED", "SAMPLE_EVIDENCE_KINDS", "STATUSES", "QuotedStatistic",
    "SampleVerification", "cell_table", "chance_of", "check_details", "draw_paper_sample", "is_sample_evidence",
    "paper_release_tables", "paper_samples", "quoted_statistics", "sample_key", "sample_status",
    "statistic_matches", "table_statistic", "verify_paper_census_samples", "verify_paper_samples",
]
