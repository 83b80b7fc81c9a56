"""``llmdisc run --config configs/default.yaml``: the whole compendium through papermill."""

from __future__ import annotations

import argparse
import time


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run the numbered notebooks over a configuration's grid (skips unchanged stages)")
    parser.add_argument("--config", default="configs/default.yaml", help="YAML run configuration")
    parser.add_argument("--provider", default=None, metavar="NAME",
                        help="run the trials of this provider's models only (a configuration listing several "
                        "providers, configs/paper.yaml, needs it: a run calls one provider)")
    parser.add_argument("--force", action="store_true", help="re-run every notebook, changed or not")
    parser.add_argument("--only", nargs="+", default=[], metavar="STAGE",
                        help="stages to run, space- or comma-separated, e.g. --only 01 02 (default: all); "
                        "`--only site` runs none and rebuilds the supplementary site from reports/executed/")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="notebooks run side by side, each on one CPU thread (default: the config's workers)")
    parser.add_argument("--no-html", action="store_true", help="skip rendering reports/html")
    parser.add_argument("--plan", action="store_true",
                        help="print the notebook runs and the trials' provider calls, tokens, cost and time, then "
                        "exit: nothing is called and no key is needed")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from llmdisc.discrimination.call_plan import format_plan
    from llmdisc.parameters import as_choice, cli_items
    from llmdisc.pipeline.config import load_config, require_one_provider, select_provider
    from llmdisc.pipeline.runs import call_plan, plan_run, run_pipeline

    provider = as_choice(args.provider, "--provider", "providers") if args.provider else None
    config = select_provider(load_config(args.config), provider)
    only = list(cli_items(args.only)) or None
    if args.plan:
        for run in plan_run(config):
            print(f"{run.run_id}: {run.notebook} {run.parameters}")
        print(format_plan(call_plan(config)))
        return 0
    site_only = only == ["site"]
    if not site_only and (only is None or "04" in only):
        require_one_provider(config)  # before anything runs
        print(format_plan(call_plan(config)), flush=True)
    started = time.perf_counter()
    outcomes = [] if site_only else run_pipeline(config, force=args.force, only=only, workers=args.workers)
    if not args.no_html:
        from llmdisc.pipeline.readme import update_readme
        from llmdisc.pipeline.supplementary import render_html

        index = render_html(config.name, force=args.force, log=print)
        print(f"[html] {index.relative_to(index.parents[2]).as_posix()}")
        if not config.readme:
            print(f"[readme] left alone: configs/{config.name} has readme: false "
                  "(only the default run writes it)")
        elif update_readme(config=config):
            print(f"[readme] results block rewritten from results/tables (configs/{config.name})")
    ran = sum(o["status"] == "ran" for o in outcomes)
    skipped = sum(o["status"] == "skipped" for o in outcomes)
    print(f"llmdisc run {config.name}: {ran} notebooks ran, {skipped} skipped, "
          f"{time.perf_counter() - started:.0f} s in all")
    return 0
