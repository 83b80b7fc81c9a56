"""``llmdisc audit``: the compendium's method applied to anyone's synthetic-data release.

:func:`run_audit` reads a bounded, seeded subsample of the real and synthetic tables (CSV or Parquet,
:mod:`~llmdisc.audit.sources`), settles which columns are categorical (:mod:`~llmdisc.audit.schema`), runs
balanced LLM trials with fresh samples on the ``release`` cell and its two controls (:mod:`~llmdisc.audit.llm`;
cached and resumable), scored by verdict and by probability (:mod:`~llmdisc.audit.scores`), decides whether the
audit is conclusive (:mod:`~llmdisc.audit.decision`), scores the shown samples' likelihood
(:mod:`~llmdisc.audit.likelihood`) and checks the cited cues (:mod:`~llmdisc.audit.cues`), runs the C2ST /
distance / Anonymeter checks (:mod:`~llmdisc.audit.checks`), and writes ``DIR/audit.json`` and the
self-contained ``DIR/report.html`` (:mod:`~llmdisc.audit.report`) with a plain-language verdict
(:mod:`~llmdisc.audit.verdict`).

Layout of ``DIR``: ``audit.json``, ``report.html``, ``manifest.json``, ``trials/<run>.jsonl`` (one trial
record per line; a re-run resumes it), ``cache/`` (the response cache: answers about the user's rows stay in
the audit folder, never in the project's shared cache; ``cache/likelihood`` holds the likelihood scores),
``checks.json`` (the non-LLM checks, re-used by a
re-run on the same rows and settings).

Privacy of the audit itself: a provider whose ``is_remote`` is True (Gemini; OpenAI-compatible or Ollama
services at a non-loopback URL) would receive real rows, so it is refused — before any request — unless
``allow_remote`` is True.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

import llmdisc
from llmdisc import CONDITIONS
from llmdisc.audit.options import N_ROWS, check_options, open_checked_provider

__all__ = ["AuditResult", "run_audit", "DEFAULT_TRIALS", "DEFAULT_MAX_ROWS", "N_ROWS"]

DEFAULT_TRIALS = 10
"""Trials per true label per condition."""
DEFAULT_MAX_ROWS = 10_000
"""Rows read from each table (seeded positions): LLM samples, metadata, C2ST and DCR all draw on them."""
DEFAULT_ATTACKS = 200


@dataclass(frozen=True)
class AuditResult:
    """What an audit produced.

    Attributes:
        out_dir: the audit folder.
        audit_json: ``out_dir/audit.json``.
        report_html: ``out_dir/report.html``.
        summary: everything written into ``audit.json`` (a dict).
        drs_upper_bound: max over conditions of the verdict DRS 95 % upper bound (1.0 when a condition has no
            DRS; None without verdicts).
        gate_passed: None without ``fail_above`` or when inconclusive; else whether ``gate_upper_bound <=
            fail_above``.
        outcome: ``pass``, ``fail``, ``inconclusive`` or ``conclusive`` (no gate), see
            :mod:`llmdisc.audit.decision`; the CLI exits 0, 3, 11 and 0.
        gate: the gate statistic (``drs``, ``calibrated-drs`` or ``auc``).
        gate_upper_bound: max over conditions of the gate statistic's 95 % upper bound.
        reasons: why the audit is inconclusive (empty otherwise).
    """

    out_dir: Path
    audit_json: Path
    report_html: Path
    summary: dict[str, Any]
    drs_upper_bound: float | None
    gate_passed: bool | None
    outcome: str = "conclusive"
    gate: str = "drs"
    gate_upper_bound: float | None = None
    reasons: tuple[str, ...] = ()


def _data_digest(tables: dict[str, pd.DataFrame], kinds: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps(kinds, sort_keys=True).encode())
    for role in sorted(tables):
        table = tables[role]
        digest.update(role.encode())
        digest.update(json.dumps([str(t) for t in table.dtypes]).encode())
        digest.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _checks_cached(path: Path, key: str, compute: Any) -> dict[str, Any]:
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("key") == key:
                return dict(stored["checks"], reused=True)
        except (ValueError, KeyError):
            pass  # an unreadable store is recomputed
    checks = compute()
    from llmdisc.audit.report import _clean

    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"key": key, "checks": _clean(checks)}, indent=1), encoding="utf-8")
    tmp.replace(path)
    return dict(checks, reused=False)


def run_audit(
    real: Path | str,
    synthetic: Path | str,
    *,
    out_dir: Path | str,
    holdout: Path | str | None = None,
    provider: str = "local",
    model: str | None = None,
    base_url: str | None = None,
    trials_per_label: int = DEFAULT_TRIALS,
    conditions: Sequence[str] = CONDITIONS,
    metadata_source: str = "real",
    categorical: Sequence[str] = (),
    numerical: Sequence[str] = (),
    metadata: Path | str | None = None,
    keep_identifiers: bool = False,
    seed: int = 0,
    allow_remote: bool = False,
    cache_mode: str = "fill",
    concurrency: int = 1,
    max_rows: int = DEFAULT_MAX_ROWS,
    n_attacks: int = DEFAULT_ATTACKS,
    fail_above: float | None = None,
    run_checks: bool = True,
    progress: bool = True,
    scoring: str = "both",
    gate: str | None = None,
    likelihood: bool = True,
    replay_path: Path | str | None = None,
) -> AuditResult:
    """Audit a synthetic release against its real data and write ``audit.json`` and ``report.html``.

    Args:
        real: the real table the release was made from (CSV or Parquet).
        synthetic: the synthetic release (same columns).
        out_dir: the audit folder (created); a re-run into it resumes the trials and re-uses the cache.
        holdout: optional real records the synthesizer never saw: enables the DCR comparison and Anonymeter.
        provider: ``local`` (embedded model, default), ``ollama``, ``gemini``, ``openai`` or ``replay``
            (recorded answers, ``replay_path``).
        model: model id (None: the provider's default).
        base_url: service URL for ``openai``/``gemini``, host for ``ollama``.
        trials_per_label: trials per true label per condition (balanced).
        conditions: ``C1`` (table only) and/or ``C2`` (table + metadata).
        metadata_source: what C2's metadata describes: ``real`` (the real rows read), ``source`` (the table
            the sample came from), ``sample`` (the shown rows).
        categorical: columns forced categorical.
        numerical: columns forced numerical.
        metadata: SDV single-table metadata JSON (:mod:`~llmdisc.audit.sdv_metadata`): each column's sdtype
            sets its kind; ``id`` columns are keys, personal-information sdtypes are excluded. None: kinds
            inferred, date strings and key columns detected (:func:`~llmdisc.audit.schema.plan_columns`).
        keep_identifiers: keep key columns (unique per row) in every discriminator; by default they are
            excluded and reported on their own (a key alone often separates the tables).
        seed: run seed: row reads, every trial's sample and every check derive from it.
        allow_remote: permit a remote provider (real rows leave this machine).
        cache_mode: ``fill``, ``offline`` (no provider call; a miss is an error) or ``refresh``.
        concurrency: most provider calls in flight.
        max_rows: rows read from each table (seeded positions); at least 20.
        n_attacks: Anonymeter attacks per evaluator (with a holdout); 0 skips Anonymeter.
        fail_above: bound in [0, 1] on the gate statistic's 95 % upper bound (recorded; the CLI turns a
            failed gate into exit status 3).
        run_checks: False skips C2ST/DCR/Anonymeter (the report says so).
        progress: show the trial progress bar.
        scoring: ``both`` (default: the generated verdict and the label scores of the same prompt),
            ``probability`` (label scores only) or ``verdict``. Label scores need a provider that returns token
            probabilities; one that does not is refused before any trial (pass ``verdict``).
        gate: the statistic ``fail_above`` bounds: ``drs`` (verdict DRS), ``calibrated-drs`` (the larger of the
            batch- and contextually calibrated DRS of p_synthetic) or ``auc`` (2·|AUC − 0.5|, the two-sided
            discrimination max(AUC, 1 − AUC) mapped so that 0 = chance). None: ``calibrated-drs``, or ``drs``
            under ``scoring="verdict"`` (:mod:`llmdisc.audit.decision`).
        likelihood: score every shown sample's table likelihood with the embedded model (no network).
        replay_path: for ``provider="replay"``: the recorded trials (.jsonl file or folder) to answer from.

    Every audit runs two controls beside the release (:func:`llmdisc.audit.llm.cell_tables`): the positive
    control (real rows, columns shuffled) and the negative control (real holdout rows in the synthetic class).
    The audit is *inconclusive* — never a pass, with or without ``fail_above`` — when the discriminator fails its
    positive control or too few trials are valid (the rule: :mod:`llmdisc.audit.decision`).

    Returns:
        The :class:`AuditResult`.

    Raises:
        RemoteProviderRefused (exit 8), InputMissingError (4), InputUnparsableError (5),
        ColumnMismatchError (6),
        TooFewRowsError (7), ProviderError/RunAborted (9 unreachable, 10 otherwise, including a provider without
        token probabilities under ``scoring`` probability/both), ConfigError (2): see
        :data:`llmdisc.audit.errors.EXIT_STATUSES`. Finished trials stay in ``out_dir/trials`` on every error.
    """
    from llmdisc.audit import checks as checks_module
    from llmdisc.audit import llm, report
    from llmdisc.audit.schema import check_same_columns, identifier_summary, plan_columns, prepare_tables
    from llmdisc.audit.sdv_metadata import read_sdv_metadata
    from llmdisc.audit.sources import open_table, read_sample
    from llmdisc.audit.verdict import column_notes, make_verdict
    from llmdisc.discrimination.cache import ResponseCache, public_base_url
    from llmdisc.discrimination.records import load_trials
    from llmdisc.discrimination.samples import derive_seed
    from llmdisc.manifest import write_manifest

    from llmdisc.audit.cues import cue_section
    from llmdisc.audit.decision import decide, default_gate
    from llmdisc.audit.likelihood import likelihood_section
    from llmdisc.audit.scores import cell_rows
    from llmdisc.discrimination.content_free import load_content_free
    from llmdisc.synthesis.controls import NEGATIVE_CONTROL, POSITIVE_CONTROL

    conditions = list(conditions)
    gate = gate or default_gate(scoring)
    check_options(
        trials_per_label, conditions, metadata_source, fail_above, max_rows, concurrency, n_attacks,
        scoring, gate,
    )
    answerer = open_checked_provider(provider, model, base_url, allow_remote=allow_remote,
                                     replay_path=str(replay_path) if replay_path is not None else None)
    out_dir = Path(out_dir)
    if hasattr(answerer, "token_cache_dir"):  # the local provider's prompt tokens stay in the audit folder
        answerer.token_cache_dir = out_dir / "cache" / "likelihood-tokens"

    paths = {"real": real, "synthetic": synthetic, **({"holdout": holdout} if holdout is not None else {})}
    sources = {role: open_table(path) for role, path in paths.items()}
    for role in ("synthetic", "holdout"):
        if role in sources:
            check_same_columns(
                sources["real"].columns,
                sources[role].columns,
                other=role,
                real_name=sources["real"].path.name,
                other_name=sources[role].path.name,
            )
    sdv_metadata = read_sdv_metadata(metadata, sources["real"].columns) if metadata is not None else None
    rows, positions = {}, {}
    for role, source in sources.items():
        rows[role], positions[role] = read_sample(
            source, max_rows, derive_seed(seed, "audit-read", role), min_rows=N_ROWS, what=role
        )
    plan = plan_columns(rows["real"], n_rows_in_file=sources["real"].n_rows, metadata=sdv_metadata,
                        categorical=categorical, numerical=numerical, keep_identifiers=keep_identifiers)
    kinds = plan.kinds
    tables, check_tables, check_kinds = prepare_tables(rows, plan)  # dates as text for the LLM, days for checks
    identifiers = identifier_summary(rows, plan.identifiers)
    digest = _data_digest(tables, kinds)

    out_dir.mkdir(parents=True, exist_ok=True)
    cache = ResponseCache(out_dir / "cache", mode=cache_mode)
    llm_tables, control_notes = llm.cell_tables(tables, seed=seed)
    cells = [c for c in llm.CELLS if c in llm_tables]
    specs = llm.audit_trial_queue(trials_per_label, conditions, run_seed=seed, cells=cells, scoring=scoring)
    trial_path = llm.trial_file(out_dir / "trials", answerer, provider, metadata_source, seed, digest,
                                scoring=scoring, cells=cells)
    parameters: dict[str, Any] = {
        "provider": provider,
        "model": answerer.model,
        "base_url": public_base_url(answerer.base_url),
        "trials_per_label": trials_per_label,
        "conditions": conditions,
        "metadata_source": metadata_source,
        "prompt_variant": llm.PROMPT_VARIANT,
        "n_rows": N_ROWS,
        "seed": seed,
        "max_rows": max_rows,
        "cache_mode": cache_mode,
        "concurrency": concurrency,
        "n_attacks": n_attacks,
        "allow_remote": allow_remote,
        "categorical": list(categorical),
        "numerical": list(numerical),
        "metadata": sdv_metadata.file if sdv_metadata is not None else None,
        "keep_identifiers": keep_identifiers,
        "fail_above": fail_above,
        "scoring": scoring,
        "gate": gate,
        "likelihood": likelihood,
        "cells": cells,
    }
    summary, content_free = llm.run_audit_trials(
        specs,
        provider=answerer,
        tables=llm_tables,
        metadata_source=metadata_source,
        out_path=trial_path,
        cache=cache,
        concurrency=concurrency,
        progress=progress,
        parameters={"audit": parameters, "data_digest": digest},
        scoring=scoring,
        conditions=conditions,
        n_rows=N_ROWS,
    )
    trials = load_trials(trial_path)
    trials = trials[trials["trial_id"].isin({s.trial_id for s in specs})]
    free = load_content_free(content_free["file"]) if content_free["file"] is not None else None
    if free is not None and free["log_odds"].isna().any():  # an invalid content-free score: no contextual DRS there
        content_free["invalid"] = [f"{r['condition']}: {r['score_invalid_reason']}"
                                   for r in free[free["log_odds"].isna()].to_dict("records")]
        free = free[free["log_odds"].notna()]
    scored = cell_rows(trials, cells, conditions, content_free=free, seed=seed)
    conditions_scored = scored[llm.RELEASE]
    decision = decide(conditions_scored, scored.get(POSITIVE_CONTROL), scoring=scoring, gate=gate,
                      fail_above=fail_above)
    release_trials = trials[trials["synthetic_method"] == llm.RELEASE]

    checks = None
    if run_checks:
        key = hashlib.sha256(json.dumps([digest, seed, n_attacks, holdout is not None]).encode()).hexdigest()
        checks = _checks_cached(
            out_dir / "checks.json",
            key,
            lambda: checks_module.run_checks(
                check_tables["real"],
                check_tables["synthetic"],
                check_tables.get("holdout"),
                check_kinds,
                seed=seed,
                n_attacks=n_attacks,
            ),
        )
    verdict = make_verdict(conditions_scored, checks, reading=decision.reading, decision=decision,
                           negative=scored.get(NEGATIVE_CONTROL, []))
    gate_passed = None if fail_above is None or decision.outcome == "inconclusive" else decision.outcome == "pass"
    likelihood_part: dict[str, Any] = {"status": "off", "reason": "--no-likelihood"}
    if likelihood:
        likelihood_part = likelihood_section(trials, llm_tables, condition=conditions[0],
                                             cache_dir=out_dir / "cache" / "likelihood",
                                             variant=llm.PROMPT_VARIANT, seed=seed)
    cues = cue_section(trials, llm_tables, cell=llm.RELEASE)

    result: dict[str, Any] = {
        "llmdisc_version": llmdisc.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "parameters": parameters,
        "inputs": {
            role: {
                "file": s.path.name,
                "format": s.format,
                "n_rows": s.n_rows,
                "rows_read": int(len(positions[role])),
            }
            for role, s in sources.items()
        },
        "data_digest": digest,
        "schema": {
            "columns": plan.schema_rows(sources["real"].columns),
            "used": list(kinds),  # the columns the LLM samples, C2ST, DCR and Anonymeter see
            "excluded": [{"name": c, "reason": r} for c, r in plan.excluded.items()],
            "date_formats": plan.date_formats,
            "rule": "with --metadata: each column's SDV sdtype (id = key, datetime parsed with its format, "
            "personal-information sdtypes excluded); otherwise, known datasets: declared kinds; other numeric "
            "columns are numerical except integer columns with at most 20 distinct values and at most "
            "max(2, 5 % of rows) distinct values, which are categorical codes; text columns of dates are "
            "dates (days for the classifier and distances, date text for the LLM); columns unique in every "
            "row (integer or text keys) are keys, left out of every discriminator unless --keep-ids; other "
            "text and booleans are categorical; --categorical / --numerical override",
        },
        "identifiers": {"kept": keep_identifiers, "columns": identifiers},
        "trials": {
            "file": trial_path.relative_to(out_dir).as_posix(),
            "n_planned": summary.n_planned,
            "n_resumed": summary.n_skipped,
            "n_run": summary.n_run,
            "n_cache_hits": summary.n_cache_hits,
            "file_counts": summary.file_counts,
            "cache": "cache/",
        },
        "conditions": conditions_scored,
        "controls": {
            name: {"cell": name, "source": control_notes.get(name), "conditions": scored.get(name)}
            for name in (POSITIVE_CONTROL, NEGATIVE_CONTROL)
        },
        "content_free": {**content_free, "file": None if content_free["file"] is None
                         else Path(content_free["file"]).relative_to(out_dir).as_posix()},
        "decision": decision.as_dict(),
        "drs_upper_bound": verdict.drs_upper_bound,
        "cited_columns": llm.cited_columns(release_trials, list(kinds)),
        "red_flags": llm.frequent_red_flags(release_trials),
        "likelihood": likelihood_part,
        "cues": cues,
        "checks": checks,
        "verdict": {
            "headline": verdict.headline,
            "details": list(verdict.details) + column_notes(identifiers, plan.excluded, keep_identifiers),
            "thin_evidence": verdict.thin_evidence,
            "outcome": decision.outcome,
        },
        "gate": None
        if fail_above is None
        else {"fail_above": fail_above, "statistic": gate, "upper_bound": decision.upper_bound,
              "drs_upper_bound": verdict.drs_upper_bound, "passed": gate_passed, "outcome": decision.outcome},
    }
    audit_json = report.write_audit_json(result, out_dir / "audit.json")
    report_html = report.write_report_html(result, out_dir / "report.html")
    write_manifest(
        out_dir,
        "audit",
        outputs=[audit_json, report_html, trial_path],
        parameters=parameters,
        seed=seed,
        metrics={
            "outcome": decision.outcome,
            "gate": gate,
            "gate_upper_bound": decision.upper_bound,
            "drs_upper_bound": verdict.drs_upper_bound,
            "gate_passed": gate_passed,
            **{f"drs_{r['condition']}": r["drs"] for r in conditions_scored},
            **{f"auc_{r['condition']}": (r["probability"] or {}).get("auc") for r in conditions_scored},
            **{f"calibrated_drs_{r['condition']}": (r["probability"] or {}).get("batch_drs")
               for r in conditions_scored},
        },
        extra={"data_digest": digest},
    )
    return AuditResult(
        out_dir=out_dir,
        audit_json=audit_json,
        report_html=report_html,
        summary=result,
        drs_upper_bound=verdict.drs_upper_bound,
        gate_passed=gate_passed,
        outcome=decision.outcome,
        gate=gate,
        gate_upper_bound=decision.upper_bound,
        reasons=decision.reasons,
    )
