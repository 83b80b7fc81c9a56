"""The ``replay`` provider: recorded answers matched by prompt hash (and model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdisc.discrimination.providers.base import GenerateConfig, PromptRequest, request_hash
from llmdisc.discrimination.providers.errors import ProviderConfigError
from llmdisc.discrimination.providers.replay import ReplayProvider
from llmdisc.errors import CacheMissError

FIRST = PromptRequest(system="sys", user="table one")
SECOND = PromptRequest(system="sys", user="table two")
CONFIG = GenerateConfig()


def _record(request: PromptRequest, text: str | None, model: str = "gemini-2.5-flash", **extra: object) -> dict:
    return {"trial_id": f"t-{text}", "provider": "gemini", "model": model, "prompt_hash": request_hash(request),
            "raw_text": text, "model_digest": "gemini-2.5-flash-001", "prompt_tokens": 900, "completion_tokens": 80,
            "status": "valid" if text else "error", **extra}


def _write(path: Path, records: list[dict], junk: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + junk, encoding="utf-8")
    return path


async def test_answers_the_recorded_text_for_the_same_prompt(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, "answer one"), _record(SECOND, "answer two")])
    provider = ReplayProvider(path=source)
    await provider.check()

    completion = await provider.complete(SECOND, CONFIG)

    assert completion.text == "answer two" and completion.model == "gemini-2.5-flash"
    assert completion.model_version == "gemini-2.5-flash-001" and completion.prompt_tokens == 900
    assert completion.metadata["replayed_trial_id"] == "t-answer two"
    assert provider.is_remote is False


async def test_miss_names_the_hash_and_the_file(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, "answer one")])
    unseen = PromptRequest(system="sys", user="never asked")
    with pytest.raises(CacheMissError, match=f"no recorded answer for prompt_hash {request_hash(unseen)} in run.jsonl"):
        await ReplayProvider(path=source).complete(unseen, CONFIG)


async def test_model_filter(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, "from llama", model="llama-3.1-8b-instant"),
                                             _record(FIRST, "from gemini")])
    assert (await ReplayProvider("gemini-2.5-flash", path=source).complete(FIRST, CONFIG)).text == "from gemini"
    with pytest.raises(CacheMissError, match="and model 'gpt-4o'"):
        await ReplayProvider("gpt-4o", path=source).complete(FIRST, CONFIG)


async def test_error_records_and_corrupt_lines_are_skipped(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, None), _record(FIRST, "second try")],
                    junk='{"trial_id": "cut off by a ki')
    provider = ReplayProvider(path=source)
    assert (await provider.complete(FIRST, CONFIG)).text == "second try"
    assert provider.skipped_lines == 1


async def test_pick_first_and_cycle(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, "a"), _record(FIRST, "b"), _record(FIRST, "c")])
    first = ReplayProvider(path=source)
    cycle = ReplayProvider(path=source, pick="cycle")
    assert [(await first.complete(FIRST, CONFIG)).text for _ in range(4)] == ["a", "a", "a", "a"]
    assert [(await cycle.complete(FIRST, CONFIG)).text for _ in range(4)] == ["a", "b", "c", "a"]


async def test_a_folder_of_runs(tmp_path):
    _write(tmp_path / "trials" / "adult" / "r1.jsonl", [_record(FIRST, "from r1")])
    _write(tmp_path / "trials" / "census" / "r2.jsonl", [_record(SECOND, "from r2")])
    provider = ReplayProvider(path=tmp_path / "trials")
    assert (await provider.complete(SECOND, CONFIG)).text == "from r2"


async def test_bad_sources(tmp_path):
    with pytest.raises(ProviderConfigError, match="needs path="):
        ReplayProvider()
    with pytest.raises(ProviderConfigError, match="does not exist; fix: pass an existing trials .jsonl"):
        await ReplayProvider(path=tmp_path / "missing.jsonl").check()
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProviderConfigError, match="holds no .jsonl file"):
        await ReplayProvider(path=tmp_path / "empty").check()
    source = _write(tmp_path / "errors.jsonl", [_record(FIRST, None)])
    with pytest.raises(CacheMissError, match="hold no replayable record"):
        await ReplayProvider(path=source).check()
    with pytest.raises(ProviderConfigError, match="pick='random'"):
        ReplayProvider(path=source, pick="random")  # type: ignore[arg-type]
