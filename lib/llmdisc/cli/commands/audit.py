r"""``llmdisc audit``: is a synthetic-data release distinguishable from its real data? Minutes, offline.

Example::

    llmdisc audit --real real.csv --synthetic release.parquet --holdout holdout.csv --out audit/ --fail-above 0.5

What it runs and writes, the gate and the exit statuses (``llmdisc.audit.errors.EXIT_STATUSES``): the parser's
description, flags and epilog below (``--help``). Reference: docs/audit.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _epilog() -> str:
    from llmdisc.audit.decision import GATE_SENTENCE
    from llmdisc.audit.errors import EXIT_STATUSES

    statuses = "\n".join(["exit statuses:"] + [f"  {code:>3}  {meaning}" for code, meaning in EXIT_STATUSES])
    return "\n\n".join([
        statuses, f"Gate: {GATE_SENTENCE}.",
        "Duration: the default (offline instruments, embedded model) ends within --max-minutes (default 10): "
        "the instruments without a model and Anonymeter run first (seconds), then a short timing probe sizes "
        "the samples of the embedded model's instruments to the time left (20 per group, fewer on a slow "
        "machine, never below 10); each part's plan and estimate print before it runs, then progress lines "
        "with an ETA; what still runs when the budget is spent stops and is marked. --samples N fixes the "
        "size; --max-minutes 0 lifts the budget. --llm adds the LLM's verdicts (slow with the embedded model: "
        "about 8 s a trial on 2 cores).",
        "Real rows are sent only to a local model unless --allow-remote is given (gemini, or an "
        "openai/ollama URL that is not loopback)."])


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from llmdisc.audit import DEFAULT_MAX_ROWS, DEFAULT_SAMPLES, DEFAULT_TRIALS
    from llmdisc.audit.instruments import DEFAULT_INSTRUMENTS, INSTRUMENT_NAMES
    from llmdisc.audit.run import DEFAULT_ATTACKS, DEFAULT_MAX_MINUTES

    parser = subparsers.add_parser(
        "audit",
        help="audit a synthetic release: offline instruments with controls -> audit.json, report.html",
        description="Tell whether a synthetic release can be told apart from its real data: a classifier "
        "two-sample test, distances to the closest real record and the embedded language model's reading of "
        "20-row samples, each with its own positive and negative control; optionally an LLM's verdicts. Writes "
        "DIR/audit.json and a self-contained DIR/report.html.",
        epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # a removed flag (--trials, --replay) must fail, not match a longer one
    )
    parser.add_argument("--real", required=True, help="the real table (CSV, CSV.gz or Parquet)")
    parser.add_argument("--synthetic", required=True, help="the synthetic release (same columns)")
    parser.add_argument("--holdout", help="real records the synthesizer never saw (negative control, distances' "
                        "fresh rows, Anonymeter)")
    parser.add_argument("--out", default="audit", help="audit folder (default ./audit); a re-run resumes it")
    parser.add_argument("--instruments", nargs="+", metavar="NAME",
                        help=f"instruments to run, from {', '.join(INSTRUMENT_NAMES)} (space- or comma-separated; "
                        f"default {' '.join(DEFAULT_INSTRUMENTS)}, plus llm with --llm or a fast provider)")
    parser.add_argument("--llm", action=argparse.BooleanOptionalAction, default=None,
                        help="add the LLM's verdicts (default: yes for gemini/openai/ollama/replay, no for the "
                        "embedded local model, which is slow and misses its positive control)")
    parser.add_argument("--samples", type=int, default=None,
                        help=f"20-row samples per group of the sample instruments (default {DEFAULT_SAMPLES}, or "
                        "fewer when the time budget needs it; a number given here is run as it is)")
    parser.add_argument("--fail-above", type=float,
                        help="exit 1 when the largest 95%% upper bound of D = 2|AUC-0.5| over the instruments that "
                        "passed their controls and can vouch at it exceeds this fraction 0..1; report.html's "
                        "'Choosing --fail-above' gives the range this run can back (docs/audit.md)")
    parser.add_argument("--max-minutes", type=float, default=DEFAULT_MAX_MINUTES,
                        help=f"time budget in minutes (default {DEFAULT_MAX_MINUTES:g}; 0 = none): sizes the samples, "
                        "then stops what still runs when it is spent; the report marks what was cut")
    parser.add_argument("--provider", default="local", choices=("local", "ollama", "gemini", "openai", "replay"),
                        help="the LLM (default local: the embedded model; nothing leaves this machine)")
    parser.add_argument("--replay-path", help="with --provider replay: the recorded trials (.jsonl file or folder)")
    parser.add_argument("--model", help="LLM model id (default: the provider's)")
    parser.add_argument("--base-url", help="LLM service URL (openai/gemini) or host (ollama)")
    parser.add_argument("--trials-per-label", type=int, default=DEFAULT_TRIALS,
                        help=f"LLM trials per true label per condition per cell (default {DEFAULT_TRIALS})")
    parser.add_argument("--conditions", nargs="+", default=["C1"], metavar="C",
                        help="LLM conditions: C1 (table only), C2 (table + metadata); default C1")
    parser.add_argument("--metadata-source", default="real", choices=("real", "sample", "source"),
                        help="what C2's metadata describes (default real)")
    parser.add_argument("--scoring", default="probability", choices=("verdict", "probability", "both"),
                        help="the LLM's reading: probability (label scores; default), verdict, or both")
    parser.add_argument("--categorical", nargs="+", default=[], metavar="COLUMN", help="columns to treat as categorical")
    parser.add_argument("--numerical", nargs="+", default=[], metavar="COLUMN", help="columns to treat as numerical")
    parser.add_argument("--metadata", help="SDV single-table metadata JSON (Metadata.save_to_json): sets each "
                        "column's type; id columns are keys, personal-information sdtypes are left out and reported")
    parser.add_argument("--keep-ids", action="store_true", help="keep key columns (unique in every row, or sdtype "
                        "id) in every instrument; by default they are left out and reported on their own")
    parser.add_argument("--seed", type=int, default=0, help="run seed of every draw (default 0)")
    parser.add_argument("--allow-remote", action="store_true", help="permit sending real rows to a remote LLM")
    parser.add_argument("--cache-mode", default="fill", choices=("fill", "offline", "refresh"),
                        help="LLM response cache: fill (default), offline (no call; a miss is an error), refresh")
    parser.add_argument("--concurrency", type=int, default=1, help="LLM calls in flight (default 1)")
    parser.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS,
                        help=f"rows read from each table at seeded positions (default {DEFAULT_MAX_ROWS})")
    parser.add_argument("--n-attacks", type=int, default=DEFAULT_ATTACKS,
                        help=f"Anonymeter attacks per evaluator with --holdout; 0 skips (default {DEFAULT_ATTACKS})")
    parser.add_argument("--no-progress", action="store_true", help="hide the plan and progress lines")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the audit; return its exit status: 0 (pass/conclusive), 1 (gate failed) or 3 (inconclusive).

    Raises:
        LlmdiscError: with its ``exit_status`` set (2, 4–10), printed by :func:`llmdisc.cli.main.main`. Any other
            exception is a bug: 70, with its traceback in the audit folder.
    """
    from llmdisc.audit import run_audit
    from llmdisc.audit.errors import EXIT_GATE, EXIT_INCONCLUSIVE, exit_status_for
    from llmdisc.errors import LlmdiscError
    from llmdisc.parameters import cli_items
    from llmdisc.paths import relative_to_root

    audit_json = Path(args.out) / "audit.json"
    before = audit_json.stat().st_mtime_ns if audit_json.exists() else None
    try:
        result = run_audit(
            args.real, args.synthetic, out_dir=args.out, holdout=args.holdout,
            instruments=list(cli_items(args.instruments)) or None, llm=args.llm,
            provider=args.provider, model=args.model, base_url=args.base_url, samples=args.samples,
            trials_per_label=args.trials_per_label, conditions=list(cli_items(args.conditions)),
            metadata_source=args.metadata_source, scoring=args.scoring, metadata=args.metadata,
            categorical=list(cli_items(args.categorical)), numerical=list(cli_items(args.numerical)),
            keep_identifiers=args.keep_ids, seed=args.seed, allow_remote=args.allow_remote,
            cache_mode=args.cache_mode, concurrency=args.concurrency, max_rows=args.max_rows,
            n_attacks=args.n_attacks, fail_above=args.fail_above, max_minutes=args.max_minutes,
            progress=not args.no_progress, replay_path=args.replay_path)
    except LlmdiscError as exc:
        exc.exit_status = exit_status_for(exc)  # type: ignore[attr-defined]  # read by llmdisc.cli.main.main
        raise
    except Exception as exc:  # noqa: BLE001 - a bug: its own status (never 1), its traceback in the audit folder
        written = audit_json.exists() and audit_json.stat().st_mtime_ns != before
        return _crashed(exc, args, mark_audit_json=written)
    print(result.summary["headline"])
    print(f"thresholds: {result.summary['thresholds']['line']} (report.html: Choosing --fail-above)")
    print(f"wrote {relative_to_root(result.audit_json)} and {relative_to_root(result.report_html)}")
    status = result.exit_status
    if status == EXIT_INCONCLUSIVE:
        print("audit INCONCLUSIVE (exit 3, not a pass): " + "; ".join(result.reasons), file=sys.stderr)
        for step in result.summary["decision"].get("next_steps", []):
            print(f"next step: {step}", file=sys.stderr)
    elif status == EXIT_GATE:
        print(f"release gate FAILED (exit 1) at --fail-above {args.fail_above:g}: see the line above",
              file=sys.stderr)
    return int(status)


def _crashed(exc: Exception, args: argparse.Namespace, *, mark_audit_json: bool) -> int:
    """Record an unexpected error in the audit folder (``traceback.txt``; ``audit.json`` marked when this run wrote
    it) and say so on one stderr line; return :data:`~llmdisc.audit.errors.EXIT_INTERNAL` (70)."""
    from llmdisc.audit.errors import EXIT_INTERNAL, TRACEBACK_FILE
    from llmdisc.audit.report import record_crash

    where = Path(args.out) / TRACEBACK_FILE
    try:
        record_crash(args.out, exc, status=EXIT_INTERNAL, mark_audit_json=mark_audit_json,
                     inputs=(args.real, args.synthetic, args.holdout, args.metadata, args.replay_path))
        told = f"its traceback is in {where}"
    except Exception as failure:  # noqa: BLE001 - the status stands even when the folder cannot be written
        told = f"and its traceback could not be written to {where} ({type(failure).__name__}: {failure})"
    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    print(f"llmdisc audit: internal error (exit {int(EXIT_INTERNAL)}, a bug, not a gate result): "
          f"{type(exc).__name__}: {first_line}; {told}; what was computed stays in {args.out}",
          file=sys.stderr)
    return int(EXIT_INTERNAL)
