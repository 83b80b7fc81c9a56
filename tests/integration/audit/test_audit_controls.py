"""``llmdisc audit`` with the LLM instrument: its controls decide whether it may vouch, the "inconclusive" exit.

The discriminators here are *replayed*: a first audit against the loopback OpenAI wire server records every
prompt the audit shows (its trial file); the recording is then rewritten with the answers and label scores of
the discriminator under test (always REAL with one score, a perfect ranker, ...) and served by the ``replay``
provider, a real provider that matches prompts by hash. Nothing of the audit is mocked. ``--instruments llm``
keeps the row instruments (which would decide by themselves) out, so the LLM's controls alone decide.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import pytest

from llmdisc.audit.errors import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_PROVIDER
from llmdisc.cli.main import main
from support.wire_servers import OpenAIWireServer

SYNTH_MARK = "fake_"
CONFIDENT, DOUBTFUL = -0.2, -2.0
"""Log-probabilities of the preferred and the other label in the recordings."""


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real Adult rows (CSV) and a release that marks itself in ``workclass`` (Parquet)."""
    from llmdisc.data.datasets import load_dataset

    root = tmp_path_factory.mktemp("adult_controls")
    # 3,000 rows: each group's samples are drawn from about 1,480 rows, so 5 count as independent and 20 as
    # about 16 (fewer rows and they share rows more: worth fewer than 5 a side, too few to judge a control)
    real = load_dataset("adult", n_rows=3000, seed=1)
    marked = load_dataset("adult", n_rows=3000, seed=2)
    marked["workclass"] = SYNTH_MARK + marked["workclass"]
    paths = {"real": root / "real.csv", "marked": root / "marked.parquet"}
    real.to_csv(paths["real"], index=False)
    marked.to_parquet(paths["marked"], index=False)
    return paths


def _audit(files: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["audit", "--real", str(files["real"]), "--synthetic", str(files["marked"]), "--out", str(out),
                 "--no-progress", "--instruments", "llm", "--conditions", "C1", *extra])


def _read(out: Path) -> dict:
    return json.loads((out / "audit.json").read_text(encoding="utf-8"))


def _llm(audit: dict) -> dict:
    """The one LLM instrument's reading (C1)."""
    (reading,) = [i for i in audit["instruments"] if i["instrument"] == "llm-C1"]
    return reading


@pytest.fixture(scope="module")
def recorded(adult_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The trial records of a 20-trial C1 audit: every prompt the audit shows, with its cell and label (a replay
    with fewer trials a label reads the first of them)."""
    out = tmp_path_factory.mktemp("recording") / "audit"
    with OpenAIWireServer() as server:  # answers REAL to everything: blind, so inconclusive
        assert _audit(adult_files, out, "--provider", "openai", "--base-url", server.base_url,
                      "--trials-per-label", "20", "--scoring", "verdict") == EXIT_INCONCLUSIVE
    path = out / "trials" / _llm(_read(out))["details"]["trials_file"]
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(records) == 120 and {r["synthetic_method"] for r in records} == {"release", "shuffled_columns",
                                                                                 "real_holdout"}
    return records


Answer = Callable[[dict], tuple[str, bool]]
"""record -> (verdict, whether the label scores prefer SYNTHETIC)."""


def _replay_file(records: list[dict], path: Path, answer: Answer, *, reasoning: str = "looks plausible",
                 red_flags: tuple[str, ...] = ()) -> Path:
    """Rewrite the recording: each prompt answered with ``answer(record)`` and matching label scores."""
    lines = []
    for record in records:
        verdict, prefers_synthetic = answer(record)
        real, synthetic = (DOUBTFUL, CONFIDENT) if prefers_synthetic else (CONFIDENT, DOUBTFUL)
        raw = json.dumps({"verdict": verdict, "confidence": 80, "reasoning": reasoning,
                          "red_flags": list(red_flags), "supporting_evidence": []})
        lines.append(json.dumps({
            "trial_id": record["trial_id"], "prompt_hash": record["prompt_hash"], "provider": "recorded",
            "model": "recorded-model", "raw_text": raw, "logprob_real": real, "logprob_synthetic": synthetic,
            "label_mass": math.exp(real) + math.exp(synthetic), "label_n_tokens": {"REAL": 2, "SYNTHETIC": 3},
            "score_status": "valid", "score_invalid_reason": None}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def always_real(record: dict) -> tuple[str, bool]:
    return "REAL", False


def perfect(record: dict) -> tuple[str, bool]:
    """Right about every sample: the release and the shuffled rows are synthetic, real rows are real."""
    synthetic = record["true_label"] == "SYNTHETIC" and record["synthetic_method"] != "real_holdout"
    return ("SYNTHETIC" if synthetic else "REAL"), synthetic


def blind_to_release(record: dict) -> tuple[str, bool]:
    """Tells the shuffled rows apart (it passes its positive control) but sees nothing in the release."""
    synthetic = record["true_label"] == "SYNTHETIC" and record["synthetic_method"] == "shuffled_columns"
    return ("SYNTHETIC" if synthetic else "REAL"), synthetic


def _replayed(files: dict[str, Path], out: Path, replay: Path, *extra: str, trials: str = "5") -> int:
    return _audit(files, out, "--provider", "replay", "--replay-path", str(replay), "--trials-per-label", trials,
                  *extra)


def test_always_real_with_one_score_is_inconclusive_never_a_pass(
        adult_files: dict[str, Path], recorded: list[dict], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    replay = _replay_file(recorded, tmp_path / "always_real.jsonl", always_real)
    for name, extra in (("no_gate", ()), ("gate", ("--fail-above", "0.5")), ("strict", ("--fail-above", "0"))):
        out = tmp_path / name
        assert _replayed(adult_files, out, replay, *extra) == EXIT_INCONCLUSIVE, name
        assert "audit INCONCLUSIVE (exit 3, not a pass)" in capsys.readouterr().err
        audit = _read(out)
        decision = audit["decision"]
        assert (decision["outcome"], decision["deciding"], decision["upper_bound"]) == ("inconclusive", [], None)
        assert any("missed its positive control" in r for r in decision["reasons"])
        reading = _llm(audit)
        assert reading["controls_passed"] is False and reading["details"]["reading"] == "probability"
        positive = reading["comparisons"]["shuffled_columns"]
        # one score for every sample: no ranking at all; the interval is the score interval at 5 vs 5, never [0.5, 0.5]
        assert positive["auc"] == 0.5 and positive["auc_low"] < 0.5 < positive["auc_high"]
        assert positive["n_other"] == 5 and positive["separated"] is False
        # the release reads D 0: the control keeps that from counting as a pass
        assert reading["comparisons"]["release"]["D"] == 0.0
        assert audit["headline"].startswith("INCONCLUSIVE")
        html = (out / "report.html").read_text(encoding="utf-8")
        assert "INCONCLUSIVE: no instrument passed its controls" in html
        assert "missed its positive control" in html


def test_a_ranker_that_passes_its_controls_decides_and_on_20_trials_can_fail_a_release_but_not_vouch(
        adult_files: dict[str, Path], recorded: list[dict], tmp_path: Path) -> None:
    # 20 trials a label, worth about 16 as independent samples (they share rows): a perfect split of the shuffled
    # rows (D's lower bound 0.74) is more than a release would need to differ by to be seen (0.58), so the controls
    # pass; but a release at chance would pass a gate at 0.3 only rarely at this size (it takes 74 per side): the
    # blind ranker's release cannot pass, and the perfect one's is failed by its lower bound of D
    runs = {"blind": (blind_to_release, EXIT_INCONCLUSIVE, 0.0, "inconclusive"),
            "perfect": (perfect, EXIT_GATE, 1.0, "fail")}
    for name, (answer, status, bound, outcome) in runs.items():
        replay = _replay_file(recorded, tmp_path / f"{name}.jsonl", answer)
        out = tmp_path / name
        assert _replayed(adult_files, out, replay, "--fail-above", "0.3", trials="20") == status, name
        audit = _read(out)
        reading = _llm(audit)
        assert reading["controls_passed"] is True, reading["control_reasons"]
        assert reading["comparisons"]["shuffled_columns"]["auc"] == 1.0  # every shuffled sample ranked above
        negative = reading["comparisons"]["real_holdout"]
        assert negative["auc"] == 0.5 and negative["separated"] is False  # real rows as "synthetic": chance
        release = reading["comparisons"]["release"]
        assert release["auc"] == (0.5 if name == "blind" else 1.0) and release["D"] == bound
        decision = audit["decision"]
        assert (decision["outcome"], decision["deciding"], decision["upper_bound"]) == (outcome, ["llm-C1"], None)
        assert decision["fail_above"] == 0.3 and decision["vouching"] == []
        assert decision["sure_above"] == ([] if name == "blind" else ["llm-C1"])
        assert any("a release at chance would pass at --fail-above 0.3 only" in r
                   and "(it takes 74 per side for 80 %)" in r for r in decision["reasons"])
        html = (out / "report.html").read_text(encoding="utf-8")
        assert ("INCONCLUSIVE: " if name == "blind" else "FAIL: ") in html
        assert "positive control (columns shuffled)" in html and "negative control (real vs real)" in html


def test_verdicts_with_checkable_claims_are_verified_against_the_shown_rows(
        adult_files: dict[str, Path], recorded: list[dict], tmp_path: Path) -> None:
    replay = _replay_file(recorded, tmp_path / "cued.jsonl", perfect, reasoning="No missing values in the table.",
                          red_flags=("There are duplicate rows",))
    out = tmp_path / "audit"
    assert _replayed(adult_files, out, replay, "--scoring", "both", trials="2") in (EXIT_OK, EXIT_INCONCLUSIVE)
    reading = _llm(_read(out))
    cues = reading["details"]["cues"]
    # 2 trials per label on the release: each verdict claims "no missing values" (true: Adult's missing values
    # are "?" text, none empty) and "duplicate rows" (false in fresh 20-row samples)
    assert cues["n_trials"] == 4 and cues["counts"]["true"] == 4 and cues["counts"]["false"] == 4
    assert [f["red_flag"] for f in reading["details"]["red_flags"]] == ["There are duplicate rows"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "4 verified true, 4 false" in html and "There are duplicate rows (" in html


def test_a_provider_without_token_probabilities_is_refused_before_any_trial(
        adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIWireServer(reject_logprobs=True) as server:
        status = _audit(adult_files, tmp_path / "a", "--llm", "--provider", "openai", "--base-url",
                        server.base_url, "--trials-per-label", "5")
        assert status == EXIT_PROVIDER
        assert len(server.generation_requests) == 1  # the one logprobs probe, no trial
    err = capsys.readouterr().err
    assert "cannot score labels" in err and "In llmdisc audit: pass --scoring verdict" in err
    assert not list((tmp_path / "a").glob("trials/*.jsonl"))


def test_on_a_small_table_the_samples_share_rows_and_a_perfect_ranker_cannot_judge_its_controls(
        tmp_path: Path) -> None:
    from llmdisc.data.datasets import load_dataset

    # 300 real rows: 30 reference rows, then 135 a group, so 5 samples of 20 rows are worth about 3 independent ones
    files = {"real": tmp_path / "real.csv", "marked": tmp_path / "marked.parquet"}
    load_dataset("adult", n_rows=300, seed=1).to_csv(files["real"], index=False)
    marked = load_dataset("adult", n_rows=300, seed=2)
    marked["workclass"] = SYNTH_MARK + marked["workclass"]
    marked.to_parquet(files["marked"], index=False)
    with OpenAIWireServer() as server:
        _audit(files, tmp_path / "recording", "--provider", "openai", "--base-url", server.base_url,
               "--trials-per-label", "5", "--scoring", "verdict")
    recording = _read(tmp_path / "recording")
    path = tmp_path / "recording" / "trials" / _llm(recording)["details"]["trials_file"]
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    replay = _replay_file(records, tmp_path / "perfect.jsonl", perfect)
    assert _replayed(files, tmp_path / "small", replay) == EXIT_INCONCLUSIVE
    audit = _read(tmp_path / "small")
    reading = _llm(audit)
    assert reading["controls_passed"] is False and reading["controls_judged"] is False  # unjudged, not failed
    positive = reading["comparisons"]["shuffled_columns"]
    assert positive["auc"] == 1.0 and positive["separated"] is False and positive["effective_real"] < 5
    assert all("sharing rows: worth" in r for r in reading["control_reasons"])
    assert any("share rows (rows drawn from: real class 135" in n for n in reading["details"]["notes"])
    html = (tmp_path / "small" / "report.html").read_text(encoding="utf-8")
    assert "its controls unjudged" in html and "sharing rows: worth" in html
