"""Exit statuses a pipeline can trust, and the JSON Schema of ``audit.json`` (issue 40, items 2 and 5).

The statuses live in one table (:mod:`llmdisc.audit.errors`): 1 means only that the gate failed; an unexpected
error is 70 with its traceback in the audit folder (the crash itself is injected in
``tests/integration/audit/test_audit_exit_statuses.py``). ``audit.json`` follows ``audit.schema.json``, shipped
with the package; the schema rejects a broken file.
"""

from __future__ import annotations

import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from llmdisc.audit.errors import (EXIT_GATE, EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_OK, EXIT_STATUSES,
                                  TRACEBACK_FILE, ColumnMismatchError, DateParseError, ExitStatus, InputMissingError,
                                  InputUnparsableError, MetadataColumnsError, MetadataError, RemoteProviderRefused,
                                  TooFewRowsError, exit_status_for, exit_status_record, exit_status_table,
                                  outcome_status)
from llmdisc.audit.report import AUDIT_SCHEMA, record_crash
from llmdisc.discrimination.providers.errors import (ModelNotFoundError, ProviderAuthError, ProviderConfigError,
                                                     ProviderRequestError, ProviderUnreachableError, RateLimited,
                                                     TransientProviderError)
from llmdisc.discrimination.runner import RunAborted
from llmdisc.errors import CacheMissError, ConfigError, DataError, LlmdiscError, ProviderError
from llmdisc.paths import project_root

FIXTURE = project_root() / "tests" / "fixtures" / "audit" / "audit.json"
"""A real ``audit.json`` (C2ST and distances on 300 Adult rows against a release that marks itself, with a holdout,
``--fail-above 0.5``: inconclusive, exit 3)."""


def test_the_statuses_are_one_table_and_1_means_only_a_failed_gate() -> None:
    assert [int(s) for s in ExitStatus] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 70, 130]
    assert [code for code, _ in EXIT_STATUSES] == list(ExitStatus)  # every status has its meaning, in order
    meanings = dict(EXIT_STATUSES)
    assert meanings[1].startswith("audit written; the release FAILED the gate") and "never 1" in meanings[1]
    assert all(meanings[s].startswith("input error") for s in (4, 5, 6, 7))
    assert all(meanings[s].startswith("provider error") for s in (8, 9, 10))
    assert EXIT_INTERNAL == 70 and TRACEBACK_FILE in meanings[70]
    assert exit_status_record(3) == {"code": 3, "name": "inconclusive"}
    assert exit_status_record(EXIT_INTERNAL) == {"code": 70, "name": "internal_error"}
    table = exit_status_table()
    assert list(table) == [str(int(s)) for s in ExitStatus]
    assert table["1"]["name"] == "gate_failed" and table["70"]["meaning"] == meanings[70]
    json.dumps(table)  # JSON-ready


@pytest.mark.parametrize(("outcome", "gate_passed", "status"), [
    ("pass", True, EXIT_OK), ("conclusive", None, EXIT_OK), ("fail", False, EXIT_GATE),
    ("inconclusive", None, EXIT_INCONCLUSIVE)])
def test_a_finished_audit_exits_with_its_outcome(outcome: str, gate_passed: bool | None, status: int) -> None:
    assert outcome_status(outcome, gate_passed) == status


@pytest.mark.parametrize(("exc", "status"), [
    (InputMissingError("x"), 4), (InputUnparsableError("x"), 5), (MetadataError("x"), 5),
    (DataError("the real table has 3 rows"), 5), (ColumnMismatchError("x"), 6), (MetadataColumnsError("x"), 6),
    (DateParseError("x"), 6), (TooFewRowsError("x"), 7),
    (RemoteProviderRefused("x"), 8),
    (ProviderUnreachableError("x"), 9), (TransientProviderError("x"), 9), (RateLimited("x"), 9),
    (RunAborted("x", summary=None), 9),  # type: ignore[arg-type]
    (ProviderAuthError("x"), 10), (ModelNotFoundError("x"), 10), (ProviderConfigError("x"), 10),
    (ProviderRequestError("x"), 10), (ProviderError("x"), 10), (CacheMissError("x"), 10),
    (ConfigError("--samples 2 is below 5"), 2), (LlmdiscError("x"), 2),
    (KeyboardInterrupt(), 130),
    (RuntimeError("a bug"), 70), (KeyError("column"), 70), (ValueError("a bug"), 70), (ZeroDivisionError(), 70),
])
def test_each_error_maps_to_its_own_status_and_a_crash_never_to_1(exc: BaseException, status: int) -> None:
    assert exit_status_for(exc) == status
    assert exit_status_for(exc) != EXIT_GATE


def test_an_errors_own_status_wins_and_an_unknown_one_is_ignored() -> None:
    err = ConfigError("x")
    err.exit_status = 8  # type: ignore[attr-defined]
    assert exit_status_for(err) == 8
    odd = RuntimeError("x")
    odd.exit_status = 1234  # type: ignore[attr-defined]
    assert exit_status_for(odd) == EXIT_INTERNAL


def _raised(exc: Exception) -> Exception:
    try:
        raise exc
    except Exception as caught:  # noqa: BLE001
        return caught


def test_a_crash_is_recorded_in_the_folder_scrubbed_and_keeps_what_is_there(tmp_path: Path) -> None:
    out = tmp_path / "runs" / "audit"
    out.mkdir(parents=True)
    (out / "cache").mkdir()
    (out / "cache" / "scores.json").write_text("{}", encoding="utf-8")
    inputs = tmp_path / "inputs"
    exc = _raised(RuntimeError(f"cannot read {inputs / 'real.csv'} into {out / 'x'}"))
    path = record_crash(out, exc, status=EXIT_INTERNAL, inputs=(inputs / "real.csv", None))
    assert path == out / TRACEBACK_FILE
    text = path.read_text(encoding="utf-8")
    assert text.startswith("Traceback (most recent call last):") and "RuntimeError: cannot read" in text
    assert "<input>/real.csv" in text and "<audit>/x" in text and str(tmp_path) not in text
    assert (out / "cache" / "scores.json").exists()  # nothing already computed is removed
    # a folder that does not exist yet (the error came before it was made) is created for the traceback
    assert record_crash(tmp_path / "new", exc, status=EXIT_INTERNAL).exists()


def test_audit_json_written_before_a_crash_states_the_crash(tmp_path: Path, assert_valid_audit) -> None:
    (tmp_path / "audit.json").write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    record_crash(tmp_path, _raised(ValueError("the report failed")), status=EXIT_INTERNAL, mark_audit_json=True)
    audit = assert_valid_audit(tmp_path / "audit.json")
    assert audit["exit_status"] == {"code": 70, "name": "internal_error"}
    assert audit["crash"] == {"error": "ValueError: the report failed", "traceback": TRACEBACK_FILE}
    # without the mark (an audit.json of an earlier run) the file is left as it was
    other = tmp_path / "other"
    other.mkdir()
    (other / "audit.json").write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    record_crash(other, _raised(ValueError("x")), status=EXIT_INTERNAL)
    assert (other / "audit.json").read_text(encoding="utf-8") == FIXTURE.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------------ the schema
def test_the_schema_is_valid_json_schema_and_ships_with_the_package() -> None:
    import jsonschema

    schema = json.loads(AUDIT_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert AUDIT_SCHEMA == project_root() / "lib" / "llmdisc" / "audit" / "audit.schema.json"
    package_data = tomllib.loads((project_root() / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["setuptools"]["package-data"]
    assert any(fnmatch(AUDIT_SCHEMA.name, pattern) for pattern in package_data.get("llmdisc.audit", []))
    # the statuses the schema allows are the table's
    assert schema["$defs"]["exit_status"]["properties"]["code"]["enum"] == [int(s) for s in ExitStatus]


def test_a_real_audit_follows_the_schema(assert_valid_audit) -> None:
    audit = assert_valid_audit(FIXTURE)
    assert audit["exit_status"] == {"code": 3, "name": "inconclusive"}
    assert audit["decision"]["outcome"] == "inconclusive"
    assert audit["exit_statuses"] == json.loads(json.dumps(exit_status_table()))


def _broken(change) -> dict:
    audit = json.loads(FIXTURE.read_text(encoding="utf-8"))
    change(audit)
    return audit


@pytest.mark.parametrize(("name", "change", "where"), [
    ("no decision", lambda a: a.pop("decision"), "'decision' is a required property"),
    ("no exit status", lambda a: a.pop("exit_status"), "'exit_status' is a required property"),
    ("an exit status not in the table", lambda a: a["exit_status"].update(code=42), "$.exit_status.code"),
    ("an unknown outcome", lambda a: a["decision"].update(outcome="maybe"), "$.decision.outcome"),
    ("an AUC as text", lambda a: a["instruments"][0]["comparisons"]["release"].update(auc="0.9"),
     "$.instruments[0].comparisons.release.auc"),
    ("D above 1", lambda a: a["instruments"][0]["comparisons"]["release"].update(D_high=1.5),
     "$.instruments[0].comparisons.release.D_high"),
    ("a comparison without its units", lambda a: a["instruments"][1]["comparisons"]["release"].pop("n_real"),
     "'n_real' is a required property"),
    ("an unknown group", lambda a: a["instruments"][0]["comparisons"].update(
        oracle=a["instruments"][0]["comparisons"]["release"]), "$.instruments[0].comparisons"),
    ("an unknown instrument status", lambda a: a["instruments"][0].update(status="done"),
     "$.instruments[0].status"),
    ("a machine path for an input", lambda a: a["inputs"]["real"].update(file="/home/me/real.csv"),
     "$.inputs.real.file"),
    ("an undocumented top-level key", lambda a: a.update(surprise=1), "'surprise' was unexpected"),
])
def test_the_schema_rejects_a_broken_audit(name: str, change, where: str, assert_valid_audit) -> None:
    with pytest.raises(AssertionError, match="does not follow lib/llmdisc/audit/audit.schema.json") as failed:
        assert_valid_audit(_broken(change))
    assert where in str(failed.value), (name, str(failed.value))
