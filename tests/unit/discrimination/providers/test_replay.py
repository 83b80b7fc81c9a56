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


def _scored(request: PromptRequest, real: float | None, synthetic: float | None, **extra: object) -> dict:
    fields = {"logprob_real": real, "logprob_synthetic": synthetic, "label_mass": 0.8,
              "label_n_tokens": {"REAL": 2, "SYNTHETIC": 5}, "score_status": "valid", "score_invalid_reason": None}
    return _record(request, None, **{**fields, **extra})


async def test_replays_recorded_label_scores_by_prompt_hash(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_scored(FIRST, -0.2, -1.9), _scored(SECOND, -3.0, -0.1)])
    provider = ReplayProvider(path=source)
    await provider.check()
    await provider.check_label_scores()

    scores = await provider.label_scores(SECOND, CONFIG)

    assert scores.logprobs == {"REAL": -3.0, "SYNTHETIC": -0.1} and scores.invalid_reason is None
    assert scores.label_mass == 0.8 and scores.n_tokens == {"REAL": 2, "SYNTHETIC": 5}
    assert scores.model == "gemini-2.5-flash" and scores.model_version == "gemini-2.5-flash-001"
    with pytest.raises(CacheMissError, match="no recorded answer"):  # a probability-only record has no answer text
        await provider.complete(SECOND, CONFIG)


async def test_an_invalid_recorded_score_is_replayed_invalid_never_as_zero(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_scored(FIRST, None, None, label_mass=None, score_status="invalid",
                                                     score_invalid_reason="label SYNTHETIC is not among the top-20")])
    scores = await ReplayProvider(path=source).label_scores(FIRST, CONFIG)
    assert scores.invalid_reason == "label SYNTHETIC is not among the top-20"
    assert all(value != value for value in scores.logprobs.values()) and scores.label_mass != scores.label_mass


async def test_records_without_label_scores_say_so(tmp_path):
    source = _write(tmp_path / "run.jsonl", [_record(FIRST, "answer one")])
    provider = ReplayProvider(path=source)
    with pytest.raises(CacheMissError, match="hold no record with label scores.*scored by verdict; fix: replay a run "
                                             "made with scoring: probability or both"):
        await provider.check_label_scores()
    with pytest.raises(CacheMissError, match="hold no label scores \\(logprob_real, logprob_synthetic and label_mass "
                                             "are absent"):
        await provider.label_scores(FIRST, CONFIG)
    with pytest.raises(CacheMissError, match=f"no recorded label scores for prompt_hash {request_hash(SECOND)}"):
        await provider.label_scores(SECOND, CONFIG)
