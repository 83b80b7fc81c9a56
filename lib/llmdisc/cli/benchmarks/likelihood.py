"""``llmdisc bench likelihood``: the likelihood scorers' speed and peak memory, per packaged model and backend.

For each installed model of :data:`llmdisc.discrimination.likelihood.LIKELIHOOD_MODELS` and each backend
(``transformers``: one forward pass; ``llamacpp``: forced tokens, one decoding step each), in a fresh child process
(its own peak RSS): load seconds, then C1 prompts of Adult holdout samples scored as notebook 09 scores them.
llama.cpp scores ``--llamacpp-rows``-row samples (20 rows would take tens of minutes), extrapolated to 20 rows.
Printed per row: load s, samples/min, scored tokens/s, llama.cpp's prompt-processing limit, peak RSS (MiB).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

from llmdisc.cli.benchmarks._common import _child, peak_rss_mib

NAME = "likelihood"
HELP = "likelihood scorers (transformers vs llama.cpp): samples/min, tokens/s vs prompt-processing limit, peak memory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", nargs="+", default=None, metavar="NAME",
                        help="models to measure (default: every installed one of LIKELIHOOD_MODELS, opt-in included)")
    parser.add_argument("--samples", type=int, default=3, help="samples per backend (default 3)")
    parser.add_argument("--rows", type=int, default=20, help="rows per transformers sample (default 20)")
    parser.add_argument("--llamacpp-rows", type=int, default=2, help="rows per llama.cpp sample (default 2)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the row samples")
    parser.add_argument("--backends", nargs="+", default=["transformers", "llamacpp"],
                        choices=["transformers", "llamacpp"], help="backends to measure")


def benchmark_table():  # noqa: ANN202
    """The table the benchmarks sample: the prepared Adult holdout, else a generated 500-row table; and its name."""
    import numpy as np
    import pandas as pd

    from llmdisc.data.datasets import load_processed
    from llmdisc.errors import DataError

    try:
        return load_processed("adult", "holdout"), "adult holdout"
    except DataError:
        rng = np.random.default_rng(0)
        return pd.DataFrame({"age": rng.integers(17, 90, 500), "workclass": rng.choice(["Private", "State-gov"], 500),
                             "hours-per-week": rng.integers(1, 99, 500)}), "generated table"


def _prompt_limit(model: str, text: str, threads: int) -> float | None:
    """llama.cpp's prompt-processing tokens/s on ``text`` (a one-token completion, prompt cache off)."""
    from llmdisc.discrimination.likelihood.llamacpp_backend import LlamaCppScorer

    scorer = LlamaCppScorer(model, threads=threads)
    result = scorer.server.handle_completions({"prompt": text, "n_predict": 1, "cache_prompt": False,
                                               "temperature": 0.0, "stream": False})
    return (result.get("timings") or {}).get("prompt_per_second") if isinstance(result, dict) else None


def _measure(model: str, backend: str, samples: int, rows: int, threads: int, seed: int, queue) -> None:  # noqa: ANN001
    from llmdisc.discrimination.likelihood import open_scorer, place, serialise
    from llmdisc.discrimination.likelihood.sample_scores import score_sample
    from llmdisc.discrimination.samples import sample_rows

    table, source = benchmark_table()
    start = time.perf_counter()
    scorer = open_scorer(model, backend, threads)
    load = time.perf_counter() - start
    seconds = scored = prompt = 0.0
    for i in range(samples):
        sample, _ = sample_rows(table, rows, seed=seed + i)
        placed = place(sample, serialise(sample), context="c1_prompt", chat_text=scorer.chat_text, n_total=len(table))
        begin = time.perf_counter()
        tokens = scorer.token_logprobs(placed.text, start_char=placed.start, end_char=placed.end)
        seconds += time.perf_counter() - begin
        scored += score_sample(tokens, placed).n_tokens
        prompt += sum(1 for s, _ in tokens.offsets if s < placed.end)
    queue.put({"model": model, "backend": backend, "source": source, "rows": rows, "load_s": load,
               "seconds": seconds, "samples": samples, "scored_tokens": scored, "prompt_tokens": prompt,
               "peak_mib": peak_rss_mib(), "example_text": placed.text})


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from llmdisc.discrimination.likelihood import LIKELIHOOD_MODELS
    from llmdisc.discrimination.likelihood.base import likelihood_gguf_path
    from llmdisc.errors import ConfigError, LlmdiscError

    unknown = sorted(set(args.models or []) - set(LIKELIHOOD_MODELS))
    if unknown:
        raise ConfigError(f"unknown model(s) {', '.join(unknown)}; fix: pick from {', '.join(LIKELIHOOD_MODELS)}")
    rows = []
    for model in args.models or LIKELIHOOD_MODELS:
        try:  # an opt-in model's parts are joined here, once
            likelihood_gguf_path(model)
        except LlmdiscError as exc:
            print(f"{model}: skipped ({exc})")
            continue
        results = {}
        for backend in args.backends:
            n_rows = args.rows if backend == "transformers" else args.llamacpp_rows
            results[backend] = _child(_measure, model, backend, args.samples, n_rows, args.threads, args.seed)
            print(f"{model} / {backend}: done", flush=True)
        example = next(iter(results.values()))["example_text"]
        limit = _prompt_limit(model, example, args.threads)
        per_sample_tokens = {b: r["scored_tokens"] / r["samples"] for b, r in results.items()}
        full_table_tokens = per_sample_tokens.get("transformers") or None
        for backend, r in results.items():
            tok_s = r["scored_tokens"] / r["seconds"]
            prompt_s = r["prompt_tokens"] / r["seconds"] if backend == "transformers" else None
            per_min = (60 * r["samples"] / r["seconds"] if backend == "transformers"
                       else 60 * tok_s / (full_table_tokens or per_sample_tokens[backend] * 20 / r["rows"]))
            rows.append([model, backend, r["rows"], f"{r['load_s']:.1f}", f"{per_min:.2f}", f"{tok_s:.0f}",
                         f"{prompt_s:.0f}" if prompt_s else "-", f"{limit:.0f}" if limit else "-",
                         f"{r['peak_mib']:.0f}"])
    print("\n" + tabulate(rows, headers=["model", "backend", "rows", "load s", "20-row samples/min",
                                         "scored tok/s", "prompt tok/s", "llama.cpp prompt limit tok/s",
                                         "peak RSS MiB"]))
    print("\nllama.cpp's samples/min are extrapolated from its scored tokens/s to the 20-row table's token count.")
    return 0
