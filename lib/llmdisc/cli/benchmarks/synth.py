"""``llmdisc bench synth``: speed and memory of stage 02 on the Adult train split.

Prints fit and sample seconds, CTGAN/TVAE set-up seconds and seconds per epoch, peak RSS, and the cache's load time.
Seconds per epoch come from ctgan's progress bar during one fit, and ``set_up = fit - epochs * per_epoch``: the
difference of two fits with different epoch counts is swamped by load changes on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import time
from pathlib import Path

from llmdisc.cli.benchmarks._common import peak_rss_mib

NAME = "synth"
HELP = "SDV fit/sample seconds, CTGAN/TVAE seconds per epoch and set-up, peak memory, cache-hit load (Adult)"
_RATE = re.compile(r"(\d+)/(\d+) \[[^<]*<[^,]*,\s*([\d.]+)(s/it|it/s)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset-key", default="adult", help="processed dataset to fit (default adult)")
    parser.add_argument("--ctgan-epochs", type=int, default=2, help="CTGAN epochs of the timed fit (default 2)")
    parser.add_argument("--tvae-epochs", type=int, default=4, help="TVAE epochs of the timed fit (default 4)")
    parser.add_argument("--fit-rows", type=int, default=None, help="fit on a seeded subsample (default: all rows)")
    parser.add_argument("--synthesizers", nargs="+", default=["gaussian_copula", "ctgan", "tvae"],
                        help="which synthesizers to time (default all three)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every fit")


def seconds_per_epoch(progress_text: str, epochs: int) -> float | None:
    """Seconds per epoch from the last ``n/n [elapsed<left, rate]`` of a captured tqdm bar; None if absent."""
    # Only ctgan's epoch bars (CTGAN shows "Gen. (…)", TVAE "Loss: …"), not llmdisc's stage bar.
    segments = [s for s in re.split(r"[\r\n]", progress_text) if "Gen. (" in s or "Loss:" in s]
    matches = [m for seg in segments for m in _RATE.finditer(seg) if int(m.group(1)) == int(m.group(2)) == epochs]
    if not matches:
        return None
    value, unit = float(matches[-1].group(3)), matches[-1].group(4)
    return value if unit == "s/it" else 1.0 / value


class _Tee(io.StringIO):
    """Keep what is written and pass it on, so the progress bar stays visible while it is captured."""

    def __init__(self, target: io.TextIOBase) -> None:
        super().__init__()
        self._target = target

    def write(self, text: str) -> int:
        self._target.write(text)
        return super().write(text)

    def flush(self) -> None:
        self._target.flush()


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from llmdisc.data.datasets import load_processed
    from llmdisc.errors import ConfigError
    from llmdisc.synthesis.fit import check_synthesizer, torch_threads
    from llmdisc.synthesis.releases import synthesize

    if min(args.ctgan_epochs, args.tvae_epochs) < 1:
        raise ConfigError("--ctgan-epochs and --tvae-epochs must be >= 1 (fix: e.g. --ctgan-epochs 2)")
    for name in args.synthesizers:
        check_synthesizer(name)
    start = time.perf_counter()
    import sdv.single_table  # noqa: F401 — time the heavy import once, outside the fits
    import_seconds = time.perf_counter() - start
    train = load_processed(args.dataset_key, split="train")
    n_fit = min(args.fit_rows, len(train)) if args.fit_rows else len(train)
    print(f"dataset {args.dataset_key}: {len(train)} train rows x {train.shape[1]} columns; fitting on {n_fit} rows; "
          f"torch threads {torch_threads()}; import sdv+torch {import_seconds:.1f} s", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="llmdisc-bench-synth-", ignore_cleanup_errors=True) as tmp:
        cache_root = Path(tmp)
        for name in args.synthesizers:
            epochs = {"gaussian_copula": None, "ctgan": args.ctgan_epochs, "tvae": args.tvae_epochs}[name]
            request = {"dataset_key": args.dataset_key, "synthesizer": name, "seed": args.seed, "epochs": epochs,
                       "fit_rows": args.fit_rows, "cache_root": cache_root}
            tee = _Tee(sys.stderr)
            with contextlib.redirect_stderr(tee):
                release = synthesize(train, show_progress=epochs is not None, **request)
            print(f"  {name} epochs={epochs}: fit {release.fit_seconds:.1f} s, sample {len(release.table)} rows "
                  f"{release.sample_seconds:.1f} s, peak RSS so far {peak_rss_mib():.0f} MiB", flush=True)
            start = time.perf_counter()
            hit = synthesize(train, show_progress=False, **request)
            load_seconds = time.perf_counter() - start
            assert hit.cache_hit, "the second identical request must load from the cache"
            row: dict[str, object] = {"synthesizer": name, "epochs": epochs, "fit_s": release.fit_seconds,
                                      "sample_s": release.sample_seconds, "cache_hit_load_s": load_seconds,
                                      "peak_rss_mib": peak_rss_mib()}
            if epochs is not None:
                per_epoch = seconds_per_epoch(tee.getvalue(), epochs)
                if per_epoch is not None:
                    set_up = release.fit_seconds - epochs * per_epoch
                    row.update({"set_up_s": set_up, "s_per_epoch": per_epoch,
                                "est_300_epochs_min": (set_up + 300 * per_epoch) / 60})
            rows.append(row)
    table = pd.DataFrame(rows).set_index("synthesizer")
    print("\nstage 02 timings (seconds; upper bounds on a shared machine; fit includes SDV preprocessing):")
    print(table.round(2).to_string())
    print("s_per_epoch: ctgan's progress-bar rate; set_up_s = fit_s - epochs * s_per_epoch; "
          "peak RSS: resource.getrusage(RUSAGE_SELF).ru_maxrss, cumulative over the process, MiB")
    return 0
