"""Thresholds from the audit's own controls (issue 40, item 3), on hand-built readings: the release placed between
real vs real and the shuffled columns from the intervals alone, and a threshold scan that is the gate itself at
every threshold (never a second rule that could disagree with it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdisc.audit.decision import decide, units_to_vouch
from llmdisc.audit.instruments.base import NEGATIVE, POSITIVE, RELEASE, Comparison, Reading
from llmdisc.audit.thresholds import GRID, placements, runs_text, threshold_scan
from llmdisc.paths import project_root
from llmdisc.scoring.separation import auc_interval


def _comparison(group: str, auc: float, n: int) -> Comparison:
    """A comparison whose interval is the AUC's score interval at ``n`` units a side."""
    return Comparison(group, auc, *auc_interval(auc, n, n), None, n, n)


def _reading(name: str, release: float | None, *, n: int = 3000, positive: float = 0.97, negative: float = 0.5,
             control_n: int | None = None, direction: str = "higher") -> Reading:
    control_n = n if control_n is None else control_n
    comparisons = {POSITIVE: _comparison(POSITIVE, positive, control_n),
                   NEGATIVE: _comparison(NEGATIVE, negative, control_n)}
    if release is not None:
        comparisons[RELEASE] = _comparison(RELEASE, release, n)
    return Reading(instrument=name, title=name.upper(), unit="rows", comparisons=comparisons,
                   expected_direction=direction, directions=("scores lower", "scores higher"))


@pytest.mark.parametrize(("release", "placement", "words"), [
    (0.505, "like_real", "not told apart from real data (D's lower bound is 0)"),
    (0.70, "between", "less than the shuffled columns (its upper bound 0.43 is below their lower bound 0.93)"),
    (0.97, "overlaps_broken", "more or less than the shuffled columns, the intervals cannot say (they overlap"),
    (0.999, "beyond_broken", "told apart further than the shuffled columns (its lower bound 1.00 is above their "
                             "upper bound 0.95)"),
])
def test_the_release_is_placed_between_its_controls_by_the_intervals(release: float, placement: str,
                                                                     words: str) -> None:
    # Setup
    reading = _reading("c2st", release)
    # Run
    entry = placements([reading])[0]
    # Assert
    assert entry["placement"] == placement and words in entry["sentence"], entry["sentence"]
    assert entry["sentence"].startswith("C2ST, 3000 vs 3000 rows: real vs real reads D 0.00 [0.00, 0.03] "
                                        "(indistinguishable at this size), the shuffled columns D 0.94 [0.93, 0.95], "
                                        "scores higher (broken)")
    for group in (NEGATIVE, RELEASE, POSITIVE):  # every figure with its interval and its units
        assert {"D", "D_low", "D_high", "n_real", "n_other"} <= set(entry[group])


def test_a_direction_is_said_only_where_the_interval_shows_one() -> None:
    entry = placements([_reading("c2st", 0.51)])[0]
    assert entry["release"]["words"] == "D 0.02 [0.00, 0.05]"  # AUC 0.51 at 3,000 a side: not separated
    assert entry["shuffled_columns"]["words"].endswith(", scores higher")


def test_an_instrument_that_did_not_pass_its_controls_is_not_read() -> None:
    biased = _reading("c2st", 0.6, negative=0.6)  # real vs real told apart: biased
    entry = placements([biased])[0]
    assert entry["placement"] == "not_read" and "controls failed" in entry["sentence"]
    assert placements([_reading("c2st", None)])[0]["placement"] == "not_measured"


def test_the_scan_is_the_gate_at_every_threshold() -> None:
    # Setup: rows that vouch from a small threshold, samples too few to vouch, a release at chance on both
    rows = _reading("c2st", 0.505)
    samples = _reading("joint", 0.55, n=20)
    readings = [rows, samples]
    # Run
    scan = threshold_scan(readings, fail_above=0.125)
    # Assert: each run of outcomes is decide()'s outcome at each of its thresholds, the off-grid one included
    for group in (RELEASE, NEGATIVE, POSITIVE):
        for run in scan["outcomes"][group]:
            for x in [g for g in GRID if run["from"] <= g <= run["to"]] + [0.125] * (run["from"] <= 0.125 <= run["to"]):
                as_release = [_swap(r, group) for r in readings]
                assert decide(as_release, fail_above=x, next_steps=False).outcome == run["outcome"], (group, x)
    vouched = [x for x in GRID if decide(readings, fail_above=x, next_steps=False).vouching]
    assert scan["smallest_vouched"] == vouched[0] and scan["smallest_vouched_by"] == ["c2st"]
    by_name = {e["instrument"]: e for e in scan["instruments"]}
    assert by_name["c2st"]["vouches_from"] == vouched[0]
    assert by_name["joint"]["vouches_from"] > vouched[0]  # 20 samples a side: only from a larger threshold
    assert by_name["c2st"]["vouches_to"] < by_name["c2st"]["shuffled_columns"]["D_low"]  # vouches only below it
    # the release passes from where the rows vouch; real vs real passes and the shuffled columns fail between
    assert scan["release_passes_from"] == vouched[0]
    assert scan["separating"] and scan["separating"][0]["from"] >= scan["real_vs_real_passes_from"]
    assert scan["separating"][-1]["to"] <= scan["shuffled_columns_fails_to"]
    assert f"this run can vouch for is {vouched[0]:.2f} (C2ST;" in scan["sentence"]
    assert scan["line"].startswith(f"smallest --fail-above this run can vouch for: {vouched[0]:.2f} (C2ST)")


def test_an_instrument_that_decides_but_vouches_nowhere_says_what_it_would_need() -> None:
    # told apart on 20 samples a side, its positive control (400 a side) only shows D 0.30 [0.22, 0.38]: it may
    # vouch only below 0.22, where 20 samples a side cannot promise a release at chance a pass
    joint = _reading("joint", 0.75, n=20, positive=0.65, control_n=400)
    scan = threshold_scan([joint])
    entry = scan["instruments"][0]
    assert entry["controls_passed"] and entry["placement"] == "overlaps_broken"
    assert entry["vouches_from"] is None and scan["smallest_vouched"] is None
    low = entry["shuffled_columns"]["D_low"]
    need = units_to_vouch(round(low - 0.01, 2))
    assert entry["cannot_vouch"] == (
        f"JOINT vouches at no --fail-above: it may vouch only below its shuffled-columns control's D lower bound "
        f"{low:.2f}, and at 20 vs 20 rows a release at chance passes there less than 4 times in 5 (at "
        f"{low - 0.01:.2f} that takes at least {need} independent rows a side)")
    assert need > 20
    # it can still fail a release: it is sure the release is above any threshold below its D lower bound
    release_low = entry["release"]["D_low"]
    assert all(r["outcome"] == "fail" for r in scan["outcomes"][RELEASE] if r["to"] < release_low)


def _swap(reading: Reading, group: str) -> Reading:
    from llmdisc.audit.thresholds import _as_release

    return _as_release(reading, group)


def test_a_run_that_can_vouch_for_nothing_says_so() -> None:
    blind = _reading("joint", 0.5, n=8, positive=0.55)  # misses its positive control
    scan = threshold_scan([blind])
    assert scan["smallest_vouched"] is None and scan["release_passes_from"] is None
    assert scan["outcomes"][RELEASE] == [{"from": 0.0, "to": 1.0, "outcome": "inconclusive"}]
    assert scan["sentence"].startswith("No --fail-above can be vouched for by this run")
    assert runs_text(scan["outcomes"][RELEASE]) == "inconclusive at 0.00–1.00"


def test_the_caps_list_what_was_read_and_measured() -> None:
    from llmdisc.audit.caps import caps_summary
    from llmdisc.audit.instruments.rows import C2STInstrument

    reading = _reading("c2st", 0.5)
    reading.details = {"rows": {RELEASE: 3000, POSITIVE: 3000, NEGATIVE: 2000}, "levels_capped": ["city"]}
    caps = caps_summary({"real": {"n_rows": 30_000, "rows_read": 10_000},
                         "synthetic": {"n_rows": 8_000, "rows_read": 8_000}}, 10_000, [C2STInstrument()], [reading])
    assert caps[0] == {"instrument": None, "what": "rows read from each table (--max-rows, seeded positions)",
                       "cap": 10_000, "used": {"real": 10_000, "synthetic": 8_000}, "reached": True}
    assert caps[1]["cap"] == 3000 and caps[1]["reached"] and caps[1]["used"][NEGATIVE] == 2000
    assert caps[2]["used"] == {"city": 50} and caps[2]["reached"]


def test_the_report_shows_the_scan_as_escaped_text(tmp_path: Path) -> None:
    from llmdisc.audit.report import render_html

    result = json.loads((project_root() / "tests" / "fixtures" / "audit" / "audit.json").read_text("utf-8"))
    result["instruments"] = []  # no figure: fast
    reading = _reading("c2st", 0.505)
    reading.title = "<b>C2ST</b>"
    result["thresholds"] = json.loads(json.dumps(threshold_scan([reading], fail_above=0.2)))
    page = render_html(result)
    assert "<h2>Choosing --fail-above</h2>" in page and "<b>" not in page and "&lt;b&gt;C2ST&lt;/b&gt;" in page
    assert "this release | " not in page and "not told apart, as real vs real" in page
    assert runs_text(result["thresholds"]["outcomes"][RELEASE]) in page
