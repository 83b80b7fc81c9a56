"""``llmdisc audit``: the compendium's instruments applied to anyone's synthetic-data release.

:func:`run_audit` reads seeded subsamples of the tables, plans the columns, splits the real rows into the real class
and the controls, runs each instrument within the ``--max-minutes`` budget, decides the outcome and writes
``DIR/audit.json``, ``DIR/report.html`` and ``DIR/manifest.json``. ``DIR/cache/`` keeps model scores and LLM answers
about the user's rows (never the project's shared cache), so a re-run into the same folder resumes.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

import llmdisc
from llmdisc.audit.errors import exit_status_record, exit_status_table, outcome_status
from llmdisc.audit.options import N_ROWS, check_options, open_checked_provider

__all__ = ["AuditResult", "run_audit", "DEFAULT_TRIALS", "DEFAULT_MAX_ROWS", "DEFAULT_SAMPLES", "N_ROWS"]

DEFAULT_TRIALS = 10
"""LLM trials per true label per condition per cell (with ``llm``)."""
DEFAULT_MAX_ROWS = 10_000
"""Rows read from each table (seeded positions)."""
DEFAULT_SAMPLES = 20
"""20-row samples per group of the sample instruments (fewer when the time budget needs it; see ``samples``)."""
DEFAULT_MAX_MINUTES = 10.0
"""The audit's time budget: the sample instruments are sized to end within it, and it stops what still runs."""
BUDGET_MARGIN = 0.85
"""Share of the time left that the sized sample passes may plan to use (the report and the probe's own error take
the rest)."""
REPORT_SECONDS = 5.0
NOT_STARTED = "--max-minutes reached before it started"
"""The reason of an instrument the budget stopped before its first unit (or before its model loaded)."""
"""Kept from the budget for writing ``audit.json`` and the report (its figure) after the instruments."""
ANONYMETER_SECONDS_PER_ATTACK = 0.15
"""Anonymeter's planned cost (its three evaluators, 10,000 rows; measured: docs/audit.md). It runs after the
instruments without a model and before the model loads, so the sample instruments are sized with the time it took."""
DEFAULT_ATTACKS = 100
FAST_PROVIDERS = ("gemini", "openai", "ollama", "replay")
"""Providers whose LLM verdicts are in the default audit (a remote service or a local server)."""


@dataclass(frozen=True)
class AuditResult:
    """What an audit produced: ``summary`` is everything written into ``audit.json``; ``outcome`` ``pass``,
    ``fail``, ``inconclusive`` or ``conclusive`` (the CLI exits 0, 1, 3 and 0: :attr:`exit_status`);
    ``upper_bound`` the largest 95 % upper bound of D over the instruments that passed their controls;
    ``gate_passed`` None without ``fail_above`` or when inconclusive; ``reasons`` why instruments do not
    decide."""

    out_dir: Path
    audit_json: Path
    report_html: Path
    summary: dict[str, Any]
    outcome: str
    upper_bound: float | None
    gate_passed: bool | None
    reasons: tuple[str, ...] = ()

    @property
    def exit_status(self) -> int:
        """The exit status of the finished audit (``audit.json``'s ``exit_status``): 0 pass or conclusive, 1 gate
        failed, 3 inconclusive (:func:`llmdisc.audit.errors.outcome_status`)."""
        return outcome_status(self.outcome, self.gate_passed)


def _data_digest(tables: dict[str, pd.DataFrame], kinds: dict[str, str]) -> str:
    digest = hashlib.sha256(json.dumps(kinds, sort_keys=True).encode())
    for role in sorted(tables):
        table = tables[role]
        digest.update(role.encode())
        digest.update(json.dumps([str(t) for t in table.dtypes]).encode())
        digest.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _fit_to_budget(tools: Sequence[Any], plans: dict[str, Any], started: float,
                   max_minutes: float) -> dict[str, Any] | None:
    """Shrink the sample instruments' samples so their passes end within :data:`BUDGET_MARGIN` of the time left
    after the other instruments among ``tools`` (those still to run). Updates ``plans`` in place; returns what was
    decided, None without a probe."""
    holders = {t.name: t.passes for t in tools if getattr(t, "passes", None) is not None}
    if not holders:
        return None
    first, passes = next(iter(holders.items()))  # the sample instruments share one SamplePasses
    if passes.probe_seconds is None:
        return None
    others = sum(plans[t.name].seconds for t in tools if t.name not in holders)
    available = BUDGET_MARGIN * (60 * max_minutes - (time.monotonic() - started) - others)
    samples = passes.fit(available)
    plans[first] = passes.work_plan(plans[first].description)
    return {"samples": samples, "seconds_per_pass": round(passes.probe_seconds, 2),
            "seconds_for_samples": round(available, 1)}


def _run_tool(tool: Any, data: Any, tracker: Any, plan: Any, stage_seconds: dict[str, float]) -> Any:
    """One instrument's reading: stopped if the budget is spent before it starts (unless it costs nothing: the
    second sample instrument reads the shared passes), ``unavailable`` with the error if it fails (the others go
    on); provider and cache errors propagate."""
    begin = time.monotonic()
    if tracker.out_of_time() and plan.seconds > 0:
        reading = tool.reading(status="stopped", reason=NOT_STARTED)
    else:
        try:
            reading = tool.run(data, tracker)
        except (llmdisc.errors.ProviderError, llmdisc.errors.CacheMissError):
            raise
        except Exception as exc:  # noqa: BLE001 - one instrument failing must not lose the others
            reading = tool.reading(status="unavailable", reason=f"{type(exc).__name__}: {exc}")
    reading.seconds = stage_seconds[tool.title] = time.monotonic() - begin
    return reading


def _anonymeter(row_tables: dict[str, pd.DataFrame], row_kinds: dict[str, str], *, seed: int,
                n_attacks: int, has_holdout: bool) -> dict[str, Any]:
    """Anonymeter's attacks (:mod:`llmdisc.audit.checks`) as ``audit.json`` reports them: measured, skipped (no
    holdout, or ``n_attacks`` 0) or unavailable (the error, the audit goes on); ``reason`` also names an attack
    the table cannot support."""
    if not has_holdout:
        return {"status": "skipped", "reason": "no --holdout (Anonymeter needs one as control)"}
    if n_attacks <= 0:
        return {"status": "skipped", "reason": "--n-attacks 0"}
    from llmdisc.audit.checks import attack_checks
    from llmdisc.discrimination.samples import derive_seed

    try:
        risks = attack_checks(row_tables["real"], row_tables["synthetic"], row_tables["holdout"], row_kinds,
                              seed=derive_seed(seed, "audit", "anonymeter"), n_attacks=n_attacks)
    except Exception as exc:  # noqa: BLE001 - reported, the audit goes on
        return {"status": "unavailable", "reason": f"{type(exc).__name__}: {exc}"}
    from llmdisc.baselines.attacks import LINKABILITY_LEFT_OUT

    out: dict[str, Any] = {"status": "measured", "risks": risks}
    if "linkability" not in {risk["attack"] for risk in risks}:
        out["reason"] = LINKABILITY_LEFT_OUT
    return out


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)


def _say_plan(progress: bool, tools: Sequence[Any], plans: dict[str, Any]) -> None:
    from llmdisc.audit.instruments.base import format_seconds

    for tool in tools:
        p = plans[tool.name]
        _say(progress, f"  {tool.title}: {p.units} {p.what}, about {format_seconds(p.seconds)} — {p.description}")


def _say_sizing(progress: bool, sizing: dict[str, Any], max_minutes: float, asked: int) -> None:
    if sizing["samples"] >= asked:
        return
    _say(progress, f"time budget {max_minutes:g} min: {sizing['samples']} samples per group instead of {asked} "
                   f"({sizing['seconds_per_pass']:.1f} s a model pass here); --samples N fixes the size, "
                   "--max-minutes 0 lifts the budget")


def run_audit(real: Path | str, synthetic: Path | str, *, out_dir: Path | str,
              holdout: Path | str | None = None, instruments: Sequence[str] | None = None,
              llm: bool | None = None, provider: str = "local", model: str | None = None,
              base_url: str | None = None, samples: int | None = None, trials_per_label: int = DEFAULT_TRIALS,
              conditions: Sequence[str] = ("C1",), metadata_source: str = "real",
              scoring: str = "probability", categorical: Sequence[str] = (), numerical: Sequence[str] = (),
              metadata: Path | str | None = None, keep_identifiers: bool = False, seed: int = 0,
              allow_remote: bool = False, cache_mode: str = "fill", concurrency: int = 1,
              max_rows: int = DEFAULT_MAX_ROWS, n_attacks: int = DEFAULT_ATTACKS,
              fail_above: float | None = None, max_minutes: float | None = DEFAULT_MAX_MINUTES,
              progress: bool = True, replay_path: Path | str | None = None) -> AuditResult:
    """Audit a synthetic release against its real data and write ``audit.json`` and ``report.html``. Raises
    the errors of :data:`llmdisc.audit.errors.EXIT_STATUSES` (input, option and provider errors; the CLI gives
    any other exception 70, never 1); what was computed stays in ``out_dir`` on every error.

    Each argument is the ``llmdisc audit`` option of the same name (docs/audit.md, Options); beyond that table:

    Args:
        out_dir: the audit folder (``--out``; created).
        instruments: names from :data:`llmdisc.audit.instruments.INSTRUMENT_NAMES`; None = the offline default
            (:data:`~llmdisc.audit.instruments.DEFAULT_INSTRUMENTS`), plus ``llm`` when ``llm`` says so.
        llm: add the LLM's verdicts; None = yes for a provider in :data:`FAST_PROVIDERS`, no for ``local``.
        samples: 20-row samples per group; None = :data:`DEFAULT_SAMPLES`, or fewer (never below 10) when the
            timing probe says they would not end within ``max_minutes``. A number given is run as it is.
        max_minutes: the time budget in minutes (None or 0 = none); instruments still running when it is spent stop.
        progress: print the plan and progress lines on stderr (``--no-progress`` is False).
    """
    from llmdisc.audit import report
    from llmdisc.audit.caps import caps_summary
    from llmdisc.audit.data import audit_data
    from llmdisc.audit.decision import decide, headline
    from llmdisc.audit.instruments import DEFAULT_INSTRUMENTS, INSTRUMENT_NAMES, build_instruments
    from llmdisc.audit.instruments.base import Progress, WorkPlan, format_seconds
    from llmdisc.audit.personal import personal_summary
    from llmdisc.audit.schema import check_same_columns, identifier_summary, plan_columns, prepare_tables
    from llmdisc.audit.sdv_metadata import read_sdv_metadata
    from llmdisc.audit.sources import open_table, read_sample
    from llmdisc.audit.thresholds import threshold_scan
    from llmdisc.discrimination.samples import derive_seed
    from llmdisc.manifest import write_manifest

    started = time.monotonic()
    conditions = list(conditions)
    sized = samples is None
    samples = DEFAULT_SAMPLES if samples is None else samples
    if instruments is not None:  # the instruments asked for, plus llm only when --llm says so
        names = list(instruments) + (["llm"] if llm and "llm" not in instruments else [])
    else:  # the offline default, plus the LLM's verdicts with a fast provider or --llm
        names = list(DEFAULT_INSTRUMENTS) + (["llm"] if (provider in FAST_PROVIDERS if llm is None else llm) else [])
    if max_minutes == 0:
        max_minutes = None
    check_options(trials_per_label, conditions, metadata_source, fail_above, max_rows, concurrency, n_attacks,
                  scoring, samples, max_minutes, names, INSTRUMENT_NAMES)
    answerer = None
    if "llm" in names:
        def open_answerer() -> Any:
            return open_checked_provider(provider, model, base_url, allow_remote=allow_remote,
                                         replay_path=str(replay_path) if replay_path is not None else None)

        answerer = open_answerer()
        if scoring != "verdict" and cache_mode != "offline" and provider != "local":
            # refuse a provider without token probabilities now, not after minutes of other instruments; the probe's
            # client is closed with its event loop, and the trials get a fresh one
            from llmdisc.audit.llm import check_label_scoring
            from llmdisc.discrimination.runner import run_sync

            async def probe() -> None:
                try:
                    await check_label_scoring(answerer)
                finally:
                    await answerer.aclose()

            run_sync(probe)
            answerer = open_answerer()
    out_dir = Path(out_dir)
    stage_seconds: dict[str, float] = {}
    paths = {"real": real, "synthetic": synthetic, **({"holdout": holdout} if holdout is not None else {})}
    sources = {role: open_table(path) for role, path in paths.items()}
    for role in ("synthetic", "holdout"):
        if role in sources:
            check_same_columns(sources["real"].columns, sources[role].columns, other=role,
                               real_name=sources["real"].path.name, other_name=sources[role].path.name)
    sdv_metadata = read_sdv_metadata(metadata, sources["real"].columns) if metadata is not None else None
    rows, positions = {}, {}
    for role, source in sources.items():
        rows[role], positions[role] = read_sample(source, max_rows, derive_seed(seed, "audit-read", role),
                                                  min_rows=N_ROWS, what=role)
    plan = plan_columns(rows["real"], n_rows_in_file=sources["real"].n_rows, metadata=sdv_metadata,
                        categorical=categorical, numerical=numerical, keep_identifiers=keep_identifiers)
    text_tables, row_tables, row_kinds = prepare_tables(rows, plan)
    identifiers = identifier_summary(rows, plan.identifiers)
    personal = personal_summary(rows, plan.personal)
    digest = _data_digest(text_tables, plan.kinds)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = audit_data(text_tables, row_tables, row_kinds, seed=seed, cache_dir=out_dir / "cache")
    stage_seconds["reading inputs"] = time.monotonic() - started

    parameters: dict[str, Any] = {
        "instruments": names, "samples": samples, "provider": provider if answerer else None,
        "model": answerer.model if answerer else None, "trials_per_label": trials_per_label if answerer else None,
        "conditions": conditions if answerer else None, "scoring": scoring if answerer else None,
        "metadata_source": metadata_source, "n_rows": N_ROWS, "seed": seed, "max_rows": max_rows,
        "cache_mode": cache_mode, "concurrency": concurrency, "n_attacks": n_attacks, "allow_remote": allow_remote,
        "categorical": list(categorical), "numerical": list(numerical),
        "metadata": sdv_metadata.file if sdv_metadata is not None else None, "keep_identifiers": keep_identifiers,
        "fail_above": fail_above, "max_minutes": max_minutes,
    }
    llm_trials = None
    if answerer is not None:
        from llmdisc.audit.instruments.llm import LLMTrials

        llm_trials = LLMTrials(answerer, provider, trials_per_label=trials_per_label, conditions=conditions,
                               scoring=scoring, metadata_source=metadata_source, concurrency=concurrency,
                               cache_mode=cache_mode, out_dir=out_dir, data_digest=digest, parameters=parameters)
    tools = build_instruments(names, llm_trials=llm_trials, conditions=conditions, samples=samples)

    # the instruments without a model run first, then Anonymeter: a budget that the model's load and timing probe
    # would spend must not cost the answers that take seconds
    row_tools = [tool for tool in tools if not tool.uses_model]
    model_tools = [tool for tool in tools if tool.uses_model]
    plans = {tool.name: tool.plan(data) for tool in row_tools}
    anonymeter_seconds = (ANONYMETER_SECONDS_PER_ATTACK * n_attacks) if holdout is not None else 0.0
    head = (f"llmdisc audit: {len(data.real)} real rows (real class), {len(data.groups['release'])} release rows, "
            f"{len(data.kinds)} columns; {len(tools)} instruments")
    first = format_seconds(sum(plans[tool.name].seconds for tool in row_tools) + anonymeter_seconds)
    _say(progress, f"{head}, about {first} in all:" if not model_tools else
         f"{head}; first without a model, about {first}:")
    _say_plan(progress, row_tools, plans)
    if anonymeter_seconds:
        _say(progress, f"  Anonymeter: {n_attacks} attacks per evaluator, about {format_seconds(anonymeter_seconds)}")
    deadline = started + 60 * max_minutes - REPORT_SECONDS if max_minutes is not None else None
    tracker = Progress(deadline, enabled=progress)
    by_name = {tool.name: _run_tool(tool, data, tracker, plans[tool.name], stage_seconds) for tool in row_tools}
    begin = time.monotonic()
    if holdout is not None and n_attacks > 0:
        _say(progress, f"Anonymeter: {n_attacks} attacks per evaluator …")
    attacks = _anonymeter(row_tables, row_kinds, seed=seed, n_attacks=n_attacks, has_holdout=holdout is not None)
    if holdout is not None:
        stage_seconds["Anonymeter"] = time.monotonic() - begin
    if model_tools and tracker.out_of_time():  # not even loaded: the budget went to the instruments above
        for tool in model_tools:
            by_name[tool.name] = tool.reading(status="stopped", reason=NOT_STARTED)
            plans[tool.name] = WorkPlan(units=0, what="not planned", seconds_per_unit=0.0)
    elif model_tools:
        begin = time.monotonic()
        plans.update({tool.name: tool.plan(data) for tool in model_tools})  # the sample instruments' probe
        stage_seconds["planning (model load and timing probe)"] = time.monotonic() - begin
        sizing = (_fit_to_budget(model_tools, plans, started, max_minutes)
                  if sized and max_minutes is not None else None)
        if sizing is not None:
            parameters["samples"], parameters["sizing"] = sizing["samples"], sizing
            _say_sizing(progress, sizing, max_minutes, samples)
        rest = format_seconds(sum(plans[tool.name].seconds for tool in model_tools))
        _say(progress, f"then with the model, about {rest}:")
        _say_plan(progress, model_tools, plans)
        by_name.update({tool.name: _run_tool(tool, data, tracker, plans[tool.name], stage_seconds)
                        for tool in model_tools})
    readings = [by_name[tool.name] for tool in tools]  # reported in the order asked

    decision = decide(readings, fail_above=fail_above)
    titles = {r.instrument: r.title for r in readings}
    begin = time.monotonic()
    thresholds = threshold_scan(readings, fail_above)
    stage_seconds["thresholds"] = time.monotonic() - begin
    stage_seconds["total"] = time.monotonic() - started
    gate_passed = None if fail_above is None or decision.outcome == "inconclusive" else decision.outcome == "pass"
    inputs = {role: {"file": s.path.name, "format": s.format, "n_rows": s.n_rows,
                     "rows_read": int(len(positions[role]))} for role, s in sources.items()}
    result: dict[str, Any] = {
        "llmdisc_version": llmdisc.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "headline": headline(decision, titles),
        "exit_status": exit_status_record(outcome_status(decision.outcome, gate_passed)),
        "exit_statuses": exit_status_table(),
        "decision": decision.as_dict(),
        "parameters": parameters,
        "inputs": inputs,
        "groups": {"notes": data.notes, "rows": {"real": len(data.real), "reference": len(data.reference),
                                                 **{g: len(t) for g, t in data.groups.items()}}},
        "data_digest": digest,
        "schema": {"columns": plan.schema_rows(sources["real"].columns), "used": list(plan.kinds),
                   "excluded": [{"name": c, "reason": r} for c, r in plan.excluded.items()],
                   "date_formats": plan.date_formats},
        "identifiers": {"kept": keep_identifiers, "columns": identifiers},
        "personal": personal,
        "instruments": [r.as_dict() for r in readings],
        "plan": {tool.name: {"units": plans[tool.name].units, "what": plans[tool.name].what,
                             "estimated_seconds": round(plans[tool.name].seconds, 1)} for tool in tools},
        "anonymeter": attacks,
        "thresholds": thresholds,
        "caps": caps_summary(inputs, max_rows, tools, readings),
        "seconds": {k: round(v, 1) for k, v in stage_seconds.items()},
        "stopped_early": any(r.status == "stopped" for r in readings),
    }
    audit_json = report.write_audit_json(result, out_dir / "audit.json")
    report_html = report.write_report_html(result, out_dir / "report.html", sections={
        r.instrument: tool.section(r) for tool, r in zip(tools, readings)})
    write_manifest(out_dir, "audit", outputs=[audit_json, report_html], parameters=parameters, seed=seed,
                   metrics={"outcome": decision.outcome, "upper_bound": decision.upper_bound,
                            "gate_passed": gate_passed, "seconds": round(stage_seconds["total"], 1)},
                   extra={"data_digest": digest})
    return AuditResult(out_dir=out_dir, audit_json=audit_json, report_html=report_html, summary=result,
                       outcome=decision.outcome, upper_bound=decision.upper_bound, gate_passed=gate_passed,
                       reasons=decision.reasons)
