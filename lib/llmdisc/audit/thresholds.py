"""Thresholds from the audit's own controls (``audit.json``'s ``thresholds``): at the audit's own size, real
vs real reads what *indistinguishable* looks like and the shuffled columns what *broken* looks like.
:func:`placements` puts the release between them per instrument; :func:`threshold_scan` runs the gate at every
``--fail-above`` of :data:`GRID` on the release and on each control read as the release: the thresholds each
instrument vouches at, and the range where real vs real passes while the shuffled columns fail."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from llmdisc.audit import decision
from llmdisc.audit.decision import units_to_vouch, vouch_reason
from llmdisc.audit.instruments.base import NEGATIVE, POSITIVE, RELEASE, Comparison, Reading, control_status, units_text

GRID_STEP = 0.01
GRID = tuple(round(i * GRID_STEP, 2) for i in range(int(round(1 / GRID_STEP)) + 1))
"""The ``--fail-above`` values the scan checks: 0.00, 0.01, …, 1.00."""
PLACEMENTS = ("like_real", "between", "overlaps_broken", "beyond_broken", "not_read", "not_measured")
"""Where an instrument puts the release relative to its shuffled-columns control (:func:`_where`); ``not_read``:
the instrument did not pass its controls; ``not_measured``: no release figure."""


def _d(comparison: Comparison | None, directions: tuple[str, str]) -> dict[str, Any] | None:
    """``{"D", "D_low", "D_high", "n_real", "n_other", "words"}`` of a comparison (None without an AUC)."""
    if comparison is None or comparison.auc is None:
        return None
    d, low, high = comparison.discrimination
    # a direction in words only where the interval shows one: "D 0.01 [0.00, 0.04], told apart" would contradict it
    words = (comparison.words(*directions) if comparison.separated
             else f"D {d:.2f}" + ("" if low is None else f" [{low:.2f}, {high:.2f}]"))
    return {"D": d, "D_low": low, "D_high": high, "n_real": comparison.n_real, "n_other": comparison.n_other,
            "words": words}


def _where(release: dict[str, Any], positive: dict[str, Any] | None, separated: bool) -> tuple[str, str]:
    """The release's place between the controls, from the intervals: (placement, words)."""
    if not separated:
        return "like_real", "not told apart from real data (D's lower bound is 0), as real rows against real rows"
    if positive is None or positive["D_low"] is None or release["D_high"] is None:
        return "between", f"told apart from real data (D's lower bound {release['D_low']:.2f} is above 0)"
    if release["D_high"] < positive["D_low"]:
        return "between", (f"told apart from real data (D's lower bound {release['D_low']:.2f} is above 0), less "
                           f"than the shuffled columns (its upper bound {release['D_high']:.2f} is below their lower "
                           f"bound {positive['D_low']:.2f})")
    if release["D_low"] > positive["D_high"]:
        return "beyond_broken", (f"told apart further than the shuffled columns (its lower bound "
                                 f"{release['D_low']:.2f} is above their upper bound {positive['D_high']:.2f})")
    return "overlaps_broken", ("told apart from real data; more or less than the shuffled columns, the intervals "
                               f"cannot say (they overlap: [{release['D_low']:.2f}, {release['D_high']:.2f}] and "
                               f"[{positive['D_low']:.2f}, {positive['D_high']:.2f}])")


def placements(readings: Sequence[Reading]) -> list[dict[str, Any]]:
    """Per instrument: D with its interval for real vs real, the release and the shuffled columns, and where the
    release sits between them (:data:`PLACEMENTS`) with a sentence that states the figures it rests on."""
    out = []
    for reading in readings:
        release = reading.comparisons.get(RELEASE)
        groups = {g: _d(reading.comparisons.get(g), reading.directions) for g in (NEGATIVE, RELEASE, POSITIVE)}
        status, _ = control_status(reading)
        entry: dict[str, Any] = {"instrument": reading.instrument, "title": reading.title, "unit": reading.unit,
                                 "controls_passed": status == "passed", **groups}
        if groups[RELEASE] is None:
            entry["placement"], entry["sentence"] = "not_measured", f"{reading.title}: no release figure"
        elif status != "passed":
            entry["placement"] = "not_read"
            entry["sentence"] = (f"{reading.title}: the release reads {groups[RELEASE]['words']}, not read: the "
                                 f"instrument's controls {'failed' if status == 'failed' else 'are unjudged'}")
        else:
            entry["placement"], where = _where(groups[RELEASE], groups[POSITIVE], release.separated)
            entry["sentence"] = (
                f"{reading.title}, {units_text(release)} {reading.unit}: real vs real reads "
                f"{groups[NEGATIVE]['words']} (indistinguishable at this size), the shuffled columns "
                f"{groups[POSITIVE]['words']} (broken); the release {groups[RELEASE]['words']}: {where}")
        out.append(entry)
    return out


def _as_release(reading: Reading, group: str) -> Reading:
    """``reading`` with the comparison of ``group`` in the release's place (the controls kept as measured)."""
    comparisons = dict(reading.comparisons)
    if group != RELEASE:
        control = comparisons.get(group)
        if control is None:
            comparisons.pop(RELEASE, None)
        else:
            comparisons[RELEASE] = replace(control, group=RELEASE)
    return replace(reading, comparisons=comparisons)


def _runs(outcomes: Sequence[tuple[float, str]]) -> list[dict[str, Any]]:
    """Consecutive thresholds with one outcome: ``[{"from", "to", "outcome"}, ...]``."""
    runs: list[dict[str, Any]] = []
    for x, outcome in outcomes:
        if runs and runs[-1]["outcome"] == outcome:
            runs[-1]["to"] = x
        else:
            runs.append({"from": x, "to": x, "outcome": outcome})
    return runs


def _span(run: dict[str, Any]) -> str:
    return f"{run['from']:.2f}" if run["from"] == run["to"] else f"{run['from']:.2f}–{run['to']:.2f}"


def runs_text(runs: Sequence[dict[str, Any]]) -> str:
    """``inconclusive at 0.00–0.04, pass at 0.05–0.95, inconclusive at 0.96–1.00``."""
    return ", ".join(f"{run['outcome']} at {_span(run)}" for run in runs)


def _vouch_span(reading: Reading, grid: Sequence[float]) -> list[float]:
    """The thresholds of ``grid`` at which ``reading``'s instrument vouches for a pass."""
    release = reading.comparisons.get(RELEASE)
    if release is None or release.auc is None:
        return []
    return [x for x in grid if vouch_reason(release, reading.comparisons.get(POSITIVE), x, reading.title,
                                            reading.unit, reading.directions, reading.comparisons.get(NEGATIVE))
            is None]


def _cannot_vouch(reading: Reading) -> str:
    """Why a deciding instrument vouches at no threshold of the grid, with the units it would need."""
    positive = reading.comparisons.get(POSITIVE)
    low = None if positive is None else positive.discrimination[1]
    release = reading.comparisons[RELEASE]
    if not low:
        return f"{reading.title} vouches at no --fail-above: its shuffled-columns control's D lower bound is 0"
    below = round(low - GRID_STEP, 2)
    need = units_to_vouch(below) if below > 0 else None
    return (f"{reading.title} vouches at no --fail-above: it may vouch only below its shuffled-columns control's D "
            f"lower bound {low:.2f}, and at {units_text(release)} {reading.unit} a release at chance passes there "
            "less than 4 times in 5" + (f" (at {below:.2f} that takes at least {need} independent {reading.unit} "
                                         "a side)" if need else ""))


def threshold_scan(readings: Sequence[Reading], fail_above: float | None = None) -> dict[str, Any]:
    """``audit.json``'s ``thresholds``: the gate at every threshold of :data:`GRID` (and ``fail_above``), on
    the release and on each control read as the release: ``instruments`` (:func:`placements` plus
    ``vouches_from`` / ``vouches_to``, and ``cannot_vouch`` when it decides but vouches at none);
    ``smallest_vouched(_by)``; ``outcomes`` per reading as runs of thresholds with one outcome;
    ``release_passes_from``, ``real_vs_real_passes_from``, ``shuffled_columns_fails_to``; ``separating`` (runs
    where real vs real passes and the shuffled columns fail); ``sentence`` (the report's) and ``line`` (the
    command's)."""
    grid = sorted(set(GRID) | ({round(float(fail_above), 6)} if fail_above is not None else set()))
    outcomes = {}
    for group in (RELEASE, NEGATIVE, POSITIVE):
        as_release = [_as_release(r, group) for r in readings]
        outcomes[group] = [(x, decision.decide(as_release, fail_above=x, next_steps=False).outcome) for x in grid]
    deciding = set(decision.decide(readings, fail_above=None, next_steps=False).deciding)
    instruments = placements(readings)
    vouched: dict[float, list[str]] = {}
    for entry, reading in zip(instruments, readings):
        span = _vouch_span(reading, grid) if reading.instrument in deciding else []
        entry["vouches_from"], entry["vouches_to"] = (span[0], span[-1]) if span else (None, None)
        if reading.instrument in deciding and not span:
            entry["cannot_vouch"] = _cannot_vouch(reading)
        for x in span:
            vouched.setdefault(x, []).append(reading.instrument)

    def first(group: str, outcome: str) -> float | None:
        return next((x for x, o in outcomes[group] if o == outcome), None)

    fails = [x for x, o in outcomes[POSITIVE] if o == "fail"]
    negative, positive = dict(outcomes[NEGATIVE]), dict(outcomes[POSITIVE])
    separating = [(x, "separating") for x in grid if negative[x] == "pass" and positive[x] == "fail"]
    smallest = min(vouched) if vouched else None
    scan = {"grid_step": GRID_STEP, "fail_above": fail_above, "instruments": instruments,
            "smallest_vouched": smallest, "smallest_vouched_by": vouched.get(smallest, []) if smallest is not None
            else [], "outcomes": {g: _runs(o) for g, o in outcomes.items()},
            "release_passes_from": first(RELEASE, "pass"), "real_vs_real_passes_from": first(NEGATIVE, "pass"),
            "shuffled_columns_fails_to": fails[-1] if fails else None,
            "separating": [{"from": r["from"], "to": r["to"]} for r in _runs(separating)]}
    scan["sentence"], scan["line"] = _sentences(scan, {r.instrument: r.title for r in readings})
    return scan


def _sentences(scan: dict[str, Any], titles: dict[str, str]) -> tuple[str, str]:
    """The report's paragraph and the command's one line, from the scan's figures."""
    def spans(runs: Sequence[dict[str, Any]]) -> str:
        return ", ".join(map(_span, runs))

    checked = f"checked every {scan['grid_step']:g} from 0 to 1"
    if scan["smallest_vouched"] is None:
        vouch = f"No --fail-above can be vouched for by this run ({checked}): no instrument vouches at any"
        short = "no --fail-above can be vouched for by this run"
    else:
        by = ", ".join(titles.get(name, name) for name in scan["smallest_vouched_by"])
        vouch = (f"The smallest --fail-above this run can vouch for is {scan['smallest_vouched']:.2f} ({by}; "
                 f"{checked})")
        short = f"smallest --fail-above this run can vouch for: {scan['smallest_vouched']:.2f} ({by})"
    release = runs_text(scan["outcomes"][RELEASE])
    parts = [vouch, f"this release's gate outcome: {release}"]
    if scan["separating"]:
        parts.append(
            f"a release that reads as real rows against real rows read here passes at {spans(scan['separating'])} "
            "while one that reads as the shuffled columns read here fails there: a --fail-above in that range "
            "passes what indistinguishable looks like at this size and fails what broken looks like")
        short += f"; real vs real passes and shuffled columns fail at {spans(scan['separating'])}"
    else:
        parts.append("no --fail-above both passes a release that reads as real vs real reads here and fails one "
                     f"that reads as the shuffled columns read (real vs real: "
                     f"{runs_text(scan['outcomes'][NEGATIVE])}; shuffled columns: "
                     f"{runs_text(scan['outcomes'][POSITIVE])})")
    passes = [r for r in scan["outcomes"][RELEASE] if r["outcome"] == "pass"]
    short += f"; this release passes at {spans(passes)}" if passes else "; this release passes at no --fail-above"
    return "; ".join(parts) + ".", short
