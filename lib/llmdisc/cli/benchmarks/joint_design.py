"""``llmdisc bench joint-design``: the joint-structure contrast's power per design, measured.

Runs :func:`llmdisc.scoring.joint_design.joint_design_study` with the embedded model (``--model``: an installed
opt-in one) on the processed tables of ``--datasets``: per design, real holdout against shuffled-columns samples
(must separate) and, for the base design, against real train samples (must not), with seconds and tokens a sample.
Merges its rows into ``results/tables/joint_design.csv`` (other rows kept) and prints them.
"""

from __future__ import annotations

import argparse
import time

NAME = "joint-design"
HELP = "joint-structure contrast: power on the controls and cost per design (writes results/tables/joint_design.csv)"
IN_ALL = False  # minutes per dataset: `bench all` leaves it out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", nargs="+", default=["adult"], metavar="KEY",
                        help="processed dataset keys (default adult; e.g. census-codes census-labels)")
    parser.add_argument("--samples", type=int, default=8, help="samples per group and design (default 8)")
    parser.add_argument("--rows", type=int, default=20, help="rows per sample (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the samples, reference rows and permutations")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="likelihood model (default the embedded SmolLM2-135M; an opt-in model such as "
                             "qwen2.5-coder-0.5b-instruct-q4_k_m once its parts are installed)")
    parser.add_argument("--vary", nargs="+", default=None, metavar="DESIGN",
                        help="the variations of the base design to run, space- or comma-separated, e.g. k=1 "
                             "serialisation=csv (default all of the study's; a name it does not know is refused "
                             "with the list; none: the base design alone)")


def chosen_variations(names: list[str] | None) -> tuple[tuple[str, object], ...]:
    """The variations named (``k=1``, ``reference_rows=20`` …; commas or spaces), all when None, none for
    ``["none"]`` (the base design alone).

    Raises:
        ConfigError: a name that is not one of :data:`~llmdisc.scoring.joint_design.VARIATIONS`, naming them.
    """
    from llmdisc.errors import ConfigError
    from llmdisc.parameters import cli_items
    from llmdisc.scoring.joint_design import VARIATIONS

    if names is None:
        return VARIATIONS
    asked = cli_items(names)
    if asked == ("none",):  # the base design alone
        return ()
    known = {f"{name}={value}": (name, value) for name, value in VARIATIONS}
    unknown = [n for n in asked if n not in known]
    if unknown:
        raise ConfigError(f"--vary {' '.join(unknown)}: not a variation of the design; fix: use some of "
                          f"{' '.join(known)}")
    return tuple(known[n] for n in dict.fromkeys(asked))


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL
    from llmdisc.discrimination.cache import TokenCache
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
    from llmdisc.scoring.joint_design import joint_design_study, merged_rows
    from llmdisc.scoring.tables import tables_dir

    start = time.perf_counter()
    model = args.model or DEFAULT_LIKELIHOOD_MODEL  # an unknown name: the scorer's ConfigError lists the known ones
    scorer = TransformersScorer(model, token_cache=TokenCache(enabled=False))

    def progress(done: int, total: int, spec: object) -> None:
        print(f"  {done}/{total} samples ({getattr(spec, 'source', '')}), {time.perf_counter() - start:.0f} s",
              flush=True)

    table = joint_design_study(args.datasets, scorer, samples_per_group=args.samples, n_rows=args.rows,
                               run_seed=args.seed, table_path="", progress=progress,
                               variations=chosen_variations(args.vary))
    path = tables_dir() / "joint_design.csv"
    if path.exists():
        table = merged_rows(pd.read_csv(path), table)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    shown = table[table["dataset_key"].isin(args.datasets) & (table["model"] == model)
                  & (table["n_real"] == args.samples)]
    print(shown[["model", "dataset_key", "design", "n_real", "n_control", "auc_control", "auc_real_vs_real",
                 "seconds_per_sample", "tokens_run_per_sample", "power_per_second"]].round(3).to_string(index=False))
    print(f"wrote {path.name}; {time.perf_counter() - start:.0f} s in all")
    return 0
