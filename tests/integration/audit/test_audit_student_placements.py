"""``llmdisc audit`` on a table nobody here made: SDMetrics' ``student_placements`` demo pair.

The files ship inside the installed ``sdmetrics`` package (``sdmetrics/demos/single_table``: the real and
synthetic CSVs and SDV's ``metadata.json``). ``student_id`` runs 17264–17478 in the real table and 0–214 in
the synthetic one, so a key left in would be the whole finding (C2ST AUC 1.00). The LLM answers over real
HTTP on 127.0.0.1 (the OpenAI wire server), and its prompts are inspected: they must hold dates as dates and
no key.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.cli.main import main
from support.wire_servers import OpenAIWireServer

sdmetrics = pytest.importorskip("sdmetrics")
DEMO = Path(sdmetrics.__file__).parent / "demos" / "single_table"
ROWS = ("--instruments", "c2st", "distances")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo files copied out of the installed package (the audit writes nothing next to them)."""
    root = tmp_path_factory.mktemp("student_placements")
    files = {"real": "student_placements_real.csv", "synthetic": "student_placements_synthetic.csv",
             "metadata": "metadata.json"}
    out = {}
    for role, name in files.items():
        assert (DEMO / name).is_file(), f"sdmetrics no longer ships {name}"
        out[role] = Path(shutil.copy(DEMO / name, root / name))
    return out


class PromptRecorder:
    """Answers every sample REAL, with the verdict word and an empty value among its red flags."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, chat: object) -> str:
        self.prompts.append(chat.user)  # type: ignore[attr-defined]
        return json.dumps({"verdict": "REAL", "confidence": 55, "reasoning": "salaries look plausible",
                           "red_flags": ["REAL", "nan", "Synthetism", "", "salary rounded to thousands"],
                           "supporting_evidence": []})


def _audit(demo: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["audit", "--real", str(demo["real"]), "--synthetic", str(demo["synthetic"]), "--out", str(out),
                 "--n-attacks", "0", "--no-progress", *extra])


def _llm(base_url: str) -> tuple[str, ...]:
    """The LLM's verdicts (plain text: the recorder gives no label scores) from the loopback server."""
    return ("--provider", "openai", "--base-url", base_url, "--scoring", "verdict")


def _read(out: Path) -> dict:
    return json.loads((out / "audit.json").read_text(encoding="utf-8"))


def _release(audit: dict, instrument: str) -> dict:
    (reading,) = [i for i in audit["instruments"] if i["instrument"] == instrument]
    return reading["comparisons"]["release"]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["detected", "metadata"])
def test_key_column_is_left_out_and_reported_dates_are_dates(demo: dict[str, Path], tmp_path: Path,
                                                             with_metadata: bool) -> None:
    recorder = PromptRecorder()
    extra = ("--metadata", str(demo["metadata"])) if with_metadata else ()
    with OpenAIWireServer(responder=recorder) as server:
        # the row instruments and the LLM (the embedded model's sample instruments are tested elsewhere: here they
        # would cost minutes of 2,000-token samples and test nothing about keys and dates)
        status = _audit(demo, tmp_path / "audit", *ROWS, "llm", *_llm(server.base_url), "--trials-per-label", "2",
                        "--conditions", "C1", "C2", *extra)
    assert len(recorder.prompts) == 16  # 2 trials × 2 conditions × (1 shared REAL + 3 cells' samples)
    for prompt in recorder.prompts:
        assert "student_id" not in prompt and "17264" not in prompt  # the key never reaches the LLM
        assert re.search(r"\b2020-\d\d-\d\d\b", prompt)  # dates shown as dates
        assert not re.search(r"\b1[89]\d{3}\.0\b", prompt)  # ... not as day numbers
    audit = _read(tmp_path / "audit")
    assert audit["parameters"]["instruments"][-1] == "llm"
    readings = {i["instrument"]: i for i in audit["instruments"]}
    assert readings["llm-C1"]["controls_passed"] is False  # always REAL: blind to the shuffled columns
    # the LLM cannot vouch, the C2ST can: the outcome is the C2ST's, not "inconclusive"
    assert "c2st" in audit["decision"]["deciding"] and status == 0
    keys = audit["identifiers"]["columns"]
    assert [k["column"] for k in keys] == ["student_id"] and audit["identifiers"]["kept"] is False
    key = keys[0]
    assert (key["real"]["min"], key["real"]["max"]) == (17264, 17478)
    assert (key["synthetic"]["min"], key["synthetic"]["max"]) == (0, 214)
    assert key["separates"] is True and key["synthetic_in_real"] == 0.0
    schema = {c["name"]: c for c in audit["schema"]["columns"]}
    assert "student_id" not in audit["schema"]["used"] and len(audit["schema"]["used"]) == 16
    assert audit["schema"]["excluded"] == [{"name": "student_id", "reason": "key column, unique per row"}]
    assert schema["start_date"]["kind"] == schema["end_date"]["kind"] == "datetime"
    assert audit["schema"]["date_formats"]["start_date"] == "%Y-%m-%d"
    assert schema["student_id"]["kind"].startswith("excluded (key column")
    if with_metadata:
        assert schema["student_id"]["how"] == "--metadata metadata.json: sdtype id (primary key)"
        assert schema["placed"]["how"] == "--metadata metadata.json: sdtype boolean"
        assert schema["duration"]["kind"] == "numerical"  # sdtype numerical, though it has few levels
        assert audit["parameters"]["metadata"] == "metadata.json"
    else:
        assert schema["student_id"]["how"] == "detected: unique in every row (a key)"
    # red flags: only cue text is tabulated
    assert [f["red_flag"] for f in readings["llm-C1"]["details"]["red_flags"]] == ["salary rounded to thousands"]
    html = (tmp_path / "audit" / "report.html").read_text(encoding="utf-8")
    section = html.split("<h2>Key columns and columns left out</h2>")[1].split("<h2>")[0]
    assert "student_id" in section and "17264–17478" in section and "0–214" in section
    assert "alone separates the tables" in section
    assert "Synthetism" not in html and ">nan<" not in html


def test_the_classifier_test_without_and_with_the_key(demo: dict[str, Path], tmp_path: Path) -> None:
    """C2ST on the dates as days and without the key; --keep-ids puts the key back, and it separates alone."""
    audits = {}
    for name, extra in (("left_out", ()), ("kept", ("--keep-ids",))):
        assert _audit(demo, tmp_path / name, *ROWS, "--metadata", str(demo["metadata"]), *extra) == 0
        audits[name] = _read(tmp_path / name)
    assert audits["kept"]["identifiers"]["kept"] is True and audits["kept"]["schema"]["excluded"] == []
    assert "student_id" in audits["kept"]["schema"]["used"]
    assert _release(audits["kept"], "c2st")["auc"] > 0.999  # the key alone separates the tables
    assert _release(audits["left_out"], "c2st")["auc"] < _release(audits["kept"], "c2st")["auc"]
    assert _release(audits["left_out"], "distances")["n_other"] == 215


def _write_metadata(path: Path, columns: dict) -> Path:
    path.write_text(json.dumps({"columns": columns, "METADATA_SPEC_VERSION": "SINGLE_TABLE_V1"}), encoding="utf-8")
    return path


def test_bad_metadata_and_dates_get_named_errors_and_documented_statuses(
        demo: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = json.loads(demo["metadata"].read_text(encoding="utf-8"))["tables"]["student_placements"]["columns"]
    renamed = {("grade" if k == "gender" else k): v for k, v in good.items()}
    unknown = {**good, "gender": {"sdtype": "sex_at_birth"}}
    wrong_format = {**good, "start_date": {"sdtype": "datetime", "datetime_format": "%d/%m/%Y"}}
    bad_dates = pd.read_csv(demo["synthetic"])
    bad_dates.loc[3, "end_date"] = "2020-13-45"
    files = {"bad_dates": tmp_path / "bad_dates.csv"}
    bad_dates.to_csv(files["bad_dates"], index=False)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    cases = {
        "missing": (("--metadata", str(tmp_path / "nope.json")), 4, "metadata file 'nope.json' does not exist"),
        "broken": (("--metadata", str(tmp_path / "broken.json")), 5, "broken.json is not JSON"),
        "columns": (("--metadata", str(_write_metadata(tmp_path / "renamed.json", renamed))), 6,
                    r"lacks column\(s\) \['gender'\] and describes column\(s\) \['grade'\].*fix:"),
        "sdtype": (("--metadata", str(_write_metadata(tmp_path / "unknown.json", unknown))), 5,
                   r"column 'gender' has sdtype 'sex_at_birth', which SDV does not know; fix: use one of"),
        "format": (("--metadata", str(_write_metadata(tmp_path / "format.json", wrong_format))), 6,
                    r"column 'start_date' is a date .*format %d/%m/%Y.* holds '2020-\d\d-\d\d'.*fix:"),
    }
    for name, (extra, status, message) in cases.items():
        assert _audit(demo, tmp_path / name, *ROWS, *extra) == status, name
        assert re.search(message, capsys.readouterr().err), name
    # without metadata the dates are detected from the real table; a synthetic value they do not fit is named
    status = main(["audit", "--real", str(demo["real"]), "--synthetic", str(files["bad_dates"]),
                   "--out", str(tmp_path / "d"), *ROWS, "--no-progress"])
    assert status == 6
    err = capsys.readouterr().err
    assert "column 'end_date' is a date (detected: dates (%Y-%m-%d), format %Y-%m-%d)" in err
    assert "'2020-13-45'" in err and "--categorical end_date" in err
