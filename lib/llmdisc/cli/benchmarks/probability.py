"""``llmdisc bench probability``: label scoring against verdict generation, and against the prefill limit.

Each trial is a real Adult prompt (neutral variant, 20 fresh rows; ``--condition C2``), read three ways by the
embedded model: a generated verdict (llama.cpp), label scores by llama.cpp forced tokens, and label scores by one
transformers forward pass (the default). The verdict call's timings give the **prefill limit** (prompt tokens ÷
llama.cpp's prompt tokens/s), the least any llama.cpp scoring of that prompt can cost. Printed per reading: median
seconds per trial, trials/min, the ratio to the prefill limit (target at most 1.5) and the speed-up over verdicts.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from llmdisc.cli.benchmarks._common import adult_prompts

NAME = "probability"
HELP = "label scoring vs verdict generation (embedded model): trials/min, and seconds against the prefill limit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, default=3, help="prompts (default 3)")
    parser.add_argument("--condition", default="C1", choices=["C1", "C2"], help="prompt condition (default C1)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the row samples")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from tabulate import tabulate

    from llmdisc.discrimination.providers.base import GenerateConfig
    from llmdisc.discrimination.providers.embedded import EmbeddedProvider
    from llmdisc.errors import DataError

    try:
        requests = adult_prompts(args.trials, args.condition, args.seed, variant="neutral")
    except DataError as exc:
        print(f"cannot build real prompts: {exc}")
        return 2
    provider = EmbeddedProvider(label_backend="llamacpp")
    fast = EmbeddedProvider()  # label_backend="transformers"
    started = time.perf_counter()
    provider.loaded()
    asyncio.run(fast.check_label_scores())
    print(f"model {provider.model} loaded (llama.cpp and transformers) in {time.perf_counter() - started:.1f} s",
          flush=True)
    config = GenerateConfig()
    verdict_s, forced_s, pass_s, forward_s, limit_s, prompt_tokens, rates, masses = [], [], [], [], [], [], [], []

    async def one(request) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        completion = await provider.complete(request, config)
        verdict_s.append(time.perf_counter() - t0)
        meta = completion.metadata
        rate = (meta.get("evaluated_prompt_tokens") or 0) / max(1e-9, (meta.get("prompt_ms") or 0) / 1000)
        t0 = time.perf_counter()
        forced = await provider.label_scores(request, config)
        forced_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scores = await fast.label_scores(request, config)
        pass_s.append(time.perf_counter() - t0)
        forward_s.append(scores.metadata["timings"]["forward_s"])
        tokens = completion.prompt_tokens or forced.prompt_tokens or 0
        prompt_tokens.append(tokens)
        rates.append(rate)
        limit_s.append(tokens / rate if rate else float("nan"))
        masses.append(scores.label_mass)

    for i, request in enumerate(requests):
        asyncio.run(one(request))
        print(f"  prompt {i + 1}/{len(requests)}: verdict {verdict_s[-1]:.1f} s, label scores llama.cpp "
              f"{forced_s[-1]:.1f} s, transformers {pass_s[-1]:.1f} s, prefill limit {limit_s[-1]:.1f} s",
              flush=True)
    med = statistics.median
    rows = [[reading, f"{med(s):.1f}", f"{60 / med(s):.2f}", f"{med(s) / med(limit_s):.2f}x"]
            for reading, s in (("verdict (generated JSON, llama.cpp)", verdict_s),
                               ("label scores, llama.cpp forced tokens", forced_s),
                               ("label scores, transformers one pass (default)", pass_s))]
    print("\n" + tabulate(rows, headers=["reading", "median s/trial", "trials/min", "÷ prefill limit"]))
    print(f"\nprompt: median {med(prompt_tokens):.0f} tokens; llama.cpp prompt processing {med(rates):.0f} tok/s on "
          f"this machine, prefill limit {med(limit_s):.1f} s; the transformers forward pass alone {med(forward_s):.1f} "
          f"s. Default label scores are {med(verdict_s) / med(pass_s):.1f}x faster than verdicts (target for scores: "
          f"at most 1.5x the prefill limit). Median label mass {med(masses):.3f}. Load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.")
    return 0
