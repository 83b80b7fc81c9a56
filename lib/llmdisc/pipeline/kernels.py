"""The environment a notebook kernel inherits: its CPU threads and pinned instruction set, set around the
kernels' launch (:func:`kernel_environment`) and removed after; a variable the user set is kept.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

from llmdisc.determinism import pinned_kernels

THREAD_ENVS = ("LLMDISC_TORCH_THREADS", "LLMDISC_LLM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Thread counts a kernel's torch, llama.cpp and BLAS read at start (set to 1 for side-by-side runs)."""


@contextlib.contextmanager
def one_thread_per_kernel(workers: int) -> Iterator[None]:
    """With ``workers`` > 1, start every kernel with one CPU thread: side by side they keep the cores busy
    without contention (docs/measurements.md)."""
    if workers <= 1:
        yield
        return
    added = [name for name in THREAD_ENVS if name not in os.environ]
    os.environ.update(dict.fromkeys(added, "1"))
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def kernel_environment(workers: int) -> Iterator[None]:
    """Kernels started in the block get :func:`one_thread_per_kernel`'s threads and the pinned instruction set of
    :func:`llmdisc.determinism.pinned_kernels` (every manifest they write records it)."""
    with one_thread_per_kernel(workers), pinned_kernels():
        yield
