"""The one interface every audit instrument implements, and the gate statistic they all share.

An *instrument* is a discriminator with its own controls. Each one reads the same four groups of real and
synthetic data (:class:`AuditData`) and compares the **real class** against three others:

- ``release`` — the synthetic release under audit;
- ``shuffled_columns`` — the *positive control*: real rows with every column shuffled independently (each
  column's values stay real, their combinations are destroyed). An instrument that cannot tell these from
  real rows cannot vouch for a release;
- ``real_holdout`` — the *negative control*: other real rows (the ``--holdout`` when given) in the synthetic
  class. An instrument that tells these from real rows is biased and cannot vouch either.

Every comparison is summarised the same way (:class:`Comparison`): an AUC with its 95 % interval and p-value,
and the **discrimination** D = 2·|AUC − 0.5| with its interval folded from the AUC's. D reads the same for every
instrument: 0 = indistinguishable from real data, 1 = every sample (or row) told apart, in either direction
(a release that is *too* regular is told apart as surely as one that is too odd). ``--fail-above`` bounds the
95 % upper bound of D.

An instrument *passes its controls* (:func:`control_check`) when its positive-control interval excludes
chance (D's lower bound above 0) and its negative-control interval includes it. Only instruments that pass
their controls decide the audit (:mod:`llmdisc.audit.decision`).

To add an instrument: subclass :class:`Instrument` (``name``, ``title``, ``unit``, ``plan``, ``run``; optionally
``probe`` and ``section``) and list it in :data:`llmdisc.audit.instruments.INSTRUMENTS`. Nothing else in the
audit changes.
"""

from __future__ import annotations

import abc
import html
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from llmdisc.pipeline.findings import p_text  # one spelling of a p-value in the README, site and report

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
STATUSES = ("measured", "stopped", "unavailable", "skipped")
"""``measured``: ran to the end; ``stopped``: ``--max-minutes`` ran out, the figures are of what was done;
``unavailable``: it could not run (the reason says why); ``skipped``: not asked for or not applicable."""


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def discrimination(auc: float | None, low: float | None, high: float | None, *,
                   one_sided: bool = False) -> tuple[float | None, ...]:
    """D = 2·|AUC − 0.5| and its 95 % interval folded from the AUC's.

    Args:
        auc, low, high: the AUC and its 95 % interval (None or NaN: undefined).
        one_sided: the score can only separate upwards (a trained classifier's held-out probability: an AUC
            below 0.5 is no finding but the known negative bias of cross-validation under no difference), so
            D = 2·max(AUC − 0.5, 0), and likewise each bound.

    Returns:
        ``(D, low, high)`` in [0, 1]: 0 = indistinguishable, 1 = every unit told apart in either direction
        (upwards only when ``one_sided``).
        ``low`` is 0 when the AUC interval holds 0.5; ``high`` = 2·max(|low − 0.5|, |high − 0.5|). All None when
        the AUC is undefined; the bounds None when the interval is.
    """
    auc, low, high = _num(auc), _num(low), _num(high)
    if auc is None:
        return None, None, None
    if one_sided:
        value = 2 * max(auc - 0.5, 0.0)
        if low is None or high is None:
            return value, None, None
        return value, 2 * max(low - 0.5, 0.0), 2 * max(high - 0.5, 0.0)
    value = 2 * abs(auc - 0.5)
    if low is None or high is None:
        return value, None, None
    upper = 2 * max(abs(low - 0.5), abs(high - 0.5))
    lower = 0.0 if low <= 0.5 <= high else 2 * min(abs(low - 0.5), abs(high - 0.5))
    return value, lower, upper


@dataclass
class Comparison:
    """The real class against one group, as one instrument reads it.

    Attributes:
        group: one of :data:`GROUPS`.
        auc: AUC of the instrument's score for the group against the real class (0.5 = no separation; below
            0.5 = the group scores *lower*, e.g. less probable), with its 95 % interval ``auc_low``–``auc_high``.
        p_value: two-sided p-value of no separation (None where the instrument has none).
        n_real, n_other: units (rows or samples) behind the AUC.
        extra: instrument-specific figures (a DRS, exact-copy rates, ...), JSON-friendly.
        one_sided: only an AUC above 0.5 is a finding (see :func:`discrimination`).
        effective: ``(real, other)``, what the units are worth as independent units when they are not (20-row
            samples drawn from a small table share rows:
            :func:`~llmdisc.audit.instruments.samples.effective_samples`); None = they are independent. The
            interval is then already widened to them, and :attr:`enough` and the gate read them.
    """

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

    @property
    def separated(self) -> bool:
        """True when the AUC's 95 % interval excludes 0.5 (the instrument tells the group from real data) on
        enough units (:attr:`enough`)."""
        low = self.discrimination[1]
        return self.enough and low is not None and low > 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view, D included."""
        d, low, high = self.discrimination
        return {"group": self.group, "auc": _num(self.auc), "auc_low": _num(self.auc_low),
                "auc_high": _num(self.auc_high), "p_value": _num(self.p_value), "n_real": int(self.n_real),
                "n_other": int(self.n_other), "D": d, "D_low": low, "D_high": high, "separated": self.separated,
                **({"one_sided": True} if self.one_sided else {}),
                **({"effective_real": round(self.effective[0], 2), "effective_other": round(self.effective[1], 2)}
                   if self.effective is not None else {}), **self.extra}


@dataclass
class Reading:
    """What one instrument measured.

    Attributes:
        instrument, title, unit: the instrument's name, its title in the report, and what one unit is
            (``rows`` or ``20-row samples``).
        status: one of :data:`STATUSES`; ``reason`` says why when not ``measured``.
        comparisons: ``{group: Comparison}`` for the groups it measured.
        seconds: wall time of :meth:`Instrument.run`.
        findings: plain sentences on what gives the release away (columns, column pairs, copies).
        details: everything else, JSON-friendly (written into ``audit.json``).
    """

    instrument: str
    title: str
    unit: str
    status: str = "measured"
    reason: str | None = None
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    seconds: float = 0.0
    findings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly view with the control check."""
        passed, reasons = control_check(self)
        # a control measured on too few units is unjudged, not failed: the report says which
        judged = all(c.enough for g, c in self.comparisons.items() if g in (POSITIVE, NEGATIVE) and c.auc is not None)
        return {"instrument": self.instrument, "title": self.title, "unit": self.unit, "status": self.status,
                "reason": self.reason, "seconds": round(self.seconds, 1),
                "comparisons": {g: c.as_dict() for g, c in self.comparisons.items()},
                "controls_passed": passed, "controls_judged": judged, "control_reasons": reasons, "findings": list(self.findings),
                "details": self.details}


def control_check(reading: Reading) -> tuple[bool, list[str]]:
    """Whether an instrument passed its controls, and why not.

    Passed = it measured both controls on at least :data:`MIN_UNITS` units per side, the positive control
    (columns shuffled) is separated from real data (D's 95 % lower bound above 0) and the negative control
    (real vs real) is not.

    Returns:
        ``(passed, reasons)``: one sentence per failure.
    """
    if reading.status not in ("measured", "stopped"):
        return False, [f"{reading.title}: {reading.status}" + (f" ({reading.reason})" if reading.reason else "")]
    reasons = []
    positive, negative = reading.comparisons.get(POSITIVE), reading.comparisons.get(NEGATIVE)
    for name, control in (("positive", positive), ("negative", negative)):
        if control is not None and control.auc is not None and not control.enough:
            reasons.append(f"{reading.title}: too few {reading.unit} to judge its {name} control "
                           f"({auc_text(control)}; at least {MIN_UNITS} per side are needed)")
    if reasons:
        return False, reasons
    if positive is None or positive.auc is None:
        reasons.append(f"{reading.title}: no positive control measured")
    elif not positive.separated:
        reasons.append(f"{reading.title} missed its positive control (rows with every column shuffled: "
                       f"{auc_text(positive)}): it is blind to what that control breaks")
    if negative is None or negative.auc is None:
        reasons.append(f"{reading.title}: no negative control measured")
    elif negative.separated:
        reasons.append(f"{reading.title} failed its negative control (real rows against real rows: "
                       f"{auc_text(negative)}): it is biased")
    return not reasons, reasons


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
    """The tables every instrument reads, built once per audit (:func:`llmdisc.audit.data.audit_data`).

    Attributes:
        real: the real class (rows read from ``--real``, less the negative-control and reference rows).
        groups: ``{"release", "shuffled_columns", "real_holdout"}`` tables, same columns as ``real``.
        reference: real rows no group holds (the sample instruments show them as context; may be empty).
        text: the same tables as the language models see them (dates as text), keys ``real``, the groups and
            ``reference``.
        kinds: column kinds of the row-level tables (``numerical``/``categorical``).
        seed: the run seed (every draw derives from it).
        cache_dir: the audit's cache folder (the user's rows never reach the project's cache).
        notes: where each group came from, in words.
    """

    real: pd.DataFrame
    groups: dict[str, pd.DataFrame]
    reference: pd.DataFrame
    text: dict[str, pd.DataFrame]
    kinds: dict[str, str]
    seed: int
    cache_dir: Path
    notes: dict[str, str] = field(default_factory=dict)


class Progress:
    """Progress lines with an ETA on stderr, and the ``--max-minutes`` deadline.

    Args:
        deadline: ``time.monotonic()`` value after which instruments stop early (None: no limit).
        enabled: print the lines (False: silent; the deadline still holds).
        stream: where the lines go (default stderr).
        every: seconds between two lines of one instrument (the first and last always print).
    """

    def __init__(self, deadline: float | None = None, *, enabled: bool = True, stream: Any = None,
                 every: float = 5.0) -> None:
        self.deadline, self.enabled, self.every = deadline, enabled, every
        self.stream = stream or sys.stderr
        self._name, self._total, self._done, self._start, self._last = "", 0, 0, 0.0, 0.0

    def out_of_time(self) -> bool:
        """True once the deadline has passed, or when the running instrument's next unit, at its mean speed so
        far, would end after it (so that the audit stops within its budget, not one unit past it)."""
        if self.deadline is None:
            return False
        now = time.monotonic()
        if 0 < self._done < self._total:
            now += (now - self._start) / self._done
        return now >= self.deadline

    def start(self, name: str, total: int, what: str) -> None:
        """Begin an instrument's ``total`` units of work (``what``: ``samples``, ``passes``, ...)."""
        self._name, self._total, self._done, self._what = name, max(int(total), 0), 0, what
        self._start = self._last = time.monotonic()
        self._print(force=True)

    def advance(self, n: int = 1) -> None:
        """Count ``n`` units done and print a line when one is due."""
        self._done += n
        self._print(force=self._done >= self._total)

    def _print(self, force: bool) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < self.every):
            return
        self._last = now
        elapsed = now - self._start
        eta = ""
        if 0 < self._done < self._total:
            eta = f", about {format_seconds(elapsed / self._done * (self._total - self._done))} left"
        print(f"  [{self._name}] {self._done}/{self._total} {self._what}, {format_seconds(elapsed)}{eta}",
              file=self.stream, flush=True)


def format_seconds(seconds: float) -> str:
    """``42 s`` or ``3 min 05 s``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


@dataclass(frozen=True)
class WorkPlan:
    """What an instrument will do: ``units`` of ``what`` at ``seconds_per_unit`` (from a probe or a
    measured constant) plus ``fixed_seconds`` (loading a model, fitting once)."""

    units: int
    what: str
    seconds_per_unit: float
    fixed_seconds: float = 0.0
    description: str = ""

    @property
    def seconds(self) -> float:
        """The estimated wall time."""
        return self.fixed_seconds + self.units * self.seconds_per_unit


class Instrument(abc.ABC):
    """A discriminator with its controls (see the module docstring).

    Subclasses set ``name`` (the ``--instruments`` key), ``title``, ``unit`` and ``description`` (one
    sentence for the plan and the report), and implement :meth:`plan` and :meth:`run`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    unit: ClassVar[str]
    description: ClassVar[str]

    @abc.abstractmethod
    def plan(self, data: AuditData) -> WorkPlan:
        """The work :meth:`run` will do on ``data``, with its time estimate (may run a short probe)."""

    @abc.abstractmethod
    def run(self, data: AuditData, progress: Progress) -> Reading:
        """Measure the release and both controls; stop early when ``progress.out_of_time()`` (status
        ``stopped``, the figures of what was done)."""

    def section(self, reading: Reading) -> str:
        """The instrument's part of ``report.html`` (HTML; escaped). Default: the comparisons' table,
        the findings and the notes in :attr:`Reading.details` ``notes``."""
        return comparison_table(reading) + findings_list(reading)

    def reading(self, **kwargs: Any) -> Reading:
        """A :class:`Reading` of this instrument."""
        return Reading(instrument=self.name, title=self.title, unit=self.unit, **kwargs)


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def comparison_table(reading: Reading) -> str:
    """HTML table: one row per group with AUC, D and their intervals, p and n."""
    rows = []
    for group in GROUPS:
        c = reading.comparisons.get(group)
        if c is None:
            continue
        d, low, high = c.discrimination
        rows.append("<tr>" + "".join(f"<td{' class=num' if k else ''}>{html.escape(v)}</td>" for k, v in enumerate([
            GROUP_NAMES[group], f"{_f(c.auc)} [{_f(c.auc_low)}, {_f(c.auc_high)}]",
            f"{_f(d)} [{_f(low)}, {_f(high)}]", p_text(c.p_value), units_text(c, " / ")])) + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("compared with real", "AUC [95 % CI]", "D [95 % CI]", "p",
                                             f"n real / other ({html.escape(reading.unit)})"))
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def findings_list(reading: Reading) -> str:
    """HTML list of the findings and notes."""
    items = list(reading.findings) + list(reading.details.get("notes", []))
    if not items:
        return ""
    return "<ul>" + "".join(f"<li>{html.escape(str(i))}</li>" for i in items) + "</ul>"
