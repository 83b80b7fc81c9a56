"""Helpers the benchmarks share (``llmdisc bench`` skips this module: its name starts with ``_``)."""

from __future__ import annotations

import multiprocessing
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
