"""The instruction set the default run's kernels compute with, pinned so its numbers do not depend on the CPU.

torch, NumPy and OpenBLAS pick their kernels (ATen's log-softmax, attention and training steps; NumPy's ``exp``,
``log``, ``pow``) at the widest instruction set the CPU offers, and AVX-512 and AVX2 round differently. So every
process of the default run (the pipeline's notebook kernels, the ``llmdisc`` command line) starts with
:data:`KERNEL_PINS` in its environment (:func:`pinned_kernels`), set before torch or NumPy is imported:
``ATEN_CPU_CAPABILITY=avx2``, ``NPY_DISABLE_CPU_FEATURES`` (:data:`NUMPY_AVX512`), ``OPENBLAS_CORETYPE=Haswell``;
only on x86-64 Linux CPUs with AVX2 and FMA (another would stop at an illegal instruction). ``LLMDISC_KERNEL_PINS``
is ``avx2`` (the default), ``strict`` (adds :data:`STRICT_PINS`) or ``off``; a variable the user set is never
overwritten. :func:`kernel_record` is what every manifest records. What each pin changes and costs, and why MKL and
oneDNN are not pinned by default: ``docs/measurements.md``, "Kernels' instruction set".
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from typing import Any, Iterator

from llmdisc.errors import ConfigError

NUMPY_AVX512 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
"""NumPy's AVX-512 dispatch targets (names a NumPy does not know are ignored)."""
KERNEL_PINS: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512,
                               "OPENBLAS_CORETYPE": "Haswell"}
"""The default: torch's, NumPy's and OpenBLAS's kernels at AVX2 (what was measured: ``docs/measurements.md``)."""
STRICT_PINS: dict[str, str] = {**KERNEL_PINS, "MKL_CBWR": "COMPATIBLE"}
"""``LLMDISC_KERNEL_PINS=strict``: also MKL's SSE2 reproducibility branch (Intel and AMD agree on matrix
products; 2.3x slower model passes)."""
MODE_ENV = "LLMDISC_KERNEL_PINS"
MODES = {"avx2": KERNEL_PINS, "strict": STRICT_PINS, "off": {}}
RECORDED = ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")
"""The variables :func:`kernel_record` reports, pinned or not."""


def pin_mode() -> str:
    """``$LLMDISC_KERNEL_PINS`` or ``avx2``.

    Raises:
        ConfigError: an unknown mode (the message lists the known ones).
    """
    mode = os.environ.get(MODE_ENV, "").strip().lower() or "avx2"
    if mode not in MODES:
        raise ConfigError(f"${MODE_ENV}={mode!r} is not known; fix: use one of {', '.join(MODES)} (default avx2)")
    return mode


def has_avx2() -> bool:
    """Whether this is an x86-64 CPU with AVX2 and FMA (``/proc/cpuinfo``; False where it cannot be read)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def kernel_pins() -> dict[str, str]:
    """The variables the current mode pins on this machine ({} on a CPU without AVX2 and FMA)."""
    mode = pin_mode()
    return dict(MODES[mode]) if has_avx2() else {}


@contextlib.contextmanager
def pinned_kernels() -> Iterator[dict[str, str]]:
    """Set the pins missing from ``os.environ`` for the block (processes started inside inherit them), then remove
    what was added; yields what was added. Variables already set (by the user) are kept as they are.

    The pins reach a library only in a process that has not loaded it yet: a notebook kernel, a subprocess, or a
    command line that sets them before its first torch or NumPy import.
    """
    added = {name: value for name, value in kernel_pins().items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield added
    finally:
        for name in added:
            os.environ.pop(name, None)


def _torch_capability() -> str | None:
    """The capability the loaded torch's kernels run at; None when torch is not loaded (never imported for this)."""
    if "torch" not in sys.modules:
        return None
    try:
        return sys.modules["torch"].backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001 - a torch without the query: the variables say what was asked
        return None


def kernel_record() -> dict[str, Any]:
    """What a manifest records of the arithmetic: the mode, the variables of :data:`RECORDED` as this process's
    environment holds them (None: unset), and, when torch is loaded, the capability its kernels run at.

    ``pinned`` is True when every pin of the mode is in the environment with its value and, if torch is loaded,
    its kernels run at the pinned capability.
    """
    try:
        mode = pin_mode()
        pins = kernel_pins()
    except ConfigError:
        mode, pins = os.environ.get(MODE_ENV, ""), {}
    capability = _torch_capability()
    pinned = bool(pins) and all(os.environ.get(name) == value for name, value in pins.items())
    if capability is not None and "ATEN_CPU_CAPABILITY" in pins:
        pinned = pinned and capability.lower() == pins["ATEN_CPU_CAPABILITY"]
    return {"mode": mode, "machine": platform.machine(), "pinned": pinned, "torch_cpu_capability": capability,
            "variables": {name: os.environ.get(name) for name in RECORDED}}


def arithmetic_key() -> dict[str, str | None]:
    """What a cached fit is keyed on of the arithmetic: the capability ATen runs at (the loaded torch's own answer,
    else ``$ATEN_CPU_CAPABILITY`` lower-cased, else ``native``: this CPU's widest) and the other pinned variables.

    A fit at another instruction set is another release (measured: see the module docstring), so it is another
    cache entry, never a cached release computed at another one.
    """
    capability = _torch_capability() or os.environ.get("ATEN_CPU_CAPABILITY") or "native"
    return {"aten": capability.lower(), **{name: os.environ.get(name) for name in RECORDED[1:4]}}
