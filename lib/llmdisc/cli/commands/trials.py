"""``llmdisc trials run ...`` (notebook 04's parameters as flags) and ``llmdisc trials show RUN.jsonl``."""

from __future__ import annotations

import argparse

from llmdisc import CONDITIONS, SYNTHESIZERS

_RUN_FLAGS: tuple[tuple[str, dict], ...] = (
    ("--dataset-key", dict(default="adult", help="adult, census-codes or census-labels (default adult)")),
    ("--synthesizers", dict(nargs="+", default=list(SYNTHESIZERS), help="cells to run (default all three)")),
    ("--provider", dict(default="local", help="local, ollama, gemini, openai or replay (default local)")),
    ("--model", dict(default="", help="model id (default: the provider's default model)")),
    ("--trials-per-label", dict(type=int, default=2, help="trials per true label per cell (default 2)")),
    ("--conditions", dict(nargs="+", default=list(CONDITIONS), help="C1 and/or C2 (default both)")),
    ("--variant", dict(default="neutral", help="prompt variant: paper or neutral (default neutral)")),
    ("--metadata-source", dict(default="real", help="C2 metadata of: source, real or sample (default real)")),
    ("--sampling", dict(default="fresh", help="fresh (a sample per trial) or fixed (the paper's)")),
    ("--seed", dict(type=int, default=0, help="run seed every sample seed derives from (default 0)")),
    ("--concurrency", dict(type=int, default=1, help="calls in flight (default 1)")),
    ("--cache-mode", dict(default="fill", help="fill, offline (no calls, a miss is an error) or refresh")),
    ("--base-url", dict(default="", help="service URL (openai/gemini base URL, ollama host)")),
    ("--replay-path", dict(default="", help="replay provider: recorded trials file or folder")),
    ("--requests-per-minute", dict(type=float, default=0.0, help="call budget; 0 = unlimited")),
    ("--max-attempts", dict(type=int, default=5, help="attempts per trial for retryable failures")),
    ("--n-rows", dict(type=int, default=20, help="rows per sample (default 20)")),
    ("--quick", dict(action="store_true", help="smoke test: 1 synthesizer, 1 condition, 1 trial per label")),
    ("--out", dict(default=None, help="run file (default results/trials/<run name>.jsonl)")),
    ("--no-progress", dict(action="store_true", help="hide the progress bar")),
)
"""``llmdisc trials run`` flags: notebook 04's parameters plus the runner's own settings."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``trials`` with its ``run`` and ``show`` sub-commands."""
    parser = subparsers.add_parser("trials", help="run LLM trials (resumable) or show a run's per-cell table")
    inner = parser.add_subparsers(dest="trials_command", metavar="ACTION")

    run = inner.add_parser("run", help="run or resume the trials of one configuration "
                           "(results/trials/<run>.jsonl + manifest)")
    for flag, options in _RUN_FLAGS:
        run.add_argument(flag, **options)
    run.set_defaults(func=_run)

    show = inner.add_parser("show", help="print a run's per-cell table "
                            "(n valid per label, p_REAL, p_SYN, DRS)")
    show.add_argument("path", help="a results/trials/<run>.jsonl file or a folder of them")
    show.add_argument("--seed", type=int, default=0, help="seed of the DRS bootstrap interval (default 0)")
    show.set_defaults(func=_show)
    parser.set_defaults(func=lambda args: parser.print_help() or 0)


def _run(args: argparse.Namespace) -> int:
    from llmdisc.discrimination.trial_runs import TrialRunConfig, run_configured
    from llmdisc.paths import relative_to_root

    config = TrialRunConfig(
        dataset_key=args.dataset_key, synthesizers=tuple(args.synthesizers), provider=args.provider,
        model=args.model, trials_per_label=args.trials_per_label, conditions=tuple(args.conditions),
        variant=args.variant, metadata_source=args.metadata_source, sampling=args.sampling, seed=args.seed,
        concurrency=args.concurrency, cache_mode=args.cache_mode, base_url=args.base_url,
        replay_path=args.replay_path, quick=args.quick, requests_per_minute=args.requests_per_minute,
        max_attempts=args.max_attempts, n_rows=args.n_rows)
    summary = run_configured(config, out_path=args.out, progress=not args.no_progress)
    print(f"run {summary.run_id}: {summary.n_run} trial(s) run, {summary.n_skipped} already recorded "
          f"({summary.n_cache_hits} from the cache); file: {summary.file_counts}")
    print(f"records: {relative_to_root(summary.out_path)}")
    print(f"manifest: {relative_to_root(summary.manifest_path)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from llmdisc.discrimination.runner import load_trials
    from llmdisc.scoring.tables import cell_table

    trials = load_trials(args.path)
    table = cell_table(trials, seed=args.seed)
    print(f"{len(trials)} trial(s): " + ", ".join(f"{k} {v}" for k, v in
                                                 trials["status"].value_counts().sort_index().items()))
    print(tabulate(table, headers="keys", tablefmt="github", showindex=False, floatfmt=".3f"))
    return 0
