"""``llmdisc bench audit``: the fast path beside the default audit on a 30,000 × 15 table: seconds, ratio, memory.

Writes UCI Adult (the whole processed table) and one seeded release of it (``--synthetic``: a file of yours) as CSV,
then runs each audit in a fresh process, so its peak RSS (``os.wait4``) is its own: the **fast path**
(``--instruments c2st distances``) against :data:`FAST_TARGET_SECONDS` and the **default audit** against
:data:`TARGET_SECONDS`. Prints the machine's load (other processes slow both), each audit's plan, stage seconds, caps,
wall time and peak RSS, and the ratio of the two wall times. Nothing is asserted. Figures: docs/audit.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAME = "audit"
HELP = ("the fast path (--instruments c2st distances) beside the default audit on Adult (30,162 x 15) vs a "
        "release: seconds per stage, ratio, peak RSS")
TARGET_SECONDS = 600.0  # the default audit's budget (--max-minutes 10)
FAST_TARGET_SECONDS = 60.0  # the fast path's target on a 30,000 × 15 table on 2 cores
FAST_INSTRUMENTS = ("c2st", "distances")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--synthesizer", default="gaussian_copula",
                        help="synthesizer of the release built from the real table (default gaussian_copula)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs of CTGAN/TVAE (default SDV's)")
    parser.add_argument("--synthetic", help="audit this release file instead (CSV/Parquet, Adult's columns)")
    parser.add_argument("--holdout-fraction", type=float, default=0.0,
                        help="split this share of Adult off as --holdout (Anonymeter runs); default 0: the whole "
                        "table is the real file")
    parser.add_argument("--only", choices=("both", "fast", "default"), default="both",
                        help="run the fast path, the default audit, or both (default both: the ratio needs both)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, the fit and the audit")
    parser.add_argument("--audit-args", default="", help="extra flags for both audits, e.g. '--fail-above 0.2'")
    parser.add_argument("--keep", help="copy the audit folders (fast/, default/) here before the inputs go")


def adult_files(folder: Path, *, synthesizer: str, epochs: int | None, seed: int, synthetic: str | None,
                holdout_fraction: float = 0.0) -> tuple[Path, Path | None, Path]:
    """Write ``real.csv`` (Adult, or its train split with ``holdout_fraction``), ``holdout.csv`` (only then) and
    the release into ``folder``; return their paths (holdout None without one)."""
    from llmdisc.data.datasets import load_dataset, train_holdout_split
    from llmdisc.synthesis.releases import synthesize

    real, holdout_path = load_dataset("adult"), None
    if holdout_fraction > 0:
        real, holdout = train_holdout_split(real, holdout_fraction=holdout_fraction, seed=seed)
        holdout_path = folder / "holdout.csv"
        holdout.to_csv(holdout_path, index=False)
    real_path = folder / "real.csv"
    real.to_csv(real_path, index=False)
    if synthetic is not None:
        target = folder / ("synthetic" + "".join(Path(synthetic).suffixes))
        shutil.copyfile(synthetic, target)
        return real_path, holdout_path, target
    release = synthesize(real, dataset_key="adult", synthesizer=synthesizer, seed=seed, epochs=epochs,
                         show_progress=False)
    synthetic_path = folder / "synthetic.csv"
    release.table.to_csv(synthetic_path, index=False)
    return real_path, holdout_path, synthetic_path


def _machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs usable, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"


def run_audit_process(command: list[str], out: Path) -> dict[str, Any]:
    """Run one audit in a child process; return its exit status, wall seconds, peak RSS (MiB), stderr and
    ``audit.json`` (None when it wrote none)."""
    log = out.with_suffix(".stderr.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    begin = time.perf_counter()
    with open(log, "w", encoding="utf-8") as err, open(os.devnull, "w") as null:
        child = subprocess.Popen(command, stdout=null, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - begin
    summary_path = out / "audit.json"
    return {"status": os.waitstatus_to_exitcode(status), "wall": wall, "peak_mib": usage.ru_maxrss / 1024,
            "stderr": log.read_text(encoding="utf-8"),
            "summary": json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else None}


def _print_audit(name: str, done: dict[str, Any], target: float) -> None:
    plan = [line for line in done["stderr"].splitlines() if "about" in line and not line.startswith("  [")]
    print(f"\n{name}: the audit's plan:\n" + "\n".join(plan[:8]))
    summary = done["summary"]
    if summary is None:
        print(f"{name} wrote no audit.json (exit {done['status']}):\n{done['stderr'][-3000:]}")
        return
    print(f"{name}: exit status {done['status']}: {summary['headline']}")
    for stage, seconds in summary["seconds"].items():
        print(f"  {stage:<45} {seconds:8.1f} s")
    sizing = summary["parameters"].get("sizing")
    if sizing:
        print(f"  sizing: {sizing['samples']} samples per group (first plan {sizing.get('planned', '-')}), probe "
              f"{sizing['seconds_per_pass']} s a model pass, {sizing['seconds_for_samples']} s for the samples")
    for reading in summary["instruments"]:
        sizes = ", ".join(f"{g} {c['n_real']}/{c['n_other']}" for g, c in reading.get("comparisons", {}).items())
        print(f"  {reading['title']}: {reading['status']}" + (f" ({reading['reason']})" if reading.get("reason")
                                                              else "") + (f"; n real/other: {sizes}" if sizes else ""))
    for cap in summary.get("caps", []):
        used = ", ".join(f"{k} {v}" for k, v in cap["used"].items()) or "-"
        print(f"  cap: {cap['what']}: at most {cap['cap']:,}; used {used}"
              + ("; reached" if cap["reached"] else "; not reached"))
    if summary.get("thresholds"):
        print(f"  thresholds: {summary['thresholds']['line']}")
    print(f"{name}: wall time {done['wall']:.1f} s = {done['wall'] / target:.2f} × its {target:.0f} s target; "
          f"peak RSS {done['peak_mib']:.0f} MiB")


def run(args: argparse.Namespace) -> int:
    print(f"machine: {_machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="llmdisc-bench-audit-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        real, holdout, synthetic = adult_files(folder, synthesizer=args.synthesizer, epochs=args.epochs,
                                               seed=args.seed, synthetic=args.synthetic,
                                               holdout_fraction=args.holdout_fraction)
        shape = _shape(real)
        print(f"inputs: real {shape[0]:,} × {shape[1]} ({real.stat().st_size / 2**20:.1f} MiB CSV"
              + (f", holdout {_shape(holdout)[0]:,} rows" if holdout else ", no holdout") + f"), "
              f"{args.synthetic or args.synthesizer} release {_shape(synthetic)[0]:,} rows, built in "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        base = [sys.executable, "-m", "llmdisc", "audit", "--real", str(real), "--synthetic", str(synthetic),
                "--seed", str(args.seed), *(["--holdout", str(holdout)] if holdout else []),
                *shlex.split(args.audit_args)]
        runs = {}
        audits = (("fast path", "fast", ["--instruments", *FAST_INSTRUMENTS], FAST_TARGET_SECONDS),
                  ("default audit", "default", [], TARGET_SECONDS))
        for name, key, flags, target in audits:
            if args.only in ("both", key):
                runs[name] = run_audit_process(base + ["--out", str(folder / key), *flags], folder / key)
                _print_audit(name, runs[name], target)
                print(f"machine after the {name}: {_machine()}", flush=True)
        if len(runs) == 2:
            fast, default = runs["fast path"]["wall"], runs["default audit"]["wall"]
            print(f"\nratio: the fast path took {fast:.1f} s, the default audit {default:.1f} s: fast / default = "
                  f"{fast / default:.3f} (the default takes {default / fast:.1f} × as long)")
        if args.keep:
            for name in ("fast", "default"):
                if (folder / name).exists():
                    shutil.copytree(folder / name, Path(args.keep) / name, dirs_exist_ok=True)
            print(f"audit folders kept in {args.keep}")
    return 0


def _shape(path: Path) -> tuple[int, int]:
    import pandas as pd

    table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return table.shape
