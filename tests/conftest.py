"""Shared test fixtures: hermetic environment, the optional paper reference folder, the api marker."""

from __future__ import annotations

import os
from pathlib import Path

# Before numpy, sklearn or torch load (a session fixture is too late): one OpenMP thread per process, so the
# C2ST's trees and the model passes do not oversubscribe the 2 cores (measured: 132 s instead of 6 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from llmdisc.paths import reference_dir


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runapi", action="store_true", default=False,
                     help="run tests that call real provider APIs (need keys and the internet)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runapi"):
        return
    skip_api = pytest.mark.skip(reason="needs a real API key and the internet; run with --runapi")
    for item in items:
        if "api" in item.keywords:
            item.add_marker(skip_api)


@pytest.fixture(autouse=True, scope="session")
def _hermetic_environment(tmp_path_factory: pytest.TempPathFactory) -> None:
    # SDV writes a logger config under the user data dir on first import: keep it out of $HOME.
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg_data"))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # Never let a developer's real keys reach a test.
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY"):
        os.environ.pop(var, None)


@pytest.fixture(scope="session")
def reference() -> Path:
    """The paper's reference folder (:func:`llmdisc.paths.reference_dir`: ``LLMDISC_REFERENCE``, the fetched
    ``data/reference``, ``../shared/reference``); skips (with the reason) where absent."""
    ref = reference_dir()
    if ref is None:
        pytest.skip("the paper's reference data is not on this machine; run `llmdisc data fetch-reference` "
                    "(or `make reference`), or set LLMDISC_REFERENCE, to run this test")
    return ref


def audit_schema_errors(audit: Path | dict) -> list[str]:
    """Where ``audit`` (an ``audit.json`` path, or its parsed content) breaks the JSON Schema of ``audit.json``
    (:data:`llmdisc.audit.report.AUDIT_SCHEMA`): one line per error with its JSON path; [] when it is valid."""
    import json

    import jsonschema

    from llmdisc.audit.report import AUDIT_SCHEMA

    schema = json.loads(AUDIT_SCHEMA.read_text(encoding="utf-8"))
    data = json.loads(Path(audit).read_text(encoding="utf-8")) if isinstance(audit, (str, Path)) else audit
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{error.json_path}: {error.message[:300]}"
            for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))]


def assert_valid_audit(audit: Path | dict) -> dict:
    """Fail unless ``audit`` (an ``audit.json`` path or its content) follows the schema; return its content."""
    import json

    errors = audit_schema_errors(audit)
    where = audit if isinstance(audit, (str, Path)) else "audit.json"
    assert not errors, f"{where} does not follow lib/llmdisc/audit/audit.schema.json:\n" + "\n".join(errors)
    return json.loads(Path(audit).read_text(encoding="utf-8")) if isinstance(audit, (str, Path)) else audit


@pytest.fixture(name="assert_valid_audit")
def _assert_valid_audit_fixture() -> object:
    """:func:`assert_valid_audit` for test modules (``--import-mode=importlib`` cannot import this conftest)."""
    return assert_valid_audit


HOSTILE = ('<script>window.__pwned = 1</script>"><img src=x onerror="window.__pwned = 1">'
           "' onmouseover='window.__pwned = 1' {{7*7}}{% if 1 %}x{% endif %} &amp; &lt;b&gt;")
"""Markup, script, an attribute break-out, Jinja2 syntax and entities: what a column name or value may hold."""


def hostile(where: str) -> str:
    """:data:`HOSTILE` tagged with the place it is put, so a test can find each place's text on the page."""
    return f"[{where}]{HOSTILE}"


def hostile_report(folder: Path) -> tuple[Path, list[str]]:
    """Write ``folder/report.html`` for an audit whose every user-supplied text is :func:`hostile`: the input file
    names, column names and values (findings, personal-information and key columns, columns left out), the
    instruments' reasons, notes and units, the LLM's red flags, and more (the fixture ``audit.json`` with these put
    in). Returns the page's path and the tagged texts the page must show as text."""
    import copy
    import json

    from llmdisc.audit.instruments.base import Comparison, Reading
    from llmdisc.audit.instruments.llm import LLMInstrument
    from llmdisc.audit.instruments.rows import C2STInstrument
    from llmdisc.audit.report import write_report_html

    fixture = Path(__file__).parent / "fixtures" / "audit" / "audit.json"
    result = copy.deepcopy(json.loads(fixture.read_text(encoding="utf-8")))
    texts: list[str] = []

    def h(where: str) -> str:
        texts.append(hostile(where))
        return texts[-1]

    result["inputs"]["synthetic"]["file"], result["inputs"]["real"]["file"] = h("synthetic file"), h("real file")
    result["headline"] = h("headline")
    result["stopped_early"] = True
    decision = result["decision"]
    decision["reasons"] = [h("decision reason")]
    decision["gate"] = {"c2st": {"vouches": True, "pass_probability_at_chance": 0.9, "fail_probability": 0.8},
                        h("gate instrument"): {"vouches": False, "pass_probability_at_chance": 0.5,
                                               "fail_probability": 0.2}}
    c2st, distances = result["instruments"]
    c2st.update(controls_passed=True, findings=[h("finding")])
    distances.update(status="stopped", reason=h("instrument reason"), control_reasons=[h("control reason")],
                     title=h("instrument title"))
    result["personal"] = [{"column": h("personal column"), "reason": h("personal reason"), "copied_share": 1.0,
                           "distinct_copied": 3, "holdout_copied_share": None, "sentence": h("personal sentence")}]
    result["identifiers"] = {"kept": False, "columns": [
        {"column": h("key column"), "real": {"examples": [h("key value")], "n_distinct": 9, "n": 9},
         "synthetic": {"min": 1, "max": 9, "n_distinct": 9, "n": 9}, "synthetic_in_real": 0.5,
         "sentence": h("key sentence")}]}
    result["schema"]["excluded"] = [{"name": h("excluded column"), "reason": h("excluded reason")}]
    result["anonymeter"] = {"status": "unavailable", "reason": h("anonymeter reason")}
    result["groups"]["notes"]["release"] = h("group note")
    result["seconds"][h("stage")] = 0.1
    result["created"] = h("created")

    def comparison(group: str) -> Comparison:
        return Comparison(group, 0.7, 0.6, 0.8, 0.01, 100, 90)

    reading = Reading("c2st", "C2ST", h("unit"), comparisons={g: comparison(g) for g in ("release", "real_holdout")},
                      findings=[h("section finding")], details={"notes": [h("section note")]})
    llm = Reading("llm-C1", "LLM verdict, C1", "20-row samples", comparisons={"release": comparison("release")},
                  details={"red_flags": [{"red_flag": h("red flag"), "count": 2}],
                           "cues": {"n_trials": 4, "counts": {"true": 1, "false": 2, "not_checkable": 1}}})
    result["instruments"].append({**copy.deepcopy(c2st), "instrument": "llm-C1", "title": "LLM verdict, C1"})
    sections = {"c2st": C2STInstrument().section(reading),
                "llm-C1": LLMInstrument.__new__(LLMInstrument).section(llm)}  # section() reads only the reading
    folder.mkdir(parents=True, exist_ok=True)
    return write_report_html(result, folder / "report.html", sections), texts


@pytest.fixture(name="hostile_report")
def _hostile_report_fixture() -> object:
    """:func:`hostile_report` for test modules (``--import-mode=importlib`` cannot import this conftest)."""
    return hostile_report
