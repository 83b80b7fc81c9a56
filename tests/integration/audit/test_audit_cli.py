"""``llmdisc audit`` end to end: the embedded model on an Adult release, remote refusal, the gate, bad input.

Providers answer over real HTTP on 127.0.0.1 (the loopback wire servers of ``llmdisc.testing``); the
end-to-end run uses the embedded local model on an Adult subsample and its GaussianCopula release. Every
audit runs the release beside two controls (shuffled columns, real rows as "synthetic"); the replayed
discriminators of the probability scores, the "inconclusive" status and the likelihood are in
``test_audit_controls.py``.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.audit.errors import EXIT_INCONCLUSIVE
from llmdisc.cli.main import main
from llmdisc.testing.wire_servers import GeminiWireServer, OpenAIWireServer

SYNTH_MARK = "fake_"


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real Adult rows (CSV) and a release that marks itself in ``workclass`` (Parquet), plus a holdout."""
    from llmdisc.data.datasets import load_dataset

    root = tmp_path_factory.mktemp("adult_audit")
    real = load_dataset("adult", n_rows=300, seed=1)
    marked = load_dataset("adult", n_rows=300, seed=2)
    marked["workclass"] = SYNTH_MARK + marked["workclass"]
    paths = {"real": root / "real.csv", "marked": root / "marked.parquet", "holdout": root / "holdout.csv"}
    real.to_csv(paths["real"], index=False)
    marked.to_parquet(paths["marked"], index=False)
    load_dataset("adult", n_rows=300, seed=3).to_csv(paths["holdout"], index=False)
    return paths


def _shown_rows(prompt: str) -> list[tuple[str, ...]]:
    """The data rows of the Markdown table in a prompt, as tuples of stripped cell texts."""
    lines = [line.strip() for line in prompt.splitlines() if line.strip().startswith("|")]
    return [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines[2:]]


class RowOracle:
    """A discriminator that is always right: SYNTHETIC when a shown row is not a row of the real table (the
    marked release, the shuffled-columns control), REAL otherwise (real samples, real rows as "synthetic")."""

    def __init__(self, real_csv: Path) -> None:
        real = pd.read_csv(real_csv)
        self.rows = {tuple(str(v).strip() for v in row) for row in real.itertuples(index=False)}

    def __call__(self, chat: object) -> str:
        shown = _shown_rows(chat.user)  # type: ignore[attr-defined]
        assert shown, "no table in the prompt"
        return verdict_text("SYNTHETIC" if any(row not in self.rows for row in shown) else "REAL")


def verdict_by_mark(chat: object) -> str:
    """Right about the release (it holds ``fake_`` values); blind to the shuffled-columns control."""
    return verdict_text("SYNTHETIC" if SYNTH_MARK in chat.user else "REAL")  # type: ignore[attr-defined]


def verdict_text(label: str) -> str:
    return json.dumps(
        {
            "verdict": label,
            "confidence": 90,
            "reasoning": f"workclass and hours_per_week say {label}",
            "red_flags": ["Odd workclass values", "odd workclass values."],
            "supporting_evidence": [],
        }
    )


def always_real(chat: object) -> str:
    return json.dumps(
        {
            "verdict": "REAL",
            "confidence": 60,
            "reasoning": "looks fine",
            "red_flags": [],
            "supporting_evidence": ["plausible ages"],
        }
    )


def _audit(files: dict[str, Path], out: Path, *extra: str, synthetic: str = "marked") -> int:
    return main(
        [
            "audit",
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files[synthetic]),
            "--out",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def _gated_audit(files: dict[str, Path], out: Path, base_url: str) -> int:
    """Five trials per label (verdicts only) against the OpenAI wire server, the release gate at DRS 0.5."""
    return _audit(files, out, "--provider", "openai", "--base-url", base_url, "--trials", "5",
                  "--fail-above", "0.5", "--no-checks", "--scoring", "verdict", "--no-likelihood")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_gate_exit_status_follows_the_drs_upper_bound(adult_files: dict[str, Path], tmp_path: Path) -> None:
    with OpenAIWireServer(responder=RowOracle(adult_files["real"])) as server:
        status = _gated_audit(adult_files, tmp_path / "right", server.base_url)
    assert status == 3  # every sample told apart: DRS 1, bound 1 > 0.5
    audit = json.loads((tmp_path / "right" / "audit.json").read_text(encoding="utf-8"))
    assert [c["drs"] for c in audit["conditions"]] == [1.0, 1.0]
    assert audit["gate"] == {"fail_above": 0.5, "statistic": "drs", "upper_bound": 1.0, "drs_upper_bound": 1.0,
                             "passed": False, "outcome": "fail"}
    assert [c["passed"] for c in audit["decision"]["positive_control"]] == [True, True]
    negative = audit["controls"]["real_holdout"]["conditions"]
    assert [c["drs"] for c in negative] == [0.0, 0.0]  # real rows as "synthetic" are answered REAL
    assert audit["cited_columns"][0]["column"] in ("workclass", "hours_per_week")
    assert audit["red_flags"][0] == {  # the release cell's trials only
        "red_flag": "Odd workclass values",
        "count": 20,
        "on_real": 10,
        "on_synthetic": 10,
    }
    assert "Release gate FAILED" in (tmp_path / "right" / "report.html").read_text(encoding="utf-8")
    for name, responder in (("blind", always_real), ("marker_only", verdict_by_mark)):
        with OpenAIWireServer(responder=responder) as server:
            status = _gated_audit(adult_files, tmp_path / name, server.base_url)
        # blind: p_SYN = 0, so DRS = 0 with a zero-width interval, which once passed the gate; marker_only: the
        # release is told apart but the shuffled control is not. Neither discriminator can vouch: inconclusive.
        assert status == EXIT_INCONCLUSIVE, name
        audit = json.loads((tmp_path / name / "audit.json").read_text(encoding="utf-8"))
        assert audit["gate"]["passed"] is None and audit["decision"]["outcome"] == "inconclusive"
        assert audit["verdict"]["headline"].startswith("INCONCLUSIVE")
        assert "failed its positive control" in audit["verdict"]["headline"]
    audit = json.loads((tmp_path / "blind" / "audit.json").read_text(encoding="utf-8"))
    assert audit["drs_upper_bound"] == 0.0
    assert "could not tell the release from real data" in audit["verdict"]["headline"]
    assert "evidence is thin" in audit["verdict"]["headline"]


def test_fail_above_must_be_a_fraction(
    adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        _audit(
            adult_files,
            tmp_path,
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--fail-above",
            "25",
        )
        == 2
    )
    assert "--fail-above 25 is outside 0..1; fix: give the DRS bound as a fraction" in capsys.readouterr().err


def test_remote_provider_is_refused_before_any_request(
    adult_files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-secret")
    with GeminiWireServer(models=["gemini-2.5-flash"]) as server:
        status = _audit(
            adult_files,
            tmp_path / "g",
            "--provider",
            "gemini",
            "--base-url",
            server.base_url,
            "--trials",
            "1",
            "--conditions",
            "C1",
            "--no-checks",
        )
        assert status == 8
        assert server.requests == []  # not even a model listing
        err = capsys.readouterr().err
        assert "provider 'gemini' would send rows of the REAL table" in err and "add --allow-remote" in err
        assert not (tmp_path / "g").exists()  # refused before any input was read or folder made
        status = _audit(
            adult_files,
            tmp_path / "g",
            "--provider",
            "gemini",
            "--base-url",
            server.base_url,
            "--trials",
            "1",
            "--conditions",
            "C1",
            "--no-checks",
            "--allow-remote",
            "--scoring",
            "verdict",
            "--no-likelihood",
        )
        # with the flag it runs: one REAL sample (shared by the cells) and one sample of each of the 3 cells;
        # one trial per label is too few to decide
        assert status == EXIT_INCONCLUSIVE and len(server.generation_requests) == 4
    # openai at a non-loopback address: refused at once, no connection attempted (the address is unroutable)
    status = _audit(
        adult_files, tmp_path / "o", "--provider", "openai", "--base-url", "http://10.255.255.1/v1"
    )
    assert status == 8
    assert "to http://10.255.255.1/v1, which is not this machine; nothing was sent" in capsys.readouterr().err
    # a loopback service needs no flag: it is asked (and here found down), not refused
    status = _audit(
        adult_files, tmp_path / "l", "--provider", "ollama", "--base-url", f"127.0.0.1:{_free_port()}"
    )
    assert status == 9 and "--allow-remote" not in capsys.readouterr().err


def test_bad_inputs_get_distinct_statuses(
    adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = pd.read_csv(adult_files["real"])
    files = dict(adult_files)
    files["garbled"] = tmp_path / "garbled.csv"
    files["garbled"].write_text("a,b\n1,2,3,4\n", encoding="utf-8")
    files["renamed"] = tmp_path / "renamed.csv"
    real.rename(columns={"occupation": "job"}).to_csv(files["renamed"], index=False)
    files["tiny"] = tmp_path / "tiny.csv"
    real.head(12).to_csv(files["tiny"], index=False)
    files["missing"] = tmp_path / "missing.csv"
    common = ("--provider", "openai", "--base-url", f"http://127.0.0.1:{_free_port()}/v1", "--no-checks")
    expected = {
        "missing": (4, "'missing.csv' does not exist"),
        "garbled": (5, "garbled.csv cannot be parsed"),
        "renamed": (6, r"missing \['occupation'\], extra \['job'\]"),
        "tiny": (7, "tiny.csv has 12 data rows, fewer than the 20 rows"),
    }
    for name, (code, message) in expected.items():
        assert _audit(files, tmp_path / name, *common, synthetic=name) == code, name
        assert re.search(message, capsys.readouterr().err), name
    # the inputs are fine but nobody listens at that port
    assert _audit(files, tmp_path / "down", *common) == 9
    assert "no openai server answers" in capsys.readouterr().err.lower().replace(
        "openai-compatible", "openai"
    )


class PinnedOpenAIServer(OpenAIWireServer):
    """The OpenAI wire server on a chosen port, so an outage can end at the same URL (the URL is part
    of a run's
    identity: another port would be another configuration with its own trial file)."""

    def __init__(self, port: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.pinned_port = port

    def start(self) -> "PinnedOpenAIServer":
        import threading

        from llmdisc.testing import wire_base

        self._httpd = wire_base._Server(("127.0.0.1", self.pinned_port), wire_base._Handler)
        self._httpd.wire = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self


def test_rerun_after_an_outage_resumes_finished_trials(adult_files: dict[str, Path], tmp_path: Path) -> None:
    out, port = tmp_path / "audit", _free_port()
    args = (
        "--provider",
        "openai",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--conditions",
        "C1",
        "--no-checks",
        "--scoring",
        "verdict",
        "--no-likelihood",
    )
    # 2 or 3 trials per label are too few to decide (inconclusive); what matters here is what is asked
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials", "2") == EXIT_INCONCLUSIVE
        assert len(server.generation_requests) == 8  # 2 REAL samples (shared by the 3 cells) + 2 per cell
    # the server is gone: more trials are asked for, the provider is unreachable
    assert _audit(adult_files, out, *args, "--trials", "3") == 9
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials", "3") == EXIT_INCONCLUSIVE
        assert len(server.generation_requests) == 4  # only trial index 2 of each label and cell was asked
    audit = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert audit["trials"]["n_resumed"] == 12 and audit["trials"]["n_run"] == 6
    assert audit["conditions"][0]["n_valid"] == 6
    # a rerun with nothing new answers from the trial file: no request at all
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials", "3") == EXIT_INCONCLUSIVE
        assert server.generation_requests == []


@pytest.mark.slow
def test_end_to_end_with_the_embedded_model(tmp_path: Path) -> None:
    from llmdisc.data.datasets import load_dataset, train_holdout_split
    from llmdisc.discrimination.records import load_trials
    from llmdisc.pipeline.reports import find_leaks
    from llmdisc.scoring.metrics import score_cells
    from llmdisc.synthesis.releases import synthesize

    table = load_dataset("adult", n_rows=400, seed=5)
    train, holdout = train_holdout_split(table, holdout_fraction=0.25, seed=5)
    release = synthesize(
        train,
        dataset_key="adult",
        synthesizer="gaussian_copula",
        seed=5,
        num_rows=300,
        cache_root=tmp_path / "synth",
        show_progress=False,
    ).table
    files = {
        "real": tmp_path / "real.csv",
        "synthetic": tmp_path / "release.parquet",
        "holdout": tmp_path / "holdout.csv",
    }
    train.to_csv(files["real"], index=False)
    release.to_parquet(files["synthetic"], index=False)
    holdout.to_csv(files["holdout"], index=False)
    out = tmp_path / "audit"
    from llmdisc.discrimination.cache import default_cache_dir

    def project_token_lines() -> int:
        return sum(len(f.read_text(encoding="utf-8").splitlines())
                   for f in (default_cache_dir() / "likelihood-tokens").glob("*.jsonl"))

    before = project_token_lines()
    status = main(
        [
            "audit",
            "--real",
            str(files["real"]),
            "--synthetic",
            str(files["synthetic"]),
            "--holdout",
            str(files["holdout"]),
            "--trials",
            "1",
            "--conditions",
            "C1",
            "--out",
            str(out),
            "--n-attacks",
            "30",
            "--no-progress",
            "--no-likelihood",  # the embedded model's likelihood: test_audit_controls.py
            "--seed",
            "3",
        ]
    )
    assert status == EXIT_INCONCLUSIVE  # one trial per label cannot decide
    # the label-score pass's prompt tokens (the user's rows) stay in the audit folder, never the project's cache
    assert list((out / "cache" / "likelihood-tokens").glob("*.jsonl"))
    assert project_token_lines() == before
    audit = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert audit["parameters"]["provider"] == "local" and audit["parameters"]["scoring"] == "both"
    trials = load_trials(out / audit["trials"]["file"])
    assert len(trials) == 6 and set(trials["condition"]) == {"C1"}
    assert set(trials["synthetic_method"]) == {"release", "shuffled_columns", "real_holdout"}
    assert set(trials["dataset_key"]) == {"audit"} and set(trials["scoring"]) == {"both"}
    # every figure of the report recomputed from the trial records with the scoring functions
    scored = score_cells(trials, seed=3)
    scored = scored[scored["synthetic_method"] == "release"].set_index("condition")
    for row in audit["conditions"]:
        expected = scored.loc[row["condition"]]
        for key in ("drs", "drs_ci_low", "drs_ci_high", "p_real", "p_syn", "n_valid", "n_error"):
            want = expected[key]
            assert (row[key] is None and pd.isna(want)) or row[key] == pytest.approx(want), key
        probability = row["probability"]  # the embedded model scores both labels of every prompt
        assert sum(probability[k] for k in ("n_real", "n_syn", "n_invalid", "n_error")) == 2
    assert audit["content_free"]["status"] == "scored"
    assert audit["controls"]["real_holdout"]["source"].startswith("real holdout rows (--holdout)")
    checks = audit["checks"]
    assert checks["distances"]["with_holdout"] is True
    assert 0.0 <= checks["distances"]["share_closer_than_holdout_median"]["value"] <= 1.0
    assert set(checks["c2st"]["classifiers"]) == {"logistic", "hist_gb"}
    assert (
        0.5 < checks["c2st"]["classifiers"]["hist_gb"]["auc"]["value"] <= 1.0
    )  # GaussianCopula is detectable
    assert len(checks["anonymeter"]) == 3
    html = (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "<script" not in html.lower() and 'src="data:image/png;base64,' in html
    assert find_leaks(html) == [] and find_leaks((out / "audit.json").read_text(encoding="utf-8")) == []
    assert audit["verdict"]["headline"] in html.replace("&#x27;", "'").replace("&quot;", '"')
    assert np.isfinite(audit["drs_upper_bound"])
