"""``llmdisc trials run ...`` (notebook 04's parameters as flags) and ``llmdisc trials show RUN.jsonl``.

``trials run --config FILE`` runs a configuration's stage 04 as ``llmdisc run`` does; a flag beside ``--config``
overrides that value for every run, except ``--provider``, which picks the configuration's models of that provider.
``--plan`` prints only the calls, tokens, cost and time (no key, no network).
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

_LIST = dict(nargs="+", metavar="ITEM")
_RUN_FLAGS: tuple[tuple[str, dict], ...] = (
    ("--config", dict(default=None, metavar="PATH",
                      help="run configuration (configs/*.yaml): run its trials section for every dataset × model "
                      "× protocol; flags given beside it override its values")),
    ("--dataset-key", dict(default=None, help="adult, census-codes or census-labels (default adult; with "
                           "--config: the config's datasets)")),
    ("--synthesizers", dict(**_LIST, default=None, help="cells to run (default all three)")),
    ("--provider", dict(default=None, help="local, ollama, gemini, openai or replay (default local; with --config: "
                        "the config's models of this provider)")),
    ("--model", dict(default=None, help="model id (default: the provider's default model)")),
    ("--trials-per-label", dict(type=int, default=None, help="trials per true label per cell (default 2)")),
    ("--trials-per-label-c2", dict(type=int, default=None,
                                   help="trials per label in C2 cells; 0 = --trials-per-label (default 0)")),
    ("--verdict-trials-per-label", dict(type=int, default=None, help="under --scoring probability: the first N "
                                        "trials per cell and label also generate a verdict (default 0)")),
    ("--conditions", dict(**_LIST, default=None, help="C1 and/or C2 (default both)")),
    ("--variant", dict(default=None, help="prompt variant: paper or neutral (default neutral)")),
    ("--metadata-source", dict(default=None, help="C2 metadata of: source, real or sample (default real)")),
    ("--sampling", dict(default=None, help="fresh (a sample per trial) or fixed (the paper's) (default fresh)")),
    ("--scoring", dict(default=None, help="verdict (generated answer), probability (label scores) or both "
                       "(default verdict)")),
    ("--controls", dict(action=argparse.BooleanOptionalAction, default=None,
                        help="add the shuffled-columns and real-holdout control cells (default no)")),
    ("--share-real-samples", dict(action=argparse.BooleanOptionalAction, default=None,
                                  help="one REAL sample per index for every cell of a dataset (default no)")),
    ("--seed", dict(type=int, default=None, help="run seed every sample seed derives from (default 0)")),
    ("--concurrency", dict(type=int, default=None, help="calls in flight (default 1)")),
    ("--cache-mode", dict(default=None, help="fill, offline (no calls, a miss is an error) or refresh")),
    ("--base-url", dict(default=None, help="service URL (openai/gemini base URL, ollama host)")),
    ("--api-key-env", dict(default=None, metavar="NAME", help="openai provider: the environment variable holding "
                           "the key (default OPENAI_API_KEY; GROQ_API_KEY for Groq)")),
    ("--label-backend", dict(default=None, help="local provider: transformers (float32, default), "
                             "transformers-bfloat16 (faster on a CPU with native bfloat16), transformers-auto "
                             "(the faster of the two here) or llamacpp (forced tokens)")),
    ("--replay-path", dict(default=None, metavar="PATH", help="replay provider: recorded trials file or folder")),
    ("--requests-per-minute", dict(type=float, default=None, help="call budget; 0 = unlimited")),
    ("--max-attempts", dict(type=int, default=None, help="attempts per trial for retryable failures (default 5)")),
    ("--n-rows", dict(type=int, default=None, help="rows per sample (default 20)")),
    ("--config-name", dict(default=None, help="configuration name written into every record (default: the "
                           "--config's name, else none)")),
    ("--quick", dict(action="store_true", help="smoke test: 1 synthesizer, 1 condition, 1 trial per label")),
    ("--out", dict(default=None, help="run file (default results/trials/<run name>.jsonl; one run only)")),
    ("--no-progress", dict(action="store_true", help="hide the progress bar")),
    ("--plan", dict(action="store_true", help="print the runs' provider calls, tokens, cost and time, then exit: "
                    "nothing is called and no key is needed")),
)
"""``llmdisc trials run`` flags: notebook 04's parameters plus the runner's own settings."""

_CLI_ONLY = {"config", "out", "no_progress", "plan"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
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


def _from_config(path: str, dataset_key: str | None = None, provider: str | None = None,
                 ) -> tuple[list[dict[str, Any]], dict[tuple[str, str, str], Any]]:
    """A configuration's stage 04: the notebook parameters ``llmdisc run`` gives each of its runs (one per
    dataset × model × protocol; only ``dataset_key``'s runs when given, as if the configuration listed it alone;
    only ``provider``'s models when given and the configuration has any), and the ``CallCosts`` of its models."""
    from llmdisc.pipeline.config import call_costs, load_config, select_provider, trial_providers
    from llmdisc.pipeline.runs import plan_run

    config = load_config(path)
    if dataset_key is not None:
        config = config.model_copy(update={"datasets": [dataset_key]})
    if provider is not None and provider in trial_providers(config):
        config = select_provider(config, provider)  # else --provider overrides every run's provider
    return [dict(run.parameters) for run in plan_run(config) if run.stage == "04"], call_costs(config)


def _settings_and_costs(args: argparse.Namespace) -> tuple[list[Any], dict[tuple[str, str, str], Any]]:
    """Each run's ``TrialRunConfig`` (a flag given, then the ``--config`` value, then the default) and call costs.

    Raises:
        ConfigError: a value outside its vocabulary, or ``--out`` with more than one run.
    """
    from llmdisc.discrimination.trial_runs import TrialRunConfig
    from llmdisc.errors import ConfigError
    from llmdisc.parameters import as_items

    given = {k: v for k, v in vars(args).items()
             if k not in _CLI_ONLY and k in {f.name for f in fields(TrialRunConfig)} and v is not None}
    for name in ("synthesizers", "conditions"):
        if name in given:
            given[name] = as_items(",".join(given[name]), name, name)
    if not given.get("quick"):
        given.pop("quick", None)
    key = given.pop("dataset_key", None)
    costs: dict[tuple[str, str, str], Any] = {}
    if args.config:
        runs, costs = _from_config(args.config, key, given.get("provider"))
        if given.get("provider") in {run["provider"] for run in runs}:
            given.pop("provider")  # picked, not overridden
    else:
        runs = [{"dataset_key": key or "adult"}]
    settings = [TrialRunConfig(**{**run, **given}) for run in runs]
    if args.out and len(settings) > 1:
        raise ConfigError(f"--out names one run file but the flags describe {len(settings)} runs; fix: drop --out "
                          "(each run gets results/trials/<run name>.jsonl) or narrow --config with --dataset-key, "
                          "--provider/--model and --variant/--metadata-source/--sampling/--scoring")
    return settings, costs


def _run(args: argparse.Namespace) -> int:
    from llmdisc.discrimination.call_plan import format_plan, plan_calls
    from llmdisc.discrimination.trial_runs import run_configured
    from llmdisc.errors import ConfigError
    from llmdisc.paths import relative_to_root

    settings, costs = _settings_and_costs(args)
    print(format_plan(plan_calls(settings, costs)), flush=True)
    if args.plan:
        return 0
    providers = sorted({config.provider for config in settings})
    if len(providers) > 1:
        raise ConfigError(f"these runs call {len(providers)} providers ({', '.join(providers)}); a run calls one "
                          "provider, so that its quota, cost and time are its own; fix: add one of "
                          f"{', '.join('--provider ' + p for p in providers)} (the plan above gives each one's calls, "
                          "cost and time)")
    for config in settings:
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
