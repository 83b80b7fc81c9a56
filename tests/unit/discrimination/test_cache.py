"""Tests of llmdisc.discrimination.cache: the key covers every part, miss then hit, modes, corrupt lines, no secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdisc.discrimination.cache import (
    CACHE_DIR_ENV,
    ResponseCache,
    cache_key,
    cache_key_parts,
    default_cache_dir,
    public_base_url,
    request_cache_key,
)
from llmdisc.discrimination.providers.base import Completion, GenerateConfig, PromptRequest
from llmdisc.errors import CacheMissError, ConfigError, LlmdiscWarning

BASE_PARTS = dict(
    provider="openai", model="llama-3.1-8b-instant", model_digest="sha256:abc",
    base_url="http://127.0.0.1:8000/v1",
    system="You are a data scientist.", user="| a | b |\n|---|---|\n| 1 | x |",
    json_schema={"type": "object", "required": ["verdict"]}, temperature=0.0, seed=0, max_tokens=512,
    replicate=0, sample_seed=123,
)

CHANGED = {
    "provider": "ollama",
    "model": "llama3.1:8b",
    "model_digest": "sha256:def",
    "base_url": "http://127.0.0.1:9000/v1",
    "system": "You are a statistician.",
    "user": "| a | b |\n|---|---|\n| 2 | x |",
    "json_schema": {"type": "object", "required": ["verdict", "confidence"]},
    "temperature": 0.7,
    "seed": 1,
    "max_tokens": 256,
    "replicate": 1,
    "sample_seed": 124,
}


def completion(text: str = '{"verdict": "REAL"}') -> Completion:
    return Completion(text=text, model="m", model_version="v1", prompt_tokens=11, completion_tokens=7,
                      latency_s=0.25, metadata={"finish_reason": "stop"})


def test_every_part_is_listed_in_changed() -> None:
    # Guard for the parametrized test below: a new key part must get its own changed value.
    assert set(CHANGED) == set(BASE_PARTS)


@pytest.mark.parametrize("part", sorted(CHANGED))
def test_key_changes_with_each_part(part: str) -> None:
    changed = {**BASE_PARTS, part: CHANGED[part]}
    assert cache_key(**changed) != cache_key(**BASE_PARTS)


def test_key_is_stable_and_hex() -> None:
    key = cache_key(**BASE_PARTS)
    assert key == cache_key(**dict(reversed(list(BASE_PARTS.items()))))
    assert len(key) == 64 and int(key, 16) >= 0
    # Schema key order does not matter (canonical JSON), its content does.
    reordered = {**BASE_PARTS, "json_schema": {"required": ["verdict"], "type": "object"}}
    assert cache_key(**reordered) == key


def test_credentials_in_base_url_do_not_enter_the_key() -> None:
    with_secret = {**BASE_PARTS, "base_url": "http://user:s3cret@127.0.0.1:8000/v1/?key=s3cret"}
    assert cache_key(**with_secret) == cache_key(**BASE_PARTS)
    assert "s3cret" not in json.dumps(cache_key_parts(**with_secret))
    assert public_base_url("https://api.groq.com/openai/v1/") == "https://api.groq.com/openai/v1"


def test_request_cache_key_matches_cache_key() -> None:
    request = PromptRequest(system=BASE_PARTS["system"], user=BASE_PARTS["user"],
                            json_schema=BASE_PARTS["json_schema"])
    identity = {"provider": "openai", "model": "llama-3.1-8b-instant", "model_digest": "sha256:abc",
                "base_url": "http://127.0.0.1:8000/v1"}
    key = request_cache_key(identity, request, GenerateConfig(temperature=0.0, seed=0, max_tokens=512),
                            replicate=0, sample_seed=123)
    assert key == cache_key(**BASE_PARTS)


def test_miss_then_hit_and_survives_reopen(tmp_path: Path) -> None:
    # Setup
    cache = ResponseCache(tmp_path / "c")
    key = cache_key(**BASE_PARTS)
    # Run / Assert
    assert cache.get(key) is None
    cache.put(key, completion())
    hit = cache.get(key)
    assert hit is not None and hit.text == '{"verdict": "REAL"}' and hit.model_version == "v1"
    assert (hit.prompt_tokens, hit.completion_tokens, hit.latency_s) == (11, 7, 0.25)
    assert (cache.stats.misses, cache.stats.hits, cache.stats.writes) == (1, 1, 1)
    reopened = ResponseCache(tmp_path / "c")
    assert reopened.get(key).text == '{"verdict": "REAL"}'
    assert len(reopened) == 1


def test_only_completions_are_stored_and_no_metadata(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    with pytest.raises(TypeError, match="failures are never cached"):
        cache.put("ab" * 32, RuntimeError("429"))  # type: ignore[arg-type]
    cache.put("ab" * 32, completion())
    stored = json.loads((tmp_path / "ab.jsonl").read_text())
    assert set(stored["value"]) == {"text", "model", "model_version", "prompt_tokens", "completion_tokens",
                                    "latency_s"}
    assert "finish_reason" not in json.dumps(stored)


def test_offline_miss_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, mode="offline")
    with pytest.raises(CacheMissError, match="offline cache mode: no stored response .* fix: run once with "
                                             "cache mode 'fill'"):
        cache.get(cache_key(**BASE_PARTS))


def test_offline_hit_works(tmp_path: Path) -> None:
    key = cache_key(**BASE_PARTS)
    ResponseCache(tmp_path).put(key, completion("stored"))
    assert ResponseCache(tmp_path, mode="offline").get(key).text == "stored"


def test_refresh_ignores_hits_and_overwrites(tmp_path: Path) -> None:
    key = cache_key(**BASE_PARTS)
    ResponseCache(tmp_path).put(key, completion("old"))
    refresh = ResponseCache(tmp_path, mode="refresh")
    assert refresh.get(key) is None
    refresh.put(key, completion("new"))
    assert ResponseCache(tmp_path).get(key).text == "new"


def test_corrupt_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    # Setup: one good entry, then garbage, a JSON line that is not an entry, and a torn last line.
    key = "cd" + "0" * 62
    cache = ResponseCache(tmp_path)
    cache.put(key, completion("good"))
    with open(tmp_path / "cd.jsonl", "a", encoding="utf-8") as fh:
        fh.write("not json at all\n")
        fh.write('{"key": 5, "value": {}}\n')
        fh.write('{"key": "cd11", "value": {"te')
    # Run
    reopened = ResponseCache(tmp_path)
    with pytest.warns(LlmdiscWarning, match="3 corrupt line"):
        hit = reopened.get(key)
    # Assert: the good entry still reads, the corrupt ones were counted, and a new store after the torn
    # line is readable (it starts on a fresh line).
    assert hit.text == "good" and reopened.corrupt_lines == 3
    other = "cd" + "1" * 62
    reopened.put(other, completion("after torn line"))
    with pytest.warns(LlmdiscWarning):
        assert ResponseCache(tmp_path).get(other).text == "after torn line"


def test_unknown_mode_is_refused() -> None:
    expected = "cache mode 'sometimes' is unknown; fix: use one of fill, offline, refresh"
    with pytest.raises(ConfigError, match=expected):
        ResponseCache(mode="sometimes")


def test_default_dir_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "elsewhere"))
    assert default_cache_dir() == tmp_path / "elsewhere"
    assert ResponseCache().path == tmp_path / "elsewhere"
    monkeypatch.delenv(CACHE_DIR_ENV)
    assert default_cache_dir().name == ".llmdisc-cache"
