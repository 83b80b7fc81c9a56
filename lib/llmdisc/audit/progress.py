"""How an audit keeps time: progress lines with an ETA, the ``--max-minutes`` deadline, and each instrument's
plan of work (:class:`WorkPlan`) the audit prints and sizes its samples from before it starts."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any


class Progress:
    """Progress lines with an ETA on stderr, and the ``--max-minutes`` deadline: ``deadline`` is the
    ``time.monotonic()`` value after which instruments stop early (None: no limit); ``enabled`` False silences
    the lines (the deadline still holds); ``every``: seconds between two lines of one instrument."""

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
        return self.fixed_seconds + self.units * self.seconds_per_unit
