"""The kernels' pinned instruction set: set for started processes, user values kept, recorded, keyed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from llmdisc.determinism import (
    KERNEL_PINS,
    MODE_ENV,
    RECORDED,
    STRICT_PINS,
    arithmetic_key,
    has_avx2,
    kernel_pins,
    kernel_record,
    pinned_kernels,
)
from llmdisc.errors import ConfigError

X86 = has_avx2()
needs_x86 = pytest.mark.skipif(not X86, reason="the pins apply on x86-64 CPUs with AVX2 and FMA only")


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (MODE_ENV, *RECORDED):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@needs_x86
def test_the_block_sets_the_missing_pins_and_removes_them_after(clean) -> None:
    with pinned_kernels() as added:
        assert added == KERNEL_PINS
        assert set(KERNEL_PINS) == {"ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE"}
        assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2" and "AVX512F" in os.environ["NPY_DISABLE_CPU_FEATURES"]
        assert "MKL_CBWR" not in os.environ
    assert not set(KERNEL_PINS) & set(os.environ)


@needs_x86
def test_a_value_the_user_set_is_kept(clean) -> None:
    clean.setenv("ATEN_CPU_CAPABILITY", "avx512")
    with pinned_kernels() as added:
        assert "ATEN_CPU_CAPABILITY" not in added and os.environ["ATEN_CPU_CAPABILITY"] == "avx512"
        assert not kernel_record()["pinned"]  # what ran is recorded as not the default's arithmetic
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx512"


@needs_x86
def test_strict_adds_mkls_reproducible_branch_and_off_pins_nothing(clean) -> None:
    clean.setenv(MODE_ENV, "strict")
    assert kernel_pins() == STRICT_PINS and STRICT_PINS["MKL_CBWR"] == "COMPATIBLE"
    with pinned_kernels():
        assert os.environ["MKL_CBWR"] == "COMPATIBLE"
    clean.setenv(MODE_ENV, "off")
    with pinned_kernels() as added:
        assert added == {} and kernel_record()["pinned"] is False


def test_an_unknown_mode_is_an_error_that_names_the_fix(clean) -> None:
    clean.setenv(MODE_ENV, "avx512")
    with pytest.raises(ConfigError, match="avx2, strict, off"), pinned_kernels():
        pass


@needs_x86
def test_a_process_started_in_the_block_runs_torch_and_numpy_at_avx2_and_records_it(clean) -> None:
    code = ("import json, torch; from numpy.core._multiarray_umath import __cpu_features__ as f; "
            "from llmdisc.determinism import kernel_record; "
            "print(json.dumps({**kernel_record(), 'numpy_avx512': f['AVX512F']}))")
    with pinned_kernels():
        pinned = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True).stdout)
    clean.setenv(MODE_ENV, "off")
    native = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    if native["torch_cpu_capability"] not in ("AVX2", "AVX512"):
        pytest.skip(f"this CPU's torch runs at {native['torch_cpu_capability']}: nothing to pin down to")
    assert pinned["pinned"] and pinned["torch_cpu_capability"] == "AVX2" and pinned["mode"] == "avx2"
    assert not pinned["numpy_avx512"]  # NumPy's AVX-512 kernels are off too
    assert not native["pinned"] and native["variables"]["ATEN_CPU_CAPABILITY"] is None


def test_every_manifest_records_the_kernels(clean, tmp_path) -> None:
    from llmdisc.manifest import read_manifest

    # a fresh process: this one loaded NumPy (and maybe torch) before any pin, and its record says so
    code = "import sys; from llmdisc.manifest import write_manifest; write_manifest(sys.argv[1], 'test')"
    with pinned_kernels():
        subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    manifest = read_manifest(tmp_path)
    assert manifest["kernels"]["mode"] == "avx2"
    assert set(manifest["kernels"]["variables"]) == set(RECORDED)
    if X86:
        assert manifest["kernels"]["pinned"] and manifest["kernels"]["variables"]["ATEN_CPU_CAPABILITY"] == "avx2"


def test_a_fit_at_another_instruction_set_is_another_cache_entry(clean) -> None:
    from llmdisc.synthesis.model_cache import cache_key, cache_key_payload

    payload = cache_key_payload({"synthesizer": "ctgan"}, "train")
    assert payload["kernels"] == arithmetic_key()
    clean.setenv("MKL_CBWR", "COMPATIBLE")
    assert cache_key(cache_key_payload({"synthesizer": "ctgan"}, "train")) != cache_key(payload)


def test_a_fit_key_does_not_depend_on_whether_torch_was_loaded_before(clean) -> None:
    # GaussianCopula fits before anything loads torch; CTGAN's fit loads it: one process, one key for both
    code = ("import sys; from llmdisc.determinism import arithmetic_key; before = arithmetic_key(); "
            "import torch; print(before == arithmetic_key(), 'torch' in sys.modules)")
    env = {name: value for name, value in os.environ.items() if name not in (MODE_ENV, *RECORDED)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["True", "True"], done.stderr[-2000:]


@needs_x86
def test_an_llmdisc_command_loads_numpy_at_the_pinned_instruction_set_and_its_manifest_says_so(clean,
                                                                                                tmp_path) -> None:
    # the audit's command module loads pandas and NumPy when the parser is built: the pins must come before that
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    for name in ("real", "release"):
        pd.DataFrame({"x": rng.normal(size=200), "k": rng.choice(["a", "b"], size=200)}).to_csv(
            tmp_path / f"{name}.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "llmdisc", "audit", "--real", str(tmp_path / "real.csv"),
                           "--synthetic", str(tmp_path / "release.csv"), "--out", str(tmp_path / "out"),
                           "--instruments", "distances", "--no-progress"], capture_output=True, text=True,
                          timeout=600, check=False)
    assert (tmp_path / "out" / "manifest.json").exists(), done.stderr[-3000:]
    kernels = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))["kernels"]
    assert kernels["variables"]["NPY_DISABLE_CPU_FEATURES"] == KERNEL_PINS["NPY_DISABLE_CPU_FEATURES"]
    assert kernels["numpy_avx512"] is False and kernels["pinned"] is True


def test_numpy_loaded_before_the_pins_is_recorded_as_unpinned(clean) -> None:
    # this test process loaded NumPy unpinned; on a CPU with AVX-512 the record must not claim the pin
    import numpy  # noqa: F401

    from llmdisc.determinism import _numpy_avx512

    with pinned_kernels() as added:
        record = kernel_record()
    if not added or not _numpy_avx512():
        pytest.skip("nothing pinned here, or this CPU's NumPy has no AVX-512 to leave on")
    assert record["numpy_avx512"] is True and record["pinned"] is False
