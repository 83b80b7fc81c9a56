"""Fit and sample one SDV single-table synthesizer, seeded, on one torch thread by default.

The part of stage 02 that touches SDV 2 and torch (:mod:`llmdisc.synthesis.releases` adds validation, caching and
manifests). Entry point: :func:`fit_and_sample`; a seed fully determines the table, and fused Adam plus the pinned
kernels (:mod:`llmdisc.determinism`) keep it independent of the CPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pandas as pd

from llmdisc.errors import ConfigError

logger = logging.getLogger(__name__)

SYNTHESIZERS = ("gaussian_copula", "ctgan", "tvae")
METADATA_MODES = ("declared", "detected")
COLUMN_KINDS = ("categorical", "numerical")
NEURAL_SYNTHESIZERS = ("ctgan", "tvae")
TABLE_NAME = "table"  # SDV 2 needs a table name; a fixed one keeps fitted models independent of the key
TORCH_THREADS_ENV = "LLMDISC_TORCH_THREADS"


def _check(value: str, valid: tuple[str, ...], what: str, fix: str) -> str:
    if value not in valid:
        raise ConfigError(f"unknown {what} {value!r}; valid {what}s: {', '.join(valid)} (fix: {fix})")
    return value


def check_synthesizer(synthesizer: str) -> str:
    """Return ``synthesizer`` if known, else raise a ConfigError listing the valid names."""
    return _check(synthesizer, SYNTHESIZERS, "synthesizer",
                  "pass one of them, e.g. synthesizer='gaussian_copula' or --synthesizers ctgan")


def check_metadata_mode(metadata_mode: str) -> str:
    """Return ``metadata_mode`` if known, else raise a ConfigError listing the valid modes."""
    return _check(metadata_mode, METADATA_MODES, "metadata mode",
                  "'declared' uses the dataset's column kinds, 'detected' is SDV's auto-detection as in the "
                  "paper")


def torch_threads() -> int:
    """Number of torch threads for fitting: ``LLMDISC_TORCH_THREADS`` or 1 (two threads ran CTGAN/TVAE many times
    slower on a shared 2-core machine: docs/measurements.md)."""
    raw = os.environ.get(TORCH_THREADS_ENV, "1")
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{TORCH_THREADS_ENV}={raw!r} is not a positive integer (fix: e.g. {TORCH_THREADS_ENV}=1)")
    return value


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed ``random``, NumPy's global generator and torch for the block (SDV, RDT and ctgan draw from them),
    then restore their states."""
    import torch

    py_state, np_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
        torch.set_rng_state(torch_state)


@contextlib.contextmanager
def torch_thread_limit(threads: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(threads)``, restoring the previous count after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def fused_adam() -> Iterator[None]:
    """CTGAN and TVAE train with torch's fused Adam for the block: the same update, in one ATen kernel.

    Why: ctgan's default Adam takes square roots through MKL, whose AMD kernel refines the approximate ``rsqrtps``
    (last bits are the hardware's); the fused kernel's are exact (docs/measurements.md, "Kernels' instruction set").
    """
    import ctgan.synthesizers.tvae as tvae_module
    import torch.optim

    adam = torch.optim.Adam

    class FusedAdam(adam):
        def __init__(self, params, **kwargs):  # noqa: ANN001, ANN003 - torch's own signature
            super().__init__(params, fused=True, **kwargs)

    # ctgan's CTGAN looks up torch.optim.Adam at fit time; its TVAE imported the name
    torch.optim.Adam, tvae_module.Adam = FusedAdam, FusedAdam
    try:
        yield
    finally:
        torch.optim.Adam, tvae_module.Adam = adam, adam


def build_metadata(table: pd.DataFrame, metadata_mode: str, column_kinds: dict[str, str] | None) -> Any:
    """Return SDV ``Metadata`` for ``table`` (one table named :data:`TABLE_NAME`).

    ``declared`` maps ``column_kinds`` (required then) to sdtypes; ``detected`` runs SDV's detection as the paper
    did (integer codes with more than 10 distinct values become ``numerical``, so codes are invented).
    """
    from sdv.metadata import Metadata

    if metadata_mode == "detected":
        return Metadata.detect_from_dataframes({TABLE_NAME: table})
    assert column_kinds is not None
    columns = {column: {"sdtype": column_kinds[column]} for column in table.columns}
    return Metadata.load_from_dict({"tables": {TABLE_NAME: {"columns": columns}}, "relationships": []})


def _make_synthesizer(synthesizer: str, metadata: Any, epochs: int | None, verbose: bool) -> Any:
    from sdv.single_table import CTGANSynthesizer, GaussianCopulaSynthesizer, TVAESynthesizer

    if synthesizer == "gaussian_copula":
        return GaussianCopulaSynthesizer(metadata)
    cls = CTGANSynthesizer if synthesizer == "ctgan" else TVAESynthesizer
    kwargs: dict[str, Any] = {"verbose": verbose, "enable_gpu": False}
    if epochs is not None:
        kwargs["epochs"] = epochs
    return cls(metadata, **kwargs)


@dataclass
class FitResult:
    """A fitted SDV synthesizer, its sample and timings (seconds, wall clock)."""

    model: Any
    table: pd.DataFrame
    fit_seconds: float
    sample_seconds: float
    metadata: dict[str, Any]
    loss_values: pd.DataFrame | None


def fit_and_sample(train: pd.DataFrame, *, synthesizer: str, seed: int, epochs: int | None,
                   metadata_mode: str, column_kinds: dict[str, str] | None, num_rows: int,
                   show_progress: bool) -> FitResult:
    """Fit ``synthesizer`` on ``train`` and sample ``num_rows`` rows, every random draw from ``seed``
    (fitting: the global generators; sampling: the model's own random state).

    ``epochs`` trains ``ctgan``/``tvae`` (None: SDV's 300); ``metadata_mode`` and ``column_kinds``: see
    :func:`build_metadata`; ``show_progress`` shows a stage bar and ctgan's per-epoch bar (with losses). The
    result's ``fit_seconds`` includes SDV's preprocessing (transformer set-up).
    """
    import joblib
    from tqdm import tqdm  # plain text bars, like ctgan's own, so executed notebooks keep them

    with tqdm(total=3, desc=f"{synthesizer}: metadata", disable=not show_progress, leave=True) as stages:
        metadata = build_metadata(train, metadata_mode, column_kinds)
        with warnings.catch_warnings():
            # SDV advises saving metadata to JSON; we store its dict in the manifest instead.
            warnings.filterwarnings("ignore", message=".*save_to_json.*")
            model = _make_synthesizer(synthesizer, metadata, epochs, verbose=show_progress)
        stages.update()
        stages.set_description(f"{synthesizer}: fit")
        # joblib's default (loky) worker processes do not share our seeded generators and were slow to start
        # (docs/measurements.md); sequential in-process execution keeps the fit seeded.
        with torch_thread_limit(torch_threads()), joblib.parallel_config(backend="sequential"), fused_adam():
            logger.info("fitting %s on %d rows x %d columns (seed %d, epochs %s, metadata %s)",
                        synthesizer, len(train), train.shape[1], seed, epochs, metadata_mode)
            start = time.perf_counter()
            with seeded(seed):
                model.fit({TABLE_NAME: train})
            fit_seconds = time.perf_counter() - start
            stages.update()
            stages.set_description(f"{synthesizer}: sample")
            start = time.perf_counter()
            with seeded(seed):
                model.reset_sampling()
                # Without this SDV samples from its own fixed seed, whatever ours is.
                model._set_random_state(seed)
                table = model.sample(num_rows)[TABLE_NAME]
            sample_seconds = time.perf_counter() - start
            stages.update()
    loss = model.get_loss_values() if synthesizer in NEURAL_SYNTHESIZERS else None
    return FitResult(model=model, table=table.reset_index(drop=True), fit_seconds=fit_seconds,
                     sample_seconds=sample_seconds, metadata=metadata.to_dict(), loss_values=loss)
