"""A real small trial run with the embedded model (``local``: SmolLM2-135M via xllamacpp, CPU, offline)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.records import TRIAL_COLUMNS
from llmdisc.discrimination.runner import run_trials_sync
from llmdisc.discrimination.samples import build_trial_queue


def _adult_like(seed: int, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "workclass": rng.choice(["Private", "State-gov", "Self-emp-not-inc"], n),
        "education": rng.choice(["Bachelors", "HS-grad", "Masters", "Some-college"], n),
        "sex": rng.choice(["Male", "Female"], n), "hours_per_week": rng.integers(10, 70, n),
        "income": rng.choice(["<=50K", ">50K"], n, p=[0.75, 0.25]),
    })


@pytest.mark.slow
def test_embedded_model_run_gives_complete_records(tmp_path: Path) -> None:
    # Setup
    from llmdisc.discrimination.providers.registry import get_provider

    tables = {"adult": {"real": _adult_like(0), "gaussian_copula": _adult_like(1)}}
    # One REAL and one SYNTHETIC trial.
    specs = build_trial_queue(["adult"], ["gaussian_copula"], ["C1"], 1, run_seed=0)
    provider = get_provider("local")
    out = tmp_path / "trials" / "embedded.jsonl"
    cache = ResponseCache(tmp_path / "cache")
    # Run
    summary = run_trials_sync(specs, provider=provider, tables=tables, variant="neutral",
                              metadata_source="real", out_path=out, cache=cache, concurrency=1, n_rows=10,
                              progress=False)
    # Assert: complete records, at least one valid answer, reasons named for any invalid one.
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(specs) == 2 and summary.n_error == 0
    for record in records:
        assert list(record) == list(TRIAL_COLUMNS)
        assert record["provider"] == "local" and record["model"] == "smollm2-135m-instruct-q4_1"
        assert len(record["model_digest"]) == 64 and record["raw_text"]
        assert record["latency_s"] > 0 and record["attempts"] == 1 and record["cache_hit"] is False
        if record["status"] == "invalid":
            assert record["invalid_reason"], "an invalid answer must name its reason"
        else:
            assert record["predicted_label"] in ("REAL", "SYNTHETIC") and 0 <= record["confidence"] <= 100
    assert sum(r["status"] == "valid" for r in records) >= 1
    # A second run into another file is answered from the cache, identically and without the model.
    offline = ResponseCache(tmp_path / "cache", mode="offline")
    again = run_trials_sync(specs, provider=provider, tables=tables, variant="neutral",
                            metadata_source="real", out_path=tmp_path / "trials" / "again.jsonl",
                            cache=offline, n_rows=10, progress=False)
    assert again.n_cache_hits == 2
