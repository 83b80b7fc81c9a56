"""Benchmark ``trials``: the runner's concurrency against a loopback OpenAI-compatible server.

The server (:class:`llmdisc.testing.wire_servers.OpenAIWireServer`) answers every chat completion with a
fixed valid verdict after ``--latency`` seconds; the real ``openai`` provider talks to it over HTTP.
The same trials run at concurrency 1 and at ``--concurrency`` (each into a fresh file, no cache), and
the wall times and their ratio are printed (target: >= 5x for 100 trials at 8 vs 1 with 0.5 s latency).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

NAME = "trials"
HELP = "trial runner: wall time of N trials at concurrency 1 vs K against a 0.5 s-latency loopback server"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags: ``--trials`` (100), ``--concurrency`` (8), ``--latency`` (0.5 s)."""
    parser.add_argument("--trials", type=int, default=100, help="trials per pass (default 100)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrency of the fast pass (default 8)")
    parser.add_argument("--latency", type=float, default=0.5, help="server latency per answer, seconds (0.5)")


def _tiny_tables(seed: int = 0) -> dict[str, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(seed)

    def table() -> pd.DataFrame:
        return pd.DataFrame({"age": rng.integers(18, 90, 50), "sex": rng.choice(["Male", "Female"], 50),
                             "income": rng.choice(["<=50K", ">50K"], 50)})

    return {"adult": {"real": table(), "ctgan": table()}}


async def _one_pass(base_url: str, concurrency: int, n_trials: int,
                    out: Path) -> tuple[float, dict[str, int]]:
    from llmdisc.discrimination.providers.registry import get_provider
    from llmdisc.discrimination.runner import run_trials
    from llmdisc.discrimination.samples import build_trial_queue

    per_label = max(1, -(-n_trials // 2))
    specs = build_trial_queue(["adult"], ["ctgan"], ["C1"], per_label, run_seed=0)[:n_trials]
    provider = get_provider("openai", "llama-3.1-8b-instant", base_url=base_url, max_connections=concurrency)
    try:
        started = time.perf_counter()
        summary = await run_trials(specs, provider=provider, tables=_tiny_tables(), variant="neutral",
                                   metadata_source="real", out_path=out, cache=None, concurrency=concurrency,
                                   n_rows=10, progress=False)
        return time.perf_counter() - started, {"valid": summary.n_valid, "invalid": summary.n_invalid,
                                               "error": summary.n_error}
    finally:
        await provider.aclose()


def run(args: argparse.Namespace) -> int:
    """Run both passes; print wall times, throughput and the speed-up. Returns 0 (1 if a trial failed)."""
    from llmdisc.testing.wire_servers import OpenAIWireServer

    with tempfile.TemporaryDirectory() as tmp, OpenAIWireServer(latency_s=args.latency) as server:
        # Warm-up pass (not timed): imports of the SDK, SciPy and the prompt code cost seconds once.
        asyncio.run(_one_pass(server.base_url, 1, 2, Path(tmp) / "warm-up.jsonl"))
        results = {}
        for concurrency in (1, args.concurrency):
            wall, counts = asyncio.run(_one_pass(server.base_url, concurrency, args.trials,
                                                 Path(tmp) / f"c{concurrency}.jsonl"))
            results[concurrency] = wall
            print(f"concurrency {concurrency:>2}: {args.trials} trials in {wall:6.2f} s "
                  f"({args.trials / wall * 60:6.1f} trials/min; {counts})", flush=True)
            if counts["valid"] != args.trials:
                print(f"  not every trial was valid: {counts}")
                return 1
    ratio = results[1] / results[args.concurrency]
    ideal = args.trials * args.latency
    print(f"speed-up at concurrency {args.concurrency} vs 1: {ratio:.2f}x (target >= 5x; "
          f"serial floor {ideal:.1f} s = {args.trials} x {args.latency} s latency)")
    return 0
