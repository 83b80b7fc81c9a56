"""Tests of llmdisc.discrimination.cache: the key covers every part, miss then hit, modes, corrupt lines, no secrets,
and the shard store's durability against killed and concurrent writers (real child processes)."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from llmdisc.discrimination.cache import (
    CACHE_DIR_ENV,
    ResponseCache,
    ShardedJsonlStore,
    cache_key,
    cache_key_parts,
    default_cache_dir,
    public_base_url,
    request_cache_key,
)
from llmdisc.discrimination.cache import ScoreCache
from llmdisc.discrimination.cache import TokenCache
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


# --- the shard store under killed and concurrent writers -------------------------------------------------------

def _key(i: int) -> str:
    """A key in shard ``ab``: every entry of these tests shares one shard file."""
    return "ab" + format(i, "062x")


# Each flavour: (open a store at a folder, put entry i under a key, read entry i back).
FLAVOURS = {
    "store": (ShardedJsonlStore, lambda s, k, i: s.write(k, {"i": i}), lambda s, k: s.read(k)["i"]),
    "response": (ResponseCache, lambda s, k, i: s.put(k, completion(str(i))), lambda s, k: int(s.get(k).text)),
    "score": (ScoreCache, lambda s, k, i: s.put(k, {"i": i}), lambda s, k: s.get(k)["i"]),
    "token": (TokenCache, lambda s, k, i: s.put(k, [i], [-0.5]), lambda s, k: s.get(k)[0][0]),
}

# Takes the shard's lock, writes the start of a line and dies by SIGKILL before its newline.
TORN_CHILD = """
import os, signal, sys
from pathlib import Path
from llmdisc.discrimination.cache import locked_append
with locked_append(Path(sys.argv[1])) as fd:
    os.write(fd, b'{"key":"ab' + b'f' * 62 + b'","value":{"te')
    os.kill(os.getpid(), signal.SIGKILL)
"""

# Appends 1 MiB entries for ever, printing each key once its write has returned.
LOOP_CHILD = """
import itertools, sys
from llmdisc.discrimination.cache import ShardedJsonlStore
store, pad = ShardedJsonlStore(sys.argv[1]), "x" * int(sys.argv[2])
for i in itertools.count():
    key = "ab" + format(i, "062x")
    store.write(key, {"i": i, "pad": pad})
    print(key, flush=True)
"""

# Holds the shard's lock with half a line written, then finishes the line.
HOLDING_CHILD = """
import os, sys, time
from pathlib import Path
from llmdisc.discrimination.cache import locked_append
line = b'{"key":"ab' + b'e' * 62 + b'","value":{"i":"child"}}\\n'
with locked_append(Path(sys.argv[1])) as fd:
    os.write(fd, line[:20])
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    os.write(fd, line[20:])
"""

# Waits for the go file, then appends its entries to the same shard as its sibling.
BATCH_CHILD = """
import sys, time
from pathlib import Path
from llmdisc.discrimination.cache import ShardedJsonlStore
folder, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
store = ShardedJsonlStore(folder / "store")
print("ready", flush=True)
while not (folder / "go").exists():
    time.sleep(0.01)
for i in range(n):
    store.write("ab" + tag + format(i, "061x"), {"i": i, "pad": tag * 65536})
"""


def _python(code: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_writer_killed_mid_line_loses_only_its_own_line(tmp_path: Path, flavour: str) -> None:
    # Setup: three entries, then a child process killed while its line is half written.
    make, put, get = FLAVOURS[flavour]
    store = make(tmp_path)
    for i in range(3):
        put(store, _key(i), i)
    shard = tmp_path / "ab.jsonl"
    child = _python(TORN_CHILD, shard)
    assert child.wait(timeout=60) == -signal.SIGKILL
    assert not shard.read_bytes().endswith(b"\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LlmdiscWarning)  # the response cache names the torn line it skips
        # Run: a fresh store (as after a restart) appends; the kernel released the child's lock when it died.
        put(make(tmp_path), _key(3), 3)
        # Assert: the new entry and every earlier one read back; only the torn line is lost.
        reopened = make(tmp_path)
        assert [get(reopened, _key(i)) for i in range(4)] == [0, 1, 2, 3]
    assert reopened.stats.corrupt_lines == 1


def test_a_writer_killed_while_appending_in_a_loop_loses_no_acknowledged_entry(tmp_path: Path) -> None:
    # Setup: a child appending 1 MiB entries, killed wherever it is (mid-write, mid-fsync or between appends).
    child = _python(LOOP_CHILD, tmp_path, 1 << 20)
    try:
        acknowledged = [child.stdout.readline().strip() for _ in range(3)]
    finally:
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    acknowledged += [key for key in rest.split("\n") if len(key) == 64]
    assert len(acknowledged) >= 3 and all(len(key) == 64 for key in acknowledged)
    # Run
    ShardedJsonlStore(tmp_path).write("ab" + "f" * 62, {"i": "parent"})
    # Assert: the parent's entry and every entry the child saw written are read back whole.
    reopened = ShardedJsonlStore(tmp_path)
    assert reopened.read("ab" + "f" * 62) == {"i": "parent"}
    for key in acknowledged:
        assert reopened.read(key) == {"i": int(key[2:], 16), "pad": "x" * (1 << 20)}
    assert reopened.stats.corrupt_lines <= 1 and len(reopened) >= len(acknowledged) + 1


@pytest.mark.parametrize("action", ["write", "read"])
def test_the_store_waits_while_another_process_holds_the_lock_mid_line(tmp_path: Path, action: str) -> None:
    # Setup: a child holds the shard's lock with half a line written. Without the lock a writer would take that
    # half line for a torn one (and the child's rest would be glued to its line), a reader would skip it.
    store = ShardedJsonlStore(tmp_path)
    store.write(_key(0), {"i": 0})
    child = _python(HOLDING_CHILD, tmp_path / "ab.jsonl", 0.5)
    assert child.stdout.readline() == "holding\n"
    # Run: each blocks until the child's line is whole.
    if action == "write":
        store.write(_key(1), {"i": 1})
    else:
        assert ShardedJsonlStore(tmp_path).read("ab" + "e" * 62) == {"i": "child"}
    assert child.wait(timeout=60) == 0
    # Assert
    reopened = ShardedJsonlStore(tmp_path)
    assert [reopened.read(k) for k in (_key(0), "ab" + "e" * 62)] == [{"i": 0}, {"i": "child"}]
    assert reopened.read(_key(1)) == ({"i": 1} if action == "write" else None)
    assert reopened.stats.corrupt_lines == 0


def test_two_processes_appending_at_once_never_interleave_lines(tmp_path: Path) -> None:
    # Setup: two children ready to append 64 KiB entries to the same shard.
    children = [_python(BATCH_CHILD, tmp_path, tag, 40) for tag in "cd"]
    assert [child.stdout.readline() for child in children] == ["ready\n", "ready\n"]
    # Run
    (tmp_path / "go").touch()
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    # Assert: 80 whole lines, every one an entry.
    lines = (tmp_path / "store" / "ab.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 81
    assert {json.loads(line)["key"][2] for line in lines[:-1]} == {"c", "d"}
    reopened = ShardedJsonlStore(tmp_path / "store")
    assert len(reopened) == 80 and reopened.stats.corrupt_lines == 0


def test_old_shards_without_a_stored_time_still_load(tmp_path: Path) -> None:
    # Score and token caches wrote ``{"key", "value"}`` lines with default separators before they shared the store.
    (tmp_path / "ab.jsonl").write_text(json.dumps({"key": _key(0), "value": {"scores": {"mean": -1.5}}}) + "\n")
    cache = ScoreCache(tmp_path)
    assert cache.get(_key(0)) == {"scores": {"mean": -1.5}}
    cache.put(_key(1), {"scores": {"mean": float("nan")}})
    reopened = ScoreCache(tmp_path)
    assert reopened.get(_key(0)) == {"scores": {"mean": -1.5}} and math.isnan(reopened.get(_key(1))["scores"]["mean"])
    assert (reopened.stats.hits, reopened.stats.misses, len(reopened)) == (2, 0, 2)


def test_an_installed_package_caches_per_user_and_works_in_the_folder_it_runs_from(tmp_path, monkeypatch):
    import llmdisc.discrimination.cache as cache_module
    import llmdisc.paths as paths

    monkeypatch.delenv("LLMDISC_CACHE_DIR", raising=False)
    monkeypatch.delenv("LLMDISC_ROOT", raising=False)
    assert paths.in_checkout()  # the tests run from the clone: its own .llmdisc-cache
    assert cache_module.default_cache_dir() == paths.project_root() / ".llmdisc-cache"
    # installed from a wheel: never inside site-packages
    monkeypatch.setattr(paths, "in_checkout", lambda: False)
    monkeypatch.setattr(cache_module, "in_checkout", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert cache_module.default_cache_dir() == tmp_path / "xdg" / "llmdisc"
    assert paths.project_root() == tmp_path
    monkeypatch.setenv("LLMDISC_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_module.default_cache_dir() == tmp_path / "mine"
