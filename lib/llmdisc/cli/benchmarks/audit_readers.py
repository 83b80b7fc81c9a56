"""``llmdisc bench audit-readers``: seconds and peak memory of the audit's readers on a 1-million-row table.

Writes a CSV and a Parquet file of each ``--rows`` size, resampled (seeded) from UCI Adult; a reader whose memory is
bounded adds about the same at both sizes. Each measurement runs in a fresh process: its peak RSS after counting
rows, reading ``--max-rows`` rows at seeded positions and inferring the schema (the audit's input path), beside
the RSS right after the imports, and, for contrast, a whole-file pandas read. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NAME = "audit-readers"
HELP = "audit readers: seconds and peak RSS to count, sample and type a 1M-row CSV and Parquet table"

_CHILD = """
import json, resource, sys, time
mode, path, max_rows, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
import pandas as pd, pyarrow, pyarrow.csv, pyarrow.parquet
from llmdisc.audit.schema import harmonise, infer_column_kinds
from llmdisc.audit.sources import open_table, read_sample
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
now = lambda: next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
out = {"baseline_mib": now(), "import_peak_mib": rss()}
t = time.perf_counter()
if mode == "audit":
    source = open_table(path)
    out["count_s"] = time.perf_counter() - t; out["n_rows"] = source.n_rows
    t = time.perf_counter()
    rows, _ = read_sample(source, max_rows, seed, min_rows=20)
    out["sample_s"] = time.perf_counter() - t; out["rows_read"] = len(rows)
    t = time.perf_counter()
    kinds, _ = infer_column_kinds(rows)
    harmonise({"real": rows}, kinds)
    out["schema_s"] = time.perf_counter() - t
else:
    table = pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
    out["read_s"] = time.perf_counter() - t; out["n_rows"] = len(table)
out["peak_mib"] = rss()
print(json.dumps(out))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=lambda t: [int(x) for x in t.split(",")],
                        default=[250_000, 1_000_000],
                        help="comma-separated row counts of the generated tables (default 250000,1000000: "
                        "a bounded reader's peak stays flat between them)")
    parser.add_argument("--max-rows", type=int, default=10_000,
                        help="rows the audit reads at seeded positions (default 10000, the audit's default)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the resampling and the positions (default 0)")
    parser.add_argument("--no-full-read", action="store_true", help="skip the whole-file pandas reads")


def write_tables(folder: Path, rows: int, seed: int, chunk_rows: int = 100_000) -> tuple[Path, Path]:
    """Write ``rows`` Adult rows resampled with replacement (seeded) as CSV and Parquet (one row group per chunk);
    return ``(csv path, parquet path)``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from llmdisc.data.datasets import load_dataset

    adult = load_dataset("adult")
    rng = np.random.default_rng(seed)
    csv_path, parquet_path = folder / "adult_1m.csv", folder / "adult_1m.parquet"
    writer = None
    with open(csv_path, "w", encoding="utf-8", newline="") as csv_file:
        for start in range(0, rows, chunk_rows):
            drawn = rng.integers(0, len(adult), min(chunk_rows, rows - start))
            chunk = adult.iloc[drawn].reset_index(drop=True)
            chunk.to_csv(csv_file, index=False, header=start == 0)
            table = pa.Table.from_pandas(chunk, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(parquet_path, table.schema)
            writer.write_table(table)
    if writer is not None:
        writer.close()
    return csv_path, parquet_path


def _measure(mode: str, path: Path, max_rows: int, seed: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _CHILD, mode, str(path), str(max_rows), str(seed)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args: argparse.Namespace) -> int:
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="llmdisc-bench-audit-") as tmp:
            start = time.perf_counter()
            paths = write_tables(Path(tmp), rows, args.seed)
            sizes = ", ".join(f"{p.suffix[1:]} {p.stat().st_size / 2**20:.0f} MiB" for p in paths)
            print(f"== {rows:,} Adult rows resampled with seed {args.seed} "
                  f"(written in {time.perf_counter() - start:.1f} s): {sizes}", flush=True)
            for path in paths:
                fig = _measure("audit", path, args.max_rows, args.seed)
                added = fig["peak_mib"] - fig["baseline_mib"]
                print(f"{path.suffix[1:]:>8}: count {fig['count_s']:.2f} s ({fig['n_rows']:,} rows), read "
                      f"{fig['rows_read']:,} rows at seeded positions {fig['sample_s']:.2f} s, "
                      f"schema {fig['schema_s']:.2f} s; peak RSS {fig['peak_mib']:.0f} MiB "
                      f"(RSS after imports {fig['baseline_mib']:.0f} MiB, "
                      f"import peak {fig['import_peak_mib']:.0f} MiB)", flush=True)
                line = (f"{'':>10}memory stays bounded: peak RSS {fig['peak_mib']:.0f} MiB for this "
                        f"{path.stat().st_size / 2**20:.0f} MiB file, "
                        f"at most {added:.0f} MiB above the post-import size")
                if not args.no_full_read:
                    full = _measure("full", path, args.max_rows, args.seed)
                    above = full["peak_mib"] - full["baseline_mib"]
                    line += (f"; a whole-file pandas read peaks at {full['peak_mib']:.0f} MiB "
                             f"({above:.0f} MiB above, {full['read_s']:.2f} s)")
                print(line, flush=True)
    return 0
