"""The instruction set the default run's kernels compute with, pinned so its numbers do not depend on the CPU.

torch, NumPy and OpenBLAS pick kernels at the widest instruction set the CPU offers, and AVX-512 and AVX2 round
differently. So every process of the default run starts with :data:`KERNEL_PINS` in its environment
(:func:`pinned_kernels`, before torch or NumPy is imported), only on x86-64 CPUs with AVX2 and FMA; a variable the
user set is never overwritten. ``LLMDISC_KERNEL_PINS``: ``avx2`` (default), ``strict`` or ``off``. Manifests record
:func:`kernel_record`. What each pin changes and costs: ``docs/measurements.md``, "Kernels' instruction set".
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import sys
from typing import Any, Iterator

from llmdisc.errors import ConfigError

NUMPY_AVX512 = "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
KERNEL_PINS: dict[str, str] = {"ATEN_CPU_CAPABILITY": "avx2", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512,
                               "OPENBLAS_CORETYPE": "Haswell"}
STRICT_PINS: dict[str, str] = {**KERNEL_PINS, "MKL_CBWR": "COMPATIBLE"}
"""``LLMDISC_KERNEL_PINS=strict``: also MKL's reproducibility branch (Intel and AMD agree; slower passes)."""
MODE_ENV = "LLMDISC_KERNEL_PINS"
MODES = {"avx2": KERNEL_PINS, "strict": STRICT_PINS, "off": {}}
RECORDED = ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")


def pin_mode() -> str:
    """``$LLMDISC_KERNEL_PINS`` or ``avx2``. Raises ConfigError for an unknown mode."""
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
    return dict(MODES[pin_mode()]) if has_avx2() else {}


@contextlib.contextmanager
def pinned_kernels() -> Iterator[dict[str, str]]:
    """Set the pins missing from ``os.environ`` for the block, then remove them; yields what was added. They reach
    a library only in a process that has not loaded it yet (a notebook kernel, a subprocess)."""
    added = {name: value for name, value in kernel_pins().items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield added
    finally:
        for name in added:
            os.environ.pop(name, None)


def _torch_capability() -> str | None:
    if "torch" not in sys.modules:
        return None
    try:
        return sys.modules["torch"].backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001 - a torch without the query: the variables say what was asked
        return None


def _numpy_avx512() -> bool | None:
    """Whether the loaded NumPy runs its AVX-512 kernels (None: NumPy not loaded or the query missing)."""
    if "numpy" not in sys.modules:
        return None
    for name in ("numpy.core._multiarray_umath", "numpy._core._multiarray_umath"):  # NumPy 1.x, 2.x
        with contextlib.suppress(ImportError, AttributeError):
            return bool(importlib.import_module(name).__cpu_features__.get("AVX512F"))
    return None


def kernel_record() -> dict[str, Any]:
    """What a manifest records of the arithmetic: the mode, the variables of :data:`RECORDED` (None: unset), the
    loaded torch's capability, whether the loaded NumPy runs AVX-512, and ``pinned`` (every pin in the environment
    and, where loaded, torch and NumPy at it: a library loaded before the pins were set computes unpinned)."""
    try:
        mode, pins = pin_mode(), kernel_pins()
    except ConfigError:
        mode, pins = os.environ.get(MODE_ENV, ""), {}
    capability = _torch_capability()
    pinned = bool(pins) and all(os.environ.get(name) == value for name, value in pins.items())
    if capability is not None and "ATEN_CPU_CAPABILITY" in pins:
        pinned = pinned and capability.lower() == pins["ATEN_CPU_CAPABILITY"]
    numpy_avx512 = _numpy_avx512()
    if numpy_avx512 and "NPY_DISABLE_CPU_FEATURES" in pins:
        pinned = False
    return {"mode": mode, "machine": platform.machine(), "pinned": pinned, "torch_cpu_capability": capability,
            "numpy_avx512": numpy_avx512, "variables": {name: os.environ.get(name) for name in RECORDED}}


def arithmetic_key() -> dict[str, str | None]:
    """What a cached fit is keyed on of the arithmetic (a fit at another instruction set is another release): the
    capability ATen runs at (``native`` when unknown) and the other pinned variables. Torch is loaded first: the
    capability it reports once loaded can differ from the variable's absence, and a key must not depend on whether
    something else loaded torch already."""
    with contextlib.suppress(ImportError):
        importlib.import_module("torch")
    capability = _torch_capability() or os.environ.get("ATEN_CPU_CAPABILITY") or "native"
    return {"aten": capability.lower(), **{name: os.environ.get(name) for name in RECORDED[1:4]}}
