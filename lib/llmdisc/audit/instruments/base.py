"""The one interface every audit instrument implements (:class:`Instrument`), and the gate statistic they
share.

Each :class:`Comparison` of the real class with the release, the positive control (every column shuffled) or
the negative control (other real rows) is an AUC with its 95 % interval and D = 2·|AUC − 0.5| (0 =
indistinguishable, 1 = every unit told apart). Only instruments that pass both controls
(:func:`control_status`) decide. To add one: subclass :class:`Instrument` and register it in
:func:`~llmdisc.audit.instruments.build_instruments`. Sections are plain data (:class:`Table`,
:class:`Bullets`, :class:`Paragraph`), never HTML: the report's template escapes them.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence, Union

import pandas as pd

from llmdisc.audit.progress import Progress, WorkPlan, format_seconds  # noqa: F401 - the instruments' face
from llmdisc.scoring.readings import p_text  # one spelling of a p-value in the README, site and report
from llmdisc.scoring.separation import auc_interval, minimum_detectable_separation, separation

RELEASE = "release"
POSITIVE = "shuffled_columns"
NEGATIVE = "real_holdout"
GROUPS = (RELEASE, POSITIVE, NEGATIVE)
"""The groups compared with the real class, in report order."""
GROUP_NAMES = {RELEASE: "release", POSITIVE: "positive control (columns shuffled)",
               NEGATIVE: "negative control (real vs real)"}
MIN_UNITS = 5
"""Fewer units per side than this and a comparison separates nothing and vouches for nothing: its interval is
not to be trusted (one sample against one has an AUC of 0 or 1 with a zero-width interval)."""
NEGATIVE_MARGIN_FLOOR = 0.1
"""The smallest equivalence margin of the negative control (on D's scale; D 0.1 = AUC 0.55): thousands of rows
would otherwise have to show real vs real within a few hundredths, which a fold-corrected C2ST interval cannot."""
STATUSES = ("measured", "stopped", "unavailable", "skipped")
"""``measured``: ran to the end; ``stopped``: ``--max-minutes`` ran out, the figures are of what was done;
``unavailable``: it could not run (the reason says why); ``skipped``: not asked for or not applicable."""


def finite_or_none(value: Any) -> float | None:
    """``value`` as a float, None for None, NaN and infinities (what audit.json writes as null)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def discrimination(auc: float | None, low: float | None, high: float | None, *,
                   one_sided: bool = False) -> tuple[float | None, ...]:
    """``(D, low, high)`` in [0, 1]: D = 2·|AUC − 0.5| and its 95 % interval folded from the AUC's ``low``–``high``
    (:func:`llmdisc.scoring.separation.separation`); None where undefined. ``one_sided``: D = 2·max(AUC − 0.5, 0),
    for a classifier's held-out probability, where an AUC below 0.5 is cross-validation's known bias, no finding.
    """
    auc, low, high = finite_or_none(auc), finite_or_none(low), finite_or_none(high)
    if auc is None:
        return None, None, None
    if low is None or high is None:
        return (2 * max(auc - 0.5, 0.0) if one_sided else 2 * abs(auc - 0.5)), None, None
    folded = separation(auc, low, high, one_sided=one_sided)
    return folded.d, folded.low, folded.high


@dataclass
class Comparison:
    """The real class against one group, as one instrument reads it: ``auc`` of the instrument's score for the
    group against the real class (0.5 = no separation; below 0.5 = the group scores *lower*) with its 95 %
    interval ``auc_low``–``auc_high``; ``p_value`` two-sided (None where the instrument has none); ``extra``
    instrument-specific figures, JSON-friendly; ``one_sided``: only an AUC above 0.5 is a finding
    (:func:`discrimination`); ``effective``: the ``(real, other)`` independent units the units are worth when
    samples share rows (:func:`~llmdisc.audit.instruments.samples.effective_samples`; None = independent),
    which the interval, :attr:`enough` and the gate read."""

    group: str
    auc: float | None
    auc_low: float | None
    auc_high: float | None
    p_value: float | None
    n_real: int
    n_other: int
    extra: dict[str, Any] = field(default_factory=dict)
    one_sided: bool = False
    effective: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        # never narrower than the AUC's score interval at these units: DeLong-type and fold intervals collapse to
        # zero width at AUC 0 or 1, which would read a perfect split of 5 samples as certain
        auc, low, high = finite_or_none(self.auc), finite_or_none(self.auc_low), finite_or_none(self.auc_high)
        if auc is None or low is None or high is None or min(self.units) < 1:
            return
        floor_low, floor_high = auc_interval(auc, *self.units)
        self.auc_low, self.auc_high = min(low, floor_low), max(high, floor_high)

    @property
    def units(self) -> tuple[float, float]:
        """``(real, other)`` independent units: :attr:`effective` where set, else ``n_real``, ``n_other``."""
        return self.effective if self.effective is not None else (float(self.n_real), float(self.n_other))

    @property
    def discrimination(self) -> tuple[float | None, float | None, float | None]:
        """``(D, low, high)``: see :func:`discrimination`."""
        return discrimination(self.auc, self.auc_low, self.auc_high, one_sided=self.one_sided)

    @property
    def enough(self) -> bool:
        """True with at least :data:`MIN_UNITS` independent units on each side (:attr:`units`)."""
        return min(self.units) >= MIN_UNITS

    def words(self, lower: str, higher: str) -> str:
        """``D 0.39 [0.03, 0.65], <lower>`` (or ``<higher>``), or ``…, not told apart`` when not :attr:`separated`."""
        d, low, high = self.discrimination
        if d is None:
            return "D undefined"
        way = ", not told apart" if not self.separated else f", {higher if self.auc > 0.5 else lower}"
        return f"D {d:.2f}" + ("" if low is None else f" [{low:.2f}, {high:.2f}]") + way

    @property
    def separated(self) -> bool:
        """True when the AUC's 95 % interval excludes 0.5 on :attr:`enough` units: told apart from real data."""
        low = self.discrimination[1]
        return self.enough and low is not None and low > 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, D included."""
        d, low, high = self.discrimination
        return {"group": self.group, "auc": finite_or_none(self.auc), "auc_low": finite_or_none(self.auc_low),
                "auc_high": finite_or_none(self.auc_high), "p_value": finite_or_none(self.p_value), "n_real": int(self.n_real),
                "n_other": int(self.n_other), "D": d, "D_low": low, "D_high": high, "separated": self.separated,
                **({"one_sided": True} if self.one_sided else {}),
                **({"effective_real": round(self.effective[0], 2), "effective_other": round(self.effective[1], 2)}
                   if self.effective is not None else {}), **self.extra}


@dataclass
class Reading:
    """What one instrument measured: ``unit`` is what one unit is (``rows`` or ``20-row samples``), ``status``
    one of :data:`STATUSES` (``reason`` says why when not ``measured``), ``findings`` plain sentences on what
    gives the release away, ``details`` everything else, JSON-friendly."""

    instrument: str
    title: str
    unit: str
    status: str = "measured"
    reason: str | None = None
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    seconds: float = 0.0
    findings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    expected_direction: str = "higher"
    directions: tuple[str, str] = ("scores lower", "scores higher")  # as :attr:`Instrument.directions`

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view with the control check."""
        status, reasons = control_status(self)
        passed, judged = status == "passed", status != "unjudged"
        return {"instrument": self.instrument, "title": self.title, "unit": self.unit, "status": self.status,
                "reason": self.reason, "seconds": round(self.seconds, 1),
                "comparisons": {g: c.as_dict() for g, c in self.comparisons.items()},
                "controls_passed": passed, "controls_judged": judged, "control_reasons": reasons, "findings": list(self.findings),
                "details": self.details, "expected_direction": self.expected_direction,
                "directions": list(self.directions)}


def effect_needed(reading: Reading) -> float | None:
    """The smallest D the release comparison could detect (80 % power, α 0.05), on the positive control's units
    when no release was measured; None when neither was."""
    for group in (RELEASE, POSITIVE):
        comparison = reading.comparisons.get(group)
        if comparison is not None and comparison.auc is not None and min(comparison.units) >= 1:
            return minimum_detectable_separation(*comparison.units)
    return None


def _told_apart(reading: Reading) -> bool:
    """The release comparison is separated: a statement that needs only that the instrument sees its control."""
    release = reading.comparisons.get(RELEASE)
    return release is not None and release.auc is not None and release.separated


def negative_margin(reading: Reading) -> float:
    """The equivalence margin of the negative control (on D's scale): the largest of :func:`effect_needed`, the
    release's D lower bound and :data:`NEGATIVE_MARGIN_FLOOR`."""
    release = reading.comparisons.get(RELEASE)
    release_low = release.discrimination[1] if release is not None and release.auc is not None else None
    return max(effect_needed(reading) or 0.0, release_low or 0.0, NEGATIVE_MARGIN_FLOOR)


def _equivalent(comparison: Comparison, margin: float) -> bool:
    """Two one-sided tests at 5 %: the 90 % interval of D below ``margin`` (the 95 % half-widths scaled by
    1.645/1.96; upwards only for a one-sided score)."""
    scale = 1.6449 / 1.96
    low = comparison.auc - (comparison.auc - comparison.auc_low) * scale
    high = comparison.auc + (comparison.auc_high - comparison.auc) * scale
    return high < 0.5 + margin / 2 and (comparison.one_sided or low > 0.5 - margin / 2)


def control_status(reading: Reading) -> tuple[str, list[str]]:
    """``("passed" | "failed" | "unjudged", reasons)``: one sentence per control that did not pass.

    The positive control passes when separated in :attr:`Instrument.expected_direction` with D's lower bound above
    :func:`effect_needed` (waived when the release is told apart: that needs only that the control is seen). The
    negative control passes by an equivalence test within :func:`negative_margin`: an instrument that might read
    real against real as far apart as the release cannot tell the release from real data; separated, it fails
    (biased). A control not measured or on fewer than :data:`MIN_UNITS` units a side is unjudged, never passed.
    """
    measured_any = any(c is not None and c.auc is not None for c in reading.comparisons.values())
    if reading.status not in ("measured", "stopped") or (reading.status == "stopped" and not measured_any):
        # stopped before it measured anything: the stop is the reason, not two controls "not measured"
        return "unjudged", [f"{reading.title}: {reading.status}" + (f" ({reading.reason})" if reading.reason else "")]
    failed, unjudged = [], []
    needed = effect_needed(reading)
    lower, higher = reading.directions
    expected_words = higher if reading.expected_direction == "higher" else lower
    for name, group in (("positive", POSITIVE), ("negative", NEGATIVE)):
        control = reading.comparisons.get(group)
        if control is None or control.auc is None:
            unjudged.append(f"{reading.title}: no {name} control measured")
        elif not control.enough:
            unjudged.append(f"{reading.title}: too few {reading.unit} to judge its {name} control "
                            f"({auc_text(control)}; at least {MIN_UNITS} per side are needed)")
    if unjudged:
        return "unjudged", unjudged
    positive, negative = reading.comparisons[POSITIVE], reading.comparisons[NEGATIVE]
    d, low, _ = positive.discrimination
    right_way = (positive.auc > 0.5) == (reading.expected_direction == "higher")
    if positive.separated and not right_way:
        failed.append(f"{reading.title} reads its positive control the wrong way (rows with every column shuffled: "
                      f"{positive.words(lower, higher)}; expected: {expected_words}), so it does not measure what "
                      "that control breaks")
    elif not positive.separated:
        failed.append(f"{reading.title} missed its positive control (rows with every column shuffled: "
                      f"{positive.words(lower, higher)}, n = {units_text(positive)}): it is blind to what that "
                      "control breaks")
    elif low is None or (low <= needed and not _told_apart(reading)):
        failed.append(f"{reading.title} cannot see a difference the size a release would need: its positive control "
                      f"(rows with every column shuffled) reaches {positive.words(lower, higher)}, n = "
                      f"{units_text(positive)}, and its lower bound is not above the D {needed:.2f} the release "
                      f"comparison needs to be seen (80 % power)")
    if negative.separated:
        failed.append(f"{reading.title} failed its negative control (real rows against real rows: "
                      f"{negative.words(lower, higher)}, {auc_text(negative)}): it is biased")
    elif not _equivalent(negative, margin := negative_margin(reading)):
        unjudged.append(f"{reading.title}: its negative control (real rows against real rows, "
                        f"{negative.words(lower, higher)}, n = {units_text(negative)}) cannot show real data at "
                        f"chance within D {margin:.2f} (equivalence test, 90 % interval; more {reading.unit} in the "
                        "control would)")
    if failed:
        return "failed", failed + unjudged
    return ("unjudged", unjudged) if unjudged else ("passed", [])


def control_check(reading: Reading) -> tuple[bool, list[str]]:
    """Whether an instrument passed its controls (:func:`control_status`), and why not: one sentence each."""
    status, reasons = control_status(reading)
    return status == "passed", reasons


def auc_text(comparison: Comparison) -> str:
    """``AUC 0.62 (95 % CI 0.45–0.79), n = 20 vs 20`` (``undefined`` without an AUC)."""
    if comparison.auc is None:
        return "AUC undefined"
    interval = ("" if comparison.auc_low is None or comparison.auc_high is None
                else f" (95 % CI {comparison.auc_low:.2f}–{comparison.auc_high:.2f})")
    return f"AUC {comparison.auc:.2f}{interval}, n = {units_text(comparison)}"


def units_text(comparison: Comparison, separator: str = " vs ") -> str:
    """``20 vs 20``, or ``20 vs 10 (sharing rows: worth 4.1 vs 4.1)`` when the units are not independent."""
    text = f"{comparison.n_real}{separator}{comparison.n_other}"
    if comparison.effective is not None:
        real, other = comparison.effective
        text += f" (sharing rows: worth {real:.1f}{separator}{other:.1f})"
    return text


@dataclass
class AuditData:
    """The tables every instrument reads, built once per audit (:func:`llmdisc.audit.data.audit_data`):
    ``real`` is the real class, ``groups`` the ``release``, ``shuffled_columns`` and ``real_holdout`` tables
    (same columns), ``reference`` real rows no group holds (the sample instruments' context; may be empty),
    ``text`` the same tables as the language models see them (dates as text), ``cache_dir`` the audit's own
    cache folder; ``training``: the rows the generator saw, which the distance and copy checks measure against
    (default ``real``); ``fresh``: real rows it never saw (default: the negative control)."""

    real: pd.DataFrame
    groups: dict[str, pd.DataFrame]
    reference: pd.DataFrame
    text: dict[str, pd.DataFrame]
    kinds: dict[str, str]
    seed: int
    cache_dir: Path
    notes: dict[str, str] = field(default_factory=dict)
    training: pd.DataFrame | None = None
    fresh: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        if self.training is None:
            self.training = self.real
        if self.fresh is None:
            self.fresh = self.groups[NEGATIVE]


@dataclass(frozen=True)
class Table:
    """A table of the report, as data: its template writes and escapes every header and cell. A number (2
    decimals when a float) or None (``n/a``) is right-aligned, anything else is ``str(value)``; ``numeric``
    columns are right-aligned whatever their cells hold."""

    header: Sequence[str]
    rows: Sequence[Sequence[Any]]
    numeric: Sequence[int] = ()
    kind: ClassVar[str] = "table"


@dataclass(frozen=True)
class Bullets:
    """A bulleted list of sentences (plain text)."""

    items: Sequence[str]
    kind: ClassVar[str] = "bullets"


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of plain text."""

    text: str
    kind: ClassVar[str] = "paragraph"


Block = Union[Table, Bullets, Paragraph]
"""One piece of an instrument's section (:meth:`Instrument.section`): plain data, never HTML."""


class Instrument(abc.ABC):
    """A discriminator with its controls. Subclasses set ``name`` (the ``--instruments`` key), ``title``, ``unit``
    and ``description`` (one sentence for the plan and the report), and implement :meth:`plan` and :meth:`run`."""

    name: ClassVar[str]
    title: ClassVar[str]
    unit: ClassVar[str]
    description: ClassVar[str]
    expected_direction: ClassVar[str] = "higher"
    """Which way the positive control must be told apart (``higher``: shuffled rows score above real ones)."""
    directions: ClassVar[tuple[str, str]] = ("scores lower", "scores higher")
    """What scoring lower / higher than real data means for this instrument, in words."""
    uses_model: ClassVar[bool] = True
    """Whether it loads or asks a model: those plan (the timing probe) and run after the instruments that do not,
    so that a short ``--max-minutes`` still gets the answers that take seconds."""

    @abc.abstractmethod
    def plan(self, data: AuditData) -> WorkPlan:
        """The work :meth:`run` will do on ``data``, with its time estimate (may run a short probe)."""

    @abc.abstractmethod
    def run(self, data: AuditData, progress: Progress) -> Reading:
        """Measure the release and both controls; stop early when ``progress.out_of_time()`` (status
        ``stopped``, the figures of what was done)."""

    def section(self, reading: Reading) -> list[Block]:
        """The instrument's part of ``report.html`` as :data:`Block` data. Default: the comparisons' table, the
        findings and the ``notes`` in :attr:`Reading.details`."""
        return [block for block in (comparison_table(reading), findings_list(reading)) if block is not None]

    def reading(self, **kwargs: Any) -> Reading:
        return Reading(instrument=self.name, title=self.title, unit=self.unit,
                       expected_direction=self.expected_direction, directions=self.directions, **kwargs)


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def comparison_table(reading: Reading) -> Table | None:
    """One row per group with D, the AUC and their intervals, p and n (None without a comparison)."""
    rows = []
    for group in GROUPS:
        c = reading.comparisons.get(group)
        if c is None:
            continue
        rows.append((GROUP_NAMES[group], c.words(*reading.directions),
                     f"{_f(c.auc)} [{_f(c.auc_low)}, {_f(c.auc_high)}]", p_text(c.p_value), units_text(c, " / ")))
    if not rows:
        return None
    return Table(("compared with real", "separation D [95 % CI], direction", "AUC [95 % CI] (docs/glossary.md)",
                  "p", f"n real / other ({reading.unit})"), tuple(rows), numeric=(1, 2, 3, 4))


def findings_list(reading: Reading) -> Bullets | None:
    """The findings and notes as a list (None without any)."""
    items = list(reading.findings) + list(reading.details.get("notes", []))
    return Bullets(tuple(str(i) for i in items)) if items else None
