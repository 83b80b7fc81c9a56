"""Helpers the benchmarks share (``llmdisc bench`` skips this module: its name starts with ``_``)."""

from __future__ import annotations

import multiprocessing
import resource
from typing import Any, Callable


def _child(target: Callable[..., None], *args: Any) -> Any:
    """Run ``target(*args, queue)`` in a fresh (spawned) process and return what it put on the queue."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def adult_prompts(n: int, condition: str, seed: int, variant: str) -> list:
    """``n`` prompts of 20 fresh Adult rows (seeds ``seed + i``); with ``variant="paper"`` they state the
    table's row count (also in C2's metadata), else not. Raises DataError when Adult cannot be loaded."""
    from llmdisc.data.datasets import load_dataset
    from llmdisc.discrimination.metadata import metadata_block
    from llmdisc.discrimination.prompts import build_prompt
    from llmdisc.discrimination.samples import sample_rows

    table = load_dataset("adult")
    paper = variant == "paper"
    metadata = metadata_block(table, include_row_count=paper) if condition == "C2" else None
    return [build_prompt(sample_rows(table, 20, seed=seed + i)[0], condition=condition, variant=variant,
                         metadata_text=metadata, n_total=len(table) if paper else None) for i in range(n)]


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (``resource.getrusage``; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
