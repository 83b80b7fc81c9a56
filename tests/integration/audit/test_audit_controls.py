"""``llmdisc audit`` with its controls, probability scores, "inconclusive" exit, likelihood and verified cues.

The discriminators here are *replayed*: a first audit against the loopback OpenAI wire server records every
prompt the audit shows (its trial file); the recording is then rewritten with the answers and label scores of
the discriminator under test (always REAL with one score, a perfect ranker, ...) and served by the ``replay``
provider, a real provider that matches prompts by hash. Nothing of the audit is mocked.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

import pytest

from llmdisc.audit.errors import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_PROVIDER
from llmdisc.cli.main import main
from llmdisc.testing.wire_servers import OpenAIWireServer

SYNTH_MARK = "fake_"
CONFIDENT, DOUBTFUL = -0.2, -2.0
"""Log-probabilities of the preferred and the other label in the recordings."""


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real Adult rows (CSV) and a release that marks itself in ``workclass`` (Parquet)."""
    from llmdisc.data.datasets import load_dataset

    root = tmp_path_factory.mktemp("adult_controls")
    real = load_dataset("adult", n_rows=300, seed=1)
    marked = load_dataset("adult", n_rows=300, seed=2)
    marked["workclass"] = SYNTH_MARK + marked["workclass"]
    paths = {"real": root / "real.csv", "marked": root / "marked.parquet"}
    real.to_csv(paths["real"], index=False)
    marked.to_parquet(paths["marked"], index=False)
    return paths


def _audit(files: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["audit", "--real", str(files["real"]), "--synthetic", str(files["marked"]), "--out", str(out),
                 "--no-progress", "--no-checks", "--conditions", "C1", *extra])


def _read(out: Path) -> dict:
    return json.loads((out / "audit.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recorded(adult_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The trial records of a 5-trial C1 audit: every prompt the audit shows, with its cell and label."""
    out = tmp_path_factory.mktemp("recording") / "audit"
    with OpenAIWireServer() as server:
        assert _audit(adult_files, out, "--provider", "openai", "--base-url", server.base_url, "--trials", "5",
                      "--scoring", "verdict", "--no-likelihood") == EXIT_INCONCLUSIVE  # always REAL
    path = out / _read(out)["trials"]["file"]
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(records) == 30 and {r["synthetic_method"] for r in records} == {"release", "shuffled_columns",
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
    return _audit(files, out, "--provider", "replay", "--replay", str(replay), "--trials", trials,
                  "--no-likelihood", *extra)


def test_always_real_with_one_score_is_inconclusive_never_a_pass(
        adult_files: dict[str, Path], recorded: list[dict], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    replay = _replay_file(recorded, tmp_path / "always_real.jsonl", always_real)
    for name, extra in (("no_gate", ()), ("auc", ("--fail-above", "0.5", "--gate", "auc")),
                        ("calibrated", ("--fail-above", "0.5"))):
        out = tmp_path / name
        assert _replayed(adult_files, out, replay, *extra) == EXIT_INCONCLUSIVE, name
        assert "audit INCONCLUSIVE (exit 11, not a pass)" in capsys.readouterr().err
        audit = _read(out)
        assert audit["decision"]["outcome"] == "inconclusive"
        control = audit["decision"]["positive_control"][0]
        assert (control["auc"], control["ci_low"], control["ci_high"], control["passed"]) == (0.5, 0.5, 0.5, False)
        assert audit["controls"]["shuffled_columns"]["conditions"][0]["probability"]["n_syn"] == 5
        assert audit["verdict"]["headline"].startswith("INCONCLUSIVE")
        if extra:  # the release's own figures would pass the gate: the control keeps them from doing so
            assert audit["gate"]["upper_bound"] == 0.0 and audit["gate"]["passed"] is None
        html = (out / "report.html").read_text(encoding="utf-8")
        assert "Outcome: INCONCLUSIVE" in html and "failed its positive control in C1" in html


@pytest.mark.parametrize("gate", ["auc", "calibrated-drs", "drs"])
def test_a_perfect_ranker_passes_its_control_and_the_gate_bounds_the_chosen_statistic(
        adult_files: dict[str, Path], recorded: list[dict], tmp_path: Path, gate: str) -> None:
    runs = {"blind": (blind_to_release, EXIT_OK, 0.0), "perfect": (perfect, EXIT_GATE, 1.0)}
    for name, (answer, status, bound) in runs.items():
        replay = _replay_file(recorded, tmp_path / f"{name}.jsonl", answer)
        out = tmp_path / name
        assert _replayed(adult_files, out, replay, "--gate", gate, "--fail-above", "0.3") == status, name
        audit = _read(out)
        assert audit["decision"]["positive_control"][0]["passed"] is True
        assert audit["decision"]["positive_control"][0]["ci_low"] == 1.0  # every shuffled sample ranked above
        assert audit["gate"] == {"fail_above": 0.3, "statistic": gate, "upper_bound": bound,
                                 "drs_upper_bound": audit["drs_upper_bound"], "passed": status == EXIT_OK,
                                 "outcome": "pass" if status == EXIT_OK else "fail"}
        release = audit["conditions"][0]["probability"]
        assert release["auc"] == (0.5 if name == "blind" else 1.0)
        assert release["batch_drs"] == bound and release["discrimination"]["ci_high"] == bound
        negative = audit["controls"]["real_holdout"]["conditions"][0]["probability"]
        assert negative["auc"] == 0.5 and negative["batch_drs"] == 0.0  # real rows as "synthetic": chance
        html = (out / "report.html").read_text(encoding="utf-8")
        assert ("Release gate passed" if status == EXIT_OK else "Release gate FAILED") in html
        assert "positive control (columns shuffled)" in html and "negative control" in html


def test_too_few_valid_trials_are_inconclusive(adult_files: dict[str, Path], recorded: list[dict],
                                               tmp_path: Path) -> None:
    replay = _replay_file(recorded, tmp_path / "perfect.jsonl", perfect)
    assert _replayed(adult_files, tmp_path / "four", replay, "--fail-above", "0.99", trials="4") == EXIT_INCONCLUSIVE
    audit = _read(tmp_path / "four")
    assert audit["decision"]["positive_control"][0]["passed"] is True  # it is the count, not the control
    assert any("too few valid trials to decide: the release cell of C1 has 4 REAL and 4 SYNTHETIC valid label "
               "scores, fewer than 5" in r for r in audit["decision"]["reasons"])
    assert "INCONCLUSIVE" in (tmp_path / "four" / "report.html").read_text(encoding="utf-8")


def test_help_lists_the_inconclusive_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["audit", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "   11  audit written but INCONCLUSIVE (never a pass)" in text
    assert "--gate {drs,calibrated-drs,auc}" in text and "2*|AUC-0.5|" in text
    assert "--scoring {verdict,probability,both}" in text and "--no-likelihood" in text


def test_a_provider_without_token_probabilities_is_refused_before_any_trial(
        adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIWireServer(reject_logprobs=True) as server:
        status = _audit(adult_files, tmp_path / "a", "--provider", "openai", "--base-url", server.base_url,
                        "--trials", "5", "--no-likelihood")
        assert status == EXIT_PROVIDER
        assert len(server.generation_requests) == 1  # the one logprobs probe, no trial
    err = capsys.readouterr().err
    assert "cannot score labels" in err and "In llmdisc audit: pass --scoring verdict" in err
    assert not list((tmp_path / "a").glob("trials/*.jsonl"))


@pytest.mark.slow
def test_likelihood_and_verified_cues_on_a_small_real_audit(adult_files: dict[str, Path], recorded: list[dict],
                                                            tmp_path: Path) -> None:
    """Replayed verdicts; the likelihood of the 8 shown samples from the embedded model (2 trials per label)."""
    replay = _replay_file(recorded, tmp_path / "cued.jsonl", perfect, reasoning="No missing values in the table.",
                          red_flags=("There are duplicate rows",))
    out = tmp_path / "audit"
    assert _audit(adult_files, out, "--provider", "replay", "--replay", str(replay), "--trials", "2") \
        == EXIT_INCONCLUSIVE  # 2 trials per label are too few to decide
    audit = _read(out)
    part = audit["likelihood"]
    assert part["status"] == "scored", part.get("reason")
    assert part["model"] == "smollm2-135m-instruct-q4_1" and part["backend"] == "transformers"
    assert part["n_samples"] == {"real": 2, "release": 2, "shuffled_columns": 2, "real_holdout": 2}
    for name in ("release", "positive_control", "negative_control"):
        assert 0.0 <= part[name]["auc"] <= 1.0 and 0.5 <= part[name]["separation"] <= 1.0
    assert 0.0 <= part["release"]["drs"] <= 1.0
    top = part["top_columns"]
    assert len(top) == 5 and [c["rank"] for c in top] == [1, 2, 3, 4, 5]
    assert set(c["column"] for c in top) <= set(audit["schema"]["used"])
    assert abs(top[0]["delta_nats_per_row"]) >= abs(top[-1]["delta_nats_per_row"])
    cues = audit["cues"]
    assert cues["n_trials"] == 4 and cues["counts"]["true"] == 4 and cues["counts"]["false"] == 4
    assert {v["claim"] for v in cues["verified"]} == {"no_missing"}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Likelihood discriminator</h2>" in html and "Columns that contribute most" in html
    assert "<h2>Verified cues</h2>" in html and "4 verified true, 4 false" in html
