"""``llmdisc bench embedded``: the embedded model's speed on prompts built like the real ones.

Each trial is a real Adult C1 prompt (``paper`` variant, 20 fresh rows; ``--condition C2``). For each thread count
it loads the model, then runs the same trials with llama.cpp's prompt cache on, then off, and reports whether the
answers differ (the cache can change them). Printed per setting: seconds per verdict, trials/min, prompt and
generation tokens/s, cached prompt tokens, share of schema-valid answers; then the cache's gain. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from llmdisc.cli.benchmarks._common import adult_prompts

NAME = "embedded"
HELP = "embedded model (SmolLM2-135M, xllamacpp): trials/min, prompt and generation tok/s, schema-valid share, " \
       "prompt-cache gain"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, default=3, help="trials per setting (default 3)")
    parser.add_argument("--threads", type=int, nargs="+", default=[2],
                        help="CPU thread counts to compare (default: 2)")
    parser.add_argument("--condition", default="C1", choices=["C1", "C2"], help="prompt condition (default C1)")
    parser.add_argument("--max-tokens", type=int, default=512, help="generation cap per answer (default 512)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the row samples and of generation")


@dataclass
class _Trial:
    seconds: float
    prompt_tokens: int
    evaluated_tokens: int
    cached_tokens: int
    prompt_ms: float
    generated_tokens: int
    generation_ms: float
    valid: bool
    text: str


def _run_series(provider, requests: list, max_tokens: int, seed: int) -> list[_Trial]:  # noqa: ANN001
    from llmdisc.discrimination.answers import parse_answer
    from llmdisc.discrimination.providers.base import GenerateConfig

    trials = []
    for request in requests:
        completion = provider.generate(request, GenerateConfig(temperature=0.0, seed=seed, max_tokens=max_tokens))
        meta = completion.metadata
        trials.append(_Trial(completion.latency_s or 0.0, completion.prompt_tokens or 0,
                             meta.get("evaluated_prompt_tokens") or 0, meta.get("cached_prompt_tokens") or 0,
                             meta.get("prompt_ms") or 0.0, completion.completion_tokens or 0,
                             meta.get("generation_ms") or 0.0, parse_answer(completion.text).valid,
                             completion.text))
    return trials


def _row(threads: int, cache: bool, trials: list[_Trial]) -> list[object]:
    seconds = statistics.mean(t.seconds for t in trials)
    prompt_rate = sum(t.evaluated_tokens for t in trials) / max(1e-9, sum(t.prompt_ms for t in trials) / 1000)
    gen_rate = sum(t.generated_tokens for t in trials) / max(1e-9, sum(t.generation_ms for t in trials) / 1000)
    return [threads, "on" if cache else "off", len(trials), round(statistics.mean(t.prompt_tokens for t in trials)),
            round(statistics.mean(t.cached_tokens for t in trials)), f"{seconds:.1f}", f"{60 / seconds:.2f}",
            f"{prompt_rate:.0f}", f"{gen_rate:.1f}", round(statistics.mean(t.generated_tokens for t in trials)),
            f"{sum(t.valid for t in trials)}/{len(trials)}"]


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from llmdisc.discrimination.providers.embedded import EmbeddedProvider, unload_all
    from llmdisc.errors import DataError

    try:
        requests = adult_prompts(args.trials, args.condition, args.seed, variant="paper")
    except DataError as exc:
        print(f"cannot build real prompts: {exc}")
        return 2
    rows, gains = [], []
    for threads in args.threads:
        unload_all()
        provider = EmbeddedProvider(threads=threads)
        start = time.perf_counter()
        loaded = provider.loaded()
        print(f"threads={threads}: model {provider.model} ({provider.path.name}, sha256 "
              f"{provider.model_digest()[:12]}…) loaded in {loaded.load_seconds:.1f} s "
              f"({time.perf_counter() - start:.1f} s with the checksum)", flush=True)
        series = {}
        # Cache ON first: the prompts are new to the model, so only the prefix shared with the previous
        # prompt is reused (as in a real run with fresh samples); OFF never reads the cache.
        for cache in (True, False):
            provider.cache_prompt = cache
            series[cache] = _run_series(provider, requests, args.max_tokens, args.seed)
            rows.append(_row(threads, cache, series[cache]))
            print(f"  prompt cache {'on' if cache else 'off'}: done", flush=True)
        off, on = series[False], series[True]
        gains.append([threads, f"{sum(t.prompt_ms for t in off) / max(1e-9, sum(t.prompt_ms for t in on)):.2f}x",
                      f"{sum(t.seconds for t in off) / max(1e-9, sum(t.seconds for t in on)):.2f}x",
                      f"{sum(a.text != b.text for a, b in zip(off, on))}/{len(off)}"])
    print("\n" + tabulate(rows, headers=["threads", "prompt cache", "trials", "prompt tok", "cached tok",
                                         "s/verdict", "trials/min", "prompt tok/s", "gen tok/s", "gen tok",
                                         "schema-valid"]))
    print("\n" + tabulate(gains, headers=["threads", "prompt-time gain (off/on)", "verdict-time gain (off/on)",
                                          "answers that differ"]))
    print("\nThe cache reuses the KV of the longest common prefix with the previous prompt in the slot; with fresh "
          "samples that is the system prompt and the table header. Figures depend on the machine's load.")
    return 0
