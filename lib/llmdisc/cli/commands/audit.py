r"""``llmdisc audit``: audit a synthetic-data release with an LLM discriminator, C2ST and distance checks.

Example::

    llmdisc audit --real real.csv --synthetic release.parquet --holdout holdout.csv \
        --out audit/ --fail-above 0.3

Writes ``DIR/audit.json`` and the self-contained ``DIR/report.html`` (see :mod:`llmdisc.audit`).

Exit statuses (also printed by ``--help``):

====  =========================================================================================
0     audit written and conclusive; the --fail-above gate (if any) passed
2     bad command-line option or value (e.g. --fail-above outside 0..1, unknown provider)
3     audit written, but the --gate statistic's 95 % upper bound exceeds --fail-above
4     an input file (or the --metadata file) does not exist
5     an input file cannot be parsed, or its format is not supported (Excel); the --metadata file is not
      SDV single-table metadata JSON or names an unknown sdtype
6     the columns of the real and synthetic (or holdout) tables differ, or a column's type does (text in a
      numerical column, an unparseable date); or the --metadata columns differ from the tables'
7     a table has fewer rows than one LLM sample
8     the provider would send real rows off this machine and --allow-remote was not given
9     the provider cannot be reached or stopped answering; finished trials stay cached
10    the provider refused (missing key, unknown model; no token probabilities under --scoring
      probability or both: pass --scoring verdict) or --cache-mode offline missed
11    audit written but INCONCLUSIVE (never a pass): the discriminator failed its positive control, or
      too few trials were valid to decide; with or without --fail-above
130   interrupted; finished trials stay cached and a re-run resumes
====  =========================================================================================

Scoring (``--scoring``, default ``both``): each prompt gets a generated verdict and the label scores
(``p_synthetic``, the probability the model gives SYNTHETIC over REAL as the answer's first value). The report
gives, per condition, the AUC of ``p_synthetic`` (95 % CI, permutation p, direction), the calibrated DRS (batch;
contextual where the content-free prompt was scored) with its interval, the raw DRS and the verdict DRS.

``--fail-above X`` takes a fraction in [0, 1] (0.25 = 25 %); a value above 1 is refused (exit 2) rather than
read as a percentage, so a gate is never silently 100 times looser than meant. It bounds the 95 % upper bound
of ``--gate``: ``calibrated-drs`` (default; the larger of the batch- and contextually calibrated DRS),
``drs`` (the verdict DRS; the default and only gate under ``--scoring verdict``) or ``auc`` (2·|AUC − 0.5|:
the two-sided discrimination max(AUC, 1 − AUC) mapped so that 0 = chance and 1 = perfect ranking either way).
The bound is the largest over the conditions run; a condition without the statistic counts as 1, so an audit
that measured nothing never passes a gate.

Inconclusive (exit 11), checked first, with or without ``--fail-above``: in some condition the release or
the positive-control cell has fewer than 5 valid trials of either label, or the positive control's AUC
(real rows with every column shuffled independently, against real rows) has a 95 % interval that is not
entirely above 0.5 (:mod:`llmdisc.audit.decision`).
"""

from __future__ import annotations

import argparse
import sys

from llmdisc import CONDITIONS


def _list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _epilog() -> str:
    from llmdisc.audit.decision import MIN_VALID_PER_LABEL
    from llmdisc.audit.errors import EXIT_STATUSES

    lines = ["exit statuses:"] + [f"  {code:>3}  {meaning}" for code, meaning in EXIT_STATUSES]
    lines += [
        "",
        "Inconclusive (exit 11), checked first: in some condition the release or the positive-control cell has "
        f"fewer than {MIN_VALID_PER_LABEL} valid trials of either label, or the positive control (real rows with "
        "every column shuffled independently) gets an AUC whose 95 % interval is not entirely above 0.5. "
        "Every audit runs that positive control and a negative control (real holdout rows as the synthetic "
        "class) beside the release.",
        "",
        "Real rows are sent only to a local model unless --allow-remote is given (gemini, or an "
        "openai/ollama URL that is not loopback).",
    ]
    return "\n".join(lines)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``audit``."""
    from llmdisc.audit import DEFAULT_ATTACKS, DEFAULT_MAX_ROWS, DEFAULT_TRIALS

    parser = subparsers.add_parser(
        "audit",
        help="audit a synthetic release: LLM discriminator + C2ST + distances → audit.json, report.html",
        description="Ask an LLM whether fresh 20-row samples are REAL or SYNTHETIC (balanced, seeded, "
        "cached and resumable), run the classifier two-sample test and distance checks, and write "
        "DIR/audit.json and a self-contained DIR/report.html with a plain-language verdict.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--real", required=True, help="the real table (CSV, CSV.gz or Parquet)")
    parser.add_argument("--synthetic", required=True, help="the synthetic release (same columns)")
    parser.add_argument(
        "--holdout", help="real records the synthesizer never saw (enables the DCR comparison and Anonymeter)"
    )
    parser.add_argument(
        "--provider",
        default="local",
        choices=("local", "ollama", "gemini", "openai", "replay"),
        help="who answers (default: local, the embedded model; nothing leaves this machine); replay answers "
        "from recorded trials (--replay)",
    )
    parser.add_argument("--replay", help="with --provider replay: the recorded trials (.jsonl file or folder)")
    parser.add_argument("--model", help="model id (default: the provider's)")
    parser.add_argument("--base-url", help="service URL (openai/gemini) or host (ollama)")
    parser.add_argument(
        "--trials",
        type=int,
        default=DEFAULT_TRIALS,
        help=f"trials per true label per condition (default {DEFAULT_TRIALS})",
    )
    parser.add_argument(
        "--conditions",
        type=_list,
        default=list(CONDITIONS),
        help="C1 (table only), C2 (table + metadata); comma-separated (default C1,C2)",
    )
    parser.add_argument(
        "--metadata-source",
        default="real",
        choices=("real", "sample", "source"),
        help="what C2's metadata describes (default real)",
    )
    parser.add_argument("--categorical", type=_list, default=[], help="columns to treat as categorical")
    parser.add_argument("--numerical", type=_list, default=[], help="columns to treat as numerical")
    parser.add_argument(
        "--metadata",
        help="SDV single-table metadata JSON (Metadata.save_to_json): sets each column's type; id columns are "
        "keys, datetime columns are parsed with their datetime_format, personal-information sdtypes are left out",
    )
    parser.add_argument(
        "--keep-ids",
        action="store_true",
        help="keep key columns (unique in every row, or sdtype id) in every discriminator; by default they are "
        "left out and reported on their own",
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed of every draw (default 0)")
    parser.add_argument("--out", default="audit", help="audit folder (default ./audit); a re-run resumes it")
    parser.add_argument(
        "--scoring",
        default="both",
        choices=("verdict", "probability", "both"),
        help="verdict (generated answer), probability (label scores: AUC, calibrated DRS) or both (default); "
        "probability and both need a provider that returns token probabilities",
    )
    parser.add_argument(
        "--fail-above",
        type=float,
        help="exit 3 when the --gate statistic's 95%% upper bound (max over conditions) exceeds this fraction 0..1",
    )
    parser.add_argument(
        "--gate",
        choices=("drs", "calibrated-drs", "auc"),
        help="the statistic --fail-above bounds: calibrated-drs (default; batch/contextual calibrated DRS of "
        "p_synthetic), drs (verdict DRS; the default under --scoring verdict) or auc (2*|AUC-0.5|: the two-sided "
        "discrimination max(AUC, 1-AUC) mapped so that 0 = chance, 1 = perfect either way)",
    )
    parser.add_argument(
        "--no-likelihood",
        action="store_true",
        help="skip the likelihood discriminator (each shown sample's table likelihood under the embedded model)",
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="permit sending real rows to a remote provider"
    )
    parser.add_argument(
        "--cache-mode",
        default="fill",
        choices=("fill", "offline", "refresh"),
        help="response cache: fill (default), offline (no call; a miss is an error), refresh",
    )
    parser.add_argument("--concurrency", type=int, default=1, help="provider calls in flight (default 1)")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help=f"rows read from each table at seeded positions (default {DEFAULT_MAX_ROWS})",
    )
    parser.add_argument(
        "--n-attacks",
        type=int,
        default=DEFAULT_ATTACKS,
        help=f"Anonymeter attacks per evaluator with --holdout; 0 skips (default {DEFAULT_ATTACKS})",
    )
    parser.add_argument("--no-checks", action="store_true", help="skip the C2ST, DCR and Anonymeter checks")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Run the audit; return 0, 3 when the gate fails, 11 when inconclusive (errors carry their exit status)."""
    from llmdisc.audit import run_audit
    from llmdisc.audit.errors import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_OK, exit_status_for
    from llmdisc.errors import LlmdiscError
    from llmdisc.paths import relative_to_root

    try:
        result = run_audit(
            args.real,
            args.synthetic,
            out_dir=args.out,
            holdout=args.holdout,
            provider=args.provider,
            model=args.model,
            base_url=args.base_url,
            trials_per_label=args.trials,
            conditions=args.conditions,
            metadata_source=args.metadata_source,
            categorical=args.categorical,
            numerical=args.numerical,
            metadata=args.metadata,
            keep_identifiers=args.keep_ids,
            seed=args.seed,
            allow_remote=args.allow_remote,
            cache_mode=args.cache_mode,
            concurrency=args.concurrency,
            max_rows=args.max_rows,
            n_attacks=args.n_attacks,
            fail_above=args.fail_above,
            run_checks=not args.no_checks,
            progress=not args.no_progress,
            scoring=args.scoring,
            gate=args.gate,
            likelihood=not args.no_likelihood,
            replay_path=args.replay,
        )
    except LlmdiscError as exc:
        exc.exit_status = exit_status_for(exc)  # type: ignore[attr-defined]  # read by llmdisc.cli.main.main
        raise
    print(result.summary["verdict"]["headline"])
    print(f"wrote {relative_to_root(result.audit_json)} and {relative_to_root(result.report_html)}")
    if result.outcome == "inconclusive":
        print("audit INCONCLUSIVE (exit 11, not a pass): " + "; ".join(result.reasons), file=sys.stderr)
        return EXIT_INCONCLUSIVE
    if result.gate_passed is False:
        print(
            f"release gate FAILED: {result.gate} upper bound {result.gate_upper_bound:.3f} > --fail-above "
            f"{args.fail_above:g}",
            file=sys.stderr,
        )
        return EXIT_GATE
    return EXIT_OK
