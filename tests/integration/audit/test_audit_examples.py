"""The two examples of docs/audit.md, run as written there at a small size (issue 40, item 3): half of UCI Adult
against the other half passes (exit 0), an SDV GaussianCopula release of it fails (exit 1).

The files are made by the page's own Python block with one change, the size: a seeded 6,000-row sample of Adult
instead of its 30,162 rows (halves of 3,000 rows; the C2ST then reads 1,480 rows a side). The two ``llmdisc audit``
commands are the page's, character for character. The pass must be one the gate can back: every instrument that
decides vouches at the threshold with a release at chance passing it nearly always, and the threshold scan in
``audit.json`` agrees with the decision.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from llmdisc.audit.errors import EXIT_GATE, EXIT_OK
from llmdisc.cli.main import main
from llmdisc.paths import project_root

pytestmark = pytest.mark.slow

DOCS = project_root() / "docs" / "audit.md"
FULL = 'load_dataset("adult")'
SMALL = 'load_dataset("adult", n_rows=6000, seed=0)'


def _page() -> str:
    return DOCS.read_text(encoding="utf-8")


def _commands() -> dict[str, list[str]]:
    """The page's two example commands, by release file."""
    lines = [line for line in _page().splitlines() if line.startswith("llmdisc audit --real adult_a.csv")]
    commands = {shlex.split(line)[shlex.split(line).index("--synthetic") + 1]: shlex.split(line)[1:] for line in lines}
    assert set(commands) == {"adult_b.csv", "adult_gc.csv"}, lines
    return commands


@pytest.fixture(scope="module")
def example_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's files, made by its own Python block at the small size, in a fresh folder."""
    block = re.search(r"```bash\npython - <<'EOF'\n(.*?)\nEOF\n```", _page(), re.S)
    assert block is not None, "docs/audit.md lost its Python block"
    code = block.group(1)
    assert code.count(FULL) == 1, "the block no longer loads Adult as the test expects"
    folder = tmp_path_factory.mktemp("audit_examples")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        exec(compile(code.replace(FULL, SMALL), str(DOCS), "exec"), {"__name__": "docs_audit_example"})
    assert {p.name for p in folder.glob("*.csv")} == {"adult_a.csv", "adult_b.csv", "adult_gc.csv"}
    return folder


def _run(folder: Path, release: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict]:
    args = _commands()[release]
    monkeypatch.chdir(folder)
    status = main([*args, "--no-progress"])
    out = folder / args[args.index("--out") + 1]
    return status, json.loads((out / "audit.json").read_text(encoding="utf-8"))


def test_the_other_half_of_adult_passes(example_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, audit = _run(example_folder, "adult_b.csv", monkeypatch)
    decision, thresholds = audit["decision"], audit["thresholds"]
    threshold = decision["fail_above"]
    assert status == EXIT_OK and decision["outcome"] == "pass", decision
    assert audit["inputs"]["real"]["n_rows"] == 3000  # the small size, not the page's
    # a pass the gate can back: every instrument that decides vouches, and a release at chance nearly always passes
    assert set(decision["vouching"]) == set(decision["deciding"]) == {"c2st", "distances"}
    assert all(g["pass_probability_at_chance"] >= 0.99 for g in decision["gate"].values()), decision["gate"]
    assert thresholds["smallest_vouched"] < threshold and thresholds["fail_above"] == threshold
    # the scan is the gate: at the threshold it reads the decision's outcome
    at = [r for r in thresholds["outcomes"]["release"] if r["from"] <= threshold <= r["to"]]
    assert [r["outcome"] for r in at] == ["pass"]
    assert any(r["from"] <= threshold <= r["to"] for r in thresholds["separating"])
    assert {e["placement"] for e in thresholds["instruments"]} == {"like_real"}


def test_the_gaussian_copula_release_fails(example_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, audit = _run(example_folder, "adult_gc.csv", monkeypatch)
    decision, thresholds = audit["decision"], audit["thresholds"]
    assert status == EXIT_GATE and decision["outcome"] == "fail", decision
    assert "c2st" in decision["told_apart_by"] and "c2st" in decision["sure_above"]  # sure: its lower bound is above
    placed = {e["instrument"]: e["placement"] for e in thresholds["instruments"]}
    assert placed["c2st"] in ("overlaps_broken", "beyond_broken"), placed
    assert thresholds["release_passes_from"] is None  # no threshold this run can vouch for passes it
    assert re.search(r"^FAIL: ", audit["headline"])
