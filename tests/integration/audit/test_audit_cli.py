"""``llmdisc audit`` end to end: the default instruments, remote refusal, the exit statuses, bad input, resuming.

Providers answer over real HTTP on 127.0.0.1 (the loopback wire servers of ``tests/support``). Every audit
runs the release beside two controls (shuffled columns, real rows as "synthetic"); the LLM's controls and the
"inconclusive" status are in ``test_audit_controls.py``, the gate's scale in ``test_audit_gate_scale.py``.
"""

from __future__ import annotations

import json
import re
import socket
import time
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.audit.errors import EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE
from llmdisc.cli.main import main
from support.wire_servers import GeminiWireServer, OpenAIWireServer

SYNTH_MARK = "fake_"
ROWS = ("--instruments", "c2st", "distances")
"""The two fast row instruments, where the LLM is not the point."""


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


def verdict_by_mark(chat: object) -> str:
    """Right about the release (it holds ``fake_`` values); blind to the shuffled-columns control."""
    label = "SYNTHETIC" if SYNTH_MARK in chat.user else "REAL"  # type: ignore[attr-defined]
    return json.dumps({"verdict": label, "confidence": 90, "reasoning": f"workclass says {label}",
                       "red_flags": ["Odd workclass values"], "supporting_evidence": []})


def _audit(files: dict[str, Path], out: Path, *extra: str, synthetic: str = "marked", progress: bool = False) -> int:
    return main(["audit", "--real", str(files["real"]), "--synthetic", str(files[synthetic]), "--out", str(out),
                 *(() if progress else ("--no-progress",)), *extra])


def _read(out: Path) -> dict:
    return json.loads((out / "audit.json").read_text(encoding="utf-8"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_row_instruments_decide_a_small_real_table_and_state_their_plan(
        adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from llmdisc.pipeline.reports import find_leaks

    assert _audit(adult_files, tmp_path / "plain", *ROWS, progress=True) == EXIT_OK
    captured = capsys.readouterr()
    # the plan and its estimate come before any work, then progress lines
    plan = re.search(r"2 instruments, about \d+ (s|min \d\d s) in all", captured.err)
    assert plan is not None, captured.err
    assert captured.err.index(plan.group(0)) < captured.err.index("[c2st] 3/3 comparisons")
    assert "[distances] 4/4 groups" in captured.err
    audit = _read(tmp_path / "plain")
    assert audit["parameters"]["instruments"] == ["c2st", "distances"]
    assert audit["parameters"]["provider"] is None  # no LLM was opened
    assert [i["instrument"] for i in audit["instruments"]] == ["c2st", "distances"]
    decision = audit["decision"]
    assert decision["outcome"] == "conclusive" and "c2st" in decision["deciding"]
    assert "c2st" in decision["told_apart_by"]  # "fake_" workclass values are new levels
    assert captured.out.splitlines()[0] == audit["headline"]
    assert audit["headline"].startswith("The release is told apart from real data by Classifier two-sample test")
    assert set(audit["plan"]) == {"c2st", "distances"} and audit["seconds"]["total"] > 0
    html = (tmp_path / "plain" / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "<script" not in html.lower() and 'src="data:image/png;base64,' in html
    assert find_leaks(html) == [] and find_leaks((tmp_path / "plain" / "audit.json").read_text("utf-8")) == []
    assert audit["headline"] in unescape(html)  # the template escapes quotes as &#39; and &#34;
    # the same audit with the example gate: the marked release fails it, exit 1
    assert _audit(adult_files, tmp_path / "gated", *ROWS, "--fail-above", "0.5") == EXIT_GATE
    gated = _read(tmp_path / "gated")["decision"]
    # on 130 rows a side no instrument's positive control shows D above 0.5, so none vouches; the C2ST is sure the
    # release is above the threshold (its D lower bound is) and fails it alone
    assert gated["outcome"] == "fail" and "c2st" in gated["sure_above"] and gated["fail_above"] == 0.5
    assert "release gate FAILED (exit 1)" in capsys.readouterr().err


@pytest.mark.slow
def test_the_default_instruments_are_conclusive_on_a_small_real_table(adult_files: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    """No --instruments and the embedded local model: the offline default, no LLM verdicts; conclusive."""
    from llmdisc.audit.instruments import DEFAULT_INSTRUMENTS

    assert _audit(adult_files, tmp_path / "default", "--samples", "5", "--max-minutes", "0") == EXIT_OK
    audit = _read(tmp_path / "default")
    assert audit["parameters"]["instruments"] == list(DEFAULT_INSTRUMENTS) and "llm" not in DEFAULT_INSTRUMENTS
    assert audit["parameters"]["provider"] is None  # no LLM was opened
    decision = audit["decision"]
    assert decision["outcome"] == "conclusive" and "c2st" in decision["told_apart_by"]
    assert {i["instrument"] for i in audit["instruments"]} >= {"c2st", "distances"}
    readings = {i["instrument"]: i for i in audit["instruments"]}
    for name in ("joint", "likelihood"):  # the embedded model read 5 samples a group, controls included
        assert readings[name]["status"] == "measured", readings[name]["reason"]
        assert set(readings[name]["comparisons"]) == {"release", "shuffled_columns", "real_holdout"}
    # k + 1 passes × 4 groups × 5 samples, planned up front, less the timing probe's 4 samples (the run reuses them)
    assert audit["plan"]["joint"]["units"] == 3 * (4 * 5 - 4)


def test_a_budget_spent_before_the_model_loads_still_gets_the_row_instruments(
        adult_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The instruments without a model run first: once they have spent ``--max-minutes``, the model's
    instruments stop without loading it, and the C2ST and the distances decide (the model's load and timing probe
    used to come first and could take the whole budget, leaving no instrument measured)."""
    from llmdisc.audit.instruments.rows import DistanceInstrument
    from llmdisc.audit.instruments.samples import SamplePasses

    measure = DistanceInstrument.run

    def measure_then_spend_the_budget(self, data, progress):  # noqa: ANN001, ANN202
        reading = measure(self, data, progress)
        while not progress.out_of_time():
            time.sleep(0.1)
        return reading

    def load_the_model(self, data):  # noqa: ANN001, ANN202
        raise AssertionError("the model was loaded after the budget was spent")

    monkeypatch.setattr(DistanceInstrument, "run", measure_then_spend_the_budget)
    monkeypatch.setattr(SamplePasses, "_open", load_the_model)
    status = _audit(adult_files, tmp_path / "short", "--instruments", "joint", "c2st", "distances",
                    "--max-minutes", "0.3", progress=True)
    err = capsys.readouterr().err
    audit = _read(tmp_path / "short")
    assert [i["instrument"] for i in audit["instruments"]] == ["joint", "c2st", "distances"]  # the order asked
    readings = {i["instrument"]: i for i in audit["instruments"]}
    assert readings["c2st"]["status"] == readings["distances"]["status"] == "measured"
    assert readings["joint"]["status"] == "stopped", readings["joint"]["reason"]
    assert readings["joint"]["reason"] == "--max-minutes reached before it started"
    assert "planning (model load and timing probe)" not in audit["seconds"]
    assert status == EXIT_OK and audit["decision"]["outcome"] == "conclusive"
    assert "c2st" in audit["decision"]["told_apart_by"]
    assert err.index("3 instruments; first without a model, about") < err.index("[c2st]")
    assert "then with the model" not in err  # never planned


def test_fail_above_must_be_a_fraction(
    adult_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("25", "-0.1"):
        assert _audit(adult_files, tmp_path, *ROWS, "--fail-above", bad) == EXIT_USAGE
        assert f"--fail-above {bad} is outside 0..1; fix: give the bound on D" in capsys.readouterr().err
    assert not (tmp_path / "audit.json").exists()


def test_remote_provider_is_refused_before_any_request(
    adult_files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-secret")
    llm = ("--trials-per-label", "1", "--conditions", "C1", "--scoring", "verdict")
    with GeminiWireServer(models=["gemini-2.5-flash"]) as server:
        # a remote provider asks for the LLM's verdicts by default: refused before anything is read or sent
        status = _audit(adult_files, tmp_path / "g", "--provider", "gemini", "--base-url", server.base_url, *llm)
        assert status == 8
        assert server.requests == []  # not even a model listing
        err = capsys.readouterr().err
        assert "provider 'gemini' would send rows of the REAL table" in err and "add --allow-remote" in err
        assert not (tmp_path / "g").exists()  # refused before any input was read or folder made
        # --no-llm: the same provider named, no LLM instrument, nothing refused and nothing sent
        status = _audit(adult_files, tmp_path / "offline", "--provider", "gemini", "--base-url", server.base_url,
                        "--no-llm", *ROWS)
        assert status == EXIT_OK and server.requests == []
        assert _read(tmp_path / "offline")["parameters"]["instruments"] == ["c2st", "distances"]
        # with the flag it runs: one REAL sample (shared by the cells) and one sample of each of the 3 cells;
        # an LLM that answers REAL to everything misses its positive control
        status = _audit(adult_files, tmp_path / "g", "--provider", "gemini", "--base-url", server.base_url,
                        "--allow-remote", "--instruments", "llm", *llm)
        assert status == EXIT_INCONCLUSIVE and len(server.generation_requests) == 4
    # openai at a non-loopback address: refused at once, no connection attempted (the address is unroutable)
    status = _audit(adult_files, tmp_path / "o", "--provider", "openai", "--base-url", "http://10.255.255.1/v1")
    assert status == 8
    assert "to http://10.255.255.1/v1, which is not this machine; nothing was sent" in capsys.readouterr().err
    # ... also when only --llm asks for it besides the row instruments
    status = _audit(adult_files, tmp_path / "o2", "--provider", "openai", "--base-url", "http://10.255.255.1/v1",
                    "--llm", *ROWS)
    assert status == 8 and not (tmp_path / "o2").exists()
    capsys.readouterr()
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
    expected = {
        "missing": (4, "'missing.csv' does not exist"),
        "garbled": (5, "garbled.csv cannot be parsed"),
        "renamed": (6, r"missing \['occupation'\], extra \['job'\]"),
        "tiny": (7, "tiny.csv has 12 data rows, fewer than the 20 rows"),
    }
    for name, (code, message) in expected.items():
        assert _audit(files, tmp_path / name, *ROWS, synthetic=name) == code, name
        assert re.search(message, capsys.readouterr().err), name
    # the inputs are fine but nobody listens at the LLM's port
    down = ("--provider", "openai", "--base-url", f"http://127.0.0.1:{_free_port()}/v1", "--instruments", "llm")
    assert _audit(files, tmp_path / "down", *down) == 9
    assert "no openai server answers" in capsys.readouterr().err.lower().replace(
        "openai-compatible", "openai"
    )


class PinnedOpenAIServer(OpenAIWireServer):
    """The OpenAI wire server on a chosen port, so an outage can end at the same URL (the URL is part of a
    run's identity: another port would be another configuration with its own trial file)."""

    def __init__(self, port: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.pinned_port = port

    def start(self) -> "PinnedOpenAIServer":
        import threading

        from support import wire_base

        self._httpd = wire_base._Server(("127.0.0.1", self.pinned_port), wire_base._Handler)
        self._httpd.wire = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self


def test_rerun_after_an_outage_resumes_finished_trials(adult_files: dict[str, Path], tmp_path: Path) -> None:
    out, port = tmp_path / "audit", _free_port()
    args = ("--llm", "--instruments", "llm", "--provider", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--conditions", "C1", "--scoring", "verdict")
    # the discriminator is blind to the shuffled-columns control: inconclusive; what matters is what is asked
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials-per-label", "2") == EXIT_INCONCLUSIVE
        assert len(server.generation_requests) == 8  # 2 REAL samples (shared by the 3 cells) + 2 per cell
    # the server is gone: more trials are asked for, the provider is unreachable
    assert _audit(adult_files, out, *args, "--trials-per-label", "3") == 9
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials-per-label", "3") == EXIT_INCONCLUSIVE
        assert len(server.generation_requests) == 4  # only trial index 2 of each label and cell was asked
    reading = _read(out)["instruments"][0]
    assert reading["details"]["run"] == {"n_planned": 18, "n_resumed": 12, "n_run": 6, "n_error": 0}
    assert reading["details"]["n_trials"] == 18
    release = reading["comparisons"]["release"]
    assert (release["n_real"], release["n_other"], release["auc"]) == (3, 3, 1.0)  # the mark is seen
    # a rerun with nothing new answers from the trial file: no request at all
    with PinnedOpenAIServer(port, responder=verdict_by_mark) as server:
        assert _audit(adult_files, out, *args, "--trials-per-label", "3") == EXIT_INCONCLUSIVE
        assert server.generation_requests == []
    assert _read(out)["instruments"][0]["details"]["run"]["n_resumed"] == 18


@pytest.mark.slow
def test_end_to_end_with_a_holdout_and_the_embedded_model(tmp_path: Path) -> None:
    from llmdisc.audit.instruments import DEFAULT_INSTRUMENTS
    from llmdisc.data.datasets import load_dataset, train_holdout_split
    from llmdisc.discrimination.cache import default_cache_dir
    from llmdisc.discrimination.records import load_trials
    from llmdisc.pipeline.reports import find_leaks
    from llmdisc.synthesis.releases import synthesize

    table = load_dataset("adult", n_rows=400, seed=5)
    train, holdout = train_holdout_split(table, holdout_fraction=0.25, seed=5)
    release = synthesize(train, dataset_key="adult", synthesizer="gaussian_copula", seed=5, num_rows=300,
                         cache_root=tmp_path / "synth", show_progress=False).table
    files = {"real": tmp_path / "real.csv", "synthetic": tmp_path / "release.parquet",
             "holdout": tmp_path / "holdout.csv"}
    train.to_csv(files["real"], index=False)
    release.to_parquet(files["synthetic"], index=False)
    holdout.to_csv(files["holdout"], index=False)
    out = tmp_path / "audit"

    def project_token_lines() -> int:
        return sum(len(f.read_text(encoding="utf-8").splitlines())
                   for f in (default_cache_dir() / "likelihood-tokens").glob("*.jsonl"))

    before = project_token_lines()
    status = main(["audit", "--real", str(files["real"]), "--synthetic", str(files["synthetic"]), "--holdout",
                   str(files["holdout"]), "--llm", "--trials-per-label", "1", "--conditions", "C1", "--out", str(out),
                   "--n-attacks", "30", "--no-progress", "--seed", "3", "--samples", "5", "--max-minutes", "0"])
    audit = _read(out)
    assert audit["parameters"]["instruments"] == [*DEFAULT_INSTRUMENTS, "llm"]
    assert audit["parameters"]["provider"] == "local" and audit["parameters"]["scoring"] == "probability"
    # the label-score pass's prompt tokens (the user's rows) stay in the audit folder, never the project's cache
    assert list((out / "cache" / "likelihood-tokens").glob("*.jsonl"))
    assert project_token_lines() == before
    readings = {i["instrument"]: i for i in audit["instruments"]}
    llm = readings["llm-C1"]
    trials = load_trials(out / "trials" / llm["details"]["trials_file"])
    assert len(trials) == 6 and set(trials["condition"]) == {"C1"}
    assert set(trials["synthetic_method"]) == {"release", "shuffled_columns", "real_holdout"}
    assert set(trials["dataset_key"]) == {"audit"} and set(trials["scoring"]) == {"probability"}
    # one trial per label: one sample against one, whose AUC of 0 or 1 has a zero-width interval, judges nothing
    assert llm["controls_passed"] is False
    assert all("too few 20-row samples" in r for r in llm["control_reasons"])
    # with a holdout the real class is the holdout, and the training rows are real against real
    assert audit["groups"]["notes"]["real"].startswith("the 100 --holdout rows: records the generator never saw")
    assert "the generator's training rows" in audit["groups"]["notes"]["real_holdout"]
    c2st = readings["c2st"]
    assert c2st["comparisons"]["release"]["separated"] is True and c2st["comparisons"]["release"]["one_sided"]
    assert 0.5 < c2st["comparisons"]["release"]["auc"] <= 1.0  # GaussianCopula is detectable
    distances = readings["distances"]["comparisons"]["release"]
    assert 0.0 <= distances["exact_copy_rate"] <= 1.0 and distances["n_other"] == 300
    assert audit["anonymeter"]["status"] == "measured" and len(audit["anonymeter"]["risks"]) == 3
    assert audit["decision"]["outcome"] == "conclusive" and status == EXIT_OK
    assert set(audit["decision"]["deciding"]) & {"c2st", "distances"}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert "<script" not in html.lower() and 'src="data:image/png;base64,' in html
    assert find_leaks(html) == [] and find_leaks((out / "audit.json").read_text(encoding="utf-8")) == []
    assert "<h2>Anonymeter attacks</h2>" in html and "LLM verdict, C1" in html


def _status(argv: list[str]) -> int:
    """The exit status of a command line, whether ``main`` returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as stop:
        return int(stop.code or 0)


def test_help_states_the_exit_statuses_the_gate_and_the_duration(capsys: pytest.CaptureFixture[str]) -> None:
    from llmdisc.audit.errors import EXIT_STATUSES

    assert _status(["audit", "--help"]) == 0
    text = capsys.readouterr().out
    statuses = dict(re.findall(r"^\s+(\d+)  (.+)$", text, flags=re.MULTILINE))
    assert statuses["0"].startswith("audit written; conclusive, and the --fail-above gate (if any) passed")
    assert statuses["1"].startswith("audit written; the release FAILED the gate")
    assert statuses["2"].startswith("bad command-line option or value (argparse's usage errors")
    assert statuses["3"].startswith("audit written but INCONCLUSIVE (never a pass)")
    assert {int(k) for k in statuses} >= {code for code, _ in EXIT_STATUSES}
    assert (EXIT_OK, EXIT_GATE, EXIT_USAGE, EXIT_INCONCLUSIVE) == (0, 1, 2, 3)
    # the gate statistic in one sentence with its example, and how long an audit takes
    flat = " ".join(text.split())
    assert "D = 2·|AUC − 0.5|" in flat and "0 = indistinguishable from real data" in flat
    assert "example: --fail-above 0.5" in flat
    assert re.search(r"Duration: .*ends within --max-minutes \(default 10\).*sizes the samples", flat)
    assert "--max-minutes" in flat and "--instruments NAME" in flat and "--llm | --no-llm" in flat


def test_usage_errors_exit_2(adult_files: dict[str, Path], tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    files = ("--real", str(adult_files["real"]), "--synthetic", str(adult_files["marked"]), "--out", str(tmp_path))
    cases = {  # argparse's own errors, and the audit's checks of option values (before anything is read)
        "missing --synthetic": (["--real", str(adult_files["real"])], "the following arguments are required"),
        "removed --gate": ([*files, "--gate", "drs"], "unrecognized arguments: --gate"),
        "removed --no-checks": ([*files, "--no-checks"], "unrecognized arguments: --no-checks"),
        "removed --no-likelihood": ([*files, "--no-likelihood"], "unrecognized arguments: --no-likelihood"),
        "not a number": ([*files, "--fail-above", "half"], "invalid float value: 'half'"),
        "unknown instrument": ([*files, "--instruments", "c2st,oracle"], "--instruments oracle not known"),
        "unknown condition": ([*files, "--llm", "--conditions", "C1", "C3"], "not a list of distinct C1/C2"),
        "too few samples": ([*files, "--samples", "2"], "--samples 2 is below 5"),
        "no time": ([*files, "--max-minutes", "-1"], "--max-minutes -1 is negative"),
    }
    for name, (argv, message) in cases.items():
        assert _status(["audit", *argv]) == EXIT_USAGE, name
        assert message in capsys.readouterr().err, name
    assert not (tmp_path / "audit.json").exists()
