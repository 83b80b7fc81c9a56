"""The provider registry: names, default models, options."""

from __future__ import annotations

import pytest

from llmdisc.discrimination.providers.base import Provider
from llmdisc.discrimination.providers.gemini import GeminiProvider
from llmdisc.discrimination.providers.ollama import OllamaProvider
from llmdisc.discrimination.providers.openai_compat import OpenAICompatibleProvider
from llmdisc.discrimination.providers.registry import (
    DEFAULT_MODELS,
    PROVIDERS,
    get_provider,
    provider_options,
)
from llmdisc.errors import ConfigError


def test_names_match_the_vocabulary():
    assert PROVIDERS == ("local", "ollama", "gemini", "openai", "replay")
    assert DEFAULT_MODELS == {"local": "smollm2-135m-instruct-q4_1", "ollama": "llama3.1:8b",
                              "gemini": "gemini-2.5-flash", "openai": "llama-3.1-8b-instant"}


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ConfigError, match="unknown provider 'claude'; fix: use one of local, ollama, gemini, "
                                          "openai, replay"):
        get_provider("claude")


def test_unknown_option_lists_the_accepted_ones():
    with pytest.raises(ConfigError, match="provider 'ollama' takes no option api_key_env; fix: use only host, "
                                          "num_ctx, timeout_s, max_connections"):
        get_provider("ollama", api_key_env="X")


def test_defaults_and_options(tmp_path):
    ollama = get_provider("ollama", host="http://127.0.0.1:9", num_ctx=None)  # None options are dropped
    assert isinstance(ollama, OllamaProvider) and ollama.model == "llama3.1:8b" and ollama.num_ctx is None
    groq = get_provider("openai", base_url="https://api.groq.com/openai/v1", api_key_env="GROQ_API_KEY")
    assert isinstance(groq, OpenAICompatibleProvider) and groq.model == "llama-3.1-8b-instant"
    gemini = get_provider("gemini", "gemini-2.5-pro")
    assert isinstance(gemini, GeminiProvider) and gemini.model == "gemini-2.5-pro"
    replay = get_provider("replay", path=tmp_path)
    assert replay.name == "replay" and replay.model == "*"


def test_every_provider_is_a_provider_with_its_registry_name(tmp_path):
    for name in PROVIDERS:
        options = {"path": tmp_path} if name == "replay" else {}
        provider = get_provider(name, **options)
        assert isinstance(provider, Provider) and provider.name == name
        assert "model" not in provider_options(name)


def test_identity_never_holds_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-in-identity")
    provider = get_provider("openai", base_url="https://example.invalid/v1")
    assert "sk-never-in-identity" not in repr(provider.identity())
