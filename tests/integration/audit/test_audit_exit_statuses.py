"""``llmdisc audit``'s exit statuses end to end (issue 40, item 2): a crash injected into the audit exits 70, never
1, with its traceback in the audit folder and one line on stderr naming it; what was computed stays; the status
of a finished audit is the one its ``audit.json`` states. Every ``audit.json`` written here is also validated
against the schema (``conftest.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from llmdisc.audit.errors import EXIT_GATE, EXIT_INTERNAL, EXIT_STATUSES, TRACEBACK_FILE
from llmdisc.cli.main import main

FAST = ("--instruments", "c2st", "distances", "--n-attacks", "0", "--no-progress")


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from llmdisc.data.datasets import load_dataset

    root = tmp_path_factory.mktemp("exit_statuses")
    marked = load_dataset("adult", n_rows=200, seed=2)
    marked["workclass"] = "fake_" + marked["workclass"]
    paths = {"real": root / "real.csv", "synthetic": root / "synthetic.csv"}
    load_dataset("adult", n_rows=200, seed=1).to_csv(paths["real"], index=False)
    marked.to_csv(paths["synthetic"], index=False)
    return paths


def _audit(tables: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["audit", "--real", str(tables["real"]), "--synthetic", str(tables["synthetic"]), "--out", str(out),
                 *FAST, *extra])


def _crash(*args: object, **kwargs: object) -> None:
    raise RuntimeError("injected crash: the decision broke")


def test_a_crash_exits_70_with_its_traceback_in_the_audit_folder(
        tables: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "audit"
    out.mkdir()
    (out / "notes.txt").write_text("kept", encoding="utf-8")  # whatever is in the folder stays
    monkeypatch.setattr("llmdisc.audit.decision.decide", _crash)  # after every instrument has run

    status = _audit(tables, out, "--fail-above", "0.5")

    assert status == EXIT_INTERNAL == 70 and status != EXIT_GATE
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "internal error" in line]
    assert len(lines) == 1, err
    assert "exit 70" in lines[0] and str(out / TRACEBACK_FILE) in lines[0]
    assert "RuntimeError: injected crash: the decision broke" in lines[0]
    traceback = (out / TRACEBACK_FILE).read_text(encoding="utf-8")
    assert traceback.startswith("Traceback (most recent call last):")
    assert "in run_audit" in traceback and "RuntimeError: injected crash: the decision broke" in traceback
    assert str(tmp_path) not in traceback and str(Path.home()) not in traceback  # scrubbed
    assert (out / "notes.txt").read_text(encoding="utf-8") == "kept"
    assert not (out / "audit.json").exists()  # no decision, so no audit claims one


def test_a_crash_after_audit_json_was_written_marks_it_and_still_exits_70(
        tables: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], assert_valid_audit) -> None:
    monkeypatch.setattr("llmdisc.audit.report.write_report_html", _crash)  # right after audit.json

    assert _audit(tables, tmp_path / "late") == EXIT_INTERNAL
    assert "exit 70" in capsys.readouterr().err
    audit = assert_valid_audit(tmp_path / "late" / "audit.json")
    assert audit["exit_status"] == {"code": 70, "name": "internal_error"}
    assert audit["crash"]["traceback"] == TRACEBACK_FILE and "injected crash" in audit["crash"]["error"]
    assert (tmp_path / "late" / TRACEBACK_FILE).exists()


def test_a_finished_audit_exits_with_the_status_its_audit_json_states(
        tables: dict[str, Path], tmp_path: Path, assert_valid_audit) -> None:
    for name, extra in {"no gate": (), "gate": ("--fail-above", "0.5")}.items():
        out = tmp_path / name.replace(" ", "_")
        status = _audit(tables, out, *extra)
        audit = assert_valid_audit(out / "audit.json")
        assert audit["exit_status"]["code"] == status, name
        assert status in (0, 1, 3), name
        assert {int(k): v["meaning"] for k, v in audit["exit_statuses"].items()} == dict(EXIT_STATUSES)
        assert not (out / TRACEBACK_FILE).exists()


def test_help_lists_every_status_with_70_for_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["audit", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    listed = dict(re.findall(r"^\s+(\d+)  (.+)$", text, flags=re.MULTILINE))
    assert {int(k) for k in listed} == {int(code) for code, _ in EXIT_STATUSES}
    assert listed["70"].startswith("unexpected internal error") and TRACEBACK_FILE in listed["70"]
    assert "never 1" in listed["1"]
    json.dumps(listed)
