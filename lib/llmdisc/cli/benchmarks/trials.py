"""Benchmark ``trials``: the runner's concurrency against a loopback OpenAI-compatible server.

The server answers every chat completion with a fixed valid verdict after ``--latency`` seconds; the real
``openai`` provider talks to it over HTTP. The same trials run at concurrency 1 and at ``--concurrency``; wall times
and their ratio are printed (target: >= 5x for 100 trials at 8 vs 1 with 0.5 s latency).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

NAME = "trials"
HELP = "trial runner: wall time of N trials at concurrency 1 vs K against a 0.5 s-latency loopback server"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, default=100, help="trials per pass (default 100)")
    parser.add_argument("--concurrency", type=int, default=8, help="concurrency of the fast pass (default 8)")
    parser.add_argument("--latency", type=float, default=0.5, help="server latency per answer, seconds (0.5)")


MODEL = "llama-3.1-8b-instant"
_VERDICT = json.dumps({"verdict": "REAL", "confidence": 70, "reasoning": "a fixed answer from the loopback "
                       "benchmark server", "red_flags": [], "supporting_evidence": ["plausible values"]})


@contextmanager
def _loopback_server(latency_s: float) -> Iterator[str]:
    """Serve OpenAI's ``GET /v1/models`` and ``POST /v1/chat/completions`` on 127.0.0.1; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def _send(self, payload: dict) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._send({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "x"}]})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            self._send({"id": "chatcmpl-loopback", "object": "chat.completion", "created": int(time.time()),
                        "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                                     "message": {"role": "assistant", "content": _VERDICT}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _tiny_tables(seed: int = 0) -> dict[str, dict[str, pd.DataFrame]]:
    rng = np.random.default_rng(seed)
    real, ctgan = (pd.DataFrame({"age": rng.integers(18, 90, 50), "sex": rng.choice(["Male", "Female"], 50),
                                 "income": rng.choice(["<=50K", ">50K"], 50)}) for _ in range(2))
    return {"adult": {"real": real, "ctgan": ctgan}}


async def _one_pass(base_url: str, concurrency: int, n_trials: int,
                    out: Path) -> tuple[float, dict[str, int]]:
    from llmdisc.discrimination.providers.registry import get_provider
    from llmdisc.discrimination.runner import run_trials
    from llmdisc.discrimination.samples import build_trial_queue

    per_label = max(1, -(-n_trials // 2))
    specs = build_trial_queue(["adult"], ["ctgan"], ["C1"], per_label, run_seed=0)[:n_trials]
    provider = get_provider("openai", MODEL, base_url=base_url, max_connections=concurrency)
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
    with tempfile.TemporaryDirectory() as tmp, _loopback_server(args.latency) as base_url:
        # Warm-up pass (not timed): imports of the SDK, SciPy and the prompt code cost seconds once.
        asyncio.run(_one_pass(base_url, 1, 2, Path(tmp) / "warm-up.jsonl"))
        results = {}
        for concurrency in (1, args.concurrency):
            wall, counts = asyncio.run(_one_pass(base_url, concurrency, args.trials,
                                                 Path(tmp) / f"c{concurrency}.jsonl"))
            results[concurrency] = wall
            print(f"concurrency {concurrency:>2}: {args.trials} trials in {wall:6.2f} s "
                  f"({args.trials / wall * 60:6.1f} trials/min; {counts})", flush=True)
            if counts["valid"] != args.trials:
                print(f"  not every trial was valid: {counts}")
                return 1
    ratio = results[1] / results[args.concurrency]
    print(f"speed-up at concurrency {args.concurrency} vs 1: {ratio:.2f}x (target >= 5x; "
          f"serial floor {args.trials * args.latency:.1f} s = {args.trials} x {args.latency} s latency)")
    return 0
