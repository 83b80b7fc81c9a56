"""``llmdisc bench probability``: label scoring against verdict generation, and against the prefill limit.

Each trial is a real Adult prompt (neutral variant, 20 freshly sampled rows; ``--condition C2`` adds the
metadata block). For every prompt the embedded model is asked twice, in this order: a generated verdict
(:meth:`~llmdisc.discrimination.providers.base.Provider.complete`, the study's reading) and the label scores
(:meth:`~llmdisc.discrimination.providers.base.Provider.label_scores`, the verdict as a probability). The
verdict call's own timings give the model's prompt-processing speed on this machine (evaluated prompt tokens
over prompt milliseconds), hence the **prefill limit**: the seconds that evaluating the prompt alone takes,
``prompt tokens / prompt tokens per second``, the least any single-pass scoring of that prompt can cost.

Printed: per reading, median seconds per trial and trials per minute; the median prefill limit; and the
ratio ``label-score seconds / prefill limit`` (target: at most 1.5) and the speed-up over verdicts. Nothing
is asserted; figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import statistics
import time

NAME = "probability"
HELP = "label scoring vs verdict generation (embedded model): trials/min, and seconds against the prefill limit"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options: trials, condition, seed."""
    parser.add_argument("--trials", type=int, default=3, help="prompts (default 3)")
    parser.add_argument("--condition", default="C1", choices=["C1", "C2"], help="prompt condition (default C1)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the row samples")


def _requests(n: int, condition: str, seed: int) -> list:
    from llmdisc.data.datasets import load_dataset
    from llmdisc.discrimination.metadata import metadata_block
    from llmdisc.discrimination.prompts import build_prompt
    from llmdisc.discrimination.samples import sample_rows

    table = load_dataset("adult")
    metadata = metadata_block(table, include_row_count=False) if condition == "C2" else None
    return [build_prompt(sample_rows(table, 20, seed=seed + i)[0], condition=condition, variant="neutral",
                         metadata_text=metadata) for i in range(n)]


def run(args: argparse.Namespace) -> int:
    """Time both readings on the same prompts and print the figures."""
    import asyncio

    from tabulate import tabulate

    from llmdisc.discrimination.providers.base import GenerateConfig
    from llmdisc.discrimination.providers.embedded import EmbeddedProvider
    from llmdisc.errors import DataError

    try:
        requests = _requests(args.trials, args.condition, args.seed)
    except DataError as exc:
        print(f"cannot build real prompts: {exc}")
        return 2
    provider = EmbeddedProvider()
    started = time.perf_counter()
    provider.loaded()
    print(f"model {provider.model} loaded in {time.perf_counter() - started:.1f} s", flush=True)
    config = GenerateConfig()
    verdict_s, score_s, limit_s, prompt_tokens, rates, masses = [], [], [], [], [], []

    async def one(request) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        completion = await provider.complete(request, config)
        verdict_s.append(time.perf_counter() - t0)
        meta = completion.metadata
        rate = (meta.get("evaluated_prompt_tokens") or 0) / max(1e-9, (meta.get("prompt_ms") or 0) / 1000)
        t0 = time.perf_counter()
        scores = await provider.label_scores(request, config)
        score_s.append(time.perf_counter() - t0)
        tokens = completion.prompt_tokens or scores.prompt_tokens or 0
        prompt_tokens.append(tokens)
        rates.append(rate)
        limit_s.append(tokens / rate if rate else float("nan"))
        masses.append(scores.label_mass)

    for i, request in enumerate(requests):
        asyncio.run(one(request))
        print(f"  prompt {i + 1}/{len(requests)}: verdict {verdict_s[-1]:.1f} s, label scores {score_s[-1]:.1f} s, "
              f"prefill limit {limit_s[-1]:.1f} s", flush=True)
    med = statistics.median
    rows = [["verdict (generated JSON)", f"{med(verdict_s):.1f}", f"{60 / med(verdict_s):.2f}", "–"],
            ["label scores (probability)", f"{med(score_s):.1f}", f"{60 / med(score_s):.2f}",
             f"{med(score_s) / med(limit_s):.2f}x"]]
    print()
    print(tabulate(rows, headers=["reading", "median s/trial", "trials/min", "÷ prefill limit"]))
    print(f"\nprompt: median {med(prompt_tokens):.0f} tokens; prompt processing {med(rates):.0f} tok/s on this "
          f"machine; prefill limit {med(limit_s):.1f} s. Label scores are {med(verdict_s) / med(score_s):.1f}x "
          f"faster than verdicts (target for scores: at most 1.5x the prefill limit). Median label mass "
          f"{med(masses):.3f}.")
    return 0
