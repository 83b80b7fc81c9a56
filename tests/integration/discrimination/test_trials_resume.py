"""A real run killed with SIGKILL at seeded random moments, then restarted: every trial exactly once.

The child process runs ``llmdisc.discrimination.runner.run_trials`` for real (prompts from the real
``trial_inputs.prepare_prompt``, records written by the real runner, a real response cache) against a
small subclass of the ``Provider`` interface that answers a fixed valid JSON after a short sleep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

CHILD = r'''
import asyncio, json, sys
import numpy as np, pandas as pd
from llmdisc.discrimination.cache import ResponseCache
from llmdisc.discrimination.providers.base import Completion, Provider
from llmdisc.discrimination.samples import build_trial_queue
from llmdisc.discrimination.runner import run_trials_sync

ANSWER = json.dumps({"verdict": "SYNTHETIC", "confidence": 80, "reasoning": "fixed", "red_flags": ["x"],
                     "supporting_evidence": []})

class SlowFixedProvider(Provider):
    name = "fixed"
    is_remote = False
    async def complete(self, request, config):
        await asyncio.sleep(0.05)
        return Completion(text=ANSWER, model=self.model, prompt_tokens=50, completion_tokens=20)

out, cache_dir = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
def table(shift):
    return pd.DataFrame({"age": rng.integers(18 + shift, 90, 60), "sex": rng.choice(["Male", "Female"], 60),
                         "hours_per_week": rng.integers(1, 99, 60)})
tables = {"adult": {"real": table(0), "ctgan": table(3), "tvae": table(6)}}
queue = build_trial_queue(["adult"], ["ctgan", "tvae"], ["C1", "C2"], 5, run_seed=11)
summary = run_trials_sync(queue, provider=SlowFixedProvider("fixed-model", max_connections=3), tables=tables,
                          variant="neutral", metadata_source="real", out_path=out, n_rows=10,
                          cache=ResponseCache(cache_dir), concurrency=3, progress=False)
print(json.dumps({"n_run": summary.n_run, "n_skipped": summary.n_skipped}))
'''
N_TRIALS = 2 * 2 * 2 * 5  # synthesizers x conditions x labels x trials per label


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow
def test_run_killed_at_random_points_resumes_with_each_trial_once(tmp_path: Path) -> None:
    # Setup
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    out, cache_dir = tmp_path / "trials" / "run.jsonl", tmp_path / "cache"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(script), str(out), str(cache_dir)]
    rng = np.random.default_rng(20261130)  # seeds the kill moments
    killed_at: list[int] = []  # lines on disk when each kill landed
    # Run: start, wait for the first records, kill at a random moment; three times.
    for _ in range(3):
        before = _count_lines(out)
        child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while _count_lines(out) <= before and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(float(rng.uniform(0.0, 0.6)))
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=60)
            killed_at.append(_count_lines(out))
        child.wait(timeout=60)
    assert any(n < N_TRIALS for n in killed_at), f"no kill landed mid-run ({killed_at}): make the run longer"
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    # Assert
    assert final.returncode == 0, final.stderr[-2000:]
    summary = json.loads(final.stdout.strip().splitlines()[-1])
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    counts = Counter(r["trial_id"] for r in records)
    assert len(records) == N_TRIALS and set(counts.values()) == {1}
    assert summary["n_skipped"] + summary["n_run"] == N_TRIALS
    assert {r["status"] for r in records} == {"valid"}
    assert all(r["predicted_label"] == "SYNTHETIC" and r["n_rows"] == 10 for r in records)
    manifest = json.loads((out.parent / "run.manifest.json").read_text(encoding="utf-8"))
    assert manifest["state"] == "finished" and manifest["metrics"]["valid"] == N_TRIALS
    # A fifth start has nothing left to do.
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(again.stdout.strip().splitlines()[-1]) == {"n_run": 0, "n_skipped": N_TRIALS}


@pytest.mark.slow
def test_cli_runs_shows_and_replays_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``llmdisc trials run`` over real HTTP (a 429 + Retry-After on the wire), ``show``, then offline."""
    import pandas as pd

    import llmdisc.discrimination.retries
    from llmdisc.cli.main import main
    from support.wire_base import Fault
    from support.wire_servers import OpenAIWireServer

    # Setup: a project of its own with a tiny real table and one "synthetic" table.
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    monkeypatch.setenv("LLMDISC_CACHE_DIR", str(tmp_path / "cache"))
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(llmdisc.discrimination.retries, "retry_sleep", record)
    rng = np.random.default_rng(3)
    for folder, name in (("processed/adult", "train"), ("synthetic/adult", "ctgan")):
        (tmp_path / "data" / folder).mkdir(parents=True)
        pd.DataFrame({"age": rng.integers(18, 90, 50), "sex": rng.choice(["Male", "Female"], 50)}).to_parquet(
            tmp_path / "data" / folder / f"{name}.parquet")
    args = ["trials", "run", "--provider", "openai", "--synthesizers", "ctgan", "--conditions", "C1", "C2",
            "--trials-per-label", "2", "--concurrency", "4", "--n-rows", "8", "--no-progress"]
    # Run
    with OpenAIWireServer(faults=(Fault.rate_limit(retry_after=3),)) as server:
        assert main([*args, "--base-url", server.base_url]) == 0
        base_url = server.base_url
    # Assert: 8 trials over HTTP, one of them retried after the server's Retry-After.
    files = list((tmp_path / "results" / "trials").glob("*.jsonl"))
    assert len(files) == 1
    assert files[0].name.startswith("adult__openai-llama-3.1-8b-instant__neutral-real-fresh__s0__")
    records = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]
    assert len(records) == 8 and {r["status"] for r in records} == {"valid"}
    assert sorted(r["attempts"] for r in records) == [1] * 7 + [2] and waits == [3.0]
    assert main(["trials", "show", str(files[0])]) == 0
    shown = capsys.readouterr().out
    assert "8 trial(s): valid 8" in shown and "ctgan" in shown and "drs" in shown
    # Offline reproduction: the server is gone, the file is deleted; every answer comes from the cache.
    files[0].unlink()
    assert main([*args, "--base-url", base_url, "--cache-mode", "offline"]) == 0
    again = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]
    assert len(again) == 8 and all(r["cache_hit"] for r in again)
    assert {r["trial_id"]: r["raw_text"] for r in again} == {r["trial_id"]: r["raw_text"] for r in records}
