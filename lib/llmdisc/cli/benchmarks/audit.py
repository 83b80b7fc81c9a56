"""``llmdisc bench audit``: wall time and peak memory of the default audit against its 10-minute target.

Builds UCI Adult's train split (80 %, seeded) and one release of it (SDV GaussianCopula by default, seeded,
cached by the synthesis stage; ``--synthetic`` audits a release file of yours instead), writes both as CSV to a
temporary folder, and runs ``llmdisc audit`` with its defaults in a fresh process (so its peak resident memory
is the audit's alone). Prints each stage's seconds (from ``audit.json``), the estimate the audit printed before
it started, the whole wall time and its ratio to the 10-minute target, and the peak RSS. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "audit"
HELP = "the default audit on Adult's train split vs a release: seconds per stage, ratio to 10 min, peak RSS"
TARGET_SECONDS = 600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: the release's synthesizer or file, the samples per group, the seed, extra audit flags."""
    parser.add_argument("--synthesizer", default="gaussian_copula",
                        help="synthesizer of the release built from the train split (default gaussian_copula)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs of CTGAN/TVAE (default SDV's)")
    parser.add_argument("--synthetic", help="audit this release file instead (CSV/Parquet, Adult's columns)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the fit and the audit")
    parser.add_argument("--audit-args", default="", help="extra flags for llmdisc audit, e.g. '--samples 30'")
    parser.add_argument("--keep", help="copy the audit folder (audit.json, report.html) here before the inputs go")


def adult_files(folder: Path, *, synthesizer: str, epochs: int | None, seed: int,
                synthetic: str | None) -> tuple[Path, Path, Path]:
    """Write ``real.csv`` (Adult's train split), ``holdout.csv`` and ``synthetic.csv`` into ``folder``."""
    from llmdisc.data.datasets import load_dataset, train_holdout_split
    from llmdisc.synthesis.releases import synthesize

    train, holdout = train_holdout_split(load_dataset("adult"), seed=seed)
    paths = folder / "real.csv", folder / "holdout.csv", folder / "synthetic.csv"
    train.to_csv(paths[0], index=False)
    holdout.to_csv(paths[1], index=False)
    if synthetic is not None:
        import shutil

        target = folder / ("synthetic" + "".join(Path(synthetic).suffixes))
        shutil.copyfile(synthetic, target)
        return paths[0], paths[1], target
    release = synthesize(train, dataset_key="adult", synthesizer=synthesizer, seed=seed, epochs=epochs,
                         show_progress=False)
    release.table.to_csv(paths[2], index=False)
    return paths


def run(args: argparse.Namespace) -> int:
    """Build the inputs, run the audit in a child process, print the figures; returns 0."""
    with tempfile.TemporaryDirectory(prefix="llmdisc-bench-audit-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        real, holdout, synthetic = adult_files(folder, synthesizer=args.synthesizer, epochs=args.epochs,
                                               seed=args.seed, synthetic=args.synthetic)
        print(f"inputs: Adult train split ({real.stat().st_size / 2**20:.1f} MiB CSV) and "
              f"{args.synthetic or args.synthesizer} release, built in {time.perf_counter() - start:.0f} s", flush=True)
        command = [sys.executable, "-m", "llmdisc", "audit", "--real", str(real), "--synthetic", str(synthetic),
                   "--holdout", str(holdout), "--out", str(folder / "audit"), "--seed", str(args.seed),
                   *args.audit_args.split()]
        begin = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - begin
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        plan = [line for line in done.stderr.splitlines() if "about" in line and not line.startswith("  [")]
        print("the audit's plan:\n" + "\n".join(plan[:8]))
        summary_path = folder / "audit" / "audit.json"
        if not summary_path.exists():
            print(f"the audit wrote no audit.json (exit {done.returncode}):\n{done.stderr[-3000:]}")
            return 0
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        print(f"exit status {done.returncode}: {summary['headline']}")
        for stage, seconds in summary["seconds"].items():
            print(f"  {stage:<45} {seconds:8.1f} s")
        sizing = summary["parameters"].get("sizing")
        if sizing:
            print(f"sizing: {sizing['samples']} samples per group (first plan {sizing.get('planned', '-')}), probe "
                  f"{sizing['seconds_per_pass']} s a model pass, {sizing['seconds_for_samples']} s for the samples")
        for reading in summary["instruments"]:
            sizes = ", ".join(f"{g} {c['n_real']}/{c['n_other']}" for g, c in reading.get("comparisons", {}).items())
            print(f"  {reading['title']}: {reading['status']}" + (f" ({reading['reason']})" if reading.get("reason")
                                                                  else "") + (f"; n real/other: {sizes}" if sizes else ""))
        if args.keep:
            import shutil

            shutil.copytree(folder / "audit", args.keep, dirs_exist_ok=True)
            print(f"audit folder kept in {args.keep}")
        print(f"wall time {wall:.0f} s = {wall / TARGET_SECONDS:.2f} × the 10-minute target; peak RSS of the audit "
              f"process {peak:.0f} MiB")
    return 0
